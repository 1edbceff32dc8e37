"""What several analyses of one run know about the epoch's confirmation PoCs, each worked out
once per run (:class:`~auditor.analyses.context.Run`): the epoch's windows, its CPoC events
and their preserved hosts, the span of the gateway logs, the logged attempts around the
windows with what each attempt's nonce became, the accounting API's CPoC-phase misses, and
the misses the logs place on each preserved host in each window.

``poc_overload`` builds its report from them, ``targets`` reads the misses per window
(:func:`window_misses`), ``coverage`` and ``hedging`` the epoch's windows, and in an epoch
report the miss test's ``reward_zeroed_miss_test`` findings carry the misses per participant
(:func:`miss_evidence`, :func:`with_cpoc_evidence`). Nothing here imports an analysis.
"""

from __future__ import annotations

from collections import defaultdict
import math
from collections.abc import Collection, Iterable, Mapping
from datetime import datetime, timedelta
from decimal import Decimal
from typing import Any

from ..heights import covers_cpoc_window, in_cpoc_window, overlaps_cpoc_window
from ..result import Finding, utc_text
from .context import Run

ANALYSIS = "poc_overload"              # the analysis these facts are the evidence of
DEFAULT_PER_10000 = 10.0
PER_10000_DEFAULT_SOURCE = ("gateway default poc_max_concurrent_requests_per_10000_weight = 10.0 "
                            "(devshardctl's gateway_settings, devshard/cmd/devshardctl in gonka-ai/gonka): "
                            "not read from this gateway; pass --per-10000 with its setting")
DEFAULT_LOOKBACK_MINUTES = 10.0        # "before the window": this many minutes before the trigger


def per_10000_option() -> Any:
    """``--per-10000``, the one declaration of the cap's setting that poc-overload and targets share."""
    from .frame import option

    return option(None, "--per-10000", "The gateway's poc_max_concurrent_requests_per_10000_weight. "
                  "[default: the gateway default 10.0]", metavar="X", min=0.0001)


UNTIMED = "window times unknown (block times not collected)"
ACCOUNTING_BASIS = ("accounting API counters of dispatch phase confirmation_poc: they carry no times, so every "
                    "CPoC of the epoch counts together")
UNKNOWN_WITHOUT_LOG = ("peak in flight", "per-minute load", "the capped replay (counterfactual)")


# -- rules ---------------------------------------------------------------------------------------
def host_cap(weight: int | None, per_10000: float) -> int | None:
    """The proposed per-host cap: ``max(1, floor(weight x per10000 / 10000))``; None without a weight."""
    if weight is None:
        return None
    return max(1, math.floor(Decimal(int(weight)) * Decimal(str(per_10000)) / Decimal(10000)))


def inflight_steps(intervals: Iterable[tuple[datetime, datetime]], start: datetime,
                   end: datetime) -> tuple[int, list[tuple[datetime, int]]]:
    """The in-flight level over ``[start, end]`` as steps, from ``(start, end)`` intervals (an
    interval counts on ``[s, e)``): the level at ``start`` and the changes after it, one net
    change per instant (ends and starts at the same instant netted: the level's highs, which
    the demand reads, are the same), in time order. Steps of several gateways add up:
    :func:`steps_profile` of their concatenation is the profile of all their intervals."""
    delta: dict[datetime, int] = defaultdict(int)
    current = 0
    for s, e in intervals:
        if e <= start or s > end:
            continue
        if s <= start:
            current += 1
        else:
            delta[s] += 1
        if e <= end:
            delta[e] -= 1
    return current, sorted((t, d) for t, d in delta.items() if d)


