#!/usr/bin/env python
"""`auditor hedging --offline` over a 1 GB gateway log already in the store, for this
checkout's `auditor` against a baseline install.

    python benchmarks/bench_hedging.py --dir /tmp/hedge-bench [--baseline OLD/bin/auditor] [--runs 5]

DIR keeps the synthetic log (benchmarks/make_logs.py, 1 GB unless --size) and one store per
install, so a second call reuses them. Each install collects the log into its own store (its
own schema), then runs `hedging --offline` over the log's whole day: once straight after the
collect (the first run builds what the store keeps for later runs), then --runs times each in
the table and the json format, installs in turn (A B A B ...) so a noisy machine's drift hits
both alike. Each figure is one whole process: wall seconds, CPU seconds (user + sys) and peak
resident memory, from the kernel's accounting of the finished process (wait4); the report
gives medians and, with --baseline, the median of the pair-by-pair wall ratios (this /
baseline).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RANGE = ["--since", "2026-09-30T00:00:00Z", "--until", "2026-10-01T00:00:00Z"]   # make_logs' default day


def measure(cmd: list[str]) -> dict[str, float]:
    """Run ``cmd`` to its end (output discarded): wall s, cpu s and peak RSS MiB of the process."""
    t = time.perf_counter()
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, ru = os.wait4(p.pid, 0)
    wall = time.perf_counter() - t
    p.returncode = os.waitstatus_to_exitcode(status)
    err = p.stderr.read().decode(errors="replace") if p.stderr else ""
    if p.returncode not in (0, 1):
        raise SystemExit(f"{' '.join(cmd)} exited {p.returncode}: {err.strip()[-500:]}")
    return {"wall": wall, "cpu": ru.ru_utime + ru.ru_stime, "rss": ru.ru_maxrss / 1024}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dir", type=Path, required=True, help="keeps the log and the stores between calls")
    ap.add_argument("--size", default="1GB")
    ap.add_argument("--baseline", help="the baseline's auditor executable")
    ap.add_argument("--auditor", default=shutil.which("auditor"), help="this checkout's auditor (default: on PATH)")
    ap.add_argument("--runs", type=int, default=5)
    args = ap.parse_args(argv)
    args.dir.mkdir(parents=True, exist_ok=True)
    log = args.dir / f"gateway-{args.size}.log"
    if not log.exists():
        subprocess.run([sys.executable, str(ROOT / "benchmarks" / "make_logs.py"), str(log), "--size", args.size,
                        "--summary", str(log.with_suffix(".summary.json"))], check=True)
    installs = {"this": args.auditor} | ({"baseline": args.baseline} if args.baseline else {})
    first: dict[str, dict[str, float]] = {}
    for name, exe in installs.items():
        db = args.dir / f"{name}.duckdb"
        db.unlink(missing_ok=True)
        collect = measure([exe, "--quiet", "--db", str(db), "collect", "--gateway-log", str(log)])
        first[name] = measure([exe, "--db", str(db), "hedging", "--offline", *RANGE])
        print(f"{name}: collect {collect['wall']:.1f} s; first hedging run after it {first[name]['wall']:.2f} s wall, "
              f"{first[name]['cpu']:.2f} s CPU, {first[name]['rss']:.0f} MiB", flush=True)
    for fmt in ("table", "json"):
        runs: dict[str, list[dict[str, float]]] = {n: [] for n in installs}
        for _ in range(args.runs):
            for name, exe in installs.items():
                runs[name].append(measure([exe, "--db", str(args.dir / f"{name}.duckdb"), "hedging", "--offline",
                                           *RANGE, "--format", fmt]))
        for name in installs:
            med = {k: statistics.median(r[k] for r in runs[name]) for k in ("wall", "cpu", "rss")}
            print(f"hedging --offline --format {fmt:5} {name:8}: median {med['wall']:.2f} s wall "
                  f"(min {min(r['wall'] for r in runs[name]):.2f}, max {max(r['wall'] for r in runs[name]):.2f}), "
                  f"{med['cpu']:.2f} s CPU, {med['rss']:.0f} MiB peak")
        if args.baseline:
            ratios = [a["wall"] / b["wall"] for a, b in zip(runs["this"], runs["baseline"])]
            print(f"hedging --offline --format {fmt:5} this/baseline wall: median {statistics.median(ratios):.3f} "
                  f"({min(ratios):.3f}–{max(ratios):.3f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
