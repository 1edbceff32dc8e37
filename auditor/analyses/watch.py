"""``auditor watch``: the chain's miss test projected while the epoch is still running.

A reading (``sources/live.py``) gives, per participant, the chain's counters (escrows
settled this epoch) and the misses and assigned nonces of the escrows not settled yet (from
the gateway's accounting API and the hosts). :func:`assess` turns one reading into a
``Result``: the network's miss share and the p0 the chain would pick if the epoch ended now,
each participant's projection to the epoch's end at the rate so far, the critical misses and
margin there, the verdict of the projection and of today's counts alone, and the
``miss_test_at_risk`` findings. The test is the miss test's own (``misstest.verdict_of`` over
``misstest_math.dynamic_p0``): one implementation decides the projection and the settled
verdict, and at the epoch's end (progress 1, every escrow settled) they are the same numbers.

Every reading is stored (``watch_readings``, queries/schema/012_watch_readings.sql);
:func:`run` (``auditor watch --backtest N``) sets an epoch's stored readings beside its
settled verdicts: when each participant the test zeroed was first warned, and how many
warnings were false. :func:`loop` re-reads at the interval and prints only what changed.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable, Collection, Iterable
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Any

from ..errors import UsageError
from ..result import SCHEMA_VERSION, Finding, Result, Table, utc_text
from ..times import MAX_SECONDS
from .context import Run
from .frame import Options, option
from .misstest import facts as misstest_facts, grace_applied, verdict_of as chain_test
from .misstest_math import P0Result, dynamic_p0

KEY, TITLE = "watch", "Miss test of the running epoch"
UNSETTLED_SOURCES = ("accounting", "host")     # where the misses of escrows not yet settled on chain are read
COLUMNS = ["participant", "requests_so_far", "missed_so_far", "missed_unsettled", "projected_requests",
           "projected_missed", "critical_misses", "margin", "projected_verdict", "verdict_now",
           "exhaust_misses_per_hour", "missed_by_source"]
ASSUMPTION = ("projection: requests and misses keep arriving at the average rate so far (per block) until "
              "the epoch's end, and every escrow not yet settled settles within the epoch, so its misses "
              "reach the test; an estimate, not the chain's answer")


@dataclass(frozen=True)
class WatchOptions(Options):
    """``auditor watch``'s options: the assessment's (participants, margin_share) and the
    command's own (once, interval, hosts, prom_textfile, backtest: auditor/watch.py)."""

    participants: tuple[str, ...] = option((), "--participant", "Only this participant (repeatable; the network "
                                           "figures still come from all).", metavar="ADDR", short="-p", repeat=True)
    once: bool = option(False, "--once", "One reading and report, then exit (for cron).")
    interval: str = option("10m", "--interval", "Time between readings without --once, e.g. 30s, 10m, 1h.",
                           metavar="DURATION")
    margin_share: float = option(0.2, "--margin-share", "Warn when the projected margin is under this share of "
                                 "the misses allowed.", metavar="X")
    hosts: tuple[str, ...] = option((), "--host", "A devshard host's base, http://HOST:PORT/devshard/<version>: its "
                                    "unsettled slots. Repeatable.", metavar="URL", repeat=True)
    prom_textfile: Path | None = option(None, "--prom-textfile", "Keep the margin, projected verdict and requests "
                                        "per participant here (node_exporter textfile).", metavar="PATH")
    backtest: int | None = option(None, "--backtest", "Replay settled epoch N's stored readings against its "
                                  "verdicts.", metavar="N", min=0)

    EPOCH = None
    WITHOUT = ("participant",)       # --participant is participants' (repeatable)

    @classmethod
    def call(cls, epoch: int | None, **values: Any) -> "WatchCall":
        """The command's flags as its WatchCall (auditor/watch.py: live, or --backtest)."""
        return call(**values)


DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h)?\s*$")


def seconds(text: str) -> float:
    """``10m``, ``30s``, ``1h``, ``500ms`` or a plain number of seconds."""
    m = DURATION.match(text or "")
    if not m:
        raise UsageError(f"--interval {text!r}: give a duration such as 30s, 10m or 1h")
    value = float(m.group(1)) * {"ms": 0.001, "s": 1, "m": 60, "h": 3600, None: 1}[m.group(2)]
    if value <= 0:
        raise UsageError(f"--interval {text!r}: must be more than 0")
    if value > MAX_SECONDS:
        raise UsageError(f"--interval {text!r}: at most {MAX_SECONDS // 3600:,}h (a year)")
    return value


