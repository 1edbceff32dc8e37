"""Gateway log ingestion: the run report.

What one ``collect --gateway-log`` run says about each path: the :class:`CollectReport`
(rows loaded, lines rejected by reason, files skipped, paths missing, notes) and a
coverage row per path in the store.
"""

from __future__ import annotations

from ..result import CollectReport
from ..store import Store, coverage_row
from .gatewaylog_files import Target

SOURCE = "gateway_log"


class RunReport:
    """The report of one run, and the coverage rows it writes as it goes."""

    def __init__(self, store: Store, report: CollectReport) -> None:
        self.store = store
        self.report = report

    def note(self, text: str) -> None:
        self.report.notes.append(text)

    def coverage(self, item: str, status: str, detail: str | None) -> None:
        self.store.put_coverage(coverage_row(SOURCE, item, status, detail))

    def missing(self, given: str, why: str) -> None:
        """A path not read (or not whole): listed in ``missing``, and the CLI exits 3."""
        self.report.missing.append(f"{given}: {why}")
        self.coverage(given, "missing", why)

    def unchanged(self, t: Target) -> None:
        self.report.skipped.append(f"{t.given} (unchanged)")
        self.coverage(t.given, "skipped", "unchanged since the last read")

    def stored(self, rows: int, rejected: dict[str, int]) -> None:
        """One commit's rows and rejected lines, by reason."""
        report = self.report
        if rows or not report.loaded:
            report.add("log_events", rows)
        for reason, k in rejected.items():
            if k:
                report.rejected[reason] = report.rejected.get(reason, 0) + k
