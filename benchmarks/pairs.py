#!/usr/bin/env python
"""Two commands in alternating pairs, whole processes: the ratio of A to B on a noisy machine.

    python benchmarks/pairs.py --runs 6 --a "sh coll.sh new" --b "sh coll.sh old"

A and B run in turn (after one warm-up run of each, not counted): A B A B ... Each run is
timed from outside by bench_day.measure, its start-up and exit included: wall (a monotonic
clock around the child), CPU (the child's user + system time, its own children's included)
and peak RSS (the largest process the command waited for). The report gives each command's
median, min and max, and the pair-by-pair ratios A/B as median (min-max): taken pair by
pair, a drift of the machine's speed during the call hits both sides of a ratio alike. Quote the median; a wide
min-max says the machine was noisy. Commands are split as a shell splits words and run
without a shell (write `sh -c '...'` for a pipe or a redirection), in this environment; their
output is thrown away. A command that fails stops the call with its exit code, after the end
of its stderr.
"""

from __future__ import annotations

import argparse
import os
import shlex
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))   # the checkout, for benchmarks/
from benchmarks.bench_day import measure  # noqa: E402


def run(cmd: list[str], err: Path) -> tuple[float, float, float]:
    """One run of ``cmd``, in this environment: (wall s, CPU s, peak RSS MB)."""
    m = measure(cmd, err, ok=(0,), env=dict(os.environ))
    return m["wall"], m["cpu"], m["rss"]


def spread(xs: list[float], fmt: str = "{:.3f}") -> str:
    return f"{fmt.format(statistics.median(xs))} ({fmt.format(min(xs))}-{fmt.format(max(xs))})"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--a", required=True, help="the command measured (one string, split as a shell would)")
    ap.add_argument("--b", required=True, help="the baseline it is compared with")
    ap.add_argument("--runs", type=int, default=5, help="pairs counted (default 5)")
    args = ap.parse_args(argv)
    if args.runs < 1:
        ap.error("--runs must be 1 or more")
    a, b = shlex.split(args.a), shlex.split(args.b)
    ra, rb = [], []
    with tempfile.TemporaryDirectory() as d:
        err = Path(d) / "stderr"
        run(a, err), run(b, err)
        for i in range(args.runs):
            ra.append(run(a, err))
            rb.append(run(b, err))
            print(f"pair {i + 1}: A {ra[-1][0]:.2f} s, B {rb[-1][0]:.2f} s", file=sys.stderr, flush=True)
    for name, rows in (("A", ra), ("B", rb)):
        print(f"{name}  wall s {spread([r[0] for r in rows])}  CPU s {spread([r[1] for r in rows])}  "
              f"peak MB {spread([r[2] for r in rows], '{:.0f}')}")
    for k, what in ((0, "wall"), (1, "CPU")):
        print(f"A/B {what:4s} {spread([x[k] / y[k] for x, y in zip(ra, rb)])}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
