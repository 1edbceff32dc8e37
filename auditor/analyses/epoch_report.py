"""`auditor epoch N`: every analysis of the epoch, composed into one report.

It runs the records of ``registry.ANALYSES`` in their order, all in one run
(``context.Run``): what one analysis works out, the next takes from the run. The report's
JSON has ``epoch``, ``settled``, ``complete``, one key per analysis (its ``Result.key``),
all findings ranked by severity, and ``coverage`` (the coverage analysis's per-source data).
"""

from __future__ import annotations

from typing import Any

from ..result import Result, ranked, utc_text
from ..store import Store
from . import coverage, epoch_facts
from .context import Run, run_for
from .frame import Options, require_epoch
from .registry import ANALYSES


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
    analyses = progress.track(ANALYSES, f"epoch {epoch}: analyses") if progress is not None else ANALYSES
    # every analysis's kept views for the whole run: a fact one analysis works out for another
    # (cpoc's attempts around the windows) reads them as the one that needs it would
    with store.derived(*dict.fromkeys(view for a in ANALYSES for view in a.kept)):
        parts = [a.run(store, epoch, options, ctx=shared) for a in analyses]
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


def _header(parts: dict[str, Result], settled: bool, complete: bool) -> list[tuple[str, str]]:
    """The lines an operator reads first: the epoch's span, its models, its cPoC windows, and
    what each source that was not collected leaves unknown, analysis by analysis."""
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
        needs = [p.key for p in parts.values()
                 if p.key != coverage.KEY and source in (p.coverage or {}).get("sources", [])]
        lines.append((f"no {source}", f"{', '.join(needs)}: unknown, not zero" if needs
                      else "not collected; nothing in this report relies on it alone"))
    return lines