@dataclass(frozen=True)
class WatchCall:
    participants: tuple[str, ...]
    once: bool
    interval: float
    margin_share: float
    hosts: tuple[str, ...]
    prom_textfile: Path | None
    backtest: int | None
    mine: tuple[str, ...] = ()


def call(participants=(), once=False, interval="10m", margin_share=0.2, hosts=(), prom_textfile=None,
         backtest=None, mine=()) -> WatchCall:
    """``auditor watch``'s flags (analyses/watch.py WatchOptions) checked together."""
    if not 0 <= margin_share < 1:
        raise UsageError(f"--margin-share {margin_share}: give a share in [0, 1), e.g. 0.2")
    live_only = [flag for flag, given in (("--once", once), ("--host", hosts), ("--prom-textfile", prom_textfile))
                 if given]
    if backtest is not None and live_only:
        raise UsageError(f"{', '.join(live_only)}: only a live watch reads that; --backtest {backtest} replays "
                         "the readings stored (give --participant to narrow it)")
    return WatchCall(tuple(participants or ()), once, seconds(interval), margin_share, tuple(hosts or ()),
                     prom_textfile, backtest, tuple(mine or ()))


# -- one reading ----------------------------------------------------------------------------
def _scale(x: int, elapsed: int, span: int) -> int:
    """``x`` observed over ``elapsed`` of ``span`` blocks, at that rate over the whole span
    (rounded half up); as is when nothing elapsed yet or the span is over."""
    if elapsed <= 0 or elapsed >= span:
        return x
    return (2 * x * span + elapsed) // (2 * elapsed)


def _verdict(total: int, passed: bool) -> str:
    return "no_requests" if total == 0 else "pass" if passed else "fail"


def _p0(gov: Decimal | None, rows: Iterable[tuple[int, int]]) -> P0Result:
    """``getDynamicP0`` over ``(requests, missed)`` rows."""
    return dynamic_p0(gov, [(req - miss, miss) for req, miss in rows])


def _resolved(want: str, known: Collection[str]) -> str:
    """``--participant`` as one address of the reading: the full address, or the label the
    tables print (its last 8 characters, or ``gonka1…xxxxxxxx``) when exactly one fits; none
    or several is one usage line, as for every other command."""
    if want in known:
        return want
    tail = want.split("…")[-1].split("...")[-1]
    head = "gonka1" if want.startswith("gonka1") and tail != want else ""
    found = sorted(p for p in known if len(tail) >= 4 and p.startswith(head) and p.endswith(tail))
    if len(found) != 1:
        which = f"matches {', '.join(found[:4])}" if found else \
            "is not in the chain's participant list nor in any unsettled escrow"
        raise UsageError(f"--participant {want} {which}: give the full gonka1... address")
    return found[0]


