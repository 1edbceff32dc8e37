#!/usr/bin/env python
"""Write a synthetic devshard gateway log for the ingestion benchmarks.

    python benchmarks/make_logs.py OUT --size 1GB --seed 1 --format text|bare|docker|json|dockerjson

OUT ending in .gz is gzip-compressed (level 1). Prints the ground-truth summary as JSON on
stdout (``--summary FILE`` writes it to a file instead) and the generation speed on stderr.
"""

from __future__ import annotations

import argparse
import json
import sys
from datetime import datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the checkout, for tools/
from tools import synth
from tools.synth import FORMATS, Scenario, write_logs

def parse_size(text: str) -> int:
    try:
        return synth.parse_size(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from exc


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out", type=Path)
    ap.add_argument("--size", type=parse_size, default=parse_size("100MB"),
                    help="uncompressed target size (default 100MB)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--format", dest="fmt", choices=FORMATS, default="text")
    ap.add_argument("--start", type=datetime.fromisoformat, default=None,
                    help="first timestamp, ISO 8601 (default 2026-09-30T08:00:00Z)")
    ap.add_argument("--hours", type=float, default=None, help="planned time range (default 6)")
    ap.add_argument("--gzip-level", type=int, default=1)
    ap.add_argument("--summary", type=Path, default=None, help="write the summary JSON here")
    a = ap.parse_args(argv)
    sc = Scenario()
    if a.hours is not None:
        from datetime import timedelta
        sc.duration = timedelta(hours=a.hours)
    sm = write_logs(a.out, a.size, seed=a.seed, fmt=a.fmt, start=a.start, scenario=sc,
                    gzip_level=a.gzip_level)
    text = json.dumps(sm.to_dict(), indent=1)
    if a.summary:
        a.summary.write_text(text + "\n", encoding="utf-8")
    else:
        print(text)
    print(f"wrote {sm.bytes:,} bytes ({sm.file_bytes:,} on disk), {sm.lines:,} lines, "
          f"{sm.requests:,} requests in {sm.elapsed_s:.2f} s = {sm.mb_per_s:.1f} MB/s",
          file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
