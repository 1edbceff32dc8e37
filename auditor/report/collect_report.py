"""Plain summaries printed on stderr: the collection run report. What a source said (a
skipped item, a note, what is missing) is outside text: its control characters are shown
escaped (``text.plain``). ``--quiet`` keeps only what is MISSING: the lines that go with
exit 3 (cron mails any output, so a good run prints nothing)."""

from __future__ import annotations

import sys

from ..result import CollectReport, Result
from .text import plain


def print_collect_reports(reports: list[CollectReport], quiet: bool = False) -> None:
    for r in reports:
        source = plain(r.source)
        if quiet:
            for m in r.missing:
                print(f"{source}: MISSING {plain(m)}", file=sys.stderr)
            continue
        loaded = ", ".join(f"{plain(k)} {v}" for k, v in r.loaded.items()) or "nothing new"
        print(f"{source}: loaded {loaded}", file=sys.stderr)
        for s in r.skipped:
            print(f"{source}: skipped {plain(s)}", file=sys.stderr)
        for reason, n in r.rejected.items():
            print(f"{source}: rejected {n} ({plain(reason)})", file=sys.stderr)
        if r.rejected and r.source == "gateway_log":
            print(f"{source}: the first rejected lines of each file and reason: "
                  "auditor sql \"SELECT * FROM log_reject_samples\"", file=sys.stderr)
        for n in r.notes:
            print(f"{source}: note: {plain(n)}", file=sys.stderr)
        for m in r.missing:
            print(f"{source}: MISSING {plain(m)}", file=sys.stderr)


# the flag that collects what a missing item names, by the first of these words it holds
_COMPLETED_BY = (("accounting", "--accounting URL"), ("metric", "--metrics URL"), ("scrape", "--metrics URL"),
                 ("log", "--gateway-log PATH"), ("epoch", "--node URL"), ("block", "--node URL"),
                 ("chain", "--node URL"), ("escrow", "--node URL"))


def completed_by(item: str, offline: bool) -> str:
    """What would complete the missing ``item``, in words: the source flag its words name (an
    item that names its flag already says it), else where the report says more."""
    if " --" in item:
        return ""
    low = item.lower()
    flag = next((f for word, f in _COMPLETED_BY if word in low), None)
    if flag is None:
        return " (the coverage section says more: --format json, key coverage)"
    return f" (collect it with {flag}{', without --offline' if offline else ''})"


def incomplete_lines(result: Result, offline: bool = False) -> list[str]:
    """Why a result makes the command exit 3, one line per missing item of each incomplete
    part (of a composed report) or of the result itself: what is incomplete and the flag or
    source that would complete it. Never empty for an incomplete result."""
    lines: list[str] = []
    for part in [*result.parts, result] if result.parts else [result]:
        if part.complete:
            continue
        for item in (part.coverage or {}).get("missing") or []:
            line = f"auditor: incomplete: {plain(part.title)}: {plain(item)}{completed_by(str(item), offline)}"
            if line not in lines:
                lines.append(line)
    if not lines and not result.complete:
        lines.append(f"auditor: incomplete: {plain(result.title)}: some data it needs is not stored "
                     "(the coverage section says what: --format json, key coverage)")
    return lines


def print_incomplete(result: Result, offline: bool = False) -> None:
    for line in incomplete_lines(result, offline):
        print(line, file=sys.stderr)