def steps_profile(initial: int, steps: Iterable[tuple[datetime, int]], start: datetime, end: datetime,
                  lo: datetime | None = None, hi: datetime | None = None) -> dict:
    """:func:`inflight_profile` from steps over ``[start, end]`` (``initial``: the level at
    ``start``), read over ``[lo, hi]`` inside it (default: all of it)."""
    lo = start if lo is None else lo
    hi = end if hi is None else hi
    current = initial
    events: list[tuple[datetime, int]] = []
    for t, d in steps:
        if t <= lo:
            current += d
        elif t <= hi:
            events.append((t, d))
    events.sort(key=lambda x: (x[0], x[1]))        # a net fall before a net rise at the same instant
    n_seconds = max(1, math.ceil((hi - lo).total_seconds()))
    peak, peak_at, level = current, lo, current
    for t, d in events:
        level += d
        if level > peak:
            peak, peak_at = level, t
    per_second = [0] * n_seconds
    i, level = 0, current
    for k in range(n_seconds):
        b0 = lo + timedelta(seconds=k)
        b1 = b0 + timedelta(seconds=1)
        while i < len(events) and events[i][0] <= b0:     # the level at the second's first instant
            level += events[i][1]
            i += 1
        top = level
        while i < len(events) and events[i][0] < b1:
            level += events[i][1]
            top = max(top, level)
            i += 1
        per_second[k] = top
    return {"peak": peak, "peak_at": peak_at, "per_second": per_second}


def inflight_profile(intervals: Iterable[tuple[datetime, datetime]], start: datetime, end: datetime) -> dict:
    """In-flight requests over ``[start, end]`` from ``(start, end)`` intervals (an interval
    counts on ``[s, e)``): the exact peak and when it happened, and the per-second maxima
    (one value per second of the span, each the most in flight at any moment of it)."""
    initial, steps = inflight_steps(intervals, start, end)
    return steps_profile(initial, steps, start, end)


def evidence_state(span: Mapping[str, Any], start: datetime, end: datetime, model: str) -> tuple[str, str]:
    """How much the gateway logs (``span``) say about ``model`` in ``[start, end]``: none,
    partial or full, and the sentence that says so."""
    first, last = span.get("first_ts"), span.get("last_ts")
    if first is None:
        return "none", "no gateway logs in the store"
    if not overlaps_cpoc_window(first, last, start, end):
        return "none", f"the gateway logs ({utc_text(first)} to {utc_text(last)}) do not reach this window"
    if model not in (span.get("models") or []):
        return "none", f"the gateway logs name no traffic for {model}: no evidence of its load"
    if not covers_cpoc_window(first, last, start, end):
        return "partial", f"the gateway logs cover only {utc_text(max(first, start))} to {utc_text(min(last, end))}"
    return "full", "the gateway logs span the whole window"


def timed(events: list[dict]) -> list[dict]:
    """The events whose window can be placed in wall-clock time (trigger and end of validation known)."""
    return [e for e in events if e["trigger_time"] is not None and e["val_end_time"] is not None]


# -- facts of the run ------------------------------------------------------------------------------
def epoch_windows(run: Run) -> list[dict]:
    """The epoch's windows (``epoch`` and each ``cpoc:N``) with heights and times (queries/epoch_windows.sql)."""
    return run.shared("epoch_windows", lambda: run.store.query("epoch_windows", epoch=run.epoch))


def events(run: Run) -> list[dict]:
    """The epoch's CPoC events with their window heights and times (queries/poc_overload_events.sql)."""
    return run.shared("cpoc_events", lambda: run.store.query("poc_overload_events", epoch=run.epoch))


def preserved_hosts(run: Run) -> list[dict]:
    """Each CPoC event's preserved hosts, with their weight (queries/poc_overload_preserved_hosts.sql)."""
    return run.shared("cpoc_preserved_hosts",
                      lambda: run.store.query("poc_overload_preserved_hosts", epoch=run.epoch))


def log_span(run: Run) -> dict:
    """The time range of the gateway logs and the models they name (queries/poc_overload_log_span.sql)."""
    return run.shared("log_span", lambda: run.store.query("poc_overload_log_span")[0])


