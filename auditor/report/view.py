"""What the formats share, below them all: the written form of a value (``cell``, JSON,
CSV), the findings table, the legend of abbreviations, the order every text format follows
(``layout``) and how a report is viewed (``View``). The formats (formats.py: table, json,
csv, md, html) import from here; this module imports none of them. Formatting only: no
computing."""

from __future__ import annotations

import csv
import itertools
import json
import math
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import date, datetime
from decimal import Decimal
from typing import IO, Any

from ..errors import UsageError
from ..result import Finding, Result, Stream, Table, ranked, utc_text
from .numbers import identifier
from .text import csv_cell


def json_default(v: Any) -> Any:
    if isinstance(v, Decimal):
        # exact: integers stay integers, fractions keep their digits
        return int(v) if v == v.to_integral_value() and abs(v) < 10**18 else format(v.normalize(), "f")
    if isinstance(v, datetime):
        return utc_text(v)           # the one written form of a time (auditor/times.py)
    if isinstance(v, date):
        return v.isoformat()
    if isinstance(v, (set, tuple)):
        return list(v)
    if hasattr(v, "to_dict"):
        return v.to_dict()
    return str(v)


LONG_LIST = 100     # a list longer than this is written one compact item per line


def to_json(data: Any) -> str:
    """Indented JSON, as ``json.dumps(indent=2)`` writes it, except that the items of a long
    list (every race of a 1 GB log) are each written compact on a line of their own: one
    item per line still reads and greps, and the C encoder writes it ~10x faster than the
    pure-Python indenting one."""
    return "".join(json_pieces(data))


_COMPACT = json.JSONEncoder(default=json_default, ensure_ascii=False, separators=(", ", ": "))


