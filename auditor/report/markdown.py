"""The Markdown report: ready to paste into a GitHub issue or a governance proposal.

The findings come first, each with the numbers behind it; then the tables (a table of
more than ``FOLD_ROWS`` rows is folded into a ``<details>`` block, and cut at
``MAX_ROWS`` rows with a note, to stay within GitHub's 65,536-character limit for an
issue or comment); then what the sources did not cover; then the command that made it.
"""

from __future__ import annotations

import io
import json

from ..result import Finding, Result, Table
from .render import View, cell, json_default, layout, numeric

FOLD_ROWS = 15
MAX_ROWS = 200


def _escape(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _table(out: io.StringIO, t: Table, depth: int) -> None:
    out.write(f"\n{'#' * depth} {t.title}\n\n")
    if not t.rows:
        out.write("_none_\n")
    else:
        rows = t.rows[:MAX_ROWS]
        fold = len(t.rows) > FOLD_ROWS
        if fold:
            out.write(f"<details><summary>{len(t.rows)} rows</summary>\n\n")
        out.write("| " + " | ".join(t.columns) + " |\n")
        out.write("|" + "|".join("---:" if numeric(t, c) else "---" for c in t.columns) + "|\n")
        for r in rows:
            out.write("| " + " | ".join(_escape(cell(r.get(c))) for c in t.columns) + " |\n")
        if len(t.rows) > len(rows):
            out.write(f"\n_first {len(rows)} of {len(t.rows)} rows; `--format csv` or `--format json` has all_\n")
        if fold:
            out.write("\n</details>\n")
    for n in t.notes:
        out.write(f"\n{n}\n")


def _findings(out: io.StringIO, findings: list[Finding]) -> None:
    out.write("\n## Findings\n\n")
    if not findings:
        out.write("_none_\n")
    for i, f in enumerate(findings, 1):
        model = f" ({f.model})" if f.model and f.model != f.subject["id"] else ""
        out.write(f"{i}. **{f.severity}** `{f.code}` {f.subject['kind']} `{f.subject['id']}`{model}: "
                  f"{_escape(f.summary)}\n")
        numbers = {k: v for k, v in f.evidence.items() if not isinstance(v, (dict, list))}
        if numbers:
            out.write("   " + ", ".join(f"{k} = {_escape(cell(v))}" for k, v in numbers.items()) + "\n")
        rest = {k: v for k, v in f.evidence.items() if isinstance(v, (dict, list))}
        if rest:
            text = json.dumps(rest, default=json_default, ensure_ascii=False)
            if len(text) > 600:
                text = text[:600] + " …"
            out.write(f"   <sub>{_escape(text)}</sub>\n")


def _caveats(result: Result) -> list[str]:
    """What the sources did not cover, as the analysis (or each source) says."""
    cov = result.coverage or {}
    if result.parts:   # the epoch report: per source
        return [f"{source}: {m}" for source, entry in cov.items() if isinstance(entry, dict)
                for m in entry.get("missing") or []]
    return list(cov.get("missing") or []) + list(cov.get("unknown") or [])


def to_markdown(result: Result, view: View = View()) -> str:
    out = io.StringIO()
    for kind, depth, item in layout(result):
        if kind == "title":
            out.write(("" if depth == 1 else "\n") + f"{'#' * depth} {item}\n\n")
        elif kind == "header":
            out.writelines(f"- **{k}**: {_escape(v)}\n" for k, v in item)
        elif kind == "findings":
            _findings(out, item)
        else:
            _table(out, item, depth)
    caveats = _caveats(result)
    if caveats:
        out.write("\n## Coverage caveats\n\n" + "".join(f"- {_escape(c)}\n" for c in caveats))
    if view.command:
        out.write(f"\n---\n\nMade by `{view.command}`.\n")
    return out.getvalue()