def gateway_demand(run: Run) -> list[dict]:
    """What the gateway logs in the store say of each CPoC window's demand, per window of the
    epoch (``epoch``, ``window``, heights, ``start``, ``end``): ``covered``, the part of the
    window the logs span (``(lo, hi)``, None when none), ``evidence`` (full, partial, none) and
    its ``detail``, and per model the logs name (``models``): the in-flight level as steps over
    the window (:func:`inflight_steps`: ``initial``, ``steps``), and the attempts overlapping it
    with their summed duration (``attempts``, ``attempt_seconds``, a latency for Little's law).
    ``auditor targets`` reads it, and ``auditor export demand`` writes it for other stores."""
    def compute() -> list[dict]:
        span = log_span(run)
        served = sorted(span["models"] or [])
        out = []
        for w in epoch_windows(run):
            if not w["window"].startswith("cpoc:"):
                continue
            start, end = w["start_time"], w["end_time"]
            d = {"epoch": run.epoch, "window": w["window"], "start_height": w["start_height"],
                 "end_height": w["end_height"], "start": start, "end": end, "covered": None, "models": {}}
            out.append(d)
            if start is None or end is None or span["first_ts"] is None or not overlaps_cpoc_window(
                    span["first_ts"], span["last_ts"], start, end):
                continue
            lo, hi = max(start, span["first_ts"]), min(end, span["last_ts"])
            by_model: dict[str, list] = defaultdict(list)
            for r in run.store.query("targets_demand_attempts", since=start, until=end):
                by_model[r["model"]].append((r["start_ts"], r["end_ts"]))
            for m in served:
                intervals = by_model.get(m, [])
                initial, steps = inflight_steps(intervals, start, end)
                d["models"][m] = {"initial": initial, "steps": steps, "attempts": len(intervals),
                                  "attempt_seconds": sum((e - s).total_seconds() for s, e in intervals)}
            d["covered"] = (lo, hi)
        return out
    return run.shared("gateway_demand", compute)


def not_collected(run: Run) -> str | None:
    """Why the epoch's CPoC events are unknown (not collected), or None when they are known
    (possibly none: an epoch without a confirmation PoC)."""
    def reason() -> str | None:
        if events(run):
            return None
        cov = run.store.one("SELECT status FROM coverage WHERE source = 'chain' AND epoch = ? "
                            "AND item = 'confirmation_poc_events'", [run.epoch])
        if cov is not None and cov[0] == "ok":
            return None
        return (f"the confirmation PoC events of epoch {run.epoch} were not collected: "
                f"auditor collect --epoch {run.epoch} --refresh --node URL")
    return run.shared("cpoc_not_collected", reason)


def attempts(run: Run, lookback_minutes: float = DEFAULT_LOOKBACK_MINUTES) -> tuple[list[dict], bool]:
    """The logged attempts from ``lookback_minutes`` before the first timed window to the end of
    the last, each with its miss ``kind`` and ``miss`` (the miss rule, views/nonce_miss.sql, in the
    query); and whether the logs have dispositions.
    The query runs once a run, for the longest lookback asked (``poc-overload --lookback 5``
    and the window misses' default 10 share it); each caller gets its own span of it."""
    tw = timed(events(run))
    if not tw or log_span(run)["first_ts"] is None:
        return [], False
    first = min(e["trigger_time"] for e in tw)

    def compute(minutes: float) -> tuple[float, list[dict], bool]:
        have_disp = bool(run.store.one("SELECT count(*) FROM log_nonce_dispositions")[0])
        rows = run.store.query("poc_overload_attempts", since=first - timedelta(minutes=minutes),
                               until=max(e["val_end_time"] for e in tw), have_dispositions=have_disp)
        return minutes, rows, have_disp

    widest = max(lookback_minutes, DEFAULT_LOOKBACK_MINUTES)
    fetched, rows, have_disp = run.shared("cpoc_attempts", lambda: compute(widest))
    if fetched < lookback_minutes:                   # a longer lookback than any asked before
        run.forget("cpoc_attempts")
        fetched, rows, have_disp = run.shared("cpoc_attempts", lambda: compute(lookback_minutes))
    since = first - timedelta(minutes=lookback_minutes)
    # the query's own bound (an attempt that ended after ``since``)
    return (rows if fetched == lookback_minutes else [a for a in rows if a["end_ts"] >= since]), have_disp


def accounting(run: Run) -> dict[tuple[str, str], dict]:
    """Per (participant, model): the accounting API's CPoC-phase misses by kind and per escrow,
    with the ghosts the escrow's other slots produced in the same phase."""
    return run.shared("cpoc_accounting",
                      lambda: _accounting(run.store.query("poc_overload_accounting", epoch=run.epoch)))


