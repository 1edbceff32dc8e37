"""Preserved hosts under confirmation PoC (issue 8, incident 2107): ``auditor poc-overload N``.

During a confirmation PoC (from the trigger to the end of validation) a relaxed-mode
gateway sends real requests only to preserved hosts; every other slot's turn is a ghost.
A small preserved host that is the only preserved slot of an escrow then receives the
traffic of the whole escrow, fails it, and the misses can make the chain's miss test zero
its epoch reward. For every CPoC event of epoch N and every preserved host of the
event's snapshot this module reports its weight and the cap the proposed per-host limit
would give it, its load in the window against that cap and against its own load before
the window, per escrow the preserved slots, the other slots' ghosts and this host's
misses, its miss-test verdict and whether the window's misses alone flip it, and a
counterfactual replay of the window with the cap applied.

Pure functions (no database): :func:`host_cap`, :func:`inflight_profile`,
:func:`replay_with_cap`, :func:`flip_verdict`. The analysis: :func:`run` (reads the
``queries/poc_overload_*.sql`` files), also the ``poc_overload`` section of
``auditor epoch N``. Findings: ``poc_overload`` (warn; error when the miss test zeroed the
host and the window's misses flip its verdict; where no log covers any of a preserved host's
windows, from the accounting API's misses in dispatch phase ``confirmation_poc`` and the other
slots' ghosts: :func:`_accounting_findings`); ``miss_count_discrepancy`` (warn: a gateway's
accounting or a window's logs count more misses than the chain's epoch total,
:func:`cpoc.miss_count_discrepancies`); ``reward_zeroed_miss_test`` is the miss
test's own finding: the command (not the epoch report, which has the miss test's) repeats
it with the number of misses the evidence places in CPoC windows
(:func:`cpoc.with_cpoc_evidence`; in an epoch report the miss test's own findings carry them).
The CPoC events, preserved hosts, log span, attempts and window misses are facts of the run
(``cpoc.py``), shared with ``targets`` and the miss test; the miss test's verdicts come from
``misstest.facts`` of the same run, never from a second miss test.

Where the numbers come from, and what they assume, is printed with them:

* Load: the gateway logs' ``race_completed`` lines (probes excluded), start = end minus
  ``attempt_ms``. In flight is swept exactly from those intervals and sampled per second.
  Only this gateway's traffic is seen: other gateways' requests are not in the logs.
* Misses: the gateway's ``nonce_disposition`` of the attempt's nonce: ``unfinished_refused``
  (refused before the receipt) and ``unfinished_execution`` (failed after it), with the
  timeout applied (or its outcome not logged); an unfinished attempt without a
  disposition is "left unfinished", not counted as a miss (the rule: queries/views/nonce_miss.sql).
  Devshard misses reach the chain only through settlement, without timestamps (chain-api.md
  9.2, 12.4), so the window is
  the attempt's start time; how much of the chain's ``missed_requests`` the logs cover is
  reported per host.
* Counterfactual: the cap applies while PoC generation is active (trigger to gen_end, as
  proposed) unless ``cap_span='window'``; a request started while the host already has
  ``cap`` requests in flight is refused before any receipt: its nonce becomes a ghost,
  which the chain counts as assigned and not missed. Admitted requests keep their
  observed duration and outcome (less load would likely fail fewer: the remaining
  misses are an upper bound); a refused request is not retried on another host here. The
  network p0 is held at the epoch's value.
"""

from __future__ import annotations

import heapq
import math
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from ..heights import in_cpoc_window, overlaps_cpoc_window
from ..result import Finding, Result, Table, utc_text
from ..times import MAX_SECONDS
from . import capability, cpoc, misstest
from .context import Run, run_for
from .cpoc import (  # noqa: F401  (the pure rules stay importable from here)
    DEFAULT_PER_10000, PER_10000_DEFAULT_SOURCE, host_cap, inflight_profile,
    with_cpoc_evidence)
from .frame import Call, Options, option, require_epoch

if TYPE_CHECKING:      # annotations only: importing the analysis (its --help) needs no DuckDB
    from ..store import Store

KEY, TITLE = "poc_overload", "Preserved hosts under confirmation PoC"



@dataclass(frozen=True)
class PocOverloadOptions(Options):
    """Options of ``auditor poc-overload`` (defaults: what ``auditor epoch N`` uses)."""

    per_10000: float | None = cpoc.per_10000_option()     # PoCMaxConcurrentPer10000Weight; None = the gateway default
    lookback_minutes: float = option(cpoc.DEFAULT_LOOKBACK_MINUTES, "--lookback", "Minutes before each window "
                                     "that count as the host's usual load.", metavar="MIN", min=1,
                                     max=MAX_SECONDS / 60)
    cap_span: str = option("generation", "--cap-span", "Where the counterfactual applies the cap: PoC generation "
                           "(as proposed) or the whole window.", choices=("generation", "window"))
    overload_factor: float = 1.5         # a clear margin: peak in flight >= factor x cap and >= cap + 2
    tiny_share: float = 0.02             # structural risk: an escrow whose only preserved slots are held by hosts below this share of the model
    miss_test_findings: bool = False     # repeat reward_zeroed_miss_test with the CPoC evidence (the command)
    accounting_share: float = 0.5        # without a log: warn when the accounting's CPoC-phase misses are at least this share of the chain's

    @classmethod
    def call(cls, epoch: int | None, **values: Any) -> Call:
        """The command repeats reward_zeroed_miss_test with the cPoC evidence (the epoch report does not)."""
        return Call(epoch, cls(**values, miss_test_findings=True))


