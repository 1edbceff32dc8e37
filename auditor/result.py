"""Result types shared by collectors, analyses and renderers."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any


def utc_text(t: datetime | None) -> str:
    """A time as people paste it: ``2026-09-23 00:03:36.172913Z`` (UTC), or '?' when unknown."""
    if t is None:
        return "?"
    if t.tzinfo is not None:
        t = t.astimezone(timezone.utc)
    return t.isoformat(sep=" ").replace("+00:00", "") + "Z"


@dataclass
class CollectReport:
    """What one source's collection did: an honest run report (loaded, skipped, missing).

    ``missing`` lists what was asked for and not obtained, one line each; a report
    with anything missing makes the command exit 3 after storing what it got.
    """

    source: str
    loaded: dict[str, int] = field(default_factory=dict)      # table or item -> rows
    skipped: list[str] = field(default_factory=list)          # cached / unchanged, not fetched again
    missing: list[str] = field(default_factory=list)          # asked for, not obtained
    rejected: dict[str, int] = field(default_factory=dict)    # reason -> count (unparsed lines, bad records)
    notes: list[str] = field(default_factory=list)

    @property
    def complete(self) -> bool:
        return not self.missing

    def add(self, table: str, n: int) -> None:
        self.loaded[table] = self.loaded.get(table, 0) + n

    def to_dict(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "loaded": self.loaded,
            "skipped": self.skipped,
            "missing": self.missing,
            "rejected": self.rejected,
            "notes": self.notes,
            "complete": self.complete,
        }


@dataclass
class Table:
    """A titled table of rows: what every renderer can show. ``columns`` fixes the order."""

    title: str
    columns: list[str]
    rows: list[dict[str, Any]]
    notes: list[str] = field(default_factory=list)


@dataclass
class Result:
    """An analysis result: ``data`` is the JSON contract, ``tables`` the same facts laid
    out for table/markdown/csv output (csv takes the table named by ``csv_table``)."""

    kind: str
    data: dict[str, Any]
    tables: list[Table] = field(default_factory=list)
    header: list[tuple[str, str]] = field(default_factory=list)   # key/value lines before the tables
    csv_table: int = 0
    exit_code: int = 0


@dataclass
class Section:
    """One section of a report: ``data`` goes under ``key`` in the JSON, ``tables`` are shown."""

    key: str
    data: Any
    tables: list[Table] = field(default_factory=list)
    exit_code: int = 0