def host_windows(run: Run) -> list[dict]:
    """Per CPoC event and preserved host of it (event order, then the hosts' order): the
    ``episode``, ``participant``, ``model``, the ``event`` and ``host`` rows, whether the window
    is ``timed``, the evidence ``state`` and its ``detail``, and the ``misses`` the logs place
    on the host in the window (attempts started in it; None without evidence)."""
    def compute() -> list[dict]:
        span, hosts = log_span(run), preserved_hosts(run)
        rows, _ = attempts(run)
        out = []
        placed = timed(events(run))
        for ev in events(run):
            is_timed = ev in placed
            for h in (h for h in hosts if h["episode"] == ev["episode"]):
                p, model = h["participant"], h["model_id"]
                state, detail = ("none", UNTIMED) if not is_timed else \
                    evidence_state(span, ev["trigger_time"], ev["val_end_time"], model)
                misses = None if state == "none" else sum(
                    1 for a in rows if a["miss"] and a["participant"] == p and a["model"] == model
                    and in_cpoc_window(a["start_ts"], ev["trigger_time"], ev["val_end_time"]))
                out.append({"episode": ev["episode"], "participant": p, "model": model, "event": ev, "host": h,
                            "timed": is_timed, "state": state, "detail": detail, "misses": misses})
        return out
    return run.shared("cpoc_host_windows", compute)


def window_misses(run: Run) -> dict[tuple[str, str], int]:
    """The misses the gateway logs place on each CPoC window's preserved hosts, per (episode,
    model): the sum of ``poc_overload``'s windows' ``misses`` (for ``auditor targets``' finding
    severity). A window without log evidence (the same for every host of it: the logs' span and
    model) has no entry: unknown, where a window the logs cover with no miss has 0."""
    out: dict[tuple[str, str], int] = {}
    for w in host_windows(run):
        if w["misses"] is not None:
            key = (w["episode"], w["model"])
            out[key] = out.get(key, 0) + w["misses"]
    return out


def host_evidence(run: Run) -> dict[tuple[str, str], dict]:
    """Per host preserved in a CPoC of the epoch, per (participant, model): which source places
    its CPoC misses and how many. ``source`` is ``gateway_log`` when the logs cover one of its
    windows (``misses``: their sum over those windows), else ``accounting`` when the accounting
    API has dispatch-phase ``confirmation_poc`` counters for it (``misses``: every CPoC of the
    epoch together, no times), else None (``misses`` None: unknown, not zero). ``episodes``:
    the events it was preserved in; ``accounting``: the API's entry (:func:`accounting`) or None."""
    def compute() -> dict[tuple[str, str], dict]:
        acct = accounting(run)
        out: dict[tuple[str, str], dict] = {}
        for w in host_windows(run):
            key = (w["participant"], w["model"])
            e = out.setdefault(key, {"source": None, "misses": None, "episodes": [], "accounting": acct.get(key)})
            e["episodes"].append(w["episode"])
            if w["timed"] and w["state"] != "none":
                e["source"] = "gateway_log"
                e["misses"] = (e["misses"] or 0) + w["misses"]
        for e in out.values():
            if e["source"] is None and e["accounting"] is not None:
                e["source"], e["misses"] = "accounting", e["accounting"]["misses"]
        return out
    return run.shared("cpoc_host_evidence", compute)


def model_accounting_misses(run: Run) -> dict[str, dict]:
    """Per model the accounting API has counters of: the misses it counts in dispatch phase
    ``confirmation_poc`` on the hosts preserved in the epoch's CPoCs (every CPoC together, no
    times; ``auditor targets``: what the hosts took, not the demand), and of how many of the
    model's preserved hosts (``hosts`` of ``preserved_hosts``: a host the API has no record of
    is not counted, so fewer is a lower bound)."""
    out: dict[str, dict] = {}
    for (_, model), e in host_evidence(run).items():
        m = out.setdefault(model, {"misses": 0, "hosts": 0, "preserved_hosts": 0})
        m["preserved_hosts"] += 1
        if e["accounting"] is not None:
            m["misses"] += e["accounting"]["misses"]
            m["hosts"] += 1
    return {model: m for model, m in out.items() if m["hosts"]}