# -- pure rules ---------------------------------------------------------------------------------
def replay_with_cap(attempts: Sequence[Mapping[str, Any]], cap: int, span_start: datetime,
                    span_end: datetime) -> dict:
    """Replay one host's attempts in start order with at most ``cap`` in flight during
    ``[span_start, span_end]``: an attempt that starts in the span while ``cap`` are in flight
    is refused before any receipt (not a miss); admitted ones keep their duration and outcome.
    Each attempt needs ``start_ts``, ``end_ts`` and ``miss`` (bool)."""
    if cap < 1:
        raise ValueError("cap must be at least 1")
    ends: list[datetime] = []
    refused = refused_misses = remaining_misses = admitted = 0
    for a in sorted(attempts, key=lambda a: a["start_ts"]):
        s = a["start_ts"]
        while ends and ends[0] <= s:
            heapq.heappop(ends)
        if in_cpoc_window(s, span_start, span_end) and len(ends) >= cap:
            refused += 1
            refused_misses += bool(a["miss"])
            continue
        admitted += 1
        remaining_misses += bool(a["miss"])
        heapq.heappush(ends, a["end_ts"])
    return {"requests": len(attempts), "admitted": admitted, "refused": refused,
            "misses_avoided": refused_misses, "misses_remaining": remaining_misses}


def flip_verdict(missed: int, total: int, removed: int, p0: Decimal) -> dict:
    """The miss test with ``removed`` of the misses turned into ghosts (assigned, not missed:
    ``total`` unchanged) at the same p0."""
    removed = max(0, min(removed, missed))
    before = misstest.miss_test_detail(missed, total, p0)
    after = misstest.miss_test_detail(missed - removed, total, p0)
    return {"missed": missed - removed, "total": total, "passed": after.passed,
            "critical_misses": after.critical, "flips": (not before.passed) and after.passed}


# -- the analysis -------------------------------------------------------------------------------
def _per_minute(n: int, seconds: float) -> float | None:
    return round(n * 60.0 / seconds, 2) if seconds > 0 else None


@dataclass
class _Inputs:
    """What every window of the report reads (the run's shared facts, and this analysis's own)."""

    opt: PocOverloadOptions
    per_10000: float
    span: Mapping[str, Any]
    hosts: list[dict]
    attempts: list[dict]
    ghosts: dict[str, list[dict]]
    slot_map: dict[int, list[dict]]
    acct: dict[tuple[str, str], dict]
    preserved_by_ep: dict[tuple[str, str], set[str]]
    mt: misstest.MissTestFacts
    mt_rows: dict[str, dict]
    host_windows: dict[tuple[str, str, str], dict]     # cpoc.host_windows by (episode, participant, model)

    @property
    def lookback(self) -> timedelta:
        return timedelta(minutes=self.opt.lookback_minutes)


@dataclass
class _Event:
    """One timed CPoC event's window and the attempts around it."""

    ev: Mapping[str, Any]
    start: datetime
    end: datetime
    cap_end: datetime
    in_win: list[dict]          # started in the window
    running: list[dict]         # running at some moment of it
    before: list[dict]          # started in the lookback before it
    ghosts: list[dict]


def run(store: Store, epoch: int, options: Options | None = None, *, ctx: Run | None = None) -> Result:
    opt = PocOverloadOptions.of(options)
    run_ = run_for(store, epoch, ctx)
    require_epoch(store, epoch, run_)
    per_10000 = opt.per_10000 if opt.per_10000 is not None else DEFAULT_PER_10000
    per_source = "given with --per-10000" if opt.per_10000 is not None else PER_10000_DEFAULT_SOURCE
    why = cpoc.not_collected(run_)
    if why is not None:
        return Result.missing_input(KEY, TITLE, why, ["chain"])
    events = cpoc.events(run_)
    if not events:
        data = {"epoch": epoch, "available": True, "per_10000": per_10000, "per_10000_source": per_source,
                "windows": [], "events": [], "cpoc_misses": {}, "notes": [f"epoch {epoch} had no confirmation PoC"]}
        return Result(KEY, TITLE, data, [Table(TITLE, [], [], data["notes"])],
                      _discrepancies(run_, misstest.facts(run_).by_participant(), opt.participant),
                      coverage={"sources": ["chain"], "missing": [], "unknown": []})
    notes: list[str] = []
    missing: list[str] = []
    unknown: list[str] = []
    inp = _inputs(run_, opt, per_10000, notes, missing, unknown)
    windows: list[dict] = []
    findings: list[Finding] = []
    for ev in events:
        _event_windows(ev, inp, windows, findings, notes, unknown)
    findings.extend(_accounting_findings(run_, windows, inp, notes))
    findings.extend(_discrepancies(run_, inp.mt_rows, opt.participant))
    cpoc_misses = _cpoc_misses(run_, opt, inp.mt_rows)
    if opt.miss_test_findings:
        zeroed = [f for f in inp.mt.findings if f.code == "reward_zeroed_miss_test"
                  and (opt.participant is None or f.subject["id"] == opt.participant)]
        findings.extend(cpoc.with_gateway_misses(with_cpoc_evidence(zeroed, cpoc_misses,
                                                                    {w["participant"] for w in windows}),
                                                 cpoc.gateway_misses(run_)))
    findings = capability.with_refusals(run_, findings)      # each host's refusals next to its misses
    budget = _metrics_budget(store.query("poc_overload_metrics_budget"), cpoc.timed(events), per_10000)
    if budget:
        notes.extend(b["text"] for b in budget)
    data = {"epoch": epoch, "available": True, "per_10000": per_10000, "per_10000_source": per_source,
            "per_10000_from_metrics": budget,
            "cap_rule": "max(1, floor(weight x per_10000 / 10000))",
            "events": [{"episode": e["episode"], "trigger_height": e["trigger_height"], "gen_end": e["gen_end"],
                        "val_end": e["val_end"], "start": e["trigger_time"],
                        "gen_end_time": e["gen_end_time"], "end": e["val_end_time"],
                        "gen_start_time": e.get("gen_start_time"), "val_start_time": e.get("val_start_time")}
                       for e in events],
            "windows": windows, "cpoc_misses": cpoc_misses, "notes": notes}
    coverage = {"sources": ["chain", "accounting", "gateway_log"], "missing": missing, "unknown": unknown}
    tables = _tables(windows, notes, per_source, len(events), inp.mt.p0, opt.cap_span)
    by_gateway = [{"participant": p, "gateway": g, "misses": n}
                  for p, c in cpoc_misses.items() for g, n in (c.get("misses_by_gateway") or {}).items()]
    if by_gateway:                      # several gateways' accounting: whose traffic failed (issue 33)
        tables.append(Table("Misses per gateway (accounting API, whole epoch)", ["participant", "gateway", "misses"],
                            by_gateway, [cpoc.GATEWAY_MISSES_BASIS]))
    return Result(KEY, TITLE, data, tables, findings, coverage,
                  complete=not missing, header=_header(data, inp.span))


