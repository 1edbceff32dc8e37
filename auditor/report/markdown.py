"""The Markdown report: ready to paste into a GitHub issue or a governance proposal.

The findings come first, each with the numbers behind it; then the tables (a table of
more than ``FOLD_ROWS`` rows is folded into a ``<details>`` block, and cut at
``MAX_ROWS`` rows with a note); then what the sources did not cover; then the command
that made it. The whole stays within GitHub's 65,536-character limit for an issue or
comment (``MAX_CHARS``): a report that would not is written again with fewer rows,
findings and caveats, each cut saying so. Every value is outside text, written by
``text.md`` (escaped, one line, long values cut).
"""

from __future__ import annotations

import io
import json

from ..result import Finding, Result, Table
from .view import View, cell, coverage_caveats, json_default, layout, numeric
from .text import PROSE_LIMIT, md, md_block, md_code

FOLD_ROWS = 15
MAX_ROWS = 200
MAX_CHARS = 65_536          # GitHub's limit for an issue or a comment
EVIDENCE_CHARS = 600        # the lists and objects of a finding's evidence, as JSON


def _cut_note(shown: int, total: int, what: str) -> str:
    return f"\n_first {shown} of {total} {what}; `--format csv` or `--format json` has all_\n"


def _table(out: io.StringIO, t: Table, depth: int, max_rows: int) -> None:
    out.write(f"\n{'#' * depth} {md(t.title)}\n\n")
    if not t.rows:
        out.write("_none_\n")
    else:
        rows = t.rows[:max_rows]
        fold = len(t.rows) > FOLD_ROWS
        if fold:
            out.write(f"<details><summary>{len(t.rows)} rows</summary>\n\n")
        out.write("| " + " | ".join(md(c) for c in t.columns) + " |\n")
        out.write("|" + "|".join("---:" if numeric(t, c) else "---" for c in t.columns) + "|\n")
        for r in rows:
            out.write("| " + " | ".join(md(cell(r.get(c), c)) for c in t.columns) + " |\n")
        if len(t.rows) > len(rows):
            out.write(_cut_note(len(rows), len(t.rows), "rows"))
        if fold:
            out.write("\n</details>\n")
    for n in t.notes:
        out.write(f"\n{md_block(n, PROSE_LIMIT)}\n")


def _code_spans(text: str) -> str:
    """A finding's action: its `quoted` commands as code spans (when the backticks pair up),
    the rest as any outside text."""
    parts = text.split("`")
    if len(parts) % 2 == 0 or len(text) > PROSE_LIMIT:
        return md(text, PROSE_LIMIT)
    return "".join(md_code(p) if i % 2 else md(p, None) for i, p in enumerate(parts))


def _findings(out: io.StringIO, findings: list[Finding], max_rows: int) -> None:
    out.write(f"\n## {md(getattr(findings, 'title', 'Findings'))}\n\n")
    if not findings:
        out.write("_none_\n")
    for i, f in enumerate(findings[:max_rows], 1):
        model = f" ({md(f.model)})" if f.model and f.model != f.subject["id"] else ""
        out.write(f"{i}. **{md(f.severity)}** {md_code(f.code)} {md(f.subject['kind'])} "
                  f"{md_code(f.subject['id'])}{model}: {md(f.summary, PROSE_LIMIT)}\n")
        if f.action:
            out.write(f"   next: {_code_spans(f.action)}\n")
        numbers = {k: v for k, v in f.evidence.items() if not isinstance(v, (dict, list))}
        if numbers:
            out.write("   " + ", ".join(f"{md(k)} = {md(cell(v), PROSE_LIMIT)}" for k, v in numbers.items()) + "\n")
        lines = f.evidence.get("log_lines")
        if isinstance(lines, list) and lines:      # where the finding's lines are: the bug report's core, never cut
            out.write("   lines: " + ", ".join(md_code(line) for line in lines) + "\n")
        rest = {k: v for k, v in f.evidence.items() if isinstance(v, (dict, list)) and k != "log_lines"}
        if rest:
            text = json.dumps(rest, default=json_default, ensure_ascii=False)
            out.write(f"   <sub>{md(text, EVIDENCE_CHARS)}</sub>\n")
    if len(findings) > max_rows:
        out.write(_cut_note(max_rows, len(findings), "findings"))


def to_markdown(result: Result, view: View = View()) -> str:
    """The report, within ``MAX_CHARS``: written with ``MAX_ROWS`` rows a table, and again
    with fewer while it is longer (every value is cut at ``text.MD_LIMIT``, so few enough
    rows always fit a report of a handful of tables)."""
    for max_rows in (MAX_ROWS, 100, 50, 20, 10, 5, 2, 1, 0):
        text = _markdown(result, view, max_rows)
        if len(text) <= MAX_CHARS:
            break
    return text


def _markdown(result: Result, view: View, max_rows: int) -> str:
    out = io.StringIO()
    for kind, depth, item in layout(result):
        if kind == "title":
            out.write(("" if depth == 1 else "\n") + f"{'#' * depth} {md(item)}\n\n")
        elif kind == "header":
            out.writelines(f"- **{md(k)}**: {md(v, PROSE_LIMIT)}\n" for k, v in item)
        elif kind == "findings":
            _findings(out, item, max_rows)
        elif kind == "legend":
            out.write("\n" + "".join(f"_{md(line, PROSE_LIMIT)}_  \n" for line in item))
        else:
            _table(out, item, depth, max_rows)
    caveats = coverage_caveats(result)
    if caveats:
        out.write("\n## Coverage caveats\n\n" + "".join(f"- {md_block(c, PROSE_LIMIT)}\n" for c in caveats[:max_rows]))
        if len(caveats) > max_rows:
            out.write(_cut_note(max_rows, len(caveats), "caveats"))
    if view.command:
        out.write(f"\n---\n\nMade by {md_code(view.command)}.\n")
    return out.getvalue()


def write(result: Result, out, view: View) -> None:
    """This format's record (formats.py): the report to the text stream ``out``."""
    out.write(to_markdown(result, view))
