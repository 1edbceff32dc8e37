"""Render a Result in a format: the dispatch to the format's record (formats.py), and writing
a report whole or not at all. What the formats share is in ``view.py``, below them; the
terminal view is ``table.py``, Markdown ``markdown.py``, HTML ``html.py``."""

from __future__ import annotations

import io
import os
import sys
import tempfile
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import IO, Any

from ..errors import AuditorError, StoreError, UsageError, damaged_store, is_damaged_store
from ..result import Result, Stream, Table
from .formats import FORMATS, Format
from .view import View  # noqa: F401  (what callers give emit and render: render.View)


def render(result: Result, fmt: str, view: View = View()) -> str:
    """The whole report in one format, as text (the table format as for a file)."""
    out = io.StringIO()
    _format(fmt).write(result, out, view)
    return out.getvalue()


def emit(result: Result, fmt: str, output: Path | None = None, view: View = View()) -> None:
    """Print the report, or write it to ``output`` atomically (a temp file beside it, then
    a rename), so a reader never sees half a report; a device, a FIFO or ``-`` in place
    (``write_all_atomic``). Each format writes as it makes its text (JSON and CSV a piece at a
    time: ``view.json_pieces``, ``view.csv_pieces``)."""
    f = _format(fmt)
    if output is not None:
        write_atomic(output, lambda out: f.write(result, out, view))
    else:
        f.write(result, sys.stdout, view)


def _format(fmt: str) -> Format:
    if fmt not in FORMATS:
        raise UsageError(f"unknown format {fmt!r}")
    return FORMATS[fmt]


def write_atomic(path: Path, text: str | Iterable[str] | Callable[[IO[str]], None], flag: str | None = None) -> None:
    """Write ``text`` (or its pieces, or what a writer of a stream writes) to ``path`` as a whole or not at all: a temp file beside
    it, then a rename; a device, a FIFO or ``-`` is written in place (``write_all_atomic``). A
    failure is one line naming the path (after ``flag``, e.g. ``--prom-textfile``) and the cause
    (errors.cannot_write)."""
    write_all_atomic({Path(path): text}, flag)


def write_all_atomic(files: dict[Path, str | Iterable[str] | Callable[[IO[str]], None]], flag: str | None = None) -> None:
    """Write every file or none: each text (or its pieces, written as they come) goes to a temp
    file beside its path (fsynced), and only when all are written are they renamed into place,
    so a full disk leaves the files as they were (``report daily``'s json, md and html come
    together). Temp files are removed on any failure.

    A path that is not a regular file (``paths.in_place``: ``-``, ``/dev/stdout``, a device, a
    FIFO) is written in place, streamed, once the temp files are written: it is never replaced
    nor removed. No path may be a store this process opened (``paths.not_a_store``)."""
    from ..paths import in_place, not_a_store

    named = f"{flag} " if flag else ""
    streams = {path: text for path, text in files.items() if in_place(path)}
    for path in files:
        if path not in streams and path.is_dir():
            raise UsageError(f"{named}{path} is a directory; give a file path")
        not_a_store(path, flag or "--output")
    umask = os.umask(0)
    os.umask(umask)
    temps: dict[Path, str] = {}
    path = next(iter(files))
    try:
        for path, text in files.items():
            if path in streams:
                continue
            path.parent.mkdir(parents=True, exist_ok=True)
            fd, temps[path] = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
            os.chmod(temps[path], 0o666 & ~umask)       # as an ordinary file, not mkstemp's 0600
            # an undecodable byte of a path name (a surrogate) is written as \udcXX: the file stays UTF-8
            with os.fdopen(fd, "w", encoding="utf-8", errors="backslashreplace") as f:
                _write_to(f, text)
                f.flush()
                os.fsync(f.fileno())
        for path, text in streams.items():
            _write_in_place(path, text)
        for path, tmp in temps.items():
            os.replace(tmp, path)
    except OSError as exc:
        from ..errors import cannot_write

        raise cannot_write(f"{named}{path}", exc) from exc
    finally:
        for tmp in temps.values():      # what was renamed is no longer there
            Path(tmp).unlink(missing_ok=True)


