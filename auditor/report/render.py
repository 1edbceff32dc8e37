"""Render a Result in every format: the dispatch, JSON, CSV, and what the text formats
share (cells, the layout, the findings table). The terminal view is ``table.py``, Markdown
``markdown.py``, HTML ``html.py``. Formatting only: no computing."""

from __future__ import annotations

import csv
import io
import itertools
import json
import os
import sys
import tempfile
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import date, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

from ..errors import UsageError
from ..result import Finding, Result, Stream, Table, ranked, utc_text
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


def json_pieces(v: Any, level: int = 0) -> Iterator[str]:
    """``to_json``'s text in pieces, in order: what ``emit`` writes as they come, so that a
    ``Stream`` in the data (a list the result does not hold) is written a page at a time and
    the whole text is never held either."""
    if v is None or isinstance(v, (str, int, float)):
        yield _COMPACT.encode(v)
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
                yield _COMPACT.encode(x)
            else:
                yield from json_pieces(x, level + 1)
            yield ",\n" if i < last else "\n"
        yield "  " * level + "]"
    else:                                   # Decimal, datetime, tuple, set, a to_dict() object
        yield from json_pieces(json_default(v), level)


# the words of a column that holds identifiers, never quantities: their numbers are written
# without thousands separators (an escrow 134985, a height 6213928), every other whole number
# with them (a reward 16,000,000,000,000) in the table, md and html views; json and csv raw
IDENTIFIERS = frozenset({"escrow", "epoch", "height", "nonce", "slot", "request", "id", "index", "port", "seed"})


def identifier(column: str | None) -> bool:
    """Whether ``column`` (by its words) holds identifiers: ``escrow``, ``primary_nonce``, ``start_height``."""
    return column is not None and bool(IDENTIFIERS & set(str(column).lower().replace(" ", "_").split("_")))


def cell(v: Any, column: str | None = None) -> str:
    """One value as text: NULL shows as an em dash (unknown), never as 0. A whole number of a
    ``column`` that is no identifier is written with thousands separators."""
    if column is not None and not identifier(column) and not isinstance(v, bool) and (
            isinstance(v, int) or isinstance(v, Decimal) and v == v and v == v.to_integral_value()):
        return f"{int(v):,}"
    if v is None:
        return "—"
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, float):
        return f"{v:.4f}".rstrip("0").rstrip(".") if v == v else "NaN"
    if isinstance(v, Decimal):
        return format(v.normalize(), "f") if v == v else "NaN"
    if isinstance(v, datetime):
        return utc_text(v, "milliseconds")          # json keeps every digit
    if isinstance(v, (list, tuple)):
        return ", ".join(cell(x) for x in v)
    return str(v)


def numeric(t: Table, col: str) -> bool:
    vals = [r.get(col) for r in t.rows if r.get(col) is not None]
    return bool(vals) and all(isinstance(v, (int, float, Decimal)) and not isinstance(v, bool) for v in vals)


def findings_table(findings: list[Finding]) -> Table:
    """The findings as rows: what table, markdown and csv show of them."""
    rows = [{"severity": f.severity, "code": f.code, "kind": f.subject["kind"], "subject": f.subject["id"],
             "model": f.model, "summary": f.summary, "action": f.action} for f in ranked(findings)]
    return Table("Findings", ["severity", "code", "kind", "subject", "model", "summary", "action"], rows,
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
    "cf_*": "cf_* = counterfactual: the window replayed with the proposed per-host cap",
    "(table)": "(table) = the allowance is the chain's table of critical misses for that p0 "
               "(above 990 requests the chain's rate rule)",
}


def legend(abbreviations: list[str]) -> list[str]:
    """The ``LEGEND`` lines of ``abbreviations`` (its keys), in ``LEGEND``'s order."""
    unknown = set(abbreviations) - set(LEGEND)
    if unknown:
        raise KeyError(f"no legend for {sorted(unknown)}: add it to report/render.py LEGEND")
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
        yield "findings", 2, ranked(result.findings)
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


def _legend(abbreviations: list[str], depth: int) -> Iterator[tuple[str, int, Any]]:
    lines = legend(abbreviations)
    if lines:
        yield "legend", depth, lines


