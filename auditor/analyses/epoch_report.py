"""`auditor epoch N`: the epoch's report, assembled from sections.

A section is a function ``(store, epoch, participant) -> Section``; its ``key`` is
its key in the JSON report and its tables are shown in order. Adding an analysis
to the report is writing one module with such a function and listing it in
``SECTIONS`` below.
"""

from __future__ import annotations

from collections.abc import Callable

from ..errors import SourceError
from ..result import Result, Section
from ..store import Store
from . import coverage, epoch_header, misstest

SectionFn = Callable[[Store, int, "str | None"], Section]

SECTIONS: list[SectionFn] = [
    epoch_header.heights,
    epoch_header.models,
    epoch_header.cpoc_events,
    epoch_header.preserved_nodes,
    coverage.section,
    misstest.section,
]


def run(store: Store, epoch: int, *, participant: str | None = None) -> Result:
    row = store.one(
        "SELECT settled, complete FROM chain_epochs WHERE epoch = ?", [epoch])
    if row is None:
        raise SourceError(f"epoch {epoch} is not in the store; collect it first: "
                          f"auditor epoch {epoch} --node URL (or --replay DIR)")
    settled, complete = row
    data: dict = {"epoch": epoch, "settled": settled, "complete": complete}
    result = Result(kind=f"epoch {epoch}", data=data)
    result.header.append(("settled", "yes" if settled else "no (epoch N+1 not settled yet: numbers may change)"))
    result.header.append(("chain data complete", "yes" if complete else "no: see coverage"))
    for fn in SECTIONS:
        sec = fn(store, epoch, participant)
        data[sec.key] = sec.data
        result.tables.extend(sec.tables)
        result.exit_code = max(result.exit_code, sec.exit_code)
    return result
