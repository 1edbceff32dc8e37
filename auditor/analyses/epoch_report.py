"""`auditor epoch N`: every analysis of the epoch, composed into one report.

It runs the records of ``registry.ANALYSES``, all in one run (``context.Run``): what one
analysis works out, another takes from the run. Two run at a time when DuckDB may use two
threads (``_analyses``); the report keeps their order. The report's
JSON has ``epoch``, ``settled``, ``complete``, one key per analysis (its ``Result.key``),
all findings ranked by severity, and ``coverage`` (the coverage analysis's per-source data).
"""

from __future__ import annotations

import threading
from collections import deque
from contextlib import nullcontext
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..result import Result, ranked, utc_text
from . import coverage, epoch_facts
from .context import Run, run_for
from .frame import Call, Options, require_epoch
from .registry import ANALYSES

if TYPE_CHECKING:      # annotations only: importing the analysis (its --help) needs no DuckDB
    from ..store import Store


@dataclass(frozen=True)
class EpochOptions(Options):
    """``auditor epoch N``'s options: the shared ones, with the time range."""

    RANGE = True

    @classmethod
    def call(cls, epoch: int | None, **values: Any) -> Call:
        def report(store: Store, epoch: int, options: Options) -> Result:
            return run(store, epoch, options, progress=store.progress)

        return Call(epoch, Options(**values), run=report)


def run(store: Store, epoch: int, options: Options | None = None, *, progress: Any = None,
        ctx: Run | None = None) -> Result:
    """Every analysis of ``registry.ANALYSES`` on epoch N, in one run; ``progress``
    (``auditor.progress.Progress``) shows them going by, as a bar on a terminal and log lines
    off one."""
    options = options or Options()
    # one run for the report: what several analyses need is worked out once, and the miss
    # test's findings carry poc_overload's CPoC window misses because both are in it
    shared = run_for(store, epoch, ctx) if ctx is not None else Run(store, epoch, analyses=[a.key for a in ANALYSES])
    settled, complete = require_epoch(store, epoch, shared)
    # every analysis's kept views for the whole run: a fact one analysis works out for another
    # (cpoc's attempts around the windows) reads them as the one that needs it would
    with store.derived(*dict.fromkeys(view for a in ANALYSES for view in a.kept)), \
            (progress.task(f"epoch {epoch}: analyses", len(ANALYSES)) if progress is not None
             else nullcontext(lambda n=1: None)) as advance:
        parts = _analyses(store, epoch, options, shared, advance)
    data: dict = {"epoch": epoch, "settled": settled, "complete": complete}
    cov: dict = {}
    for part in parts:
        if part.key == coverage.KEY:
            cov = part.data
        else:
            data[part.key] = part.data
    header = _header({p.key: p for p in parts}, settled, complete)
    return Result("epoch", f"epoch {epoch}", data, findings=ranked([f for p in parts for f in p.findings]),
                  coverage=cov, complete=all(p.complete for p in parts), header=header, parts=parts,
                  legend=["W_m"] if any(k == "models" for k, _ in header) else [])


def _analyses(store: Store, epoch: int, options: Options, run: Run, advance: Any) -> list[Result]:
    """The result of every analysis of ``ANALYSES``, in that order. With two DuckDB threads
    (``Store.threads``) two run at a time: this thread takes them from the first on, and a
    helper from the last back (the gateway-log analyses, the longest, come last), querying
    through a connection of its own (``Store.worker``). Their many small queries are planned
    on one thread each: the demo's 46 took 0.40 s one after another and 0.26 s two at a
    time. The first failure in report order is raised, as one at a time would: this thread's
    analyses all come before the helper's, so when one fails the helper's query is stopped."""
    todo = deque(enumerate(ANALYSES))
    taking = threading.Lock()
    results: dict[int, Result] = {}
    failed: dict[int, BaseException] = {}
    stop, done = threading.Event(), threading.Event()
    connections: list = []

    def work(on: Store, take: str) -> None:
        while not stop.is_set():
            with taking:
                if not todo:
                    return
                i, a = getattr(todo, take)()
            try:
                results[i] = a.run(on, epoch, options, ctx=run)
            except BaseException as exc:  # noqa: BLE001 - raised below, in report order
                failed[i] = exc
                stop.set()
                return
            advance(1)

    def helper() -> None:
        try:
            with store.worker() as mine, run.on(mine):
                connections.append(mine.con)
                try:
                    work(mine, "pop")
                finally:
                    with taking:            # closed next: no longer to be interrupted
                        connections.clear()
        except BaseException as exc:  # noqa: BLE001 - its connection could not be made
            failed.setdefault(len(ANALYSES), exc)
            stop.set()
        finally:
            done.set()

    def stop_helper() -> None:
        stop.set()
        with taking:
            for con in connections:
                con.interrupt()
        done.wait()

    if store.threads > 1:
        threading.Thread(target=helper, name="auditor-analysis", daemon=True).start()
    else:
        done.set()
    try:
        work(store, "popleft")
        # done.wait(), not Thread.join: Ctrl-C during a join leaves is_alive() False (3.11)
        stop_helper() if failed else done.wait()
    except BaseException:       # Ctrl-C between two analyses, or while the helper finishes
        stop_helper()
        raise
    if failed:
        raise next((e for e in failed.values() if isinstance(e, KeyboardInterrupt)), failed[min(failed)])
    return [results[i] for i in range(len(ANALYSES))]


def _header(parts: dict[str, Result], settled: bool, complete: bool) -> list[tuple[str, str]]:
    """The lines an operator reads first: the epoch's span, its models, its cPoC windows, and
    what each source that was not collected leaves unknown, analysis by analysis (the sources
    its registry record names)."""
    heights = {h["name"]: h for h in parts[epoch_facts.HEIGHTS].data}

    def at(name: str) -> str:
        h = heights.get(name)
        return "?" if h is None else f"{h['height']:,} ({utc_text(h['time']) if h['time'] else 'time unknown'})"

    lines = [("span", f"S(N) {at('S(N)')} … S(N+1) {at('S(N+1)')}"),
             ("settled", "yes" if settled else "no (epoch N+1 not settled yet: numbers may change)"),
             ("chain data complete", "yes" if complete else "no: see coverage")]
    models = parts[epoch_facts.MODELS].data
    if models:
        lines.append(("models", ", ".join(f"{m['model_id']} (W_m {m['w_m']:,})" if m["w_m"] is not None
                                          else m["model_id"] for m in models)))
    for ev in parts[epoch_facts.CPOC_EVENTS].data:
        lines.append((f"cpoc:{ev['event_sequence']}",
                      f"{utc_text(ev['trigger_time'])} … {utc_text(ev['val_end_time'])} "
                      f"(generation {utc_text(ev['gen_start_time'])} … {utc_text(ev['gen_end_time'])})"))
    per_source = parts[coverage.KEY].data
    for source, entry in per_source.items():
        if entry.get("collected", True):
            continue
        needs = [a.key for a in ANALYSES if a.key in parts and a.key != coverage.KEY and a.reads(source)]
        lines.append((f"no {source}", f"{', '.join(needs)}: unknown, not zero" if needs
                      else "not collected; nothing in this report relies on it alone"))
    return lines