def participant_misses(run: Run) -> dict[str, dict]:
    """Per participant preserved in a CPoC window: the misses placed in its windows (None: no
    evidence, unknown rather than zero) and their ``source``: the gateway logs where they cover
    one of its windows (windows counted, the evidence of each, the windows without evidence),
    else the accounting API's CPoC-phase counters (:func:`host_evidence`); and the accounting
    API's CPoC misses beside."""
    def compute() -> dict[str, dict]:
        out: dict[str, dict] = {}
        for w in host_windows(run):
            c = out.setdefault(w["participant"], {"misses_in_cpoc_windows": 0, "windows": [], "evidence": [],
                                                  "windows_without_evidence": [], "source": None})
            where = f"{w['episode']} {w['model']}"
            if not w["timed"] or w["state"] == "none":
                c["windows_without_evidence"].append(where)
                c["evidence"].append(f"{where}: {w['detail']} (the logs do not place its misses there)")
                continue
            c["misses_in_cpoc_windows"] += w["misses"]
            c["windows"].append(where)
            c["evidence"].append(f"{where}: {w['misses']} misses; {w['detail']}")
        acct = accounting(run)
        preserved = {(w["participant"], w["model"]) for w in host_windows(run)}
        for p, c in out.items():
            # the API's count is known for the models it was preserved on that the API holds
            # counters of it for; a record of another model (its turns there ghosted) is no count
            # of these, and one model without a record leaves the total unknown, not zero
            models = sorted(m for wp, m in preserved if wp == p)
            held = [m for m in models if (p, m) in acct]
            c["misses_in_cpoc_windows_accounting"] = (sum(acct[(p, m)]["misses"] for m in held)
                                                      if held and held == models else None)
            if held != models and any(ap == p for ap, _ in acct):
                c["evidence"].append(
                    "accounting API: " + "".join(f"{acct[(p, m)]['misses']} misses on {m}; " for m in held)
                    + "no record of it on " + ", ".join(m for m in models if m not in held)
                    + f", where it was preserved: its misses there are unknown, not zero; {ACCOUNTING_BASIS}")
            if c["windows"]:
                c["source"] = "gateway_log"
            elif c["misses_in_cpoc_windows_accounting"] is not None:
                c["source"] = "accounting"
                c["misses_in_cpoc_windows"] = c["misses_in_cpoc_windows_accounting"]
                c["evidence"].append(f"accounting API: {c['misses_in_cpoc_windows']} misses; {ACCOUNTING_BASIS}")
            else:
                c["misses_in_cpoc_windows"] = None          # no evidence at all: unknown, not zero
        return out
    return run.shared("cpoc_participant_misses", compute)


def misses_basis(c: Mapping[str, Any]) -> str | None:
    """What a participant's ``misses_in_cpoc_windows`` (:func:`participant_misses`) is: the
    accounting API's count, what the gateway logs show, or a lower bound when the logs leave
    some of its windows without evidence (None: no count)."""
    if c.get("source") is None:
        return None
    if c["source"] == "accounting":
        return ACCOUNTING_BASIS
    if c["windows_without_evidence"]:
        return "a lower bound: no evidence for " + ", ".join(c["windows_without_evidence"])
    return "what the gateway logs show"


def miss_evidence(run: Run) -> tuple[dict[str, dict], set[str]] | None:
    """What the miss test's findings carry in a run that includes ``poc_overload``: the misses
    per participant (:func:`participant_misses`) and the participants preserved in any CPoC
    of the epoch; None when the CPoC events were not collected (poc_overload is unavailable)."""
    if not_collected(run) is not None:
        return None
    return participant_misses(run), {w["participant"] for w in host_windows(run)}


