"""Plain summaries printed on stderr: the collection run report. What a source said (a
skipped item, a note, what is missing) is outside text: its control characters are shown
escaped (``text.plain``). ``--quiet`` keeps only what is MISSING: the lines that go with
exit 3 (cron mails any output, so a good run prints nothing)."""

from __future__ import annotations

import sys

from ..result import CollectReport
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
