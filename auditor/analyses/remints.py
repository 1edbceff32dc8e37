"""Escrow remints: every escrow deactivation of epoch N explained, and the mints it cost.

Issue #1799 / #1800: before gateway v4.1.2 one request whose reservation
``(input bytes + max_tokens) x token_price`` exceeded an escrow's balance made the gateway
retire the escrow and mint a replacement, although the balance was healthy for ordinary
requests. This analysis reconstructs each escrow's life from the logs, the chain records
(``chain_escrows``) and accounting, and classifies each deactivation:

* ``legitimate``: the gateway's periodic check found the balance below its minimum threshold
  (``escrow_balance_low``, reason ``low_balance``) or the nonce at its limit
  (``escrow_nonce_high``, ``high_nonce``); the rotator retired it (epoch rotation); a v4.1.2+
  hold ended it; or a request-triggered exhaustion of an escrow whose balance was below the
  threshold (a real end of life).
* ``spurious``: a request-triggered exhaustion (``runner_prepare_failed`` "insufficient
  escrow balance", then ``escrow_balance_exhausted``) of an escrow whose balance was above the
  threshold, or, with no balance known, that had just served ordinary requests.
* ``unknown``: the evidence does not decide; ``missing`` says what is not there.

On a gateway that holds escrows (v4.1.2+: the logs read are of that generation,
coverage.generation), a request-triggered replacement with no hold is the gateway's own rule at
work: it replaces at once only when the balance and recoverable in flight are below the model's
release balance (gateway-logs.md 14.2; logged by its holds), so it is legitimate when the logs'
balance bound agrees and unknown when the bound is above it or no hold of the model is logged.
An escrow that ran out on a request just before the logs read end, with no answer logged yet, is
no deactivation (a coverage caveat names it).

The balance is never on chain (only the deposit ``amount``). Its estimate, in order: a balance
the gateway logged (``escrow_balance_low``) minus what was reserved since; else the deposit minus
the most the requests seen since the mint can have cost (each attempt reserves
``(input bytes + max_tokens) x token_price`` and is charged at most that; a request's
max_tokens is not logged, so the cap 4,096 is assumed: a lower bound on the balance), when the
logs cover the escrow's whole life; the deposit itself is an upper bound. The accounting API
serves no balance or cost (gateway-accounting.md), so it dates and attributes escrows only.

Mints per model are split by cause (the epoch-start rotation up to the rotation target: given
with ``--rotation-target``, else the baseline the logs show: the epoch-start pass's regular
mints of the model, after a phase-gate line of the epoch's start, or, without one, in a first
rotation pass that retired temp bridge escrows or minted several models together;
replacements, by the classification of what they replaced; reconciliation mints that follow
a legitimate deactivation with no replacement line; and the unexplained rest). A ``mint_peak``
is a window of ``peak_window_minutes`` in which the mints that the rotation target and the
legitimate deactivations do not explain number at least ``peak_min``.

Lines without times (a pasted excerpt: gateway-logs.md 13.1) are ordered by their position
alone and placed in their escrow's epoch (:class:`Untimed`); their deactivations say in
``basis`` that times are unknown, and deactivation or mint lines no epoch places are missing
coverage.

Today's gateway (v4.1.2+, gateway-logs.md 14) holds an escrow that cannot currently afford
work instead of retiring it. Each hold is a row of ``holds`` (its start from ``on_hold_since``,
also after a restart, the balances logged, its outcome: released, unrecoverable, expired or
open). A request-path exhaustion or low balance the gateway answered with a hold is no end of
life: a held-and-released escrow is no deactivation; one an unrecoverable (or expired) hold
ended is ``legitimate`` on the balances that line logged. An epoch-retention retirement is
``legitimate`` (trigger ``retention``) and no remint. Mints gain the causes ``hold_top_up``
(``escrow_hold_top_up_created``) and ``replacement_skipped`` (the mint that stood in for a
replacement the gateway skipped, ``target_already_met``). ``unaffordable_requests`` lists the
requests every escrow refused to fund (a 503, no retirement: #1799's fix at work). A hold begun
with the balance at or above its own release balance held a healthy escrow: ``spurious_hold``.

SQL: ``queries/remints_untimed_lines.sql``, ``queries/remints_escrow_lives.sql``, ``remints_requests.sql`` (the
requests shown one by one), ``remints_request_tallies.sql`` (the sums over the rest), ``remints_mints.sql``,
``remints_log_spans.sql``, ``remints_holds.sql``, ``remints_unaffordable_requests.sql``. Findings:
``spurious_remint`` (warn, subject the escrow), ``mint_peak`` (warn, subject the model) and
``spurious_hold`` (warn, subject the escrow).
"""

from __future__ import annotations

import bisect
import re
from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from ..result import Finding, Result, Table, utc, utc_text
from ..times import MAX_SECONDS
from .context import Run, run_for
from .frame import Options, option, stored_state

if TYPE_CHECKING:      # annotations only: importing the analysis (its --help) needs no DuckDB
    from ..store import Store

KEY, TITLE = "remints", "Escrow remints"

DEFAULT_THRESHOLD = 1_000_000      # balanceMinimumThreshold (gateway.go)
DEFAULT_MAX_TOKENS = 3072          # DefaultRequestMaxTokens / GATEWAY_DEFAULT_MAX_TOKENS
MAX_TOKENS_CAP = 4096              # RequestMaxTokensCap / GATEWAY_MAX_TOKENS_CAP (non-admin callers)
TRIGGER_WINDOW = timedelta(seconds=5)    # failure -> exhaustion callback: milliseconds in practice
ROTATION_PASS_GAP = timedelta(seconds=60)  # mints of one rotator pass follow each other within this
EDGE = timedelta(seconds=60)       # evidence this close to a log's start may lie before it