def to_csv(table: Table) -> str:
    """One line a row, ending in LF. The writer's terminator is CRLF, because the csv module
    quotes only a field holding a character of it: with LF alone a CR in a value went out
    bare and split the row for every reader. The writer writes each row with one call, so
    each row's CRLF is then cut to LF."""
    lines: list[str] = []
    w = csv.writer(_Lines(lines), lineterminator="\r\n")
    w.writerow([csv_cell(c) for c in table.columns])
    w.writerows([_csv_value(r.get(c)) for c in table.columns] for r in table.rows)
    return "".join(line[:-2] + "\n" for line in lines)


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


def render(result: Result, fmt: str, view: View = View()) -> str:
    """The whole report in one format, as text (the table format as for a file)."""
    if fmt == "json":
        return to_json(result.to_json()) + "\n"
    if fmt == "md":
        from .markdown import to_markdown

        return to_markdown(result, view)
    if fmt == "html":
        from .html import to_html

        return to_html(result, view)
    if fmt == "csv":
        if result.parts:
            return to_csv(findings_table(result.findings))
        if not result.tables:
            raise UsageError(f"{result.title} has no table to write as CSV")
        return to_csv(result.tables[0])
    if fmt == "table":
        from .table import print_table

        out = io.StringIO()
        print_table(result, out, view)
        return out.getvalue()
    raise UsageError(f"unknown format {fmt!r}")


def emit(result: Result, fmt: str, output: Path | None = None, view: View = View()) -> None:
    """Print the report, or write it to ``output`` atomically (a temp file beside it, then
    a rename), so a reader never sees half a report. JSON is written as it is made
    (``json_pieces``)."""
    if fmt == "json":
        pieces = itertools.chain(json_pieces(result.to_json()), ["\n"])
        if output is not None:
            write_atomic(output, pieces)
        else:
            sys.stdout.writelines(pieces)
    elif output is not None:
        write_atomic(output, render(result, fmt, view))
    elif fmt == "table":
        from .table import print_table

        print_table(result, sys.stdout, view)
    else:
        sys.stdout.write(render(result, fmt, view))


def write_atomic(path: Path, text: str | Iterable[str]) -> None:
    """Write ``text`` (or its pieces) to ``path`` as a whole or not at all: a temp file beside
    it, then a rename. A failure is one line naming the path and the cause (errors.cannot_write)."""
    write_all_atomic({Path(path): text})


def write_all_atomic(files: dict[Path, str | Iterable[str]]) -> None:
    """Write every file or none: each text (or its pieces, written as they come) goes to a temp
    file beside its path (fsynced), and only when all are written are they renamed into place,
    so a full disk leaves the files as they were (``report daily``'s json, md and html come
    together). Temp files are removed on any failure."""
    for path in files:
        if path.is_dir():
            raise UsageError(f"{path} is a directory; give a file path")
    umask = os.umask(0)
    os.umask(umask)
    temps: dict[Path, str] = {}
    path = next(iter(files))
    try:
        for path, text in files.items():
            path.parent.mkdir(parents=True, exist_ok=True)
            fd, temps[path] = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
            os.chmod(temps[path], 0o666 & ~umask)       # as an ordinary file, not mkstemp's 0600
            # an undecodable byte of a path name (a surrogate) is written as \udcXX: the file stays UTF-8
            with os.fdopen(fd, "w", encoding="utf-8", errors="backslashreplace") as f:
                f.write(text) if isinstance(text, str) else f.writelines(text)
                f.flush()
                os.fsync(f.fileno())
        for path, tmp in temps.items():
            os.replace(tmp, path)
    except OSError as exc:
        from ..errors import cannot_write

        raise cannot_write(path, exc) from exc
    finally:
        for tmp in temps.values():      # what was renamed is no longer there
            Path(tmp).unlink(missing_ok=True)


def query_result(store, sql: str) -> Result:
    """Run ad-hoc SQL for `auditor sql`; a bad query is a usage error, not a crash."""
    import duckdb

    try:
        columns, rows = store.table(sql)
    except duckdb.OutOfMemoryException:
        raise                               # not the query's fault: the CLI says what helps
    except duckdb.Error as exc:
        raise UsageError(f"query failed: {str(exc).splitlines()[0]}") from exc
    table = Table(title=f"{len(rows)} row(s)", columns=columns, rows=rows)
    return Result("sql", "sql", {"columns": columns, "rows": rows}, tables=[table])