def with_cpoc_evidence(findings: list[Finding], cpoc: Mapping[str, dict], preserved: Collection[str]) -> list[Finding]:
    """The miss test's findings, each ``reward_zeroed_miss_test`` with how many of the
    participant's misses the evidence places in CPoC windows (``cpoc``: per participant, as
    :func:`participant_misses`; ``preserved``: the participants preserved in a CPoC of the
    epoch). ``auditor epoch N`` and ``auditor poc-overload`` both use it."""
    out = []
    for f in findings:
        if f.code != "reward_zeroed_miss_test":
            out.append(f)
            continue
        p = f.subject["id"]
        c = cpoc.get(p)
        ev = dict(f.evidence)
        source = (c or {}).get("source")
        if source is not None:
            ev["misses_in_cpoc_windows"] = c["misses_in_cpoc_windows"]
            ev["misses_in_cpoc_windows_source"] = source
            ev["misses_in_cpoc_windows_is"] = misses_basis(c)
            ev["cpoc_evidence"] = list(c["evidence"])
            chain = ev.get("missed")
            if chain is not None and c["misses_in_cpoc_windows"] > int(chain):
                ev["misses_in_cpoc_windows_exceeds_chain"] = (
                    f"the {source.replace('_', ' ')} count {c['misses_in_cpoc_windows']} is above the chain's "
                    f"{chain} missed_requests for the whole epoch: not settled (miss_count_discrepancy)")
        else:
            ev["misses_in_cpoc_windows"] = None
            ev["cpoc_evidence"] = (["not preserved in any CPoC of the epoch: no misses of a preserved-host pile-up"]
                                   if p not in preserved else list((c or {}).get("evidence") or
                                   ["no gateway evidence for its CPoC windows"]))
        if c is not None and c.get("misses_in_cpoc_windows_accounting") is not None:
            ev["misses_in_cpoc_windows_accounting"] = c["misses_in_cpoc_windows_accounting"]
            if source != "accounting":
                ev.setdefault("cpoc_evidence", []).append(
                    f"accounting API: {c['misses_in_cpoc_windows_accounting']} misses; {ACCOUNTING_BASIS}")
        out.append(Finding(f.code, f.severity, f.subject, f.summary, ev, f.model))
    return out


GATEWAY_MISSES_BASIS = ("misses_by_gateway: each gateway's accounting API (one per --accounting URL) counts the "
                        "misses of its own escrows created in this epoch (protocol_misses, timeout_applied when "
                        "absent); a participant's accounting misses are their sum; a gateway that holds no "
                        "record of it sent it nothing (queries/poc_overload_gateway_misses.sql)")


def gateway_rows(run: Run) -> list[dict]:
    """``queries/poc_overload_gateway_misses.sql`` of the run's epoch, once per run."""
    return run.shared("cpoc_gateway_misses", lambda: run.store.query("poc_overload_gateway_misses", epoch=run.epoch))


def gateway_misses(run: Run) -> dict[str, dict[str, int | None]]:
    """Per participant: the misses each gateway's accounting counts for it, by gateway (the stored
    gateway: its redacted base URL), when the store holds MORE than one gateway's accounting of the
    epoch (issue 33: which gateway's traffic failed); {} with one or none (its count is the
    accounting's). A gateway without a record of the participant is not listed; None: the records
    do not report misses (unknown, not zero)."""
    rows = gateway_rows(run)
    if len({r["gateway_id"] for r in rows}) < 2:
        return {}
    out: dict[str, dict[str, int | None]] = {}
    for r in rows:
        out.setdefault(r["participant"], {})[r["gateway_id"]] = None if r["misses"] is None else int(r["misses"])
    return out


def with_gateway_misses(findings: list[Finding], by_gateway: Mapping[str, dict]) -> list[Finding]:
    """``findings``, each ``reward_zeroed_miss_test`` of a participant in ``by_gateway``
    (:func:`gateway_misses`) with its ``misses_by_gateway``."""
    if not by_gateway:
        return findings
    out = []
    for f in findings:
        gw = by_gateway.get(f.subject.get("id")) if f.code == "reward_zeroed_miss_test" else None
        if gw is not None and "misses_by_gateway" not in f.evidence:
            f = Finding(f.code, f.severity, f.subject, f.summary,
                        {**f.evidence, "misses_by_gateway": dict(gw), "misses_by_gateway_is": GATEWAY_MISSES_BASIS},
                        f.model)
        out.append(f)
    return out


