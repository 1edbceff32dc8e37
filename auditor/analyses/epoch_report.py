"""`auditor epoch N`: every analysis of the epoch, composed into one report.

``ANALYSES`` lists them in report order; each is ``run(store, epoch, options) -> Result``
(``frame.py``). Adding an analysis to the report is one line here. The report's JSON
has ``epoch``, ``settled``, ``complete``, one key per analysis (its ``Result.key``), all
findings ranked by severity, and ``coverage`` (the coverage analysis's per-source data).
"""

from __future__ import annotations

from collections.abc import Callable

from ..result import Result, ranked
from ..store import Store
from . import coverage, epoch_facts, misstest, preserved
from . import poc_overload, targets
from . import hedging
from .frame import Options, require_epoch

Analysis = Callable[[Store, int, Options], Result]

ANALYSES: list[Analysis] = [
    epoch_facts.heights,
    epoch_facts.models,
    epoch_facts.cpoc_events,
    preserved.run,
    coverage.run,
    misstest.run,
    poc_overload.run,
    targets.run,
    hedging.run,
]


def run(store: Store, epoch: int, options: Options | None = None) -> Result:
    options = options or Options()
    settled, complete = require_epoch(store, epoch)
    parts = [analysis(store, epoch, options) for analysis in ANALYSES]
    data: dict = {"epoch": epoch, "settled": settled, "complete": complete}
    cov: dict = {}
    for part in parts:
        if part.key == coverage.KEY:
            cov = part.data
        else:
            data[part.key] = part.data
    header = [("settled", "yes" if settled else "no (epoch N+1 not settled yet: numbers may change)"),
              ("chain data complete", "yes" if complete else "no: see coverage")]
    return Result("epoch", f"epoch {epoch}", data, findings=ranked([f for p in parts for f in p.findings]),
                  coverage=cov, complete=all(p.complete for p in parts), header=header, parts=parts)
