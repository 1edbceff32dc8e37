"""Plain summaries printed on stderr: the collection run report."""

from __future__ import annotations

import sys

from ..result import CollectReport


def print_collect_reports(reports: list[CollectReport]) -> None:
    for r in reports:
        loaded = ", ".join(f"{k} {v}" for k, v in r.loaded.items()) or "nothing new"
        print(f"{r.source}: loaded {loaded}", file=sys.stderr)
        for s in r.skipped:
            print(f"{r.source}: skipped {s}", file=sys.stderr)
        for reason, n in r.rejected.items():
            print(f"{r.source}: rejected {n} ({reason})", file=sys.stderr)
        if r.rejected and r.source == "gateway_log":
            print(f"{r.source}: the first rejected lines of each file and reason: "
                  "auditor sql \"SELECT * FROM log_reject_samples\"", file=sys.stderr)
        for n in r.notes:
            print(f"{r.source}: note: {n}", file=sys.stderr)
        for m in r.missing:
            print(f"{r.source}: MISSING {m}", file=sys.stderr)
