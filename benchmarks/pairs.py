#!/usr/bin/env python
"""Two commands in alternating pairs, whole processes: the ratio of A to B on a noisy machine.

    python benchmarks/pairs.py --runs 6 --a "sh coll.sh new" --b "sh coll.sh old"

A and B run in turn (after one warm-up run of each, not counted): A B A B ... Each run is
timed from outside, its start-up and exit included: wall (a monotonic clock around the
child), CPU (the child's user + system time, its own children's included) and peak RSS (the
largest process the command waited for). The report gives each command's median, min and
max, and the pair-by-pair ratios A/B as median (min-max): taken pair by pair, a drift of the
machine's speed during the call hits both sides of a ratio alike. Quote the median; a wide
min-max says the machine was noisy. Commands are split as a shell splits words and run
without a shell (write `sh -c '...'` for a pipe or a redirection); their output is thrown
away. A command that fails stops the call with its exit code.
"""

from __future__ import annotations

import argparse
import os
import shlex
import statistics
import subprocess
import sys
import time


def run(cmd: list[str]) -> tuple[float, float, float]:
    """One run of ``cmd``: (wall s, CPU s, peak RSS MiB)."""
    t = time.monotonic()
    p = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, ru = os.wait4(p.pid, 0)
    wall = time.monotonic() - t
    code = os.waitstatus_to_exitcode(status)
    if code:
        print(f"pairs: {shlex.join(cmd)} exited {code}", file=sys.stderr)
        sys.exit(code if code > 0 else 128 - code)      # killed by signal N: 128 + N, as a shell says
    return wall, ru.ru_utime + ru.ru_stime, ru.ru_maxrss / 1024


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
    run(a), run(b)
    ra, rb = [], []
    for i in range(args.runs):
        ra.append(run(a))
        rb.append(run(b))
        print(f"pair {i + 1}: A {ra[-1][0]:.2f} s, B {rb[-1][0]:.2f} s", file=sys.stderr, flush=True)
    for name, rows in (("A", ra), ("B", rb)):
        print(f"{name}  wall s {spread([r[0] for r in rows])}  CPU s {spread([r[1] for r in rows])}  "
              f"peak MiB {spread([r[2] for r in rows], '{:.0f}')}")
    for k, what in ((0, "wall"), (1, "CPU")):
        print(f"A/B {what:4s} {spread([x[k] / y[k] for x, y in zip(ra, rb)])}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