def miss_count_discrepancies(run: Run, chain_missed: Mapping[str, int], participant: str | None = None) -> list[Finding]:
    """``miss_count_discrepancy`` findings: where a source counts more misses for a participant
    than the chain's ``missed_requests`` for its whole epoch (``chain_missed``). A gateway's
    accounting count below the chain's is normal (other gateways' escrows count too); above it,
    and a CPoC window in which the logs place more misses than the chain has for the epoch, the
    larger number is not settled: each such pair is a warn naming both numbers and their sources."""
    out: list[Finding] = []
    rows = gateway_rows(run)
    for r in rows:
        p, n = r["participant"], r["misses"]
        chain = chain_missed.get(p)
        if (participant and p != participant) or chain is None or n is None or int(n) <= int(chain):
            continue
        gw = r["gateway"] or "the accounting API"
        out.append(_discrepancy(p, int(n), f"accounting API of {gw} (protocol_misses, escrows created in epoch "
                                f"{run.epoch}, models {', '.join(r['models'])})", int(chain), run.epoch, None,
                                "queries/poc_overload_gateway_misses.sql"))
    # several gateways: none above the chain, but together above it (each counts its own escrows)
    for p, by_gw in gateway_misses(run).items():
        chain, counts = chain_missed.get(p), [n for n in by_gw.values() if n is not None]
        if (participant and p != participant) or chain is None or len(counts) < 2 or sum(counts) <= int(chain) \
                or max(counts) > int(chain):
            continue
        out.append(_discrepancy(p, sum(counts), f"accounting APIs of {len(counts)} gateways together "
                                f"({', '.join(f'{g}: {n}' for g, n in by_gw.items() if n is not None)}; "
                                f"protocol_misses, escrows created in epoch {run.epoch})", int(chain), run.epoch,
                                None, "queries/poc_overload_gateway_misses.sql"))
    for w in host_windows(run):
        p, n = w["participant"], w["misses"]
        chain = chain_missed.get(p)
        if (participant and p != participant) or chain is None or n is None or n <= int(chain):
            continue
        out.append(_discrepancy(p, n, f"gateway logs: misses started in the {w['episode']} window (nonce_disposition)",
                                int(chain), run.epoch, w["model"], "queries/poc_overload_attempts.sql"))
    return out


def _discrepancy(p: str, n: int, source: str, chain: int, epoch: int, model: str | None, query: str) -> Finding:
    return Finding("miss_count_discrepancy", "warn", {"kind": "participant", "id": p},
                   f"sources disagree on its misses: {source} counts {n}, the chain's missed_requests for epoch "
                   f"{epoch} is {chain}; neither is settled until explained",
                   {"epoch": epoch, "count": n, "count_source": source, "chain_missed_requests": chain,
                    "chain_source": f"chain epoch_performance_summary/{epoch} missed_requests",
                    "possible_causes": ["escrows created in this epoch but settled after it (they count on chain "
                                        "only if settled while the epoch was effective: chain-api.md 12.4)",
                                        "timeouts the gateway applied that the chain did not record",
                                        "logs or counters of another epoch's escrows"],
                    "rule": "a source's count below the chain's is normal (other gateways' escrows count too); "
                            "above it is a discrepancy",
                    "query": query}, model=model)


def _accounting(rows: list[dict]) -> dict[tuple[str, str], dict]:
    ghosts: dict[str, dict[str, dict[str, int]]] = defaultdict(lambda: defaultdict(lambda: defaultdict(int)))
    for r in rows:
        if r["disposition"] == "ghost":
            ghosts[r["escrow_id"]][r["participant"]][r["no_send_reason"] or "?"] += int(r["count"])
    out: dict[tuple[str, str], dict] = {}
    for r in rows:
        key = (r["participant"], r["model"])
        e = out.setdefault(key, {"scope": ("accounting API counters, dispatch_phase=confirmation_poc, escrows created "
                                           "in this epoch: every CPoC of the epoch together (the API has no times)"),
                                 "misses": 0, "misses_by_kind": defaultdict(int), "escrows": {}})
        esc = e["escrows"].setdefault(r["escrow_id"], {"escrow": r["escrow_id"], "slots": set(), "misses": 0,
                                                       "other_slots_ghosts": {}})
        if r["slot_id"] is not None:
            esc["slots"].add(int(r["slot_id"]))
        if r["miss"]:                                   # the miss rule: views/nonce_miss.sql
            e["misses"] += int(r["count"])
            e["misses_by_kind"][r["miss_kind"]] += int(r["count"])
            esc["misses"] += int(r["count"])
    for (p, _), e in out.items():
        e["misses_by_kind"] = dict(sorted(e["misses_by_kind"].items()))
        for esc in e["escrows"].values():
            esc["slots"] = sorted(esc["slots"])
            other: dict[str, int] = defaultdict(int)
            for op, reasons in ghosts.get(esc["escrow"], {}).items():
                if op != p:
                    for reason, n in reasons.items():
                        other[reason] += n
            esc["other_slots_ghosts"] = dict(sorted(other.items()))
        e["escrows"] = sorted(e["escrows"].values(), key=lambda x: x["escrow"])
    return out