def json_finite(v: Any) -> Any:
    """``v`` with every float that is not a number made JSON, which has no NaN or infinity:
    NaN is null (no value: unknown, as NULL), an infinity the string ``"Infinity"`` or
    ``"-Infinity"`` (the value says what it is). Python's encoder writes bare ``NaN``, which
    no strict JSON reader takes (a NaN /metrics sample reached hedging's output so)."""
    if isinstance(v, float):
        if v != v:
            return None
        return v if abs(v) != math.inf else ("Infinity" if v > 0 else "-Infinity")
    if v is None or isinstance(v, (str, int)):
        return v
    if isinstance(v, dict):
        return {k: json_finite(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [json_finite(x) for x in v]
    return json_finite(json_default(v))


def json_text(v: Any) -> str:
    """``v`` as compact JSON, never with NaN or Infinity (``json_finite``): the encoder's text,
    written again only when it holds one of those words (rare; a string holding one comes
    out the same)."""
    text = _COMPACT.encode(v)
    if "NaN" in text or "Infinity" in text:
        text = _COMPACT.encode(json_finite(v))
    return text


def json_pieces(v: Any, level: int = 0) -> Iterator[str]:
    """``to_json``'s text in pieces, in order: what ``emit`` writes as they come, so that a
    ``Stream`` in the data (a list the result does not hold) is written a page at a time and
    the whole text is never held either. Never NaN or Infinity (``json_text``)."""
    if v is None or isinstance(v, (str, int, float)):
        yield json_text(v)
    elif isinstance(v, Stream) and v.count is None:
        yield from _uncounted(v, level)
    elif isinstance(v, dict):
        if not v:
            yield "{}"
            return
        pad, last = "  " * (level + 1), len(v) - 1
        yield "{\n"
        for i, (k, x) in enumerate(v.items()):
            yield f"{pad}{_COMPACT.encode(k if isinstance(k, str) else json.dumps(k))}: "
            yield from json_pieces(x, level + 1)
            yield ",\n" if i < last else "\n"
        yield "  " * level + "}"
    elif isinstance(v, (list, Stream)):
        if not len(v):
            yield "[]"
            return
        pad, last, long = "  " * (level + 1), len(v) - 1, len(v) > LONG_LIST
        yield "[\n"
        for i, x in enumerate(v):
            yield pad
            if long:
                yield json_text(x)
            else:
                yield from json_pieces(x, level + 1)
            yield ",\n" if i < last else "\n"
        yield "  " * level + "]"
    else:                                   # Decimal, datetime, tuple, set, a to_dict() object
        yield from json_pieces(json_default(v), level)


def _uncounted(v: Stream, level: int) -> Iterator[str]:
    """A list whose length is known at its end only, written as a list of that length is: its
    first LONG_LIST + 1 items decide whether it is short (indented) or long (an item a line)."""
    items = iter(v)
    head = list(itertools.islice(items, LONG_LIST + 1))
    if len(head) <= LONG_LIST:
        yield from json_pieces(head, level)
        return
    pad = "  " * (level + 1)
    yield "[\n" + pad + json_text(head[0])
    for x in itertools.chain(head[1:], items):
        yield ",\n" + pad + json_text(x)
    yield "\n" + "  " * level + "]"


def cell(v: Any, column: str | None = None) -> str:
    """One value as text: NULL shows as an em dash (unknown), never as 0, and an empty list
    as "none" (known to be empty), never as a blank. A number of a ``column`` that is no
    identifier (a quantity) is written with thousands separators; a float to four decimals,
    and one so small that they would show 0 to four significant digits."""
    grouped = "," if column is not None and not identifier(column) else ""
    if grouped and not isinstance(v, bool) and (
            isinstance(v, int) or isinstance(v, Decimal) and v == v and v == v.to_integral_value()):
        return f"{int(v):,}"
    if v is None:
        return "—"
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, float):
        if v != v:
            return "NaN"
        if v and abs(v) < 0.00005:          # four decimals would show it as 0: four digits instead
            return f"{v:.4g}"
        return f"{v + 0.0:{grouped}.4f}".rstrip("0").rstrip(".")       # + 0.0: -0.0 is 0
    if isinstance(v, Decimal):
        return format(v.normalize(), f"{grouped}f") if v == v else "NaN"
    if isinstance(v, datetime):
        return utc_text(v, "milliseconds")          # json keeps every digit
    if isinstance(v, (list, tuple)):
        return ", ".join(cell(x) for x in v) or "none"
    return str(v)


def numeric(t: Table, col: str) -> bool:
    vals = [r.get(col) for r in t.rows if r.get(col) is not None]
    return bool(vals) and all(isinstance(v, (int, float, Decimal)) and not isinstance(v, bool) for v in vals)


class Findings(list):
    """A list of findings under its heading (``layout``): "Findings", or with --mine "Your
    hosts" (the operator's own, first) and "Findings: the rest of the network"."""

    def __init__(self, findings: list[Finding], title: str = "Findings") -> None:
        super().__init__(findings)
        self.title = title


MINE_TITLES = ("Your hosts", "Findings: the rest of the network")


def finding_groups(findings: list[Finding]) -> list[Findings]:
    """The findings ranked, as one group; with --mine (each finding says whether it is mine),
    as two: the operator's own ("Your hosts") first, then the rest."""
    findings = ranked(findings)
    if not findings or all(f.mine is None for f in findings):
        return [Findings(findings)]
    return [Findings([f for f in findings if f.mine], MINE_TITLES[0]),
            Findings([f for f in findings if not f.mine], MINE_TITLES[1])]


def findings_table(findings: list[Finding]) -> Table:
    """The findings as rows: what table, markdown and csv show of them."""
    rows = [{"severity": f.severity, "code": f.code, "kind": f.subject["kind"], "subject": f.subject["id"],
             "model": f.model, "summary": f.summary, "action": f.action} for f in ranked(findings)]
    return Table(getattr(findings, "title", "Findings"),
                 ["severity", "code", "kind", "subject", "model", "summary", "action"], rows,
                 narrow=["kind", "model"], priority=["severity", "code", "subject", "summary", "action"])


# The abbreviations the reports use, each with what it stands for: a table that declares one
# (``Table.legend``; a header: ``Result.legend``) is followed by its line. Declared, never
# guessed from the text: cells and notes hold outside text, and a host named W_m gets no legend.
LEGEND = {
    "T / M / n_used": "T / M / n_used = the epoch's requests and misses over all participants, and how many "
                      "participants had requests (the network baseline's inputs)",
    "W_m": "W_m = model m's total PoC weight",
    "D_m": "D_m = the weight needed to serve model m's in-flight demand in a PoC window at the gateway's "
           "per-10,000 ratio (demand_weight)",
    "cf_*": "cf_* = counterfactual: the window replayed with the proposed per-host cap, over the span the notes say",
    "(table)": "(table) = the allowance is the chain's table of critical misses for that p0 "
               "(above 990 requests the chain's rate rule)",
}


def legend(abbreviations: list[str]) -> list[str]:
    """The ``LEGEND`` lines of ``abbreviations`` (its keys), in ``LEGEND``'s order."""
    unknown = set(abbreviations) - set(LEGEND)
    if unknown:
        raise KeyError(f"no legend for {sorted(unknown)}: add it to report/view.py LEGEND")
    return [line for abbr, line in LEGEND.items() if abbr in abbreviations]


def layout(result: Result) -> Iterator[tuple[str, int, Any]]:
    """The order every text format follows, as ``(kind, depth, item)``: the title, the
    header lines, the findings (of a composed report: all, ranked), the tables, then each
    part's title, header and tables; a header or table declaring abbreviations of ``LEGEND``
    is followed by a ``legend`` item, their lines. kind is 'title', 'header', 'findings',
    'table' or 'legend'."""
    yield "title", 1, result.title
    if result.header:
        yield "header", 1, result.header
        yield from _legend(result.legend, 1)
    if result.findings or result.parts:
        for group in finding_groups(result.findings):
            yield "findings", 2, group
    for t in result.tables:
        yield "table", 2, t
        yield from _legend(t.legend, 2)
    for part in result.parts:
        if part.header:
            yield "title", 2, part.title
            yield "header", 2, part.header
            yield from _legend(part.legend, 2)
        for t in part.tables:
            yield "table", 3 if part.header else 2, t
            yield from _legend(t.legend, 3 if part.header else 2)


def coverage_caveats(result: Result) -> list[str]:
    """What the sources did not cover, as the analysis (or each source) says: every text
    format ends with them ("Coverage caveats")."""
    cov = result.coverage or {}
    if result.parts:   # the epoch report: per source, then what each analysis could not tell
        said = [f"{source}: {m}" for source, entry in cov.items() if isinstance(entry, dict)
                for m in entry.get("missing") or []]
        said += [f"{part.key}: {u}" for part in result.parts for u in (part.coverage or {}).get("unknown") or []]
    else:
        said = list(cov.get("missing") or []) + list(cov.get("unknown") or [])
    # once: a caveat a table already says under it (history's) is not said again at the end
    noted = {n for t in result.tables for n in t.notes}
    return [c for c in dict.fromkeys(said) if c not in noted]


def _legend(abbreviations: list[str], depth: int) -> Iterator[tuple[str, int, Any]]:
    lines = legend(abbreviations)
    if lines:
        yield "legend", depth, lines


def to_csv(table: Table) -> str:
    """One line a row, ending in LF (``csv_pieces``)."""
    return "".join(csv_pieces(table))


CSV_PIECE_ROWS = 1000


def csv_pieces(table: Table) -> Iterator[str]:
    """The table as CSV in pieces of CSV_PIECE_ROWS rows, as its rows come (a ``Stream`` of a
    query's rows is never all held). One line a row, ending in LF. The writer's terminator
    is CRLF, because the csv module quotes only a field holding a character of it: with LF
    alone a CR in a value went out bare and split the row for every reader. The writer
    writes each row with one call, so each row's CRLF is then cut to LF."""
    lines: list[str] = []
    w = csv.writer(_Lines(lines), lineterminator="\r\n")
    w.writerow([csv_cell(c) for c in table.columns])
    for r in table.rows:
        w.writerow([_csv_value(r.get(c)) for c in table.columns])
        if len(lines) >= CSV_PIECE_ROWS:
            yield "".join(line[:-2] + "\n" for line in lines)
            lines.clear()
    yield "".join(line[:-2] + "\n" for line in lines)


class _Lines:
    """A file for ``csv.writer`` that keeps each row it writes."""

    def __init__(self, lines: list[str]) -> None:
        self.write = lines.append


def _csv_value(v: Any) -> Any:
    """Empty for NULL (unknown), exact numbers, ISO times, lists as JSON, a text that a
    spreadsheet would run as a formula with a leading ``'`` (``text.csv_cell``)."""
    if v is None:
        return ""
    if isinstance(v, (Decimal, datetime, date)):
        return json_default(v)
    if isinstance(v, (list, tuple, dict)):
        return json.dumps(v, default=json_default)
    return csv_cell(v)


@dataclass(frozen=True)
class View:
    """How to present a report: ``wide`` keeps every column and full addresses in the
    terminal view, as wide as they are; ``whole`` (a participant's report) keeps every
    column too, a row whose columns do not fit the width as ``key: value`` lines;
    ``command`` is the command line that made it (md and html print it)."""

    wide: bool = False
    whole: bool = False
    command: str | None = None


# -- the two formats written here (formats.py) ------------------------------------------------
def write_json(result: Result, out: IO[str], view: View) -> None:
    """The result's JSON (``Result.to_json``), written as it is made (``json_pieces``)."""
    out.writelines(itertools.chain(json_pieces(result.to_json()), ["\n"]))


def write_csv(result: Result, out: IO[str], view: View) -> None:
    """One table: a composed report's findings alone, else the result's first table."""
    if result.parts:
        out.write(to_csv(findings_table(result.findings)))
    elif not result.tables:
        raise UsageError(f"{result.title} has no table to write as CSV")
    else:
        out.writelines(csv_pieces(result.tables[0]))
