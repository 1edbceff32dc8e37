"""Result types shared by collectors, analyses and renderers."""

from __future__ import annotations

from dataclasses import dataclass, field
from collections.abc import Callable, Iterator
from typing import Any

from .errors import EXIT_FINDINGS, EXIT_OK, EXIT_SOURCE
from .times import utc, utc_text  # noqa: F401  (re-exported: analyses and renderers import them from here)


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
    """A titled table of rows: what every renderer can show. ``columns`` fixes the order.

    What a terminal table short of width keeps (never json, csv or md, which keep all):
    - ``priority``: the columns that matter most, most important first (the row's id, the
      verdict, the misses, the waste): kept as long as any fit;
    - ``narrow``: low-value columns, never in the terminal table (unless ``--wide``);
    - every other column is kept narrowest first, so long ids and 14-digit numbers go
      first; a column with one value in every row goes before all, and a note says its value.
    ``legend``: the abbreviations it uses (keys of ``report.view.LEGEND``): each format
    writes what they stand for under it.
    ``failing(row)``: True for a row that failed (a verdict other than pass, a spurious
    remint): coloured in the terminal when colour is on, marked in html."""

    title: str
    columns: list[str]
    rows: list[dict[str, Any]]
    notes: list[str] = field(default_factory=list)
    narrow: list[str] = field(default_factory=list)
    priority: list[str] = field(default_factory=list)
    legend: list[str] = field(default_factory=list)
    failing: Callable[[dict[str, Any]], bool] | None = None

    def failed(self, row: dict[str, Any]) -> bool:
        return bool(self.failing and self.failing(row))


class Stream:
    """A long list in a result's data that the result does not hold: its ``count`` items are
    made when the JSON writer reaches them, a page at a time (``hedging --all-races``: every
    race of a busy day, 220 k of them, a gigabyte as Python objects). ``pages()`` yields lists
    of items; it reads the store, so the result is written before the store is closed.
    ``count`` None: not known until the last page (``auditor sql``'s rows, fetched a chunk at
    a time); the JSON writer then writes the list as it comes, and it can be read once."""

    def __init__(self, count: int | None, pages: Callable[[], Iterator[list[Any]]]) -> None:
        self.count, self._pages = count, pages

    def __len__(self) -> int:
        if self.count is None:
            raise TypeError("a Stream of rows not counted yet has no length")
        return self.count

    def __iter__(self) -> Iterator[Any]:
        made = 0
        for page in self._pages():
            made += len(page)
            yield from page
        if self.count is not None and made != self.count:   # it would contradict the count written beside it
            raise RuntimeError(f"a streamed list made {made} items, not the {self.count} it announced")


@dataclass
class Chart:
    """A picture of some of a result's numbers, for the html report (``report/figures.py``
    draws them from a result's data; never in the JSON: the numbers are in the data).

    - ``kind``: ``bar`` (x values are categories, one group of bars per category), ``hbar``
      (the same on its side: one labelled row per category) or ``line`` (x values are
      numbers or times, one polyline per series).
    - ``series``: ``[{"name": str, "points": [[x, y], ...]}]``, optionally ``"colour"``
      (``"#rrggbb"``: failures red).
    - ``marks``: reference lines at a value, ``[{"name": str, "y": number}]`` (a cap, a
      threshold), optionally ``"colour"``.
    - ``events``: vertical markers on a line chart, ``[{"x": ..., "label": str, "class": str}]``.
    - ``spans``: shaded bands of a line chart, ``[{"from": x, "to": x, "label": str}]`` (the
      phases of a PoC).
    """

    title: str
    kind: str
    x_label: str
    y_label: str
    series: list[dict[str, Any]]
    marks: list[dict[str, Any]] = field(default_factory=list)
    events: list[dict[str, Any]] = field(default_factory=list)
    spans: list[dict[str, Any]] = field(default_factory=list)

    def __post_init__(self) -> None:
        if self.kind not in ("bar", "hbar", "line"):
            raise ValueError(f"chart kind {self.kind!r} is not bar, hbar or line")


FAIL_COLOUR = "#d62728"        # a chart's failures
PASS_COLOUR = "#1f77b4"

SEVERITIES = ("info", "warn", "error")                 # in rising order

# The version of every command's JSON (its ``schema_version``, CHANGELOG.md): raised when a key
# is removed or renamed, or its meaning or type changes; a key added keeps it (a reader skips
# the keys it does not know), and CHANGELOG.md lists it.
SCHEMA_VERSION = 1


def subject_kinds() -> tuple[str, ...]:
    """The kinds a finding may be about: the registry's (``analyses/registry.py``), so an
    analysis that declares a code about a new kind of subject needs no edit here."""
    from .analyses.registry import subject_kinds as kinds     # the registry imports nothing of ours

    return kinds()