def assess(reading: Any, options: WatchOptions | None = None) -> Result:
    """One reading as a result: the output contract of ``watch --once --format json``."""
    options = options or WatchOptions()
    w = reading.window
    span, elapsed = w.end - w.start, max(0, min(w.height, w.end) - w.start)
    notes = list(reading.notes)
    per: dict[str, dict[str, Any]] = {}
    # a source read starts at 0; one not read counts nothing: its misses are unknown (None), not zero
    unsettled = {s: (0 if s in reading.sources else None) for s in UNSETTLED_SOURCES}
    for p, (inf, miss) in reading.chain.items():
        per[p] = {"requests_chain": inf + miss, "missed_chain": miss, "assigned_u": 0,
                  "by_source": {"chain": miss, **unsettled}}
    for u in reading.unsettled:
        d = per.setdefault(u.participant, {"requests_chain": 0, "missed_chain": 0, "assigned_u": 0,
                                           "by_source": {"chain": 0, **unsettled}})
        d["assigned_u"] += u.assigned
        d["by_source"][u.source] += u.missed         # a source read: its count starts at 0
    now_rows, proj_rows = {}, {}
    for p, d in per.items():
        missed_u = sum(d["by_source"][s] or 0 for s in UNSETTLED_SOURCES)
        req, miss = d["requests_chain"] + d["assigned_u"], d["missed_chain"] + missed_u
        now_rows[p] = (req, miss)
        proj_rows[p] = (_scale(req, elapsed, span), _scale(miss, elapsed, span))
    grace = grace_applied(w.start, w.end, notes)     # the miss test's own grace-epoch rule
    gov = reading.governance_p0 if grace is None else grace.binom_test_p0
    p0_now, p0_end = _p0(gov, now_rows.values()), _p0(gov, proj_rows.values())
    hours_left = None
    if reading.seconds_per_block and w.height < w.end:
        hours_left = (w.end - w.height) * reading.seconds_per_block / 3600
    rows, findings = [], []
    for p in sorted(per):
        row = _row(p, per[p], now_rows[p], proj_rows[p], p0_now, p0_end, hours_left)
        rows.append(row)
        f = _finding(row, p0_end, options.margin_share, w)
        if f is not None:
            findings.append(f)
    wanted = {_resolved(want, per) for want in options.participants}
    shown = [r for r in rows if not wanted or r["participant"] in wanted]
    findings = [f for f in findings if not wanted or f.subject["id"] in wanted]
    mine = {_resolved_mine(m, per) for m in options.mine}
    notes += [f"--mine {m} is not in this reading (excluded, new or gone): none of its findings can be mine"
              for m in sorted(mine - set(per))]
    shown.sort(key=lambda r: (r["participant"] not in mine, _rank(r),
                              r["margin"] if r["margin"] is not None else 1 << 62, r["participant"]))
    data = _data(reading, p0_now, p0_end, per, now_rows, shown, notes)
    unknown = [] if len(reading.sources) > 1 else [
        "no --accounting or --host: the misses of escrows not yet settled on chain are unknown, not zero"]
    coverage = {"sources": list(reading.sources), "missing": list(reading.missing), "unknown": unknown}
    table = Table(TITLE, list(COLUMNS), [{**r, "missed_by_source": _by_source(r["missed_by_source"])} for r in shown],
                  notes=[ASSUMPTION, *notes], narrow=["exhaust_misses_per_hour", "missed_by_source",
                                                     "projected_requests"])
    result = Result(KEY, TITLE, data, [table], findings, coverage, complete=not reading.missing,
                    header=_header(data, p0_now))
    if options.mine:
        from ..mine import mark

        mark(result, mine)
    return result


def _resolved_mine(want: str, known: Collection[str]) -> str:
    """A --mine address as one of the reading (``_resolved``), or as given when none or
    several fit: one of mine not in the reading is a note, and the watch goes on."""
    try:
        return _resolved(want, known)
    except UsageError:
        return want


def _rank(row: dict[str, Any]) -> int:
    """Failing now first, then projected to fail, then passing, then without requests."""
    return 0 if row["verdict_now"] == "fail" else {"fail": 1, "pass": 2, "no_requests": 3}[row["projected_verdict"]]


def _row(p: str, d: dict, now: tuple[int, int], proj: tuple[int, int], p0_now: P0Result, p0_end: P0Result,
         hours_left: float | None) -> dict[str, Any]:
    (req, miss), (preq, pmiss) = now, proj
    passed_now = chain_test(miss, req, p0_now)[0]
    passed_end, crit = chain_test(pmiss, preq, p0_end)[:2]
    margin = None if crit is None else crit - pmiss
    exhaust = None
    if margin is not None and hours_left and req:
        exhaust = round(max(margin, 0) / hours_left, 2)
    return {
        "participant": p,
        "requests_so_far": req,
        "missed_so_far": miss,
        # none of the sources of unsettled escrows read: unknown, not zero
        "missed_unsettled": (None if all(d["by_source"][s] is None for s in UNSETTLED_SOURCES)
                             else miss - d["missed_chain"]),
        "projected_requests": preq,
        "projected_missed": pmiss,
        "critical_misses": crit,
        "margin": margin,
        "projected_verdict": _verdict(preq, passed_end),
        "verdict_now": _verdict(req, passed_now),
        "exhaust_misses_per_hour": exhaust,
        "missed_by_source": dict(d["by_source"]),
    }


