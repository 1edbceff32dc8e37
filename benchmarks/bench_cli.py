#!/usr/bin/env python
"""Command latency: `auditor --help`, `auditor epoch --help` and `auditor epoch 403 --offline`
on the bundled demo store, for this checkout's `auditor` against a baseline install.

    python benchmarks/bench_cli.py --baseline /path/to/old-venv/bin/auditor [--runs 15]
    python benchmarks/bench_cli.py --phases [--runs 7]

With --phases it says instead where one `auditor epoch 403 --offline` spends its CPU: the
steps the command takes, each timed in one fresh process (the median over --runs).

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
import json
import os
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


def python_of(auditor: str) -> str:
    """The interpreter that executable ``auditor`` runs with: its script's #! line."""
    return Path(auditor).read_text(errors="replace").splitlines()[0].removeprefix("#!").strip()


def byte_compile(auditor: str) -> Path:
    """Compile the ``auditor`` package that executable ``auditor`` runs, with its own python,
    as pip does for a wheel install (an editable install under PYTHONDONTWRITEBYTECODE=1 would
    compile it on every start); its directory. Outside any checkout and without PYTHONPATH, so
    that the install's own package is the one found."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    code = "import auditor, compileall, os; d = os.path.dirname(auditor.__file__); compileall.compile_dir(d, quiet=1); print(d)"
    out = subprocess.run([python_of(auditor), "-c", code], env=env, cwd="/", check=True, capture_output=True, text=True)
    return Path(out.stdout.strip())


def timed(cmd: list[str]) -> tuple[float, float]:
    """Wall seconds and CPU seconds (user + system) of one run of ``cmd``."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    subprocess.run(cmd, capture_output=True, timeout=120)
    wall = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime


# the steps of `auditor epoch 403 --offline` (cli.py: _analyse, _epoch_call, render.emit), each
# marked with the process's CPU time so far; the first mark is the interpreter's own start-up
PHASES = """
import io, json, sys, time
marks = []
def mark(name):
    marks.append((name, time.process_time()))
mark("interpreter start-up (site, .pth files)")
import typer
mark("import typer (and its click)")
from auditor import cli
mark("import auditor.cli and the registry")
typer.main.get_command(cli.app)
mark("build the command tree")
import duckdb
mark("import duckdb")
from auditor.analyses import epoch_report
from auditor.analyses.frame import Options
from auditor.analyses.registry import ANALYSES
from auditor.report import render
from auditor.store import Store
for a in ANALYSES:
    a.load()
mark("import the store, the analyses, render")
store = Store(sys.argv[1])
mark("open the store (connect, migrations, views)")
result = epoch_report.run(store, 403, Options())
mark("run the analyses")
store.close()
import rich.console, rich.table
mark("import rich")
from auditor.report.table import print_table
out = io.StringIO()
out.isatty = lambda: False
print_table(result, out, render.View())
mark("render the table")
render.render(result, "json", render.View())
mark("render json")
print(json.dumps([(n, t - (marks[i - 1][1] if i else 0.0)) for i, (n, t) in enumerate(marks)]))
"""


def phases(auditor: str, db: Path, runs: int) -> None:
    seen: dict[str, list[float]] = {}
    for _ in range(runs):
        r = subprocess.run([python_of(auditor), "-c", PHASES, str(db)], check=True, capture_output=True, text=True,
                           cwd=tempfile.gettempdir())
        for name, cpu in json.loads(r.stdout.splitlines()[-1]):
            seen.setdefault(name, []).append(cpu)
    print(f"{'step of auditor epoch 403 --offline':48} {'cpu ms (median)':>16}")
    for name, cpus in seen.items():
        print(f"{name:48} {statistics.median(cpus) * 1000:16.1f}")
    print(f"{'sum (table format: every step but render json)':48} "
          f"{sum(statistics.median(c) for n, c in seen.items() if n != 'render json') * 1000:16.1f}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--baseline", help="the baseline's auditor executable")
    ap.add_argument("--auditor", default=shutil.which("auditor"), help="this checkout's auditor (default: on PATH)")
    ap.add_argument("--runs", type=int, default=15)
    ap.add_argument("--phases", action="store_true", help="where epoch 403 --offline spends its CPU (this checkout)")
    args = ap.parse_args(argv)
    if not args.auditor:
        ap.error("no auditor on PATH: give --auditor PATH (this checkout's, e.g. .venv/bin/auditor)")
    if args.phases:
        with tempfile.TemporaryDirectory() as tmp:
            byte_compile(args.auditor)
            build_store(args.auditor, Path(tmp) / "this.duckdb")
            phases(args.auditor, Path(tmp) / "this.duckdb", args.runs)
        return 0
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