@dataclass
class Finding:
    """One thing an analysis flags: a stable ``code`` (one its registry record declares), a ``severity``, the ``subject`` it is
    about (``{kind, id}``), the ``model`` where one applies, a one-line ``summary``, the
    ``evidence``: the numbers, and the query or rows they came from, and the ``action``: one
    line, the next step. The action is the code's text in the registry (``Code.action``),
    its placeholders filled from this finding's subject and evidence, unless given."""

    code: str
    severity: str
    subject: dict[str, Any]
    summary: str
    evidence: dict[str, Any] = field(default_factory=dict)
    model: str | None = None
    action: str | None = None
    mine: bool | None = None        # --mine given: whether it is about one of the operator's hosts (auditor/mine.py)

    def __post_init__(self) -> None:
        if self.severity not in SEVERITIES:
            raise ValueError(f"severity {self.severity!r} is not one of {SEVERITIES}")
        from .analyses.registry import undeclared

        if undeclared(self.code):
            raise ValueError(undeclared(self.code))
        kinds = subject_kinds()
        if self.subject.get("kind") not in kinds or "id" not in self.subject:
            raise ValueError(f"subject {self.subject!r} needs kind in {kinds} and an id")
        if "\n" in self.summary:
            raise ValueError("a finding's summary is one line")
        if self.action is None:
            from .analyses.registry import action_of

            self.action = action_of(self)
        if self.action is not None and "\n" in self.action:
            raise ValueError("a finding's action is one line")

    @property
    def rank(self) -> int:
        return SEVERITIES.index(self.severity)

    def to_dict(self) -> dict[str, Any]:
        out = {"code": self.code, "severity": self.severity, "subject": self.subject, "model": self.model,
               "summary": self.summary, "evidence": self.evidence, "action": self.action}
        if self.mine is not None:       # only when --mine was given: the JSON without it stays as it was
            out["mine"] = self.mine
        return out


def ranked(findings: list[Finding]) -> list[Finding]:
    """With --mine, the operator's own first; then most severe first; then by code and
    subject, so the order is stable."""
    return sorted(findings, key=lambda f: (f.mine is False, -f.rank, f.code, str(f.subject.get("id"))))


@dataclass
class Result:
    """What every analysis returns, and every renderer presents.

    - ``key``: its key in the JSON of ``auditor epoch N`` (``miss_test``); ``title`` its heading.
    - ``data``: the facts (the analysis's own keys), times as datetimes: the renderers write
      them (``times.utc_text``).
    - ``tables``: the same facts laid out for table, markdown and csv (csv writes the first).
    - ``findings``: what it flags.
    - ``coverage``: the sources it relied on and what it needed and did not have
      (``{"sources": [...], "missing": [...]}``); ``complete`` is False when something it
      needed was missing, which makes a command exit 3.
    - ``unavailable``: why the analysis could not run at all (no input), else None.
    - ``header``: labelled key facts shown above the tables.
    - ``parts``: for a report composed of analyses (``auditor epoch N``), their results.
    - ``legend``: the abbreviations its header uses (as ``Table.legend``).
    """

    key: str
    title: str
    data: Any
    tables: list[Table] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    coverage: dict[str, Any] = field(default_factory=dict)
    complete: bool = True
    unavailable: str | None = None
    header: list[tuple[str, str]] = field(default_factory=list)
    parts: list["Result"] = field(default_factory=list)     # a composed report's analyses, in order
    legend: list[str] = field(default_factory=list)
    mine: frozenset[str] | None = None      # --mine: the operator's addresses (auditor/mine.py); None: not given

    @classmethod
    def missing_input(cls, key: str, title: str, reason: str, sources: list[str]) -> "Result":
        """The result of an analysis whose input is not in the store."""
        return cls(key, title, {"available": False, "reason": reason}, [Table(title, [], [], [reason])],
                   coverage={"sources": sources, "missing": [reason]}, complete=False, unavailable=reason)

    def to_json(self) -> dict[str, Any]:
        """The JSON a command prints: its ``schema_version``, then its data, its findings and
        its coverage (a plain query result, with neither, is its data alone)."""
        data = self.data if isinstance(self.data, dict) else {self.key: self.data}
        data = {"schema_version": SCHEMA_VERSION, **data}
        if not self.coverage and not self.findings:
            return data
        return {**data, "findings": [f.to_dict() for f in ranked(self.findings)], "coverage": self.coverage}

    def failing(self, fail_on: str | None) -> list[Finding]:
        """The findings at or above ``fail_on`` that count for it: with --mine, only the ones
        that are mine (the others are still reported, not counted)."""
        if fail_on is None:
            return []
        floor = SEVERITIES.index(fail_on)
        return [f for f in self.findings if f.rank >= floor and f.mine is not False]

    def exit_code(self, fail_on: str | None) -> int:
        """3 when data was incomplete (it outranks findings); 1 when a finding is at or above
        ``fail_on`` (with --mine: one of mine); else 0."""
        if not self.complete:
            return EXIT_SOURCE
        if self.failing(fail_on):
            return EXIT_FINDINGS
        return EXIT_OK
