#!/usr/bin/env python
"""Command latency: `auditor --help`, `auditor epoch --help` and `auditor epoch 403 --offline`
on the bundled demo store, for this checkout's `auditor` against a baseline install.

    python benchmarks/bench_cli.py --baseline /path/to/old-venv/bin/auditor [--runs 15]

Both stores are built first by each install from the bundled recording (so each reads a
store its own schema made). The commands then run in turn, A B A B ..., so drift of a
noisy machine hits both alike; the report gives each median and the median of the
pair-by-pair ratios (this checkout / baseline). Without --baseline only this checkout runs.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEMO = ["--replay", str(ROOT / "fixtures/chain/epoch-403"), "--replay", str(ROOT / "fixtures/accounting/v5"),
        "--gateway-log", str(ROOT / "fixtures/demo-epoch-403/gateway.log.gz")]


def build_store(auditor: str, db: Path) -> None:
    subprocess.run([auditor, "--quiet", "--db", str(db), "epoch", "403", *DEMO, "--format", "json"],
                   check=False, capture_output=True, timeout=300)


def timed(cmd: list[str]) -> float:
    t = time.perf_counter()
    subprocess.run(cmd, capture_output=True, timeout=120)
    return time.perf_counter() - t


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--baseline", help="the baseline's auditor executable")
    ap.add_argument("--auditor", default=shutil.which("auditor"), help="this checkout's auditor (default: on PATH)")
    ap.add_argument("--runs", type=int, default=15)
    args = ap.parse_args(argv)
    installs = {"this": args.auditor} | ({"baseline": args.baseline} if args.baseline else {})
    with tempfile.TemporaryDirectory() as tmp:
        dbs = {name: Path(tmp) / f"{name}.duckdb" for name in installs}
        for name, exe in installs.items():
            build_store(exe, dbs[name])
        cases = {
            "auditor --help": lambda exe, db: [exe, "--help"],
            "auditor epoch --help": lambda exe, db: [exe, "epoch", "--help"],
            "auditor epoch 403 --offline": lambda exe, db: [exe, "--db", str(db), "epoch", "403", "--offline"],
            "auditor epoch 403 --offline --format json": lambda exe, db: [exe, "--db", str(db), "epoch", "403",
                                                                         "--offline", "--format", "json"],
        }
        print(f"{'command':44} " + " ".join(f"{n + ' median s':>17}" for n in installs)
              + ("   ratio (median of pairs)" if args.baseline else ""))
        for label, make in cases.items():
            for name, exe in installs.items():  # warm-up
                timed(make(exe, dbs[name]))
            times: dict[str, list[float]] = {n: [] for n in installs}
            for _ in range(args.runs):
                for name, exe in installs.items():
                    times[name].append(timed(make(exe, dbs[name])))
            row = f"{label:44} " + " ".join(f"{statistics.median(times[n]):17.3f}" for n in installs)
            if args.baseline:
                ratios = [a / b for a, b in zip(times["this"], times["baseline"])]
                row += f"   {statistics.median(ratios):.3f} ({min(ratios):.2f}-{max(ratios):.2f})"
            print(row, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
