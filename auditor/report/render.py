"""Render a Result as a rich table, JSON, CSV or Markdown. Formatting only: no computing."""

from __future__ import annotations

import csv
import io
import json
import sys
from datetime import date, datetime
from decimal import Decimal
from typing import Any

from ..errors import UsageError
from ..result import Result, Table, utc_text


def _json_default(v: Any) -> Any:
    if isinstance(v, Decimal):
        # exact: integers stay integers, fractions keep their digits
        return int(v) if v == v.to_integral_value() and abs(v) < 10**18 else format(v.normalize(), "f")
    if isinstance(v, (datetime, date)):
        return v.isoformat()
    if isinstance(v, (set, tuple)):
        return list(v)
    if hasattr(v, "to_dict"):
        return v.to_dict()
    return str(v)


def to_json(data: Any) -> str:
    return json.dumps(data, default=_json_default, indent=2, ensure_ascii=False)


def cell(v: Any) -> str:
    """One value as text: NULL shows as an em dash (unknown), never as 0."""
    if v is None:
        return "—"
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, float):
        return f"{v:.4f}".rstrip("0").rstrip(".") if v == v else "NaN"
    if isinstance(v, Decimal):
        return format(v.normalize(), "f") if v == v else "NaN"
    if isinstance(v, datetime):
        return utc_text(v)
    if isinstance(v, (list, tuple)):
        return ", ".join(cell(x) for x in v)
    return str(v)


def _numeric(t: Table, col: str) -> bool:
    vals = [r.get(col) for r in t.rows if r.get(col) is not None]
    return bool(vals) and all(isinstance(v, (int, float, Decimal)) and not isinstance(v, bool) for v in vals)


def to_markdown(result: Result) -> str:
    out = io.StringIO()
    out.write(f"# {result.kind}\n\n")
    for k, v in result.header:
        out.write(f"- **{k}**: {v}\n")
    for t in result.tables:
        out.write(f"\n## {t.title}\n\n")
        if not t.rows:
            out.write("_none_\n")
        else:
            out.write("| " + " | ".join(t.columns) + " |\n")
            out.write("|" + "|".join("---:" if _numeric(t, c) else "---" for c in t.columns) + "|\n")
            for r in t.rows:
                out.write("| " + " | ".join(cell(r.get(c)).replace("|", "\\|") for c in t.columns) + " |\n")
        for n in t.notes:
            out.write(f"\n{n}\n")
    return out.getvalue()


def to_csv(table: Table) -> str:
    out = io.StringIO()
    w = csv.writer(out, lineterminator="\n")
    w.writerow(table.columns)
    for r in table.rows:
        w.writerow([_csv_value(r.get(c)) for c in table.columns])
    return out.getvalue()


def _csv_value(v: Any) -> Any:
    """Empty for NULL (unknown), exact numbers, ISO times, lists as JSON."""
    if v is None:
        return ""
    if isinstance(v, (Decimal, datetime, date)):
        return _json_default(v)
    if isinstance(v, (list, tuple, dict)):
        return json.dumps(v, default=_json_default)
    return v


def print_rich(result: Result) -> None:
    from rich.console import Console
    from rich.table import Table as RichTable

    # on a terminal use its width; into a file or pipe (cron) do not wrap at 80 columns
    console = Console(highlight=False, soft_wrap=False, width=None if sys.stdout.isatty() else 250)
    console.print(f"[bold]{result.kind}[/bold]")
    for k, v in result.header:
        console.print(f"  {k}: {v}", markup=False)
    for t in result.tables:
        rt = RichTable(title=t.title, title_justify="left", title_style="bold")
        for c in t.columns:
            rt.add_column(c, justify="right" if _numeric(t, c) else "left", overflow="fold")
        for r in t.rows:
            rt.add_row(*(cell(r.get(c)) for c in t.columns))
        console.print()
        if t.rows:
            console.print(rt)
        else:
            console.print(f"[bold]{t.title}[/bold]: none")
        for n in t.notes:
            console.print(n, markup=False)


def emit(result: Result, fmt: str) -> None:
    if fmt == "json":
        sys.stdout.write(to_json(result.data) + "\n")
    elif fmt == "md":
        sys.stdout.write(to_markdown(result))
    elif fmt == "csv":
        if not result.tables:
            raise UsageError(f"{result.kind} has no table to write as CSV")
        sys.stdout.write(to_csv(result.tables[result.csv_table]))
    elif fmt == "table":
        print_rich(result)
    else:
        raise UsageError(f"unknown format {fmt!r}")


def query_result(store, sql: str) -> Result:
    """Run ad-hoc SQL for `auditor sql`; a bad query is a usage error, not a crash."""
    import duckdb

    try:
        rows = store.rows(sql)
        cur = store.con.description
    except duckdb.Error as exc:
        raise UsageError(f"query failed: {str(exc).splitlines()[0]}") from exc
    columns = [d[0] for d in cur] if cur else (list(rows[0]) if rows else [])
    table = Table(title=f"{len(rows)} row(s)", columns=columns, rows=rows)
    return Result(kind="sql", data={"columns": columns, "rows": rows}, tables=[table])
