#!/usr/bin/env python
"""Command latency: `auditor --help`, `auditor epoch --help` and `auditor epoch 403 --offline`
on the bundled demo store, for this checkout's `auditor` against a baseline install.

    python benchmarks/bench_cli.py --baseline /path/to/old-venv/bin/auditor [--runs 15]

Each install's ``auditor`` package is byte-compiled first, as a wheel install does: an
editable checkout under PYTHONDONTWRITEBYTECODE=1 would otherwise compile every module it
imports on every run. Both stores are built first by each install from the bundled
recording (so each reads a store its own schema made). The commands then run in turn,
A B A B ..., so drift of a noisy machine hits both alike; the report gives each median,
wall and CPU (the command's user + system time: what a shared machine's load inflates
least), the median of the pair-by-pair wall ratios (this checkout / baseline), and the
target issue 21 sets. Without --baseline only this checkout runs.
"""

from __future__ import annotations

import argparse
import resource
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


def byte_compile(auditor: str) -> None:
    """Compile the ``auditor`` package that executable ``auditor`` runs, with its own python
    (its script's #! line), as pip does for a wheel install."""
    python = Path(auditor).read_text(errors="replace").splitlines()[0].removeprefix("#!").strip()
    where = subprocess.run([python, "-c", "import auditor, os; print(os.path.dirname(auditor.__file__))"],
                           check=True, capture_output=True, text=True, cwd=tempfile.gettempdir()).stdout.strip()
    subprocess.run([python, "-m", "compileall", "-q", where], check=True, stdout=subprocess.DEVNULL)


def timed(cmd: list[str]) -> tuple[float, float]:
    """Wall seconds and CPU seconds (user + system) of one run of ``cmd``."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    subprocess.run(cmd, capture_output=True, timeout=120)
    wall = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime


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
            byte_compile(exe)
            build_store(exe, dbs[name])
        # label: (the command, issue 21's target in seconds or None)
        cases = {
            "auditor --help": (lambda exe, db: [exe, "--help"], 0.1),
            "auditor epoch --help": (lambda exe, db: [exe, "epoch", "--help"], None),
            "auditor epoch 403 --offline": (lambda exe, db: [exe, "--db", str(db), "epoch", "403", "--offline"], 0.6),
            "auditor epoch 403 --offline --format json": (lambda exe, db: [exe, "--db", str(db), "epoch", "403",
                                                                          "--offline", "--format", "json"], None),
        }
        print(f"{'command':44} " + " ".join(f"{n + ' wall s':>14} {n + ' cpu s':>14}" for n in installs)
              + ("   wall ratio (median of pairs)" if args.baseline else "") + "   target s", flush=True)
        for label, (make, target) in cases.items():
            for name, exe in installs.items():  # warm-up
                timed(make(exe, dbs[name]))
            walls: dict[str, list[float]] = {n: [] for n in installs}
            cpus: dict[str, list[float]] = {n: [] for n in installs}
            for _ in range(args.runs):
                for name, exe in installs.items():
                    wall, cpu = timed(make(exe, dbs[name]))
                    walls[name].append(wall)
                    cpus[name].append(cpu)
            row = f"{label:44} " + " ".join(f"{statistics.median(walls[n]):14.3f} {statistics.median(cpus[n]):14.3f}"
                                            for n in installs)
            if args.baseline:
                ratios = [a / b for a, b in zip(walls["this"], walls["baseline"])]
                row += f"   {statistics.median(ratios):.3f} ({min(ratios):.2f}-{max(ratios):.2f})".ljust(31)
            print(row + (f"   {target:g}" if target else ""), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