@dataclass(frozen=True)
class RemintOptions(Options):
    threshold: int | None = option(None, "--threshold", "The gateway's minimum escrow balance "
                                   "(balanceMinimumThreshold): below it an escrow's end of life is legitimate. "
                                   "[default: the threshold= the gateway logged, else 1000000]",
                                   metavar="UNITS", min=0)
    rotation_target: int | None = option(None, "--rotation-target", "Regular escrows per model the rotator keeps "
                                         "(target_count). [default: estimated from the epoch-start rotation pass "
                                         "in the logs]", metavar="N", min=0)
    peak_window_minutes: int = option(60, "--peak-window", "Window of a mint peak.", metavar="MINUTES", min=1,
                                      max=MAX_SECONDS // 60)
    peak_min: int = 3
    recent_minutes: int = 10                # "had just served ordinary requests"

    WITHOUT = ("participant",)              # the escrows are the gateway's, not one participant's


# -- small helpers -------------------------------------------------------------------------
def _ms(a: datetime | None, b: datetime | None) -> int | None:
    return None if a is None or b is None else round((b - a).total_seconds() * 1000)


def reservation(input_bytes: int | None, max_tokens: int | None, token_price: int | None) -> int | None:
    """``(input bytes + max_tokens) x token_price`` (devshard/state/machine.go tokenCost); None if
    any input is unknown."""
    if input_bytes is None or max_tokens is None or token_price is None:
        return None
    return (int(input_bytes) + int(max_tokens)) * int(token_price)


@dataclass
class Spans:
    """The stretches of time the logs read cover, and the epoch the gateway named over time."""

    spans: list[dict[str, Any]]
    marks: list[tuple[datetime, int]]
    gates: list[tuple[datetime, int, str]]     # phase-gate lines: time, epoch, reason

    @classmethod
    def load(cls, store: Store) -> "Spans":
        rows = store.query("remints_log_spans")
        spans = sorted(({**r, "first_ts": utc(r["first_ts"]), "last_ts": utc(r["last_ts"])}
                        for r in rows if r["kind"] == "span"), key=lambda r: r["first_ts"])
        marks = sorted((utc(r["first_ts"]), int(r["epoch"])) for r in rows if r["kind"] == "epoch")
        gates = sorted((utc(r["first_ts"]), int(r["epoch"]), r["path"][len("phase_gate "):])
                       for r in rows if r["kind"] == "epoch" and r["path"].startswith("phase_gate"))
        return cls(spans, marks, gates)

    def saw_epoch_start(self, epoch: int, before: datetime) -> bool:
        """Whether the logs show the gateway at the start of ``epoch`` before ``before``: a
        phase-gate line of the epoch before, or of this epoch's own PoC."""
        return any(t < before and (e == epoch - 1 or (e == epoch and reason == "poc")) for t, e, reason in self.gates)

    def epoch_at(self, t: datetime | None) -> int | None:
        if t is None:
            return None
        i = bisect.bisect_right([m[0] for m in self.marks], t)
        return self.marks[i - 1][1] if i else None

    def epoch_near(self, t: datetime) -> int | None:
        """The epoch named last before ``t``, else the first named after it."""
        e = self.epoch_at(t)
        if e is None:
            later = [m for m in self.marks if m[0] > t]
            e = later[0][1] if later else None
        return e

    def covered(self, a: datetime, b: datetime) -> bool:
        """Whether the logs cover [a, b] without a gap."""
        t = a
        for s in self.spans:
            if s["first_ts"] > t + EDGE:
                break
            t = max(t, s["last_ts"])
        return t + EDGE >= b if self.spans else False

    def gap_before(self, t: datetime) -> str | None:
        """When ``t`` is near the start of a log (within a minute) or outside every log: what the
        logs read do not cover just before it."""
        inside = [s for s in self.spans if s["first_ts"] - EDGE <= t <= s["last_ts"] + EDGE]
        if inside and all(t - s["first_ts"] > EDGE for s in inside):
            return None
        start = min((s["first_ts"] for s in inside), default=t)
        before = [s for s in self.spans if s["last_ts"] < start]
        if not before:
            return (f"the logs read begin at {utc_text(start)}"
                    + (f" ({inside[0]['path']})" if inside else "") + ": nothing before is covered")
        prev = max(before, key=lambda s: s["last_ts"])
        return (f"no log read covers {utc_text(prev['last_ts'])} to {utc_text(start)} (the log {prev['path']} ends, "
                + (f"{inside[0]['path']} begins" if inside else "the next begins") + ")")


@dataclass(frozen=True)
class Tally:
    """An escrow's requests before a moment, added up (``queries/remints_request_tallies.sql``,
    which says what each count is); ``served`` are those not refused for insufficient balance.
    ``served_units`` x token_price is the most the served requests can have reserved."""

    requests: int = 0
    last: datetime | None = None
    served: int = 0
    served_attempts: int = 0
    served_units: int = 0
    served_bytes_unknown: int = 0
    succeeded: int = 0          # with a time: recency needs one
    last_succeeded: datetime | None = None

    def since(self, earlier: "Tally") -> "Tally":
        """The requests from ``earlier``'s moment on (the sums run in time order)."""
        n, ok = self.requests - earlier.requests, self.succeeded - earlier.succeeded
        return Tally(n, self.last if n else None, self.served - earlier.served,
                     self.served_attempts - earlier.served_attempts, self.served_units - earlier.served_units,
                     self.served_bytes_unknown - earlier.served_bytes_unknown, ok,
                     self.last_succeeded if ok else None)

    def plus(self, r: dict[str, Any]) -> "Tally":
        """With one more request (one logged without a time: it never counts as recent use)."""
        served = not r["insufficient_balance"]
        attempts = max(int(r["attempts"] or 0), 1)
        known = r["input_bytes"] is not None
        units = (int(r["input_bytes"]) + int(r["max_tokens_logged"] or MAX_TOKENS_CAP)) * attempts if known else 0
        return replace(self, requests=self.requests + 1,
                       last=r["ts"] if self.last is None else max(self.last, r["ts"]),
                       served=self.served + served, served_attempts=self.served_attempts + served * attempts,
                       served_units=self.served_units + served * units,
                       served_bytes_unknown=self.served_bytes_unknown + (served and not known))

    def cost(self, price: int | None) -> int | None:
        """The most the served requests can have cost: each attempt reserves ``(input bytes +
        max_tokens) x token_price`` (max_tokens not logged counts as the cap); None where a
        request's reservation is unknown."""
        if not self.served:
            return 0
        if price is None or self.served_bytes_unknown:
            return None
        return self.served_units * int(price)


class Uses:
    """The requests of each escrow: those refused for insufficient balance and those without a
    time one by one (``queries/remints_requests.sql``), the rest as tallies before the moments
    the analysis asks about (``queries/remints_request_tallies.sql``): a busy day has a million
    requests, and the analysis needs their sums, not them."""

    def __init__(self, store: Store, requests: list[dict[str, Any]]) -> None:
        self.store = store
        self.refused: dict[int, list[dict[str, Any]]] = defaultdict(list)
        self.untimed: dict[int, list[dict[str, Any]]] = defaultdict(list)
        for r in requests:
            r["ts"] = utc(r["ts"])
            r["failed_at"] = utc(r["failed_at"])
            if r["insufficient_balance"]:
                self.refused[int(r["escrow"])].append(r)
            if r.get("untimed"):
                self.untimed[int(r["escrow"])].append(r)
        for rows in self.refused.values():
            rows.sort(key=lambda r: r["ts"])
        self._tallies: dict[tuple[int, datetime | None], Tally] = {}

    def ask(self, moments: Iterable[tuple[int, datetime | None]]) -> None:
        """Tally the requests before each (escrow, moment) not tallied yet, all in one query."""
        todo = [m for m in dict.fromkeys(moments) if m not in self._tallies]
        if not todo:
            return
        rows = self.store.query("remints_request_tallies", escrows=[e for e, _ in todo], times=[t for _, t in todo])
        for row in rows:
            eid, t = todo[row.pop("i")]
            tally = Tally(**{**row, "last": utc(row["last"]), "last_succeeded": utc(row["last_succeeded"])})
            for r in self.untimed.get(eid, ()):
                if t is None or r["ts"] < t:
                    tally = tally.plus(r)
            self._tallies[(eid, t)] = tally

    def before(self, escrow: int, t: datetime | None = None, since: datetime | None = None) -> Tally:
        """The escrow's requests before ``t`` (all of them when None), from ``since`` on."""
        self.ask([(escrow, t)] + ([(escrow, since)] if since is not None else []))
        tally = self._tallies[(escrow, t)]
        return tally.since(self._tallies[(escrow, since)]) if since is not None else tally


# -- the balance of an escrow at a moment -------------------------------------------------------
def balance_at(life: dict[str, Any], t: datetime, uses: Uses, spans: Spans) -> dict[str, Any]:
    """Best estimate of the balance just before ``t``: ``{estimate, lower, upper, source}``
    (None where unknown), and why a better one is not available (``limits``)."""
    eid, price, amount = life["escrow"], life["token_price"], life["amount"]
    limits: list[str] = []
    upper = int(amount) if amount is not None else None
    logged_at = utc(life["low_at"])
    if logged_at is not None and logged_at <= t and life["low_balance"] is not None:
        since = uses.before(eid, t, since=logged_at)
        cost = since.cost(price)
        logged = int(life["low_balance"])
        if cost is not None:
            lower = max(0, logged - cost)
            return {"estimate": lower, "lower": lower, "upper": logged,
                    "source": f"the balance the gateway logged (escrow_balance_low {logged:,} at {utc_text(logged_at)}) "
                              f"minus the most the {since.served} request(s) since can have cost",
                    "limits": limits}
        limits.append("requests after the logged balance lack their input bytes or the token price")
    if amount is None:
        limits.append("no chain record of the escrow (its deposit and token price are unknown)"
                      if not life["chain_found"] else "the chain record has no amount")
    elif price is None:
        limits.append("the token price is unknown")
    else:
        born = utc(life["minted_at"])
        if born is None:
            limits.append("its mint is not in the logs read, so its use before them is unknown")
        elif not spans.covered(born, t):
            limits.append(f"the logs read do not cover its whole life from its mint at {utc_text(born)} to {utc_text(t)}")
        else:
            used = uses.before(eid, t)
            spent = used.cost(price)
            if spent is None:
                limits.append("some of its requests lack their input bytes")
            else:
                lower = max(0, int(amount) - spent)
                return {"estimate": lower, "lower": lower, "upper": upper,
                        "source": (f"chain amount {int(amount):,} minus the most its {used.served} request(s) "
                                   f"since the mint at {utc_text(born)} can have cost ({spent:,}: per attempt "
                                   f"(input bytes + max_tokens, {MAX_TOKENS_CAP:,} where not logged) x token "
                                   f"price {int(price):,}); a lower bound: actual costs are not logged"),
                        "limits": limits}
    return {"estimate": None, "lower": None, "upper": upper,
            "source": ("unknown; at most the chain deposit " + f"{upper:,}" if upper is not None else "unknown"),
            "limits": limits}


def _checked_threshold(life: dict[str, Any], given: int) -> int:
    """The threshold the gateway's periodic check compares a balance with: the one it logged (its
    own, whatever --threshold says: its silence proves no more), else ``given``."""
    logged = life["logged_threshold"]           # set by run, from the gateway's lines
    return given if logged is None else int(logged)


CHECK_INTERVAL = timedelta(seconds=31)   # balanceCheckInterval 30 s, and a second of slack


def check_bound(life: dict[str, Any], t: datetime, uses: Uses, spans: Spans, threshold: int) -> dict[str, Any] | None:
    """The bound the gateway's own periodic check gives: with escrow rotation enabled (this
    escrow went down the rotation path: ``gateway_replacing_exhausted_escrow`` or
    ``escrow_depletion_deactivated``), ``checkBalances`` looks at every escrow every 30 s and
    logs ``escrow_balance_low`` below the threshold. No such line in the 30 s before ``t``, in
    logs that cover them: the balance was at least the threshold at the last check, and has
    since dropped by at most what the requests started after it can have reserved. ``threshold``:
    the one the check compares with (``_checked_threshold``). None when that evidence is not there."""
    if life["replacing_at"] is None and life["deactivated_at"] is None:
        return None
    if life["low_at"] is not None and utc(life["low_at"]) <= t:
        return None
    if not spans.covered(t - CHECK_INTERVAL, t):
        return None
    since = uses.before(life["escrow"], t, since=t - CHECK_INTERVAL)
    cost = since.cost(life["token_price"])
    if cost is None:
        return None
    lower = max(0, threshold - cost)
    return {"lower": lower,
            "source": (f"the gateway's periodic balance check (every 30 s) logged no escrow_balance_low in the 30 s "
                       f"before: at least the {threshold:,} threshold at the last check"
                       + (f", minus the most its {since.served} request(s) since can have reserved ({cost:,})"
                          if since.served else ", and no request since"))}


# -- lines without times ------------------------------------------------------------------
# the stand-in time between two lines without times: over the 1 ms slack that lets a failure
# logged in the same millisecond as its exhaustion count, so a failure only counts before it
LINE_STEP = timedelta(milliseconds=2)
UNTIMED_BASIS = "times unknown: the lines carry no timestamp; their order alone places them"
_LIFE_AT = {"escrow_rotation_created": "minted_at", "escrow_depletion_deactivated": "deactivated_at",
            "devshard_deactivated": "devshard_deactivated_at", "runtime_retired": "retired_at",
            "escrow_balance_exhausted": "exhausted_at", "gateway_replacing_exhausted_escrow": "replacing_at",
            "escrow_balance_low": "low_at", "escrow_nonce_high": "nonce_high_at",
            "escrow_depletion_replacement_created": "replaced_at"}


class Untimed:
    """Lines without a time (``queries/remints_untimed_lines.sql``). Classification runs on
    their order: each line gets a stand-in time, LINE_STEP per line from 1970, used
    only to order them (which comes first, which failure precedes which exhaustion) and
    removed from every deactivation before it is reported (``unplace``). Recency ("had
    just served ordinary requests") needs times, so untimed requests never count for it."""

    def __init__(self, lines: list[dict[str, Any]]) -> None:
        from datetime import timezone

        self.lines = lines
        origin = datetime(1970, 1, 1, tzinfo=timezone.utc)
        for r in lines:
            r["at"] = origin + LINE_STEP * int(r["ord"])

    def place_requests(self, requests: list[dict[str, Any]]) -> list[dict[str, Any]]:
        first: dict[str, datetime] = {}
        failed: dict[str, datetime] = {}
        for r in self.lines:
            if r["request"] is not None:
                first.setdefault(r["request"], r["at"])
                if r["name"] == "runner_prepare_failed":
                    failed.setdefault(r["request"], r["at"])
        for r in requests:
            if r["ts"] is None and r["request"] in first:
                r["ts"], r["untimed"] = first[r["request"]], True
                if r["insufficient_balance"] and r["failed_at"] is None:
                    r["failed_at"] = failed.get(r["request"])
        return [r for r in requests if r["ts"] is not None]

    def place_lives(self, lives: dict[int, dict[str, Any]]) -> None:
        for r in self.lines:
            col = _LIFE_AT.get(r["name"])
            life = lives.get(r["escrow"]) if r["escrow"] is not None else None
            if col is None or life is None:
                continue
            if life[col] is None:
                life[col], life["untimed"] = r["at"], True
            if col == "minted_at":
                life["untimed_mint"] = True

    @staticmethod
    def unplace(d: dict[str, Any]) -> None:
        """A deactivation classified on stand-in times: no time is reported, the basis says so."""
        for k in ("at", "deactivated_at", "replaced_at"):
            if d[k] is not None and d[k].year == 1970:
                d[k] = None
        d["timing_ms"] = None
        if d["request"]:
            d["request"]["at"] = None
        if d["evidence"].get("minted_at") is not None and d["evidence"]["minted_at"].year == 1970:
            d["evidence"]["minted_at"] = None
        d["evidence"].pop("exhaustion", None)
        # recent use needs times: say that, not that none was seen
        d["missing"] = [re.sub(r"; and no ordinary request served in the \d+ min before$",
                               "; and its recent use (the lines carry no times)", m) for m in d["missing"]]
        d["basis"] = f"{d['basis']}; {UNTIMED_BASIS}" if d["basis"] else UNTIMED_BASIS

    def _epoch(self, r: dict[str, Any], lives: dict[int, dict[str, Any]]) -> int | None:
        if r["epoch"] is not None and r["name"] == "escrow_rotation_created":
            return int(r["epoch"])
        # the escrow's own epoch, else (as _in_epoch places a deactivation) its replacement's
        repl = (lives.get(r["escrow"]) or {}).get("replacement_escrow") if r["escrow"] is not None else None
        for eid in (r["escrow"], r["new_escrow"], repl):
            e = (lives.get(eid) or {}).get("creation_epoch") if eid is not None else None
            if e is not None:
                return int(e)
        return None

    def unplaceable(self, lives: dict[int, dict[str, Any]]) -> list[str]:
        """The deactivation and mint lines no epoch places, as ``path:line name escrow=…``."""
        return [f"{r['path']}:{r['line_no']} {r['name']} escrow={r['escrow']}" for r in self.lines
                if r["lifecycle"] and self._epoch(r, lives) is None]

    def mints(self, lives: dict[int, dict[str, Any]], epoch: int) -> list[int]:
        return [r["escrow"] for r in self.lines if r["name"] == "escrow_rotation_created"
                and self._epoch(r, lives) == epoch]


# -- escrow holds (gateway v4.1.2+) --------------------------------------------------------------
_HOLD_ENDS = {"escrow_hold_released": "released", "escrow_hold_unrecoverable": "unrecoverable",
              "escrow_hold_expired": "expired"}


def holds(rows: list[dict[str, Any]], lives: dict[int, dict[str, Any]], uses: Uses) -> list[dict[str, Any]]:
    """The holds the lines show (``queries/remints_holds.sql``), one per hold, in order: a
    start (``escrow_hold_started``; ``escrow_hold_restored`` when the gateway restarted, the
    same hold when its ``on_hold_since`` is the open one's) paired with the escrow's next end
    (released, unrecoverable, expired; ``open`` without one). ``started_at`` is
    ``on_hold_since``; ``held_for_s`` the end line's ``held_for`` (a Go duration), else the
    time from the start to the end line. The request whose reservation failed on the escrow
    just before the start is the hold's ``request``."""
    out: list[dict[str, Any]] = []
    open_: dict[int, dict[str, Any]] = {}
    for r in rows:
        eid, event, ts = int(r["escrow"]), r["event"], utc(r["ts"])
        life = lives.get(eid) or {}
        if event in ("escrow_hold_started", "escrow_hold_restored"):
            since = utc(r["on_hold_since"]) or ts
            cur = open_.get(eid)
            if cur is not None and (cur["started_at"] == since or (event == "escrow_hold_restored"
                                                                   and cur["started_at"] is None)):
                cur["restored"] = cur["restored"] or event == "escrow_hold_restored"
                continue
            h = {"escrow": eid, "model": life.get("model"), "reason": r["reason"], "started_at": since,
                 "started_from": "on_hold_since" if r["on_hold_since"] is not None else "the line's time",
                 "balance": r["balance"], "recoverable_in_flight": r["recoverable_in_flight"],
                 "release_balance": r["release_balance"], "outcome": "open", "ended_at": None, "held_for_s": None,
                 "held_for_source": None, "replacement_escrow": None, "restored": event == "escrow_hold_restored",
                 "release_reason": None, "at_end": None, "request": None, "_line_at": ts}
            out.append(h)
            open_[eid] = h
            continue
        h = open_.pop(eid, None)
        if h is None:           # begun before the logs read: its end alone
            h = {"escrow": eid, "model": life.get("model"), "reason": None, "started_at": None,
                 "started_from": None, "balance": None, "recoverable_in_flight": None, "release_balance": None,
                 "outcome": "open", "ended_at": None, "held_for_s": None, "held_for_source": None,
                 "replacement_escrow": None, "restored": False, "release_reason": None, "at_end": None,
                 "request": None, "_line_at": None}
            out.append(h)
        h["outcome"], h["ended_at"] = _HOLD_ENDS[event], ts
        if r["held_for_s"] is not None:
            h["held_for_s"], h["held_for_source"] = float(r["held_for_s"]), f"logged (held_for={r['held_for']})"
            if h["started_at"] is None and ts is not None:
                h["started_at"] = ts - timedelta(seconds=float(r["held_for_s"]))
                h["started_from"] = "the end line's time less its held_for"
        elif h["started_at"] is not None and ts is not None:
            h["held_for_s"] = round((ts - h["started_at"]).total_seconds(), 6)
            h["held_for_source"] = f"from on_hold_since to the {event} line"
        if event == "escrow_hold_released":
            h["release_reason"] = r["reason"]
        else:
            h["at_end"] = {k: r[k] for k in ("balance", "recoverable_in_flight", "release_balance", "pending",
                                             "pending_cost", "started", "started_cost", "challenged",
                                             "challenged_cost", "overdue_pending", "overdue_pending_cost")}
            h["at_end"]["latest_pending_deadline"] = utc(r["latest_pending_deadline"])
            h["replacement_escrow"] = life.get("replacement_escrow")
    for h in out:
        h["request"] = _hold_request(h, lives.get(h["escrow"]) or {}, uses)
    return out


def _hold_request(h: dict[str, Any], life: dict[str, Any], uses: Uses) -> dict[str, Any] | None:
    """The request whose reservation failed on the escrow within TRIGGER_WINDOW before the
    hold began (the path that holds it: runner_prepare_failed, then the exhaustion callback)."""
    t = h["_line_at"] or h["started_at"]
    if t is None:
        return None
    fails = [r for r in uses.refused.get(h["escrow"], ()) if r["failed_at"] is not None
             and t - TRIGGER_WINDOW <= r["failed_at"] <= t + timedelta(milliseconds=1)]
    if not fails:
        return None
    f = fails[-1]
    mt = f["max_tokens_logged"] or DEFAULT_MAX_TOKENS
    return {"request": f["request"], "at": utc(f["failed_at"]), "input_bytes": f["input_bytes"], "max_tokens": mt,
            "reservation": reservation(f["input_bytes"], mt, life.get("token_price"))}


def _answered_by_hold(t: datetime, held: list[dict[str, Any]]) -> bool:
    """Whether the gateway answered a trigger logged at ``t`` (a request-path exhaustion, a
    low balance) with a hold: one began within TRIGGER_WINDOW after it, or was under way."""
    for h in held:
        start = h["_line_at"] or h["started_at"]
        if start is None:
            if h["ended_at"] is not None and t <= h["ended_at"]:
                return True
            continue
        if start - TRIGGER_WINDOW <= t and (h["ended_at"] is None or t <= h["ended_at"]):
            return True
    return False


def _hold_of(life: dict[str, Any]) -> dict[str, Any] | None:
    """The hold that ended the escrow (unrecoverable or expired), if one did."""
    return next((h for h in reversed(life.get("holds") or []) if h["outcome"] in ("unrecoverable", "expired")), None)


# -- one deactivation -------------------------------------------------------------------------
def _end_of_life(life: dict[str, Any]) -> tuple[str, datetime] | None:
    """The first end-of-life trigger logged for the escrow, and its time. A request-path
    exhaustion or a low balance the gateway answered with a hold (v4.1.2+) is no end of
    life: the hold's outcome decides (released: the escrow serves again; unrecoverable or
    expired: the hold ended it); a later one that no hold answered is."""
    held = life.get("holds") or []
    cands = []
    for kind, col, last in (("rotation", "rotation_retired_at", None), ("high_nonce", "nonce_high_at", None),
                            ("low_balance", "low_at", "last_low_at"), ("hold", "hold_end_at", None),
                            ("request", "exhausted_at", "last_exhausted_at"),
                            ("request", "replacing_at", "last_replacing_at"), ("retention", "retention_at", None)):
        t = utc(life.get(col))
        if t is not None and held and last is not None and _answered_by_hold(t, held):
            t = utc(life.get(last))
            if t is not None and _answered_by_hold(t, held):
                t = None
        if t is not None:
            cands.append((t, kind))
    ends = [life[c] for c in ("deactivated_at", "devshard_deactivated_at", "retired_at", "replaced_at")
            if life[c] is not None]
    if not cands and not ends:
        return None
    if cands:
        t, kind = min(cands)
        return kind, t
    reason = (life["deactivation_reason"] or life["replacement_reason"] or life["devshard_deactivated_reason"]
              or life["retired_reason"] or "")
    kind = {"low_balance": "low_balance", "high_nonce": "high_nonce", "hold_expired": "hold",
            "epoch retention prune": "retention"}.get(reason)
    if kind is None and ("exhausted" in reason):
        kind = "request"
    if kind is None and "rotation" in reason:
        kind = "rotation"
    return kind or "other", utc(min(ends))


def _holds_escrows(run: Run) -> bool:
    """Whether the logs read are of a gateway that holds escrows (v4.1.2+: hold-era lines, and
    none of the September gateway's alone; coverage.generation)."""
    from .coverage import generation_of

    return generation_of(run)["generation"] == "hold_era"


def _outcome_pending(life: dict[str, Any], spans: Spans) -> bool:
    """An escrow that ran out on a request within EDGE of the end of the logs read, with no hold,
    deactivation, retirement or replacement logged: the gateway's answer (a hold on v4.1.2+, else
    a replacement) comes after what was read (a mid-day collect), so no deactivation is known."""
    end = life["end_of_life"]
    if end is None or end[0] != "request" or life.get("holds"):
        return False
    if any(life[c] is not None for c in ("deactivated_at", "devshard_deactivated_at", "retired_at", "replaced_at")):
        return False
    t = end[1]
    ends = [s["last_ts"] for s in spans.spans if s["first_ts"] - EDGE <= t <= s["last_ts"] + EDGE]
    return bool(ends) and max(ends) - t <= EDGE


def _reason(life: dict[str, Any]) -> str | None:
    return (life["deactivation_reason"] or life["replacement_reason"] or life["devshard_deactivated_reason"]
            or life["retired_reason"] or life["rotation_reason"]
            or (life["rotation_retired_line"] and "rotation retirement (no reason logged)"))


def classify(life: dict[str, Any], uses: Uses, spans: Spans, opts: RemintOptions,
             lives: dict[int, dict[str, Any]]) -> dict[str, Any] | None:
    """The deactivation of one escrow, classified with its evidence; None if it has none."""
    end = life["end_of_life"]
    if end is None:
        return None
    kind, t = end
    deact_at = utc(life["deactivated_at"] or life["devshard_deactivated_at"] or life["retired_at"])
    d: dict[str, Any] = {
        "escrow": life["escrow"], "model": life["model"], "creation_epoch": life["creation_epoch"],
        "classification": "unknown", "trigger": kind, "reason": _reason(life), "at": utc(t),
        "deactivated_at": utc(deact_at), "replacement_escrow": life["replacement_escrow"],
        "replaced_at": utc(life["replaced_at"]), "replacement_reason": life["replacement_reason"],
        "settlement_due": life["settlement_due"], "balance_estimate": None, "balance_source": None,
        "request": None, "timing_ms": None, "basis": None, "missing": [], "evidence": {}, "counterfactual": None,
    }
    ev = d["evidence"]
    ev["chain"] = ({"amount": life["amount"], "token_price": life["token_price"], "settled": life["chain_settled"],
                    "creation_epoch": life["creation_epoch"]} if life["chain_found"]
                   else "not found on chain (never existed or pruned)" if life["chain_probed"]
                   else "not collected (auditor collect --node URL probes devshard_escrow/{id})")
    ev["minted_at"] = utc(life["minted_at"])
    ev["served_requests"] = uses.before(life["escrow"]).served
    if kind == "rotation":
        d["classification"] = "legitimate"
        ev["rotation"] = {"at": utc(life["rotation_retired_at"]), "line": life["rotation_retired_line"]}
        d["summary"] = f"retired by the escrow rotator at {utc_text(life['rotation_retired_at'] or t)} (epoch rotation)"
    elif kind == "high_nonce":
        d["classification"] = "legitimate"
        ev["nonce_check"] = {"at": utc(life["nonce_high_at"]), "nonce": life["nonce_high"],
                             "limit": life["nonce_limit"], "accounting_latest_nonce": life["acct_latest_nonce"]}
        d["summary"] = ("high nonce by the periodic check: nonce "
                        + (f"{life['nonce_high']:,} >= limit {life['nonce_limit']:,}" if life["nonce_high"] is not None
                           else "limit reached (reason high_nonce logged)"))
    elif kind == "low_balance":
        d["classification"] = "legitimate"
        ev["balance_check"] = {"at": utc(life["low_at"]), "balance": life["low_balance"],
                               "threshold": life["low_threshold"]}
        if life["low_balance"] is not None:
            d["balance_estimate"] = int(life["low_balance"])
            d["balance_source"] = f"logged by the periodic check (escrow_balance_low at {utc_text(life['low_at'])})"
            d["summary"] = (f"low balance by the periodic check: {int(life['low_balance']):,} < threshold "
                            f"{int(life['low_threshold'] or opts.threshold):,}")
        else:
            d["summary"] = "low balance by the periodic check (reason low_balance logged)"
    elif kind == "hold":
        d["classification"] = "legitimate"
        ev["hold"] = {"at": utc(life["hold_end_at"]), "event": life["hold_end_event"]}
        d["summary"] = f"an escrow hold ended it ({life['hold_end_event']}, gateway v4.1.2+)"
        _hold_basis(d, life)
    elif kind == "retention":
        d["classification"], d["basis"] = "legitimate", "epoch retention"
        ev["retention"] = {"at": utc(life["retention_at"]), "creation_epoch": life["retention_creation_epoch"],
                           "current_epoch": life["retention_current_epoch"], "cutoff": life["retention_cutoff"],
                           "storage_pruned_at": utc(life["storage_pruned_at"])}
        d["summary"] = ("retired by epoch retention (#1881, #1905): "
                        + (f"created in epoch {life['retention_creation_epoch']}, before the cutoff "
                           f"{life['retention_cutoff']} of epoch {life['retention_current_epoch']}"
                           if life["retention_creation_epoch"] is not None else "runtime_retired \"epoch retention prune\"")
                        + ("; its store pruned" if life["storage_pruned_at"] is not None else "")
                        + "; no remint: an old epoch's escrow is not replaced")
    elif kind == "request":
        _request_path(d, life, t, uses, spans, opts, lives)
    else:
        d["missing"].append(f"the deactivation reason {d['reason']!r} is not one this analysis knows")
        d["summary"] = f"deactivated ({d['reason']}); the cause is not decided by the evidence"
    if d["classification"] != "unknown":
        d["missing"] = []
    return d


def _hold_basis(d: dict[str, Any], life: dict[str, Any]) -> None:
    """A deactivation a hold ended: the balances the gateway logged at its end are its basis
    (balance + what was recoverable in flight below the release balance), and the hold."""
    h = _hold_of(life)
    if h is None:
        return
    d["evidence"]["hold"].update({k: h[k] for k in ("started_at", "reason", "balance", "recoverable_in_flight",
                                                    "release_balance", "outcome", "held_for_s", "request")})
    end = h["at_end"] or {}
    d["basis"] = "logged balances"
    if end.get("balance") is None:
        return
    bal, rec, rel = int(end["balance"]), end.get("recoverable_in_flight"), end.get("release_balance")
    d["balance_estimate"] = bal
    what = "unrecoverable" if h["outcome"] == "unrecoverable" else "expired"
    d["balance_source"] = (f"logged by escrow_hold_{what} at {utc_text(h['ended_at'])}: balance {bal:,}"
                           + (f" + {int(rec):,} recoverable in flight" if rec is not None else "")
                           + (f" < release balance {int(rel):,}" if rel is not None else ""))
    then = (f"replaced by {d['replacement_escrow']}" if d["replacement_escrow"]
            else f"its replacement skipped ({life['skip_reason']})" if life.get("skipped_at") else "retired")
    d["summary"] = f"held {_duration(h['held_for_s'])} and {what} ({d['balance_source']}), then {then}"


def _duration(seconds: float | None) -> str:
    if seconds is None:
        return "for an unknown time"
    return f"for {seconds:,.1f} s" if seconds < 120 else f"for {seconds / 60:,.1f} min"


def _trigger(life: dict[str, Any], t: datetime, uses: Uses) -> dict[str, Any] | None:
    """The request whose failure to reserve exhausted the escrow (ended at ``t``): the last
    logged within TRIGGER_WINDOW before the exhaustion; None if none is in the logs read."""
    exhausted = utc(life["exhausted_at"] or life["replacing_at"] or life["deactivated_at"]
                     or life["devshard_deactivated_at"]) or t     # else the end of life that was logged
    fails = [r for r in uses.refused.get(life["escrow"], ()) if r["failed_at"] is not None
             and exhausted - TRIGGER_WINDOW <= r["failed_at"] <= exhausted + timedelta(milliseconds=1)]
    return fails[-1] if fails else None


def _request_path(d: dict[str, Any], life: dict[str, Any], t: datetime, uses: Uses, spans: Spans,
                  opts: RemintOptions, lives: dict[int, dict[str, Any]]) -> None:
    """A request-triggered exhaustion: find the request, its reservation, the balance."""
    eid = life["escrow"]
    f = _trigger(life, t, uses)
    ev = d["evidence"]
    ev["exhaustion"] = {"escrow_balance_exhausted": utc(life["exhausted_at"]),
                        "gateway_replacing_exhausted_escrow": utc(life["replacing_at"]),
                        "deactivated": utc(life["deactivated_at"] or life["devshard_deactivated_at"])}
    if f is None:
        _no_trigger_logged(d, life, uses, spans)
        return
    price = life["token_price"]
    max_tokens = f["max_tokens_logged"] or DEFAULT_MAX_TOKENS
    res = reservation(f["input_bytes"], max_tokens, price)
    d["request"] = {"request": f["request"], "at": utc(f["failed_at"]), "input_bytes": f["input_bytes"],
                    "max_tokens": max_tokens,
                    "max_tokens_source": ("logged" if f["max_tokens_logged"] else
                                          f"not logged: the gateway default {DEFAULT_MAX_TOKENS:,} "
                                          "(GATEWAY_DEFAULT_MAX_TOKENS) applies when the request gave none"),
                    "token_price": price, "reservation": res,
                    "reservation_formula": "(input bytes + max_tokens) x token_price"}
    d["timing_ms"] = {"failure_to_exhausted": _ms(f["failed_at"], utc(life["exhausted_at"])),
                      "failure_to_deactivation": _ms(f["failed_at"], utc(life["deactivated_at"]
                                                                          or life["devshard_deactivated_at"])),
                      "failure_to_replacement": _ms(f["failed_at"], utc(life["replaced_at"]))}
    thr = opts.threshold
    bal = balance_at(life, f["failed_at"], uses, spans)
    chk = check_bound(life, f["failed_at"], uses, spans, _checked_threshold(life, thr))
    lower, source = bal["lower"], bal["source"]
    if chk is not None and (lower is None or chk["lower"] > lower):
        lower, source = chk["lower"], chk["source"]
    d["balance_estimate"] = lower if lower is not None else bal["estimate"]
    d["balance_source"] = source
    d["evidence"]["balance"] = {"lower_bound": lower, "upper_bound": bal["upper"], "threshold": thr,
                                "from_chain_amount": bal["lower"], "from_periodic_check": chk and chk["lower"]}
    recent = uses.before(eid, f["failed_at"], since=f["failed_at"] - timedelta(minutes=opts.recent_minutes))
    d["evidence"]["recent_ordinary_requests"] = recent.succeeded
    missing = d["missing"]
    if res is None:
        missing.append("the reservation: " + ("the request's input bytes are not logged" if f["input_bytes"] is None
                                              else "the escrow's token price (no chain record)"))
    if lower is not None and res is not None and res <= lower:
        missing.append(f"an account of the balance: the reservation {res:,} does not exceed the balance the logs "
                       f"account for ({lower:,}); requests in flight or costs the logs do not show")
        d["summary"] = "request-triggered exhaustion the logged balance does not explain"
        return
    hold_era = life.get("hold_era")      # set for a gateway that holds escrows (run)
    why = (_classify_hold_era(d, lower, hold_era["release_balance"]) if hold_era is not None
           else _classify(d, bal, lower, thr, recent, opts))
    if why is None:
        return
    shown = f"{res:,}" if res is not None else "an amount that is unknown"
    d["summary"] = (f"request {f['request']} ({f['input_bytes']:,} input bytes, max_tokens {max_tokens:,}) could "
                    f"not reserve {shown}; {why}")
    if d["classification"] == "spurious":
        d["counterfactual"] = _affordable(life, f, max_tokens, uses, spans, lives)


def _first_end(life: dict[str, Any]) -> datetime:
    """The first end-of-life line of a request-path replacement."""
    return min(x for x in (utc(life["exhausted_at"]), utc(life["replacing_at"]), utc(life["deactivated_at"]),
                           utc(life["devshard_deactivated_at"]), utc(life["replaced_at"])) if x is not None)


def _no_trigger_logged(d: dict[str, Any], life: dict[str, Any], uses: Uses, spans: Spans) -> None:
    """A request-path replacement whose failing request is not in the logs read: say what is
    missing, and the balance as far as it is known."""
    first = _first_end(life)
    gap = spans.gap_before(first)
    missing = d["missing"]
    absent = [name for name, col in (("runner_prepare_failed (the request that could not be reserved)", None),
                                     ("escrow_balance_exhausted", "exhausted_at"),
                                     ("escrow_depletion_deactivated", "deactivated_at")) if col is None or
              life[col] is None]
    missing.append("not in the logs read: " + ", ".join(absent)
                   + (f"; {gap}, where they would be" if gap else ""))
    missing.append("the triggering request, so its input bytes and reservation")
    last = uses.before(life["escrow"], first).last
    if last is not None:
        missing.append(f"the escrow's use after its last logged request at {utc_text(last)}")
    bal = balance_at(life, first, uses, spans)
    d["balance_estimate"], d["balance_source"] = bal["estimate"], bal["source"]
    if bal["estimate"] is None:
        missing.append("its balance: " + ("; ".join(bal["limits"]) or "not logged"))
    d["summary"] = (f"replaced with reason {d['reason']!r} at {utc_text(first)}, but the request-path evidence "
                    "is not in the logs read")


def _classify_hold_era(d: dict[str, Any], lower: int | None, release: int | None) -> str | None:
    """A request-path replacement on a gateway that holds escrows (v4.1.2+, gateway-logs.md 14.2):
    it replaces at once, without a hold, only when balance + recoverable in flight is below the
    model's release balance (``release``: logged by a hold of the model, None when none was), so
    #1799's healthy escrow would have been held. Legitimate when the logs' lower bound agrees;
    unknown when it does not (requests the logs do not show spent the balance, or the gateway
    misjudged it), or when the release balance is not logged."""
    rule = ("this gateway holds escrows (v4.1.2+): it replaces one at once only when its balance and "
            "recoverable in flight are below the release balance")
    if release is None:
        d["missing"].append("the model's release balance: no hold of the model is logged, and " + rule)
        d["summary"] = "request-triggered replacement on a gateway that holds escrows; its release balance is unknown"
        return None
    if lower is not None and lower >= release:
        d["missing"].append(f"an account of the balance: {rule} {release:,}, yet the logged requests leave at least "
                            f"{lower:,}: requests the logs do not show spent it, or the gateway misjudged it")
        d["summary"] = "request-triggered replacement without a hold that the logged balance does not explain"
        return None
    d["classification"], d["basis"] = "legitimate", "hold-era rule"
    return f"{rule} {release:,}" + ("" if lower is None else f" (the logs account for at least {lower:,})")


def _classify(d: dict[str, Any], bal: dict[str, Any], lower: int | None, thr: int, recent: Tally,
              opts: RemintOptions) -> str | None:
    """Legitimate or spurious, on the strongest basis the logs give (a balance bound, the
    estimate, recent ordinary requests), and why; None (and what is missing) when none does."""
    if bal["upper"] is not None and bal["upper"] < thr:   # the deposit (or a logged balance) is a hard fact
        d["classification"], d["basis"] = "legitimate", "balance bound"
        why = f"its balance was at most {bal['upper']:,}, below the {thr:,} threshold: a real end of life"
    elif lower is not None and lower >= thr:
        d["classification"], d["basis"] = "spurious", "balance bound"
        why = f"its balance was at least {lower:,}, at or above the {thr:,} threshold"
    elif bal["estimate"] is not None:
        d["classification"], d["basis"] = "legitimate", "balance estimate"
        d["balance_estimate"] = max(bal["estimate"], lower or 0)
        why = (f"its estimated balance {d['balance_estimate']:,} was below the {thr:,} threshold (a lower bound"
               + (f"; at most {bal['upper']:,})" if bal["upper"] is not None else ")"))
    elif recent.succeeded:
        d["classification"], d["basis"] = "spurious", "recent ordinary requests (balance unknown)"
        why = (f"it had just served {recent.succeeded} ordinary request(s) in the {opts.recent_minutes} min before "
               f"(last at {utc_text(recent.last_succeeded)}); its balance is unknown")
    else:
        d["missing"].append("its balance: " + ("; ".join(bal["limits"]) or "not logged")
                            + f"; and no ordinary request served in the {opts.recent_minutes} min before")
        d["summary"] = "request-triggered exhaustion; the balance at the failure is unknown"
        return None
    return why


def _active(life: dict[str, Any], t: datetime, lives: dict[int, dict[str, Any]]) -> Iterable[dict[str, Any]]:
    """The other escrows of the escrow's model that were active at ``t``: minted (or first
    seen) by then, and not yet at their end of life."""
    for other in lives.values():
        if other["escrow"] == life["escrow"] or other["model"] != life["model"]:
            continue
        born = utc(other["minted_at"] or other["first_seen"])
        if born is None or born > t:
            continue
        if other["end_of_life"] is not None and other["end_of_life"][1] <= t:
            continue
        yield other


def _affordable(life: dict[str, Any], f: dict[str, Any], max_tokens: int, uses: Uses, spans: Spans,
                lives: dict[int, dict[str, Any]]) -> dict[str, Any]:
    """What affordability-aware routing would have done with the request at its time."""
    t = f["failed_at"]
    can, unknown = [], []
    for other in _active(life, t, lives):
        need = reservation(f["input_bytes"], max_tokens, other["token_price"])
        bal = balance_at(other, t, uses, spans)
        if need is not None and bal["lower"] is not None and bal["lower"] >= need:
            can.append({"escrow": other["escrow"], "balance_at_least": bal["lower"], "reservation": need})
        elif need is None or bal["lower"] is None:
            unknown.append(other["escrow"])
    if can:
        best = max(can, key=lambda c: c["balance_at_least"])
        return {"action": "route", "escrow": best["escrow"], "candidates": can, "unknown": unknown,
                "text": (f"send the request to escrow {best['escrow']} of the same model (balance at least "
                         f"{best['balance_at_least']:,} >= its reservation {best['reservation']:,}); "
                         f"escrow {life['escrow']} stays active")}
    if unknown:
        return {"action": "unknown", "escrow": None, "candidates": [], "unknown": unknown,
                "text": (f"escrows {', '.join(map(str, unknown))} of the model were active; whether one could "
                         "afford the request is unknown; otherwise refuse it with a clear error and keep "
                         f"escrow {life['escrow']} active")}
    return {"action": "refuse", "escrow": None, "candidates": [], "unknown": [],
            "text": (f"no active escrow of the model could afford it: refuse the request with a clear error "
                     f"(503, Retry-After) and keep escrow {life['escrow']} active")}


# -- mints -----------------------------------------------------------------------------------
def _skips(lives: dict[int, dict[str, Any]]) -> list[tuple[str, datetime, datetime, int]]:
    """The replacements the gateway skipped (``escrow_depletion_replacement_skipped``, e.g.
    ``target_already_met``): per skip, the model, the stretch in which a mint of the model
    stood in for the replacement (from the hold that ended the escrow, else its end of life,
    to the skip line) and the escrow. A held escrow leaves the active count, so the rotator
    mints while it is held, and its replacement is then not needed."""
    out = []
    for eid, life in lives.items():
        at = utc(life.get("skipped_at"))
        if at is None or not life.get("model"):
            continue
        h = _hold_of(life)
        lo = (h["_line_at"] or h["started_at"]) if h is not None else None
        if lo is None and life["end_of_life"] is not None:
            lo = life["end_of_life"][1]
        out.append((life["model"], lo or at - ROTATION_PASS_GAP, at, eid))
    return sorted(out, key=lambda x: x[2])


def _mints(store: Store, epoch: int, deacts: dict[int, dict[str, Any]], spans: Spans,
           opts: RemintOptions, skips: list[tuple[str, datetime, datetime, int]] = ()
           ) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Mints of ``epoch`` per model, each with its cause; and the mint peaks."""
    rows = [{**m, "ts": utc(m["ts"])} for m in store.query("remints_mints")]
    rows = [m for m in rows if m["epoch"] == epoch and m["ts"] is not None]
    by_model: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for m in rows:
        by_model[m["model"] or "?"].append(m)
    start_pass, start_basis = _start_pass(store, epoch, rows, spans)
    models_out, peaks = [], []
    for model, ms in sorted(by_model.items()):
        ms.sort(key=lambda m: m["ts"])
        lone = [m for m in ms if m["replaces_escrow"] is None and m["role"] == "regular" and not m["hold_top_up"]]
        target, target_src = opts.rotation_target, "given (--rotation-target)"
        first_pass: list[dict[str, Any]] = []
        if lone:
            first_pass = [lone[0]]
            for m in lone[1:]:
                if m["ts"] - first_pass[-1]["ts"] > ROTATION_PASS_GAP:
                    break
                first_pass.append(m)
        if target is None:
            if lone and spans.saw_epoch_start(epoch, lone[0]["ts"]):
                target = len(first_pass)
                target_src = (f"estimated: the rotator's epoch-start pass, {len(first_pass)} regular mint(s) from "
                              f"{utc_text(first_pass[0]['ts'])}, each within {int(ROTATION_PASS_GAP.total_seconds())} s "
                              "of the last")
            elif any(m["model"] == model for m in start_pass):
                first_pass = [m for m in start_pass if m["model"] == model]
                target = len(first_pass)
                target_src = (f"inferred from the logs: the rotator's epoch-start pass minted {target} regular "
                              f"escrow(s) of this model from {utc_text(start_pass[0]['ts'])} ({start_basis}); the logs "
                              "do not show the epoch's start itself, and the configured target_count is not "
                              "logged (--rotation-target N overrides)")
            else:
                target_src = ("unknown: the logs read show no baseline for it: neither the start of the epoch (no "
                              "phase-gate line of its PoC or of the epoch before) nor a rotation pass that minted "
                              "it next to a retirement of temp bridge escrows or together with another model "
                              "(give --rotation-target N)")
        legit_pending: list[datetime] = []   # legitimate deactivations with no replacement line
        skipped = {x[3] for x in skips if x[0] == model}
        for d in deacts.values():
            # a retention retirement is not replaced, nor is one whose replacement was skipped
            if d["model"] == model and d["classification"] == "legitimate" and d["replacement_escrow"] is None \
                    and d["trigger"] not in ("rotation", "retention") and d["escrow"] not in skipped \
                    and d["deactivated_at"]:
                legit_pending.append(d["deactivated_at"])
        legit_pending.sort()
        rotation_left = target or 0
        # the latest lone regular mint within each skip's stretch stood in for its replacement
        stand_ins = set()
        for _, lo, hi, _eid in (x for x in skips if x[0] == model):
            inside = [m for m in ms if m["replaces_escrow"] is None and not m["hold_top_up"] and m["role"] == "regular"
                      and lo <= m["ts"] <= hi and m not in first_pass and id(m) not in stand_ins]
            if inside:
                stand_ins.add(id(inside[-1]))
        for m in ms:
            old = m["replaces_escrow"]
            if old is not None:
                cls = deacts.get(old, {}).get("classification", "unknown")
                m["cause"] = f"replacement_{cls}"
            elif m["hold_top_up"]:
                m["cause"] = "hold_top_up"
            elif m["role"] == "temp":
                m["cause"] = "rotation"
            elif target is not None and m in first_pass and rotation_left > 0:
                m["cause"], rotation_left = "rotation", rotation_left - 1
            elif id(m) in stand_ins:
                m["cause"] = "replacement_skipped"
            elif legit_pending and legit_pending[0] <= m["ts"]:
                legit_pending.pop(0)
                m["cause"] = "reconciliation_legitimate"
            elif target is None:
                m["cause"] = "rotation_or_unexplained"
            else:
                m["cause"] = "unexplained"
        causes: dict[str, int] = defaultdict(int)
        hours: dict[datetime, dict[str, Any]] = {}
        for m in ms:
            causes[m["cause"]] += 1
            h = m["ts"].replace(minute=0, second=0, microsecond=0)
            slot = hours.setdefault(h, {"hour": h, "mints": 0, "by_cause": defaultdict(int)})
            slot["mints"] += 1
            slot["by_cause"][m["cause"]] += 1
        models_out.append({
            "model": model, "mints": len(ms), "by_cause": dict(causes),
            "rotation_target": target, "rotation_target_source": target_src,
            "by_hour": [{**v, "by_cause": dict(v["by_cause"])} for v in hours.values()],
            "events": [{"escrow": m["escrow"], "at": utc(m["ts"]), "role": m["role"], "cause": m["cause"],
                        "replaces": m["replaces_escrow"], "replacement_reason": m["replacement_reason"],
                        "tx_hash": m["tx_hash"], "amount": m["amount"]} for m in ms],
        })
        if target is not None:
            peaks.extend({**p, "rotation_baseline": target, "baseline_basis": target_src}
                         for p in _peaks(model, ms, opts))
    return models_out, peaks


EXPLAINED = ("rotation", "replacement_legitimate", "reconciliation_legitimate", "hold_top_up", "replacement_skipped")
START_PASS_NEAR = timedelta(minutes=5)     # a temp retirement this close to a pass marks it the epoch-start rotation


def _start_pass(store: Store, epoch: int, rows: list[dict[str, Any]], spans: Spans) -> tuple[list[dict[str, Any]], str]:
    """The rotator's epoch-start pass as the logs show it without the epoch's start: the first
    run of lone regular mints of ``epoch`` (each within ``ROTATION_PASS_GAP`` of the last, all
    models), taken as the epoch-start rotation when it retired temp bridge escrows next to it
    (``queries/remints_temp_retirements.sql``) or minted several models together (a
    reconciliation tops up one model's shortfall). Returns the pass and what identified it, or
    ``([], "")``."""
    lone = sorted((m for m in rows if m["replaces_escrow"] is None and m["role"] == "regular" and not m["hold_top_up"]),
                  key=lambda m: m["ts"])
    if not lone:
        return [], ""
    first = [lone[0]]
    for m in lone[1:]:
        if m["ts"] - first[-1]["ts"] > ROTATION_PASS_GAP:
            break
        first.append(m)
    lo, hi = first[0]["ts"] - START_PASS_NEAR, first[-1]["ts"] + START_PASS_NEAR
    temps = [r for r in store.query("remints_temp_retirements") if lo <= utc(r["ts"]) <= hi]
    models = sorted({m["model"] or "?" for m in first})
    why = []
    if temps:
        why.append(f"it retired {len(temps)} temp bridge escrow(s) ({', '.join(str(r['escrow']) for r in temps)})")
    if len(models) > 1:
        why.append(f"it minted {len(models)} models together ("
                   + ", ".join(f"{sum(1 for m in first if (m['model'] or '?') == x)} {x}" for x in models) + ")")
    return (first, " and ".join(why)) if why else ([], "")


def _peaks(model: str, ms: list[dict[str, Any]], opts: RemintOptions) -> list[dict[str, Any]]:
    """Windows of ``peak_window_minutes`` with at least ``peak_min`` mints the explained causes do
    not cover; greedy, the window with the largest rest first, windows never overlap."""
    w = timedelta(minutes=opts.peak_window_minutes)
    out: list[dict[str, Any]] = []
    todo = list(ms)
    while todo:
        best = None
        for i, m in enumerate(todo):
            inside = [x for x in todo[i:] if x["ts"] - m["ts"] <= w]
            rest = sum(1 for x in inside if x["cause"] not in EXPLAINED)
            if best is None or rest > best[0]:
                best = (rest, inside)
        rest, inside = best
        if rest < opts.peak_min:
            break
        by: dict[str, int] = defaultdict(int)
        for x in inside:
            by[x["cause"]] += 1
        out.append({"model": model, "start": utc(inside[0]["ts"]), "end": utc(inside[-1]["ts"]),
                    "window_minutes": opts.peak_window_minutes, "mints": len(inside),
                    "explained": len(inside) - rest, "rest": rest,
                    "explained_by": {k: v for k, v in by.items() if k in EXPLAINED},
                    "rest_by": {k: v for k, v in by.items() if k not in EXPLAINED},
                    "escrows": [x["escrow"] for x in inside]})
        todo = [x for x in todo if x not in inside]
    return out


# -- the analysis ------------------------------------------------------------------------------
def _in_epoch(life: dict[str, Any], d: dict[str, Any] | None, epoch: int, spans: Spans,
              lives: dict[int, dict[str, Any]]) -> bool:
    """An escrow of the epoch, or a deactivation during it: its replacement was minted for the
    epoch, or the gateway named the epoch last before it (first after it, when the logs name
    none before)."""
    if life["creation_epoch"] == epoch:
        return True
    if d is None:
        return False
    if d["replacement_escrow"] is not None and (lives.get(d["replacement_escrow"]) or {}).get("creation_epoch") == epoch:
        return True
    return d["at"] is not None and spans.epoch_near(d["at"]) == epoch


def _costs(deacts: list[dict[str, Any]], lives: dict[int, dict[str, Any]], uses: Uses) -> dict[str, Any]:
    sp = [d for d in deacts if d["classification"] == "spurious"]
    repl = [d["replacement_escrow"] for d in sp if d["replacement_escrow"] is not None]
    amounts = [lives.get(r, {}).get("amount") for r in repl]
    known = [int(a) for a in amounts if a is not None]
    settle = [d["settlement_due"] for d in sp]
    failed = [r["request"] for d in sp for r in uses.refused.get(d["escrow"], ())]
    return {
        "spurious_deactivations": len(sp),
        "replacement_escrows": repl,
        "funds_locked_in_replacements": sum(known) if len(known) == len(amounts) else None,
        "funds_locked_known_part": sum(known),
        "replacement_amounts_unknown": len(amounts) - len(known),
        "mint_transactions": len(repl),
        "deactivation_settlement_transactions": sum(1 for s in settle if s) if None not in settle else None,
        "deactivation_settlement_unknown": sum(1 for s in settle if s is None),
        "deactivations_without_replacement": len(sp) - len(repl),
        "failed_requests": len(failed),
        "failed_request_ids": failed,
    }


def _moments(lives: dict[int, dict[str, Any]], uses: Uses, opts: RemintOptions) -> list[tuple[int, datetime | None]]:
    """Every (escrow, moment) the classification may tally requests before, so that one query
    answers them all: each escrow's whole life; and for each request-path deactivation, its
    trigger's failure (the balance since the mint or since a logged balance, the periodic
    check's 30 s, the recent use before it, the other escrows of the model then), or,
    without one, its first end-of-life line."""
    out: list[tuple[int, datetime | None]] = [(eid, None) for eid in lives]

    def balance(life: dict[str, Any], t: datetime) -> None:
        out.append((life["escrow"], t))
        if life["low_at"] is not None:
            out.append((life["escrow"], utc(life["low_at"])))

    for life in lives.values():
        end = life["end_of_life"]
        if end is None or end[0] != "request":
            continue
        f = _trigger(life, end[1], uses)
        if f is None:
            balance(life, _first_end(life))
            continue
        t = f["failed_at"]
        balance(life, t)
        out += [(life["escrow"], t - CHECK_INTERVAL), (life["escrow"], t - timedelta(minutes=opts.recent_minutes))]
        for other in _active(life, t, lives):
            balance(other, t)
    return out


def _unavailable(store: Store, epoch: int) -> str | None:
    logs = store.one("SELECT count(*) FROM log_events")[0]
    if logs:
        return None
    return (f"no gateway logs in the store: the escrow lifecycle of epoch {epoch} is in the gateway's logs; "
            "collect them with --gateway-log PATH")


def run(store: Store, epoch: int, options: Options | None = None, *, ctx: Run | None = None) -> Result:
    opts = RemintOptions.of(options)
    why = _unavailable(store, epoch)
    if why:
        res = Result.missing_input(KEY, TITLE, why, ["gateway_log", "chain_escrows", "accounting"])
        res.complete = True  # the epoch report is not incomplete for it: coverage says the logs are absent
        return res
    (logged,) = store.query("remints_logged_threshold")
    if opts.threshold is not None:
        threshold_source = "given (--threshold)"
    elif logged["threshold"] is not None:
        opts = replace(opts, threshold=int(logged["threshold"]))
        threshold_source = "logged by the gateway (escrow_balance_low threshold=)" + (
            f"; {logged['distinct_values']} different values logged, the most frequent used"
            if logged["distinct_values"] > 1 else "")
    else:
        opts = replace(opts, threshold=DEFAULT_THRESHOLD)
        threshold_source = "the gateway's default balanceMinimumThreshold (none logged)"
    spans = Spans.load(store)
    untimed = Untimed(store.query("remints_untimed_lines"))
    lives = {int(r["escrow"]): r for r in store.query("remints_escrow_lives")}
    uses = Uses(store, untimed.place_requests(store.query("remints_requests")))
    untimed.place_lives(lives)
    for life in lives.values():         # the periodic check's silence bounds a balance by this one
        life["logged_threshold"] = logged["threshold"]
    all_holds = holds(store.query("remints_holds"), lives, uses)
    for h in all_holds:
        lives[h["escrow"]].setdefault("holds", []).append(h)
    for life in lives.values():     # once per escrow: each deactivation asks it of all its model's escrows
        life["end_of_life"] = _end_of_life(life)
    uses.ask(_moments(lives, uses, opts))
    run_ = run_for(store, epoch, ctx)        # one run's facts for the steps below
    if _holds_escrows(run_):
        # per model: the release balance its holds logged (the same for every hold of the model)
        release = {h["model"]: int(h["release_balance"]) for h in all_holds if h["release_balance"] is not None}
        for life in lives.values():      # the model's release balance, None when no hold of it is logged
            life["hold_era"] = {"release_balance": release.get(life["model"])}
    pending = {eid for eid, life in lives.items() if _outcome_pending(life, spans)}
    all_deacts = {eid: d for eid, life in lives.items()
                  if eid not in pending and (d := classify(life, uses, spans, opts, lives))}
    for eid, d in all_deacts.items():
        if lives[eid].get("untimed"):
            untimed.unplace(d)
    deacts = [d for eid, d in sorted(all_deacts.items()) if _in_epoch(lives[eid], d, epoch, spans, lives)]
    epoch_deacts = {d["escrow"]: d for d in deacts}
    mints, peaks = _mints(store, epoch, all_deacts, spans, opts, _skips(lives))
    epoch_holds = [_shown(h) for h in all_holds if _hold_in_epoch(h, lives, epoch, spans)]
    unaffordable, unaffordable_untimed = _unaffordable(store, epoch, spans)
    peaks_unknown = [m["model"] for m in mints if m["rotation_target"] is None]   # not assessed: unknown, not none
    costs = _costs(deacts, lives, uses)
    escrows = [_life(life, uses, epoch_deacts.get(eid)) for eid, life in sorted(lives.items())
               if life["creation_epoch"] == epoch or eid in epoch_deacts]
    unplaced = [eid for eid, life in lives.items() if life["creation_epoch"] is None and eid not in epoch_deacts]
    notes: list[str] = []
    cov_unknown: list[str] = []
    cov_missing = [f"{r['item']}: {r['detail']}" for r in store.query("remints_probe_failures", epoch=epoch)]
    not_probed = [eid for eid, life in lives.items() if not life["chain_probed"] and
                  (life["creation_epoch"] == epoch or eid in epoch_deacts)]
    if not_probed:
        cov_missing.append(f"chain records not collected for {len(not_probed)} escrow(s) "
                           f"({', '.join(map(str, not_probed[:10]))}{' ...' if len(not_probed) > 10 else ''}): "
                           "collect with --node URL")
    lost = untimed.unplaceable(lives)
    if lost:
        cov_missing.append(f"{len(lost)} deactivation or mint line(s) without a time that no epoch places (no chain "
                           "record of the escrow, no epoch= on its rotation line): " + "; ".join(lost[:10])
                           + (" ..." if len(lost) > 10 else ""))
    untimed_mints = untimed.mints(lives, epoch)
    if untimed_mints:
        notes.append(f"{len(untimed_mints)} mint(s) of epoch {epoch} logged without a time "
                     f"({', '.join(map(str, untimed_mints))}): in no hour and no peak")
    # escrows of no known epoch may be of this one, unless neither the chain nor a log line knows it
    unseen = stored_state(store, epoch, run_) is None and all(e != epoch for _, e in spans.marks)
    if not escrows and not deacts and not mints and not lost and (not unplaced or unseen):
        first = min((sp["first_ts"] for sp in spans.spans if sp["first_ts"]), default=None)
        last = max((sp["last_ts"] for sp in spans.spans if sp["last_ts"]), default=None)
        cov_missing.append(f"no escrow of epoch {epoch} in the logs read (they cover {utc_text(first)} … "
                           f"{utc_text(last)}): its escrows are unknown, not absent")
    part = _part_read(run_, spans)
    if pending:
        cov_unknown.append(f"{len(pending)} escrow(s) ran out on a request just before the logs read end "
                           f"({', '.join(map(str, sorted(pending)))}): the gateway's answer, a hold or a "
                           "replacement, is not logged yet, so they are not counted as deactivations")
    if peaks_unknown:
        notes.append(f"mint peaks not assessed for {', '.join(peaks_unknown)}: the rotation target is unknown "
                     "(give --rotation-target N)")
    if unplaced:
        notes.append(f"{len(unplaced)} escrow(s) with no known creation epoch (no chain record, rotation line or "
                     "accounting record) are left out")
    notes.append(f"threshold {opts.threshold:,} ({threshold_source}); reservation = (input bytes + max_tokens) "
                 f"x token_price, max_tokens {DEFAULT_MAX_TOKENS:,} where the request gave none")
    if unaffordable:
        notes.append(_unaffordable_summary(unaffordable))
    if unaffordable_untimed:
        notes.append(f"{unaffordable_untimed} request(s) no escrow could fund were logged without a time: no epoch can be "
                     "told for them, so none counts them (queries/remints_unaffordable_requests.sql)")
    findings = _with_log_lines(store, _findings(deacts, peaks, epoch) + _hold_findings(epoch_holds, epoch))
    counts: dict[str, int] = defaultdict(int)
    for d in deacts:
        counts[d["classification"]] += 1
    data = {"epoch": epoch, "available": True, "threshold": opts.threshold, "threshold_source": threshold_source,
            "classifications": dict(counts), "deactivations": deacts, "mints": mints, "peaks": peaks,
            "peaks_not_assessed": peaks_unknown,
            "costs": costs, "escrows": escrows, "notes": notes,
            "holds": epoch_holds, "unaffordable_requests": unaffordable}
    tables = _tables(deacts, mints, peaks, costs, notes) + _hold_tables(epoch_holds, unaffordable)
    header = [("epoch", str(epoch)),
              ("deactivations", ", ".join(f"{v} {k}" for k, v in sorted(counts.items())) or "none in the logs read"),
              ("mints", ", ".join(f"{m['model']} {m['mints']}" for m in mints) or "none in the logs read"),
              ("spurious cost", f"{costs['mint_transactions']} mint tx, {costs['failed_requests']} failed request(s)"
                                + (" in the part of the epoch the logs cover: a lower bound" if part else ""))]
    if epoch_holds:
        header.append(("holds", ", ".join(f"{v} {k}" for k, v in sorted(Counter(h["outcome"] for h in epoch_holds)
                                                                           .items()))))
    if unaffordable:
        header.append(("unaffordable requests", _per_model(unaffordable)))
    coverage = {"sources": ["gateway_log", "chain_escrows", "accounting"], "missing": cov_missing,
                "unknown": [f"mint peaks of {m}: rotation target unknown" for m in peaks_unknown] + cov_unknown
                + ([part] if part else []),
                "log_spans": [{"path": s["path"], "first": utc(s["first_ts"]), "last": utc(s["last_ts"])}
                              for s in spans.spans]}
    return Result(KEY, TITLE, data, tables, findings, coverage, complete=not cov_missing, header=header)


def _part_read(run_: Run, spans: Spans) -> str | None:
    """What the logs read leave out of the epoch's effective span, when they leave some of it
    out (its deactivations, mints, holds and costs are then those of the part read); None when
    they cover it whole, or when its span is not known."""
    from . import cpoc

    epoch = run_.epoch
    w = next((w for w in cpoc.epoch_windows(run_) if w["window"] == "epoch"), None)
    if w is None or w["start_time"] is None or w["end_time"] is None:
        return None
    start, end = utc(w["start_time"]), utc(w["end_time"])
    if spans.covered(start, end):
        return None
    inside = [s for s in spans.spans if s["last_ts"] >= start and s["first_ts"] <= end]
    read = "no log read covers any of it"
    if inside:
        lo, hi = max(start, min(s["first_ts"] for s in inside)), min(end, max(s["last_ts"] for s in inside))
        read = f"the logs read cover {utc_text(lo)} … {utc_text(hi)} of it" + (
            "" if spans.covered(lo, hi) else ", with gaps between the files read")
    return (f"epoch {epoch}'s span {utc_text(start)} … {utc_text(end)}: {read}; its deactivations, mints, holds "
            "and spurious cost are those of the part read (a lower bound)")


def _hold_in_epoch(h: dict[str, Any], lives: dict[int, dict[str, Any]], epoch: int, spans: Spans) -> bool:
    """A hold of an escrow of the epoch, or one the gateway logged during it."""
    if (lives.get(h["escrow"]) or {}).get("creation_epoch") == epoch:
        return True
    t = h["started_at"] or h["ended_at"]
    return t is not None and spans.epoch_near(t) == epoch


def _shown(h: dict[str, Any]) -> dict[str, Any]:
    """A hold as the JSON gives it (without the analysis's own keys)."""
    return {k: v for k, v in h.items() if not k.startswith("_")}


def _unaffordable(store: Store, epoch: int, spans: Spans) -> tuple[list[dict[str, Any]], int]:
    """The requests no escrow could fund in the epoch (``queries/remints_unaffordable_requests.sql``):
    those the gateway logged during it; and how many were logged without a time (no epoch is
    theirs: counted in none, said in a note)."""
    out, untimed = [], 0
    for r in store.query("remints_unaffordable_requests"):
        r["at"] = utc(r["at"])
        if r["at"] is None:
            untimed += 1
            continue
        if spans.epoch_near(r["at"]) != epoch:
            continue
        r["escrows"] = [int(e) for e in r["escrows"] or []]
        out.append(r)
    return out, untimed


def _per_model(rows: list[dict[str, Any]]) -> str:
    return ", ".join(f"{m} {n}" for m, n in sorted(Counter(r["model"] or "?" for r in rows).items()))


def _unaffordable_summary(rows: list[dict[str, Any]]) -> str:
    return (f"{len(rows)} request(s) no escrow could fund ({_per_model(rows)}): answered 503 with Retry-After; no "
            "escrow was retired, none spent a nonce or balance (#1799's fix at work); the cost to the client is the "
            "503")


def _hold_findings(hs: list[dict[str, Any]], epoch: int) -> list[Finding]:
    """``spurious_hold``: a hold begun with the escrow's balance at or above its own release
    balance held a healthy escrow: one request's reservation failed on it (e.g. through the
    per-escrow route /devshard/<id>, which the pooled route's pre-filter does not cover), the
    mechanism of #1799 surviving in the hold path."""
    out = []
    for h in hs:
        if h["balance"] is None or h["release_balance"] is None or int(h["balance"]) < int(h["release_balance"]):
            continue
        req = h["request"] or {}
        out.append(Finding(
            "spurious_hold", "warn", {"kind": "escrow", "id": str(h["escrow"])},
            (f"escrow {h['escrow']} held {_duration(h['held_for_s'])} ({h['outcome']}) with a balance of "
             f"{int(h['balance']):,}, at or above its release balance {int(h['release_balance']):,}"
             + (f": request {req['request']} ({_amount(req.get('input_bytes'))} input bytes, reservation "
                f"{_amount(req.get('reservation'))}) could not reserve on it" if req else "")),
            {"epoch": epoch, "request": h["request"], "balance": h["balance"],
             "recoverable_in_flight": h["recoverable_in_flight"], "release_balance": h["release_balance"],
             "started_at": h["started_at"], "ended_at": h["ended_at"], "held_for_s": h["held_for_s"],
             "outcome": h["outcome"], "reason": h["reason"],
             "query": "queries/remints_holds.sql, queries/remints_requests.sql"},
            model=h["model"]))
    return out


LOG_LINES_SHOWN = 40       # a finding's evidence names at most this many lines


def _with_log_lines(store: Store, findings: list[Finding]) -> list[Finding]:
    """Each finding with ``log_lines``, where the lines it rests on are: ``path:line name`` of its
    escrows' own lines (mint_peak: the minted escrows') and of its request's, in log order, at
    most LOG_LINES_SHOWN (queries/remints_evidence_lines.sql, one query for every finding)."""
    def keys(f: Finding) -> tuple[set[int], str | None]:
        ev = f.evidence
        if f.code == "mint_peak":
            return {int(e) for e in ev.get("escrows") or []}, None
        req = ev.get("request")
        return {int(f.subject["id"])}, (req.get("request") if isinstance(req, dict) else req)

    wanted = {id(f): keys(f) for f in findings}
    escrows = sorted({e for es, _ in wanted.values() for e in es})
    requests = sorted({r for _, r in wanted.values() if r})
    if not escrows and not requests:
        return findings
    rows = store.query("remints_evidence_lines", escrows=escrows, requests=requests)
    for f in findings:
        es, req = wanted[id(f)]
        lines = [f"{r['path']}:{r['line_no']} {r['name']}" for r in rows
                 if (r["request"] is None and r["escrow"] in es) or (req is not None and r["request"] == req)]
        f.evidence["log_lines"] = lines[:LOG_LINES_SHOWN]
        if len(lines) > LOG_LINES_SHOWN:
            f.evidence["log_lines_more"] = len(lines) - LOG_LINES_SHOWN
    return findings


def _hold_tables(hs: list[dict[str, Any]], unaffordable: list[dict[str, Any]]) -> list[Table]:
    cols = ["escrow", "model", "reason", "started_at", "balance", "recoverable_in_flight", "release_balance",
            "outcome", "ended_at", "held_for_s", "replacement_escrow"]
    t1 = Table("Escrow holds", cols, [{k: h[k] for k in cols} for h in hs],
               narrow=["reason", "recoverable_in_flight"],
               failing=lambda r: r["balance"] is not None and r["release_balance"] is not None
               and r["balance"] >= r["release_balance"])
    ucols = ["request", "model", "escrows_refused", "escrows", "at", "retry_after_seconds", "reservation", "input_bytes"]
    t2 = Table("Requests no escrow could fund (503, Retry-After)", ucols,
               [{**{k: r[k] for k in ucols}, "escrows": ", ".join(map(str, r["escrows"]))} for r in unaffordable],
               [_unaffordable_summary(unaffordable)] if unaffordable else [])
    return [t for t in (t1, t2) if t.rows]


def _life(life: dict[str, Any], uses: Uses, d: dict[str, Any] | None) -> dict[str, Any]:
    """One escrow's life: creation, use, failures, end."""
    price = life["token_price"]
    used = uses.before(life["escrow"])
    failures = []
    for r in uses.refused.get(life["escrow"], ()):
        mt = r["max_tokens_logged"] or DEFAULT_MAX_TOKENS
        failures.append({"request": r["request"], "at": utc(r["failed_at"] or r["ts"]),
                         "input_bytes": r["input_bytes"], "max_tokens": mt,
                         "max_tokens_logged": r["max_tokens_logged"] is not None,
                         "reservation": reservation(r["input_bytes"], mt, price)})
    return {
        "escrow": life["escrow"], "model": life["model"], "creation_epoch": life["creation_epoch"],
        "epoch_source": life["epoch_source"],
        "created": {"at": utc(life["minted_at"]), "role": life["role"], "tx_hash": life["mint_tx"],
                    "replaces": life["replaces_escrow"]} if life["minted_at"] or life["replaces_escrow"] else None,
        "chain": ({"amount": life["amount"], "token_price": price, "settled": life["chain_settled"],
                   "creator": life["creator"]} if life["chain_found"] else None),
        "chain_status": ("found" if life["chain_found"] else "not found (never existed or pruned)"
                         if life["chain_probed"] else "not collected"),
        "requests_served": used.served,
        "attempts": used.served_attempts,
        "reserved_at_most": used.cost(price),
        "failures": failures,
        "first_seen": utc(life["first_seen"]), "last_seen": utc(life["last_seen"]),
        "accounting_latest_nonce": life["acct_latest_nonce"],
        "end": d["classification"] if d else None,
    }


def _amount(v: int | None) -> str:
    """A number for a summary; unknown is said, never shown as 0."""
    return "unknown" if v is None else f"{v:,}"


def _findings(deacts: list[dict[str, Any]], peaks: list[dict[str, Any]], epoch: int) -> list[Finding]:
    out = []
    for d in deacts:
        if d["classification"] != "spurious":
            continue
        req = d["request"] or {}
        timing = d["timing_ms"] or {}
        out.append(Finding(
            "spurious_remint", "warn", {"kind": "escrow", "id": str(d["escrow"])},
            (f"escrow {d['escrow']} retired by one request ({_amount(req.get('input_bytes'))} input bytes, "
             f"reservation {_amount(req.get('reservation'))}) while its balance was "
             + (f"at least {d['balance_estimate']:,}" if d["balance_estimate"] is not None else "unknown")
             + (f"; replaced by {d['replacement_escrow']}" if d["replacement_escrow"] else "")),
            {"epoch": epoch, "request": req, "balance_estimate": d["balance_estimate"],
             "balance_source": d["balance_source"], "basis": d["basis"], "timing_ms": timing,
             "replacement_escrow": d["replacement_escrow"], "counterfactual": d["counterfactual"],
             "query": "queries/remints_escrow_lives.sql, queries/remints_requests.sql"},
            model=d["model"]))
    for p in peaks:
        out.append(Finding(
            "mint_peak", "warn", {"kind": "model", "id": p["model"]},
            (f"{p['mints']} mints of {p['model']} from {utc_text(p['start'])} to {utc_text(p['end'])}: {p['explained']} explained by the "
             f"rotation target and legitimate deactivations, {p['rest']} not; baseline {p['rotation_baseline']} "
             f"regular mint(s) per epoch-start rotation ({p['baseline_basis'].split(':')[0]})"),
            {"epoch": epoch, **p, "query": "queries/remints_mints.sql"}, model=p["model"]))
    return out


def _tables(deacts, mints, peaks, costs, notes) -> list[Table]:
    d_rows = [{"escrow": d["escrow"], "model": d["model"], "classification": d["classification"],
               "trigger": d["trigger"], "reason": d["reason"], "at": d["at"],
               "balance": d["balance_estimate"], "balance_is": _balance_is(d),
               "reservation": (d["request"] or {}).get("reservation"),
               "replacement_escrow": d["replacement_escrow"],
               "to_replacement_s": (None if not d["timing_ms"] or d["timing_ms"]["failure_to_replacement"] is None
                                    else round(d["timing_ms"]["failure_to_replacement"] / 1000, 3)),
               "why": d.get("summary") if d["classification"] != "unknown" else
               (d.get("summary", "") + "; missing: " + "; ".join(d["missing"]))} for d in deacts]
    t1 = Table("Deactivations", ["escrow", "model", "classification", "trigger", "reason", "at", "balance",
                                 "balance_is", "reservation", "replacement_escrow", "to_replacement_s", "why"],
               d_rows, list(notes), narrow=["trigger", "reason", "reservation"],
               priority=["escrow", "classification", "model", "at", "why"],
               failing=lambda r: r["classification"] == "spurious")
    m_rows = [{"model": m["model"], "hour": h["hour"], "mints": h["mints"],
               "causes": ", ".join(f"{k} {v}" for k, v in sorted(h["by_cause"].items()))}
              for m in mints for h in m["by_hour"]]
    t2 = Table("Mints per model and hour", ["model", "hour", "mints", "causes"], m_rows,
               [f"{m['model']}: rotation target {m['rotation_target'] if m['rotation_target'] is not None else 'unknown'}"
                f" ({m['rotation_target_source']})" for m in mints])
    t3 = Table("Mint peaks", ["model", "start", "end", "mints", "explained", "rest"],
               [{k: p[k] for k in ("model", "start", "end", "mints", "explained", "rest")} for p in peaks])
    c_rows = [{"item": k, "value": v} for k, v in costs.items() if k != "failed_request_ids"]
    t4 = Table("Cost of the spurious remints", ["item", "value"], c_rows)
    return [t1, t2, t3, t4]


def _balance_is(d: dict[str, Any]) -> str | None:
    """What a deactivation's balance is: a lower bound (the evidence's, as its finding says "at
    least"), a balance the gateway logged, or an estimate from the requests (None: unknown)."""
    if d["balance_estimate"] is None:
        return None
    if ((d.get("evidence") or {}).get("balance") or {}).get("lower_bound") == d["balance_estimate"]:
        return "at least"
    return "logged" if (d["balance_source"] or "").startswith("logged") else "estimate"


# -- what the registry reads of a result (analyses/registry.py): its charts and metrics ---------
def charts(result: Result) -> list:
    """Mints per model over time (cumulative), with every deactivation marked by its class."""
    from ..result import Chart
    from .frame import chart_time

    series = []
    for m in result.data["mints"]:
        times = sorted(chart_time(e["at"]) for e in m["events"] if e["at"])
        if times:
            series.append({"name": m["model"].split("/")[-1], "points": [[t, i] for i, t in enumerate(times, 1)]})
    if not series:
        return []
    events = [{"x": chart_time(d["at"]), "label": f"escrow {d['escrow']}: {d['classification']}",
               "class": d["classification"]} for d in result.data["deactivations"] if d["at"]]
    return [Chart("Mints per model, with deactivations (red spurious, green legitimate, grey unknown)", "line",
                  "time (UTC)", "mints so far", series, events=events)]


def metrics(result: Result):
    for cls, n in Counter(d["classification"] for d in result.data["deactivations"]).items():
        yield "auditor_remint_deactivations", (str(cls),), n