def _inputs(run_: Run, opt: PocOverloadOptions, per_10000: float, notes: list[str], missing: list[str],
            unknown: list[str]) -> _Inputs:
    """Read what the windows need; say in ``notes``, ``missing`` and ``unknown`` what is not known."""
    store, span, hosts = run_.store, cpoc.log_span(run_), cpoc.preserved_hosts(run_)
    mt = misstest.facts(run_)
    if mt.unavailable is not None:
        notes.append(f"miss test unavailable: {mt.unavailable}")
        unknown.append("miss test verdicts (performance summary not collected)")
    events = cpoc.events(run_)
    timed = cpoc.timed(events)
    for e in events:
        if e not in timed:
            missing.append(f"{e['episode']}: block times of its trigger / end of validation not collected: "
                           "its window cannot be placed in wall-clock time")
    attempts, have_disp = cpoc.attempts(run_, opt.lookback_minutes)
    ghosts = {e["episode"]: store.query("poc_overload_ghosts", since=e["trigger_time"], until=e["val_end_time"])
              for e in timed} if timed and span["first_ts"] is not None else {}
    if attempts and not have_disp:
        notes.append("the logs have no nonce_disposition lines: misses are estimated from race_completed "
                     "(has_receipt, finished), without the timeout outcome (marked _est)")
    slot_map: dict[int, list[dict]] = defaultdict(list)
    for s in store.query("poc_overload_escrow_slots"):
        slot_map[s["escrow"]].append(s)
    preserved_by_ep: dict[tuple[str, str], set[str]] = defaultdict(set)
    for h in hosts:
        preserved_by_ep[(h["episode"], h["model_id"])].add(h["participant"])
    return _Inputs(opt, per_10000, span, hosts, attempts, ghosts, slot_map, cpoc.accounting(run_),
                   preserved_by_ep, mt, mt.by_participant(),
                   {(w["episode"], w["participant"], w["model"]): w for w in cpoc.host_windows(run_)})


def _event_windows(ev: Mapping[str, Any], inp: _Inputs, windows: list[dict], findings: list[Finding],
                   notes: list[str], unknown: list[str]) -> None:
    """The windows of one CPoC event, one per preserved host, and their findings."""
    ep = ev["episode"]
    ev_hosts = [h for h in inp.hosts if h["episode"] == ep]
    if not ev_hosts:
        notes.append(f"{ep}: no preserved-node snapshot stored for this event (see coverage)")
    if ev["trigger_time"] is None or ev["val_end_time"] is None:
        windows.extend(_unknown_window(ev, h, inp.per_10000, cpoc.UNTIMED) for h in ev_hosts)
        return
    event = _event(ev, inp)
    for h in ev_hosts:
        if inp.opt.participant and h["participant"] != inp.opt.participant:
            continue
        entry, f = _window(event, h, inp, notes, unknown)
        windows.append(entry)
        if f is not None:
            findings.append(f)


def _event(ev: Mapping[str, Any], inp: _Inputs) -> _Event:
    start, end = ev["trigger_time"], ev["val_end_time"]
    cap_end = end if inp.opt.cap_span == "window" else (ev["gen_end_time"] or end)
    lookback = inp.lookback
    return _Event(ev, start, end, cap_end,
                  in_win=[a for a in inp.attempts if in_cpoc_window(a["start_ts"], start, end)],
                  running=[a for a in inp.attempts if overlaps_cpoc_window(a["start_ts"], a["end_ts"], start, end)],
                  before=[a for a in inp.attempts if start - lookback <= a["start_ts"] < start],
                  ghosts=inp.ghosts.get(ev["episode"], []))


def _window(e: _Event, h: Mapping[str, Any], inp: _Inputs, notes: list[str],
            unknown: list[str]) -> tuple[dict, Finding | None]:
    """One preserved host in one timed CPoC window: its load, misses, miss test and counterfactual."""
    ev, p, model = e.ev, h["participant"], h["model_id"]
    hw = inp.host_windows[(ev["episode"], p, model)]       # the run's one evidence state and miss count
    state, state_text = hw["state"], hw["detail"]
    entry = _base_window(ev, h, inp.per_10000)
    entry["evidence"] = {"state": state, "detail": state_text}
    mt = inp.mt_rows.get(p)
    entry["miss_test"] = None if mt is None else {
        "verdict": mt["verdict"], "total": mt["total"], "missed": mt["missed"],
        "critical_misses": mt["critical_misses"], "rewarded_coins": mt["rewarded_coins"]}
    entry["accounting_cpoc"] = inp.acct.get((p, model))
    entry["structural_risk"] = _structural(h, ev, inp.slot_map, inp.preserved_by_ep, inp.opt.tiny_share,
                                           e.in_win, e.ghosts)
    if state == "none":
        entry.update(peak_inflight=None, requests=None, misses=None, counterfactual=None)
        counted = any(e_ == ev["episode"] and m == model and (hp, model) in inp.acct for e_, hp, m in inp.host_windows)
        _unknown_once(unknown, f"{ev['episode']} {model}: {state_text}: load and counterfactual unknown; misses "
                      + ("only the accounting API's of the hosts it counts, every CPoC together" if counted
                         else "unknown"))
        return entry, None
    mine = [a for a in e.in_win if a["participant"] == p and a["model"] == model]
    mine_run = [a for a in e.running if a["participant"] == p and a["model"] == model]
    share_before, share_win = _load(entry, e, inp, mine, mine_run)
    entry["counterfactual"] = _counterfactual(entry, e, inp, mine_run)
    _miss_test_effect(entry, mt, inp.mt.p0, notes)
    entry["attribution"] = _attribution(entry, mt, inp)
    if state == "partial":
        _unknown_once(unknown, f"{ev['episode']} {model}: {state_text}: figures cover that part only")
    return entry, _finding(entry, inp.opt, share_before, share_win)