def _finding(row: dict[str, Any], p0_end: P0Result, share: float, w: Any) -> Finding | None:
    if row["requests_so_far"] == 0:
        return None
    crit, margin = row["critical_misses"], row["margin"]
    evidence = {k: row[k] for k in COLUMNS if k != "participant"}
    evidence.update(epoch=w.epoch, height=w.height, p0=float(p0_end.p0), margin_share=share)
    subject = {"kind": "participant", "id": row["participant"]}
    if row["verdict_now"] == "fail":
        return Finding("miss_test_at_risk", "error", subject,
                       f"fails the miss test already on today's counts: missed {row['missed_so_far']} of "
                       f"{row['requests_so_far']} ({row['missed_unsettled']} not yet on chain)", evidence)
    if row["projected_verdict"] == "fail":
        return Finding("miss_test_at_risk", "warn", subject,
                       f"projected to fail the miss test: {row['projected_missed']} of {row['projected_requests']} "
                       f"at the epoch's end, {crit if crit is not None else 'fewer'} allowed", evidence)
    if margin is not None and crit and margin < share * crit:
        rate = row["exhaust_misses_per_hour"]
        return Finding("miss_test_at_risk", "warn", subject,
                       f"margin of {margin} misses of the {crit} allowed at the projected "
                       f"{row['projected_requests']} requests (under {share:.0%})"
                       + (f"; {rate:g} extra misses an hour would use it up before the end" if rate else ""),
                       evidence)
    return None


def _by_source(d: dict[str, int | None]) -> str:
    return ", ".join(f"{k} {v}" for k, v in d.items() if v) or "none"


def _count(n: int | None) -> str:
    return "not read (unknown)" if n is None else str(n)


def _data(reading: Any, p0_now: P0Result, p0_end: P0Result, per: dict, now_rows: dict, shown: list,
          notes: list) -> dict:
    w = reading.window
    req = sum(r for r, _ in now_rows.values())
    miss = sum(m for _, m in now_rows.values())
    by_source = {s: (None if s in UNSETTLED_SOURCES and s not in reading.sources else
                     sum(d["by_source"][s] or 0 for d in per.values())) for s in ("chain", *UNSETTLED_SOURCES)}
    return {
        "epoch": w.epoch,
        "height": w.height,
        "progress": round(w.progress, 6),
        "start_height": w.start,
        "end_height": w.end,
        "taken_at": reading.taken_at,
        "network": {"requests_so_far": req, "missed_so_far": miss,
                    "miss_share": (miss / req) if req else None, "p0": float(p0_now.p0),
                    "p0_projected": float(p0_end.p0), "skip": p0_now.skip},
        "assumption": ASSUMPTION,
        "missed_by_source": by_source,
        "settled_escrows_left_out": list(reading.settled_escrows),
        "requests_sent": reading.requests_sent,
        "notes": notes,
        "participants": shown,
    }


def _header(data: dict, p0_now: P0Result) -> list[tuple[str, str]]:
    n = data["network"]
    share = "unknown (no requests)" if n["miss_share"] is None else \
        f"{n['missed_so_far']} / {n['requests_so_far']} = {n['miss_share']:.4%}"
    src = data["missed_by_source"]
    return [
        ("epoch", f"{data['epoch']} (counters of heights {data['start_height']:,} … {data['end_height']:,})"),
        ("height", f"{data['height']:,} ({data['progress']:.1%} of the epoch) at {utc_text(data['taken_at'])}"),
        ("network miss share", share),
        ("p0 if the epoch ended now", f"{n['p0']:g}" + (" (outage breaker: nobody punished)" if p0_now.skip else "")
         + f"; at the projected end {n['p0_projected']:g}"),
        ("misses by source", f"chain {src['chain']} (settled escrows), accounting {_count(src['accounting'])}, "
                             f"host {_count(src['host'])} (not yet settled; each counted once)"),
        ("assumption", ASSUMPTION),
    ]


# -- storing, the textfile, the loop ---------------------------------------------------------
def reading_rows(result: Result, reading: Any) -> list[dict[str, Any]]:
    """The rows of ``watch_readings`` for one reading (give it the result of every participant)."""
    d, w = result.data, reading.window
    severity = {f.subject["id"]: f.severity for f in result.findings}
    return [{"taken_at": reading.taken_at, "epoch": w.epoch, "height": w.height, "start_height": w.start,
             "end_height": w.end, "progress": w.progress, "p0": d["network"]["p0"], "participant": r["participant"],
             **{k: r[k] for k in COLUMNS[1:10]}, "severity": severity.get(r["participant"])}
            for r in d["participants"]]


def store_reading(store: Any, result: Result, reading: Any) -> int:
    with store.transaction():
        return store.insert("watch_readings", reading_rows(result, reading))


