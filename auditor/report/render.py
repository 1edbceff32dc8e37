"""Render a Result in a format: the dispatch to the format's record (formats.py), and writing
a report whole or not at all. What the formats share is in ``view.py``, below them; the
terminal view is ``table.py``, Markdown ``markdown.py``, HTML ``html.py``."""

from __future__ import annotations

import io
import os
import sys
import tempfile
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import IO

from ..errors import UsageError
from ..result import Result, Table
from .formats import FORMATS, Format
from .view import (  # noqa: F401  (callers read these here too)
    LEGEND, View, cell, findings_table, json_default, json_pieces, layout, legend, numeric, to_csv, to_json)


def render(result: Result, fmt: str, view: View = View()) -> str:
    """The whole report in one format, as text (the table format as for a file)."""
    out = io.StringIO()
    _format(fmt).write(result, out, view)
    return out.getvalue()


def emit(result: Result, fmt: str, output: Path | None = None, view: View = View()) -> None:
    """Print the report, or write it to ``output`` atomically (a temp file beside it, then
    a rename), so a reader never sees half a report. Each format writes as it makes its
    text (JSON a piece at a time: ``view.json_pieces``)."""
    f = _format(fmt)
    if output is not None:
        write_atomic(output, lambda out: f.write(result, out, view))
    else:
        f.write(result, sys.stdout, view)


def _format(fmt: str) -> Format:
    if fmt not in FORMATS:
        raise UsageError(f"unknown format {fmt!r}")
    return FORMATS[fmt]


def write_atomic(path: Path, text: str | Iterable[str] | Callable[[IO[str]], None]) -> None:
    """Write ``text`` (or its pieces, or what a writer of a stream writes) to ``path`` as a
    whole or not at all: a temp file beside it, then a rename. A failure is one line naming
    the path and the cause (errors.cannot_write)."""
    write_all_atomic({Path(path): text})


def write_all_atomic(files: dict[Path, str | Iterable[str] | Callable[[IO[str]], None]]) -> None:
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
                f.write(text) if isinstance(text, str) else text(f) if callable(text) else f.writelines(text)
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