def _load(entry: dict, e: _Event, inp: _Inputs, mine: list[dict],
          mine_run: list[dict]) -> tuple[float | None, float | None]:
    """The host's load in the window and before it, its misses there and per escrow; returns
    its share of the model's requests before and in the window."""
    p, model = entry["participant"], entry["model"]
    mine_before = [a for a in e.before if a["participant"] == p and a["model"] == model]
    model_win = [a for a in e.in_win if a["model"] == model]
    model_before = [a for a in e.before if a["model"] == model]
    prof = inflight_profile(((a["start_ts"], a["end_ts"]) for a in mine_run), e.start, e.end)
    kinds, not_missed = _kinds(mine)
    by_minute: dict[str, int] = defaultdict(int)
    for a in mine:
        by_minute[a["start_ts"].strftime("%H:%M")] += 1
    share_win = len(mine) / len(model_win) if model_win else None
    share_before = len(mine_before) / len(model_before) if model_before else None
    lookback_s = inp.lookback.total_seconds()
    entry.update({
        "peak_inflight": prof["peak"],
        "peak_at": prof["peak_at"] if prof["peak"] else None,
        "p95_inflight_per_second": _percentile(prof["per_second"], 0.95),
        "inflight_series": _series(prof["per_second"], e.start),
        "requests": len(mine),
        "requests_per_minute": _per_minute(len(mine), (e.end - e.start).total_seconds()),
        "busiest_minute": max(by_minute.values()) if by_minute else 0,
        "before": {"minutes": inp.opt.lookback_minutes, "requests": len(mine_before),
                   "requests_per_minute": _per_minute(len(mine_before), lookback_s),
                   "model_requests_per_minute": _per_minute(len(model_before), lookback_s),
                   "share_of_model_requests": _r(share_before)},
        "share_of_model_requests": _r(share_win),
        "misses": inp.host_windows[(e.ev["episode"], p, model)]["misses"],     # cpoc's one count
        "misses_by_kind": kinds,
        "unfinished_not_missed": not_missed,
        "escrows": _escrows(p, model, mine, inp.slot_map, inp.preserved_by_ep[(e.ev["episode"], model)], e.ghosts),
    })
    return share_before, share_win


def _kinds(attempts: list[dict]) -> tuple[dict[str, int], dict[str, int]]:
    """How many of ``attempts`` are misses of each kind, and how many ended unfinished otherwise."""
    kinds: dict[str, int] = defaultdict(int)
    not_missed: dict[str, int] = defaultdict(int)
    for a in attempts:
        if a["miss"]:
            kinds[a["kind"]] += 1
        elif a["kind"]:
            not_missed[a["kind"]] += 1
    return dict(sorted(kinds.items())), dict(sorted(not_missed.items()))


def _counterfactual(entry: dict, e: _Event, inp: _Inputs, mine_run: list[dict]) -> dict | None:
    """The window replayed with the host's cap, and what that assumes; None without a cap."""
    cap = entry["cap"]
    if cap is None:
        return None
    opt, start, cap_end = inp.opt, e.start, e.cap_end
    rep = replay_with_cap(mine_run, cap, start, cap_end)
    return {**rep, "cap": cap, "span": opt.cap_span,
            "span_start": start, "span_end": cap_end,
            "assumptions": [
                f"cap {cap} = max(1, floor({entry['weight']} x {inp.per_10000:g} / 10000)) in flight, "
                f"applied from {utc_text(start)} to {utc_text(cap_end)} "
                f"({'PoC generation: grace + generation' if opt.cap_span != 'window' else 'the whole CPoC window'})",
                "a request over the cap is refused before any receipt: its nonce becomes a ghost "
                "(assigned, not missed); it is not retried on another host here",
                "admitted requests keep their observed duration and outcome (less load would "
                "likely fail fewer: misses_remaining is an upper bound)",
                "the network p0 is held at the epoch's value"]}


def _miss_test_effect(entry: dict, mt: Mapping[str, Any] | None, p0: Decimal | None, notes: list[str]) -> None:
    """Does this window flip the host's miss test, and would the cap have saved it."""
    n_miss, cf = entry["misses"], entry["counterfactual"]
    if mt is None or p0 is None or not mt["total"]:
        entry["window_flips_verdict"] = None
        return
    entry["window_flips_verdict"] = flip_verdict(mt["missed"], mt["total"], n_miss, p0)["flips"]
    if cf is not None:
        after = flip_verdict(mt["missed"], mt["total"], cf["misses_avoided"], p0)
        cf["epoch_missed_after"], cf["epoch_total_after"] = after["missed"], after["total"]
        cf["would_pass_miss_test"] = after["passed"]
    if n_miss > mt["missed"]:
        notes.append(f"{entry['episode']} {entry['participant']}: the logs place {n_miss} misses in the window, "
                     f"more than the chain's {mt['missed']} missed_requests for the epoch (escrows of another "
                     "epoch, or timeouts the chain did not count): the flip uses at most the chain's count")


def _attribution(entry: dict, mt: Mapping[str, Any] | None, inp: _Inputs) -> dict:
    n_miss, p, span = entry["misses"], entry["participant"], inp.span
    return {
        "source": "gateway logs: race_completed start times, nonce_disposition of the same nonce",
        "window_misses": n_miss,
        "chain_missed_requests": None if mt is None else mt["missed"],
        "share_of_chain_misses": (None if mt is None or not mt["missed"]
                                  else round(min(n_miss, mt["missed"]) / mt["missed"], 4)),
        "log_span": [span["first_ts"], span["last_ts"]],
        "logged_misses_read": sum(1 for a in inp.attempts if a["participant"] == p and a["miss"]),
    }