def samples(result: Result) -> Iterable[tuple[str, tuple[str, ...], float]]:
    """``(metric, (participant,), value)``; ``epoch`` is the result's."""
    for r in result.data["participants"]:
        if r["margin"] is not None:
            yield "auditor_miss_test_margin", (r["participant"],), r["margin"]
        if r["projected_verdict"] != "no_requests":
            yield "auditor_miss_test_projected_pass", (r["participant"],), 1 if r["projected_verdict"] == "pass" else 0
        yield "auditor_miss_test_requests", (r["participant"],), r["requests_so_far"]


def metrics(result: Result) -> Iterable[tuple[str, tuple[str, ...], float]]:
    """The registry's hook: the textfile samples of a reading (none for a backtest)."""
    return samples(result) if "participants" in result.data and "height" in result.data else ()


def write_textfile(path: Path, result: Result) -> None:
    """The watch's metrics for node_exporter, written atomically (a temp file, then a rename)."""
    from prometheus_client import CollectorRegistry, Gauge

    from ..report.promfile import write_registry
    from .registry import WATCH

    reg = CollectorRegistry()
    metrics = {m.name: m for m in WATCH.metrics}
    gauges = {m.name: Gauge(m.name, m.help, m.all_labels(result.mine is not None), registry=reg)
              for m in WATCH.metrics}
    for name, labels, value in samples(result):
        gauges[name].labels(*metrics[name].label_values(labels, result.data["epoch"], result.mine)).set(value)
    write_registry(path, reg)


# what makes a change line: a verdict (projected, or today's counts'), or the finding; a margin
# that moves alone does not (it moves with nearly every reading), it is said beside a change
CHANGES = ("projected", "now", "finding")


def changes(before: dict[str, dict] | None, result: Result, fmt: str = "table") -> list[str]:
    """One line per participant whose verdicts or finding changed since ``before`` (its margin
    beside): text, or with ``fmt`` json one JSON object (``changed``: each key's ``[before, now]``,
    ``margin``: now)."""
    d = result.data
    head = f"{utc_text(d['taken_at'])} epoch {d['epoch']} height {d['height']:,} ({d['progress']:.1%})"
    out = []
    for participant, now in state_of(result).items():
        old = (before or {}).get(participant)
        changed = {k: [None if old is None else old[k], now[k]] for k in CHANGES if old is None or old[k] != now[k]}
        if not changed:
            continue
        if fmt == "json":
            from ..report.view import json_text      # the one JSON writer: never NaN

            out.append(json_text({"schema_version": SCHEMA_VERSION, "taken_at": utc_text(d["taken_at"]),
                                  "epoch": d["epoch"], "height": d["height"], "progress": d["progress"],
                                  "participant": participant, "changed": changed, "margin": now["margin"]}))
        else:
            out.append(f"{head}: {participant} " + ", ".join(
                f"{k} {v}" if old is None else f"{k} {a} -> {v}" for k, (a, v) in changed.items())
                + f" (margin {now['margin']})")
    return out


def state_of(result: Result) -> dict[str, dict]:
    """What a change line is about, per participant shown: verdicts, finding, margin."""
    severity = {f.subject["id"]: f.severity for f in result.findings}
    return {r["participant"]: {"projected": r["projected_verdict"], "now": r["verdict_now"], "margin": r["margin"],
                               "finding": severity.get(r["participant"], "none")}
            for r in result.data["participants"]}


def say_missing(result: Result, err: Any = None) -> None:
    """What a reading asked for and did not get, one line each on stderr (it makes exit 3), as
    every command says it (``collect_report.incomplete_lines``: what, and what would complete it)."""
    from ..report.collect_report import incomplete_lines

    for line in incomplete_lines(result):
        print(line, file=err or sys.stderr, flush=True)