def _write_in_place(path: Path, text: str | Iterable[str] | Callable[[IO[str]], None]) -> None:
    """Stream ``text`` into a device, a FIFO or stdout (``paths.open_in_place``)."""
    from ..paths import open_in_place

    with open_in_place(path) as f:
        _write_to(f, text)


def _write_to(f: IO[str], text: str | Iterable[str] | Callable[[IO[str]], None]) -> None:
    """A text, its pieces, or a writer of a stream, written to ``f``."""
    if isinstance(text, str):
        f.write(text)
    elif callable(text):
        text(f)
    else:
        f.writelines(text)


SHOWN_ROWS = 10_000      # the rows of a query that table, md and html show (csv and json write them all)
FETCH_ROWS = 10_000      # a query's rows are taken from DuckDB this many at a time, never all at once


def distinct_names(names: list[str]) -> list[str]:
    """Column names made distinct, as DuckDB names a subquery's columns: a name that comes
    again gets ``_1`` (``_2``, … past a name already used), so that ``SELECT 1 AS x, 2 AS x``
    is two columns, ``x`` and ``x_1``, not one holding the last value twice."""
    taken, out = set(names), []
    for name in names:
        if name in out:
            k = 1
            while f"{name}_{k}" in taken:
                k += 1
            name = f"{name}_{k}"
            taken.add(name)
        out.append(name)
    return out


def query_result(store, sql: str, fmt: str) -> Result:
    """Run ad-hoc SQL for `auditor sql`; a bad query is a usage error, not a crash. The rows
    are fetched FETCH_ROWS at a time: json and csv write every row as it comes (a ``Stream``:
    write the result before the store is closed), table, md and html hold the first
    SHOWN_ROWS and count the rest. Columns of one name are kept apart (``distinct_names``)."""
    import duckdb

    def failed(exc: duckdb.Error) -> AuditorError:
        if is_damaged_store(exc):       # the file's fault, not the query's
            return StoreError(damaged_store(exc, store.path))
        return UsageError(f"query failed: {str(exc).splitlines()[0]}")

    try:
        statements = len(duckdb.extract_statements(sql))
    except duckdb.Error:
        statements = 1                      # not SQL: running it says what is wrong
    if not statements:
        raise UsageError("the query is empty: give one SQL statement, e.g. \"SELECT * FROM coverage\"")
    try:
        cur = store.cursor(sql)
    except duckdb.OutOfMemoryException:
        raise                               # not the query's fault: the CLI says what helps
    except duckdb.Error as exc:
        raise failed(exc) from exc
    columns = distinct_names([d[0] for d in cur.description]) if cur.description else []  # None: not a query

    def pages() -> Iterator[list[dict[str, Any]]]:
        while columns:
            try:
                chunk = cur.fetchmany(FETCH_ROWS)
            except duckdb.OutOfMemoryException:
                raise
            except duckdb.Error as exc:     # found while running (a cast of a value, say)
                raise failed(exc) from exc
            if not chunk:
                return
            yield [dict(zip(columns, r)) for r in chunk]

    notes: list[str] = []
    if statements > 1:
        notes.append(f"{statements} statements were run: the rows are the last one's")
    if fmt in ("json", "csv"):
        rows: Any = Stream(None, pages)
        title = "rows"
    else:
        rows, total = [], 0
        for page in pages():
            total += len(page)
            rows.extend(page[:SHOWN_ROWS - len(rows)])
        title = f"{total} row(s)"
        if total > len(rows):
            notes.append(f"the first {len(rows):,} of {total:,} rows are shown: --format csv or json writes them all")
    table = Table(title=title, columns=columns, rows=rows, notes=notes)
    return Result("sql", "sql", {"columns": columns, "rows": rows}, tables=[table])