def _cpoc_misses(run_: Run, opt: PocOverloadOptions, mt_rows: Mapping[str, dict]) -> dict[str, dict]:
    """Per participant (the one asked for, or all): the misses the logs place in its CPoC
    windows (:func:`cpoc.participant_misses`) beside the chain's missed_requests."""
    out = {}
    by_gateway = cpoc.gateway_misses(run_)           # several gateways' accounting: each one's misses
    for p, c in cpoc.participant_misses(run_).items():
        if opt.participant and p != opt.participant:
            continue
        mt = mt_rows.get(p)
        out[p] = {"misses_in_cpoc_windows": c["misses_in_cpoc_windows"], "windows": list(c["windows"]),
                  "evidence": list(c["evidence"]), "windows_without_evidence": list(c["windows_without_evidence"]),
                  "chain_missed_requests": None if mt is None else mt["missed"],
                  "misses_in_cpoc_windows_accounting": c["misses_in_cpoc_windows_accounting"],
                  "source": c["source"]}
        if by_gateway:
            out[p]["misses_by_gateway"] = by_gateway.get(p, {})
    return out


SERIES_POINTS = 360


def _series(per_second: Sequence[int], start: datetime) -> dict:
    """The window's in-flight load for a chart: the most in flight in each step of
    ``step_seconds`` (at most ``SERIES_POINTS`` steps), from ``start``."""
    step = max(1, math.ceil(len(per_second) / SERIES_POINTS))
    return {"start": start, "step_seconds": step,
            "max_inflight": [max(per_second[i:i + step]) for i in range(0, len(per_second), step)]}


def _unknown_once(unknown: list[str], text: str) -> None:
    if text not in unknown:
        unknown.append(text)


def _r(x: float | None) -> float | None:
    return None if x is None else round(x, 4)


def _percentile(values: Sequence[int], q: float) -> int | None:
    if not values:
        return None
    s = sorted(values)
    return s[min(len(s) - 1, max(0, math.ceil(q * len(s)) - 1))]


def _base_window(ev: Mapping[str, Any], h: Mapping[str, Any], per_10000: float) -> dict:
    weight = None if h["weight"] is None else int(h["weight"])
    total = None if h["model_total_weight"] is None else int(h["model_total_weight"])
    return {"episode": ev["episode"], "event_sequence": ev["event_sequence"], "epoch": ev.get("epoch_index"),
            "participant": h["participant"], "model": h["model_id"],
            "weight": weight, "model_weight": total,
            "share": None if weight is None or not total else round(weight / total, 6),
            "preserved_nodes": list(h["node_ids"]),
            "preserved_weight": None if h["preserved_weight"] is None else int(h["preserved_weight"]),
            "cap": host_cap(weight, per_10000),
            "window": {"start": ev["trigger_time"], "gen_end": ev["gen_end_time"], "end": ev["val_end_time"]}}


def _unknown_window(ev, h, per_10000, why) -> dict:
    e = _base_window(ev, h, per_10000)
    e.update(evidence={"state": "none", "detail": why}, peak_inflight=None, requests=None, misses=None,
             counterfactual=None, miss_test=None, structural_risk=None)
    return e


def _escrow_slots(slot_map, escrow) -> list[dict]:
    return slot_map.get(escrow, [])


def _escrows(p, model, mine_win, slot_map, preserved: set[str], win_ghosts) -> list[dict]:
    """Per escrow this host served in the window: its slots, how many were preserved, the
    other slots' ghosts in the window by reason and phase, this host's misses there."""
    by_escrow: dict[int, list[dict]] = defaultdict(list)
    for a in mine_win:
        by_escrow[a["escrow"]].append(a)
    out = []
    for esc, rows in sorted(by_escrow.items()):
        sl = _escrow_slots(slot_map, esc)
        known = bool(sl)
        group = (sl[0]["group_size"] if sl and sl[0]["group_size"] else (len(sl) if sl and sl[0]["source"] != "log" else None))
        ghost_other: dict[str, int] = defaultdict(int)
        ghost_mine = 0
        for g in win_ghosts:
            if g["escrow"] != esc:
                continue
            if g["participant"] == p:
                ghost_mine += g["ghosts"]
            else:
                ghost_other[f"{g['reason'] or '?'}/{g['dispatch_phase'] or '?'}"] += g["ghosts"]
        kinds, not_missed = _kinds(rows)
        out.append({
            "escrow": esc,
            "slots": group,
            "slot_list_source": sl[0]["source"] if sl else None,
            "host_slots": sum(1 for s in sl if s["participant"] == p) if known else None,
            "preserved_slots": sum(1 for s in sl if s["participant"] in preserved) if known else None,
            "slots_known": len(sl),
            "requests": len(rows),
            "misses": sum(1 for a in rows if a["miss"]),
            "misses_by_kind": kinds,
            "unfinished_not_missed": not_missed,
            "other_slots_ghosts": dict(sorted(ghost_other.items())),
            "own_ghosts": ghost_mine,
        })
    return out


def _structural(h, ev, slot_map, preserved_by_ep, tiny: float, in_win, win_ghosts) -> dict:
    """From chain data (and whatever slot lists the store has): is this host a tiny-share
    preserved host that is the only preserved slot of an escrow active in the window?"""
    p, model, ep = h["participant"], h["model_id"], ev["episode"]
    weight, total = h["weight"], h["model_total_weight"]
    share = None if weight is None or not total else int(weight) / int(total)
    preserved = preserved_by_ep[(ep, model)]
    active = {a["escrow"] for a in in_win if a["model"] == model} | {g["escrow"] for g in win_ghosts}
    only: list[int] = []
    for esc, sl in slot_map.items():
        mdl = {s["model_id"] for s in sl if s["model_id"]}
        if mdl and model not in mdl:
            continue
        chain_epoch = {s["epoch_index"] for s in sl if s["epoch_index"] is not None}
        if esc not in active and not (chain_epoch and ev.get("epoch_index") in chain_epoch):
            continue
        pres_hosts = {s["participant"] for s in sl if s["participant"] in preserved}
        if pres_hosts == {p}:
            only.append(esc)
    return {"share": None if share is None else round(share, 6), "tiny_share_below": tiny,
            "tiny": None if share is None else share < tiny,
            "rule": ("escrows active in the window (seen in the logs, or created in this epoch per the chain) "
                     "whose only preserved slots are this host's; tiny = share of the model's weight below "
                     "tiny_share_below"),
            "only_preserved_slot_in_escrows": sorted(only),
            "slot_lists_known": len(slot_map)}