def loop(read: Callable[[], Any], options: WatchOptions, interval: float, *, keep: Callable[[Result, Any], None],
         emit_first: Callable[[Result], None], clock: Callable[[], float], sleep: Callable[[float], None],
         readings: int | None = None, fmt: str = "table", err: Any = None, out: Any = None,
         show: Callable[[Result | None, float], None] | None = None) -> None:
    """Read, assess, keep (store and textfile), print what changed; again every ``interval``
    seconds (counted from the start of a reading) until interrupted, or ``readings`` times,
    or until the reader of what it prints goes away (``| head``). A source that fails is one
    line on stderr and is asked again at the next interval. With ``show`` (a terminal) each
    reading is drawn in place instead, ``show(result, seconds to the next)``, and again each
    second of the wait with ``show(None, seconds left)``."""
    from ..errors import SourceError
    from ..streams import reader_gone

    err, out = err or sys.stderr, out or sys.stdout
    before: dict[str, dict] | None = None
    n = 0
    while readings is None or n < readings:
        n += 1
        started = clock()
        try:
            reading = read()
        except SourceError as exc:
            print(f"auditor: watch: {exc} (trying again in {interval:g} s)", file=err, flush=True)
        else:
            result = assess(reading, options)
            keep(result, reading)
            if show is not None:
                show(result, max(0.0, interval - (clock() - started)))
            elif before is None:
                emit_first(result)
            else:
                for line in changes(before, result, fmt):
                    print(line, file=out, flush=True)
            if reader_gone(out):
                return              # nobody reads what it prints (| head): the watch ends
            say_missing(result, err)
            before = state_of(result)
        if readings is not None and n >= readings:
            break
        while (left := interval - (clock() - started)) > 0:
            if show is None:
                sleep(left)
                break
            show(None, left)
            sleep(min(1.0, left))


# -- the backtest: an epoch's stored readings against its settled verdicts -------------------------
BACKTEST_COLUMNS = ["participant", "settled_verdict", "readings", "warned_readings", "first_warned_height",
                    "first_warned_progress", "first_warned_at", "first_warned_severity", "last_projected_verdict",
                    "outcome"]


def run(store: Any, epoch: int, options: Options | None = None) -> Result:
    """``auditor watch --backtest N``: when each participant the miss test zeroed in epoch N
    was first warned by the stored readings, and how many warnings were false."""
    rows = store.query("watch_backtest", epoch=epoch)
    title = f"Backtest of auditor watch on epoch {epoch}"
    if not rows:
        return Result.missing_input(KEY, title, f"no watch readings of epoch {epoch} are stored "
                                                f"(auditor watch stores one per reading)", ["watch"])
    known = {r["participant"] for r in rows}
    wanted = {_resolved(want, known) for want in WatchOptions.of(options).participants}
    rows = [r for r in rows if not wanted or r["participant"] in wanted]
    mt = misstest_facts(Run(store, epoch))
    verdicts = {} if mt.unavailable else {p: a["verdict"] for p, a in mt.by_participant().items()}
    out, counts = [], {"zeroed": 0, "zeroed_warned": 0, "zeroed_missed": 0, "false_warnings": 0,
                       "false_warning_readings": 0, "never_warned_ok": 0}
    for r in rows:
        verdict = verdicts.get(r["participant"])
        warned = r["warned_readings"] > 0
        zeroed = verdict == "zeroed_by_miss_test"
        if verdict is None:
            outcome = "settled verdict unknown"
        elif zeroed:
            counts["zeroed"] += 1
            counts["zeroed_warned" if warned else "zeroed_missed"] += 1
            outcome = "zeroed, warned before the end" if warned else "zeroed, never warned"
        elif warned:
            counts["false_warnings"] += 1
            counts["false_warning_readings"] += r["warned_readings"]
            outcome = "false warning"
        else:
            counts["never_warned_ok"] += 1
            outcome = "not zeroed, never warned"
        out.append({**r, "settled_verdict": verdict, "first_warned_at": r["first_warned_at"], "outcome": outcome})
    notes = [] if mt.unavailable is None else [f"settled verdicts unknown: {mt.unavailable}"]
    if mt.unavailable is not None:      # no verdict is known: the counts are unknown, not 0
        counts = dict.fromkeys(counts)
    data = {"epoch": epoch, "backtest": True, **counts, "notes": notes, "participants": out}
    unknown = "unknown: the settled verdicts are not stored"
    header = [("epoch", str(epoch)),
              ("zeroed by the miss test", unknown if mt.unavailable is not None else
               f"{counts['zeroed']}: {counts['zeroed_warned']} warned before the end, "
               f"{counts['zeroed_missed']} never warned"),
              ("false warnings", unknown if mt.unavailable is not None else
               f"{counts['false_warnings']} participant(s) warned and not zeroed "
               f"({counts['false_warning_readings']} warning reading(s))")]
    table = Table(title, list(BACKTEST_COLUMNS), out, notes=notes)
    return Result(KEY, title, data, [table], [], {"sources": ["watch", "chain"],
                                                  "missing": notes, "unknown": []},
                  complete=mt.unavailable is None, header=header)