def _finding(entry: dict, opt: PocOverloadOptions, share_before, share_win) -> Finding | None:
    cap, peak, misses = entry["cap"], entry["peak_inflight"], entry["misses"]
    if cap is None or peak is None or not misses:
        return None
    if peak < opt.overload_factor * cap or peak < cap + 2:
        return None
    if share_before is not None and share_win is not None and share_win <= 2 * share_before:
        return None       # its usual share of the model's load: not the preserved-slot pile-up
    mt = entry["miss_test"] or {}
    # zeroed: the test fails and the chain paid nothing (a failing host it paid is a discrepancy)
    zeroed = mt.get("verdict") == "zeroed_by_miss_test" and not mt.get("rewarded_coins")
    flips = bool(entry.get("window_flips_verdict"))
    severity = "error" if zeroed and flips else "warn"
    cf = entry["counterfactual"] or {}
    share = "an unknown share" if entry["share"] is None else f"{entry['share']:.2%}"
    chain = mt.get("missed")
    took = (f"took {misses} misses in the window" if chain is None or misses <= chain else
            f"took misses in the window: the logs count {misses}, more than the chain's {chain} for the whole "
            "epoch (miss_count_discrepancy), so at most the chain's count is settled")
    summary = (f"{entry['episode']}: preserved host with {share} of {entry['model']} weight peaked at "
               f"{peak} in flight against a cap of {cap} and {took}"
               + ("; they flip its miss test: epoch reward zeroed" if severity == "error" else ""))
    evidence = {
        "epoch": entry.get("epoch"), "episode": entry["episode"], "window": entry["window"], "weight": entry["weight"],
        "model_weight": entry["model_weight"], "share": entry["share"], "cap": cap,
        "peak_inflight": peak, "peak_at": entry.get("peak_at"),
        "requests": entry["requests"], "requests_per_minute": entry["requests_per_minute"],
        "before": entry["before"], "misses": misses, "misses_by_kind": entry["misses_by_kind"],
        "unfinished_not_missed": entry["unfinished_not_missed"],
        "escrows": entry["escrows"], "miss_test": entry["miss_test"],
        "window_flips_verdict": entry.get("window_flips_verdict"),
        "counterfactual": {k: cf.get(k) for k in ("refused", "misses_avoided", "misses_remaining",
                                                  "would_pass_miss_test", "span", "span_start", "span_end")},
        "attribution": entry["attribution"], "overload_rule": f"peak >= {opt.overload_factor} x cap and >= cap + 2",
        "query": "queries/poc_overload_attempts.sql",
    }
    return Finding("poc_overload", severity, {"kind": "participant", "id": entry["participant"]}, summary,
                   evidence, model=entry["model"])


def _discrepancies(run_: Run, mt_rows: Mapping[str, dict], participant: str | None) -> list[Finding]:
    """``miss_count_discrepancy``: each source counting more misses than the chain's epoch total."""
    return cpoc.miss_count_discrepancies(
        run_, {p: int(r["missed"]) for p, r in mt_rows.items() if r.get("missed") is not None}, participant)


def _accounting_findings(run_: Run, windows: list[dict], inp: _Inputs, notes: list[str]) -> list[Finding]:
    """``poc_overload`` from the accounting API where no log covers any of a preserved host's
    CPoC windows (:func:`cpoc.host_evidence`): error when taking its misses in dispatch phase
    ``confirmation_poc`` away flips the exact miss test of a host the chain did not pay, warn
    when they are at least ``accounting_share`` of its chain misses without flipping it."""
    out = []
    seen = {(w["participant"], w["model"]): w for w in windows}      # the hosts this report shows
    for (p, model), he in cpoc.host_evidence(run_).items():
        acct, w = he["accounting"], seen.get((p, model))
        if he["source"] != "accounting" or w is None or not acct["misses"]:
            continue
        mt = inp.mt_rows.get(p)
        if mt is None or inp.mt.p0 is None or not mt["total"]:
            notes.append(f"{p} {model}: the accounting API counts {acct['misses']} misses in dispatch phase "
                         "confirmation_poc; the chain's miss test for it is unknown, so they are not weighed")
            continue
        n, chain = acct["misses"], int(mt["missed"])
        flip = flip_verdict(chain, int(mt["total"]), n, inp.mt.p0)
        zeroed = mt["verdict"] == "zeroed_by_miss_test" and not mt.get("rewarded_coins")
        share_of_chain = round(min(n, chain) / chain, 4) if chain else None
        if zeroed and flip["flips"]:
            severity = "error"
        elif share_of_chain is not None and share_of_chain >= inp.opt.accounting_share:
            severity = "warn"
        else:
            continue
        ghosts: dict[str, int] = defaultdict(int)
        for esc in acct["escrows"]:
            for reason, g in esc["other_slots_ghosts"].items():
                ghosts[reason] += g
        share = "an unknown share" if w["share"] is None else f"{w['share']:.2%}"
        kinds = ", ".join(f"{v} {k.replace('_', ' ')}" for k, v in acct["misses_by_kind"].items())
        ghost_text = ", ".join(f"{g:,} {r}" for r, g in sorted(ghosts.items())) or "no"
        took = (f"{n} misses" if n <= chain else
                f"misses: the accounting counts {n}, more than the chain's {chain} for the whole epoch "
                "(miss_count_discrepancy), so at most the chain's count is settled;")
        summary = (f"preserved host with {share} of {model} weight took {took} in dispatch phase confirmation_poc "
                   f"({kinds}) while the other slots of its escrows had {ghost_text} ghosts in that phase "
                   f"(accounting API, every CPoC of the epoch together)"
                   + ("; they flip its miss test: epoch reward zeroed" if severity == "error" else
                      f"; {share_of_chain:.0%} of its {chain} misses on chain"))
        out.append(Finding("poc_overload", severity, {"kind": "participant", "id": p}, summary, {
            "epoch": run_.epoch, "basis": cpoc.ACCOUNTING_BASIS, "episodes": he["episodes"],
            "weight": w["weight"], "model_weight": w["model_weight"], "share": w["share"], "cap": w["cap"],
            "misses": n, "misses_by_kind": acct["misses_by_kind"],
            "other_slots_ghosts": dict(sorted(ghosts.items())),
            "escrows": acct["escrows"], "miss_test": w["miss_test"],
            "misses_flip_verdict": flip["flips"], "share_of_chain_misses": share_of_chain,
            "unknown_without_log": list(cpoc.UNKNOWN_WITHOUT_LOG),
            "severity_rule": (f"error when the miss test zeroed the host and removing these misses flips it; warn "
                              f"when they are at least {inp.opt.accounting_share:g} of its chain misses"),
            "query": "queries/poc_overload_accounting.sql"}, model=model))
    return out


def _metrics_budget(scrapes: list[dict], events: list[dict], per_10000: float) -> list[dict]:
    """What the /metrics scrapes taken during PoC generation say about the per-10,000 value:
    effective = floor(W x per / 10000) with W = min(current, baseline) weight bounds it to
    [effective x 10000 / W, (effective + 1) x 10000 / W). The gauge exposes no setting, and the
    absolute max_concurrent_requests may bind instead, so this is a check, not a reading."""
    out = []
    for sc in scrapes:
        t, e, w, wb = sc["scraped_at"], sc["effective_max"], sc["total_weight"], sc["baseline_weight"]
        if t is None or e is None or not w:
            continue
        ev = next((x for x in events
                   if in_cpoc_window(t, x["trigger_time"], x["gen_end_time"] or x["val_end_time"])), None)
        if ev is None:
            continue
        weight = min(w, wb) if wb else w
        lo, hi = e * 10000 / weight, (e + 1) * 10000 / weight
        inside = lo <= per_10000 < hi
        out.append({"scrape_id": sc["scrape_id"], "scraped_at": t, "episode": ev["episode"],
                    "effective_max": e, "weight": weight, "per_10000_between": [round(lo, 4), round(hi, 4)],
                    "consistent_with_used_value": inside,
                    "text": (f"metrics scrape {sc['scrape_id']} at {utc_text(t)} ({ev['episode']} PoC generation): "
                             f"effective max {e:g} at weight {weight:g} puts per_10000 in [{lo:.3g}, {hi:.3g}); "
                             f"the {per_10000:g} used is {'consistent' if inside else 'NOT consistent'} with it"
                             + ("" if inside else " (or the absolute max_concurrent_requests bound the budget)"))})
    return out


def _risk_text(r: Mapping[str, Any] | None) -> str:
    if not r:
        return "unknown"
    esc = r["only_preserved_slot_in_escrows"]
    if r["tiny"] and esc:
        return f"tiny share, only preserved slot of {len(esc)} escrow(s)"
    if r["tiny"]:
        return "tiny share" + ("" if r["slot_lists_known"] else " (slot lists unknown)")
    return "no"


def _tables(windows: list[dict], notes: list[str], per_source: str, n_events: int = 1,
            p0: Decimal | None = None, cap_span: str = "generation") -> list[Table]:
    rows = []
    acct_row: dict[tuple[str, str], str] = {}       # the row that prints a host's accounting count
    # hosts whose misses the logs count in some window: the accounting's count (every CPoC
    # together) holds those too, so it prints in no other row of theirs (it was counted twice)
    logged = {(w["participant"], w["model"]) for w in windows if w["misses"] is not None}
    for w in windows:
        cf = w.get("counterfactual") or {}
        mt = w.get("miss_test") or {}
        acct = w.get("accounting_cpoc")
        misses, misses_from = w["misses"], "gateway logs" if w["misses"] is not None else None
        flips = w.get("window_flips_verdict")
        key = (w["participant"], w["model"])
        if misses is None and acct is not None and key in logged:
            misses_from = (f"unknown: no log of this window; the accounting API's {acct['misses']:,} are every "
                           "CPoC's together, the logged windows' included")
        elif misses is None and acct is not None and key in acct_row:
            misses_from = f"accounting: in the {acct_row[key]} row"
        elif misses is None and acct is not None:       # a known number never prints as unknown
            acct_row[key] = w["episode"]
            misses = acct["misses"]
            misses_from = "accounting" + ("" if n_events == 1 else f", all {n_events} CPoCs together")
            if mt.get("total") and p0 is not None:     # whether these misses flip it, as its finding says
                flips = flip_verdict(int(mt["missed"]), int(mt["total"]), misses, p0)["flips"]
        rows.append({
            "episode": w["episode"], "model": w["model"], "participant": w["participant"],
            "weight": w["weight"], "share": w["share"], "cap": w["cap"],
            "peak_inflight": w["peak_inflight"], "requests": w["requests"],
            "rpm_before": (w.get("before") or {}).get("requests_per_minute"),
            "rpm_window": w.get("requests_per_minute"),
            "misses": misses, "misses_from": misses_from, "verdict": mt.get("verdict", "unknown"),
            "window_flips": flips,
            "cf_refused": cf.get("refused"), "cf_misses": cf.get("misses_remaining"),
            "cf_passes": cf.get("would_pass_miss_test"),
            "evidence": w["evidence"]["state"],
            "structural_risk": _risk_text(w.get("structural_risk")),
        })
    t_notes = [f"cap = max(1, floor(weight x per_10000 / 10000)); per_10000: {per_source}.",
               "weight: the participant's weight in the model's subgroup, which the gateway's cap reads; not the "
               "poc_weight of its preserved nodes (preserved_weight in --format json), which the preserved-weight "
               "sections sum.",
               "unknown = no gateway evidence for that window or model (never zero load).",
               "cf_*: the cap applied " + ("during PoC generation only (grace + generation, as proposed); "
                                           "--cap-span window applies it to the whole window"
                                           if cap_span != "window" else "over the whole window (--cap-span window)")
               + "; --format json has the counterfactual's assumptions."]
    if any(r["misses_from"] and r["misses_from"].startswith("accounting") for r in rows):
        t_notes.append("misses from accounting: " + cpoc.ACCOUNTING_BASIS + "; without a log, "
                       + ", ".join(cpoc.UNKNOWN_WITHOUT_LOG) + " stay unknown.")
    t_notes += notes
    esc_rows = []
    for w in windows:
        for e in w.get("escrows") or []:
            esc_rows.append({"episode": w["episode"], "participant": w["participant"], "escrow": e["escrow"],
                             "slots": e["slots"], "preserved_slots": e["preserved_slots"],
                             "requests": e["requests"], "misses": e["misses"],
                             "misses_by_kind": _counted(e["misses_by_kind"]),
                             "other_slots_ghosts": _counted(e["other_slots_ghosts"]),
                             "slot_list_from": e["slot_list_source"]})
    tables = [Table("Preserved hosts per CPoC window", list(rows[0].keys()) if rows else [], rows, t_notes,
                    narrow=["share", "rpm_before", "evidence", "structural_risk", "misses_from"],
                    priority=["participant", "verdict", "misses", "requests", "window_flips", "cf_misses",
                              "cf_passes", "peak_inflight", "cap", "episode"], legend=["cf_*"],
                    failing=lambda r: r["verdict"] == "zeroed_by_miss_test" or bool(r["window_flips"]))]
    acct_rows = _accounting_escrow_rows(windows)
    if esc_rows:
        tables.append(Table("Per escrow in the window", list(esc_rows[0].keys()), esc_rows,
                            priority=["participant", "escrow", "misses", "requests", "misses_by_kind"]))
    if acct_rows:
        tables.append(Table("Per escrow, accounting API (dispatch phase confirmation_poc)", list(acct_rows[0].keys()),
                            acct_rows, [cpoc.ACCOUNTING_BASIS + "."]))
    return tables


def _accounting_escrow_rows(windows: list[dict]) -> list[dict]:
    """Per preserved host without log evidence and escrow: the accounting API's CPoC-phase misses
    and the other slots' ghosts (once per host, whatever the number of its windows)."""
    out, seen = [], set()
    for w in windows:
        acct, key = w.get("accounting_cpoc"), (w["participant"], w["model"])
        if acct is None or key in seen or any(x["evidence"]["state"] != "none" for x in windows
                                              if (x["participant"], x["model"]) == key):
            continue
        seen.add(key)
        for e in acct["escrows"]:
            out.append({"participant": w["participant"], "model": w["model"], "escrow": e["escrow"],
                        "slot_ids": e["slots"], "misses": e["misses"],
                        "other_slots_ghosts": _counted(e["other_slots_ghosts"])})
    return out


def _counted(counts: dict[str, int]) -> str:
    """Counts by kind as one cell, ``kind 1,234, other 5``; "none" when there are none (a blank
    cell would read as unknown)."""
    return ", ".join(f"{k} {v:,}" for k, v in counts.items()) or "none"


def _header(data: dict, span: Mapping[str, Any]) -> list[tuple[str, str]]:
    ev = ", ".join(f"{e['episode']} {utc_text(e['start'])} to {utc_text(e['end'])}" for e in data["events"])
    return [("epoch", str(data["epoch"])), ("CPoC windows", ev or "none"),
            ("per 10,000 weight", f"{data['per_10000']:g} ({'given' if 'given' in data['per_10000_source'] else 'gateway default'})"),
            ("gateway logs", "none" if span["first_ts"] is None
             else f"{utc_text(span['first_ts'])} to {utc_text(span['last_ts'])}")]


# -- what the registry reads of a result (analyses/registry.py): its charts and metrics ---------
def charts(result: Result) -> list:
    """Per preserved host with gateway evidence: its in-flight load across the cPoC window
    against the cap the proposed per-host limit would give it."""
    from ..result import Chart
    from .frame import chart_label, chart_time

    events = {e["episode"]: e for e in result.data["events"]}
    out = []
    for w in result.data["windows"]:
        series = w.get("inflight_series")           # only windows with gateway evidence have one
        if not series or not series["max_inflight"]:
            continue
        t0, step = chart_time(series["start"]), series["step_seconds"]
        points = [[t0 + timedelta(seconds=i * step), v] for i, v in enumerate(series["max_inflight"])]
        out.append(Chart(f"{w['episode']}: {chart_label(w['participant'])} ({w['model']}) in flight against its cap",
                         "line", "time (UTC)", "requests in flight",
                         [{"name": f"in flight (max per {step} s)", "points": points}],
                         marks=[{"name": "cap", "y": w["cap"]}], spans=_phases(events.get(w["episode"]))))
    return out


# the phases of a cPoC window the chart shades, by the event's keys of their edges (the
# window's heights: views/cpoc_windows.sql); between generation and validation lie the
# exchange and the validation delay, not shaded
PHASES = (("grace", "start", "gen_start_time"), ("generation", "gen_start_time", "gen_end_time"),
          ("validation", "val_start_time", "end"))


def _phases(event: dict | None) -> list[dict]:
    """The shaded phases of a cPoC window (PHASES): grace (trigger to generation start),
    generation, and validation from its own start; a phase whose block time was not collected
    is not drawn."""
    from .frame import chart_time

    if event is None:
        return []
    out = []
    for name, a, b in PHASES:
        lo, hi = event.get(a), event.get(b)
        if lo not in (None, "?") and hi not in (None, "?"):
            out.append({"from": chart_time(lo), "to": chart_time(hi), "label": name})
    return out


def metrics(result: Result) -> Iterable[tuple[str, tuple[str, ...], float]]:
    for w in result.data["windows"]:
        labels = (str(w["participant"]), str(w["model"]), str(w["episode"]))
        if w.get("peak_inflight") is not None:      # unknown without gateway evidence: no sample
            yield "auditor_poc_overload_peak_inflight", labels, w["peak_inflight"]
        if w["cap"] is not None:
            yield "auditor_poc_overload_cap", labels, w["cap"]
