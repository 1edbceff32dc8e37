#!/usr/bin/env python
"""Gateway-log ingestion benchmark: one command, four contenders, one table.

    .venv/bin/python benchmarks/bench_ingest.py --size 1GB [--format text] [--seed 1]

Generates (or reuses) a synthetic gateway log under benchmarks/data/ (gitignored) with
``tools.synth.write_logs``, reads it once into the page cache, then runs each contender
in its own process and measures wall time, CPU time and peak RSS of that process
(``os.wait4``):

  (a) wc -l                                   the floor: reading the bytes
  (b) benchmarks/naive_parser.py              per-line Python regex parser (the baseline)
  (c) auditor collect --gateway-log FILE      into a fresh DuckDB file
  (d) the same command again                  nothing new: the incremental re-run

(a), (c) and (d) run --repeat times (default 3; (d) right after each (c)) and the table shows
the median run of each, with every run's wall time: on a shared VM the wall time varies.

and checks the targets: (c) >= 10x faster than (b), (c) within 30x of (a), (c) peak RSS
below the file size, (d) under 5% of (c). Prints a table (and --json FILE writes the
figures) for benchmarks/README.md.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
DATA = HERE / "data"
_UNITS = {"": 1, "B": 1, "KB": 10**3, "MB": 10**6, "GB": 10**9, "KIB": 2**10, "MIB": 2**20, "GIB": 2**30}


def parse_size(text: str) -> int:
    m = re.fullmatch(r"\s*([0-9]+(?:\.[0-9]+)?)\s*([A-Za-z]*)\s*", text)
    if not m or m.group(2).upper() not in _UNITS:
        raise argparse.ArgumentTypeError(f"bad size {text!r}; e.g. 200MB, 1GB")
    return int(float(m.group(1)) * _UNITS[m.group(2).upper()])


def human(n: float) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if abs(n) < 1000 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1000
    return f"{n:.1f} GB"


def make_log(size: int, fmt: str, seed: int) -> Path:
    DATA.mkdir(parents=True, exist_ok=True)
    path = DATA / f"gateway-{fmt}-{size}-seed{seed}.log"
    if path.exists() and path.stat().st_size >= size:
        print(f"reusing {path} ({human(path.stat().st_size)})", file=sys.stderr)
        return path
    print(f"generating {path} ({human(size)}, format {fmt}, seed {seed}) ...", file=sys.stderr)
    tmp = path.with_suffix(".tmp")
    from tools.synth import write_logs

    sm = write_logs(tmp, size, seed=seed, fmt=fmt)
    tmp.rename(path)
    print(f"generated in {sm.elapsed_s:.1f}s", file=sys.stderr)
    return path


def warm(path: Path) -> None:
    with open(path, "rb") as f:
        while f.read(64 << 20):
            pass


TIME = shutil.which("time") and Path("/usr/bin/time")


def run(name: str, cmd: list[str], env: dict | None = None) -> dict:
    """Run ``cmd``: wall time, CPU seconds and peak RSS of that process alone.

    GNU time forks the command from its own small process, so the peak RSS is the
    command's; without it, os.wait4 on a child of this (larger) Python process."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err, \
            tempfile.NamedTemporaryFile("r", suffix=".time") as tf:
        use_time = TIME is not None and TIME.exists()
        full = ([str(TIME), "-f", "%e %U %S %M", "-o", tf.name] + cmd) if use_time else cmd
        t0 = time.perf_counter()
        p = subprocess.Popen(full, stdout=out, stderr=err, env=env, cwd=ROOT)
        _, status, ru = os.wait4(p.pid, 0)
        wall = time.perf_counter() - t0
        p.returncode = rc = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        stdout, stderr = out.read().decode(errors="replace"), err.read().decode(errors="replace")
        if use_time and rc == 0:
            e, u, sy, m = tf.read().split()[-4:]
            cpu, rss = float(u) + float(sy), int(m) * 1024
        else:
            cpu, rss = ru.ru_utime + ru.ru_stime, ru.ru_maxrss * 1024
    if rc != 0:
        sys.stderr.write(stderr)
        raise SystemExit(f"{name} failed with exit code {rc}: {' '.join(cmd)}")
    return {"name": name, "cmd": " ".join(cmd), "wall_s": wall, "cpu_s": cpu, "peak_rss_bytes": rss,
            "stdout": stdout.strip(), "stderr": stderr.strip()}


def machine() -> dict:
    def sh(cmd):
        try:
            return subprocess.run(cmd, shell=True, capture_output=True, text=True, timeout=10).stdout.strip()
        except Exception:  # noqa: BLE001
            return ""

    model = ""
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    import duckdb
    import polars

    from auditor.sources.gatewaylog_parse import _logscan

    return {"nproc": sh("nproc"), "cpu": model or platform.processor(), "memory": sh("free -h | sed -n 2p"),
            "python": platform.python_version(), "duckdb": duckdb.__version__, "polars": polars.__version__,
            "kernel": platform.release(),
            "tokenizer": "compiled (auditor._logscan)" if _logscan is not None else "reference parser only (no C compiler?)"}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--size", type=parse_size, default=parse_size("1GB"), help="log size (default 1GB)")
    ap.add_argument("--format", dest="fmt", default="text",
                    help="synthetic log format: text, docker, bare, json, dockerjson (default text)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--log", type=Path, help="benchmark this log file instead of a synthetic one")
    ap.add_argument("--skip-naive", action="store_true", help="do not run the (slow) naive parser")
    ap.add_argument("--repeat", type=int, default=3,
                    help="runs of (a), (c) and (d); the table shows the median run (default 3)")
    ap.add_argument("--json", type=Path, help="also write the figures as JSON here")
    a = ap.parse_args(argv)

    sys.path.insert(0, str(ROOT))
    log = a.log or make_log(a.size, a.fmt, a.seed)
    size = log.stat().st_size
    warm(log)
    # byte-compile the package as an installed wheel is (an editable install under
    # PYTHONDONTWRITEBYTECODE=1 would compile every module on every start)
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(ROOT / "auditor"), str(ROOT / "queries")],
                   check=False, stdout=subprocess.DEVNULL)
    py = sys.executable
    db = DATA / "bench-ingest.duckdb"
    env = {k: v for k, v in os.environ.items() if not k.startswith("AUDITOR_")}

    def median(name: str, cmd: list[str], fresh: bool = False, **kw) -> dict:
        runs = []
        for _ in range(max(1, a.repeat)):
            if fresh:
                for p in (db, Path(str(db) + ".wal")):
                    if p.exists():
                        p.unlink()
            runs.append(run(name, cmd, **kw))
            if fresh:
                runs[-1]["then"] = run("(d) auditor collect again (unchanged)", cmd, **kw)
        runs.sort(key=lambda r: r["wall_s"])
        best = runs[len(runs) // 2]
        best["all_wall_s"] = [round(r["wall_s"], 2) for r in runs]
        return best

    results = [median("(a) wc -l", ["wc", "-l", str(log)])]
    lines = int(results[0]["stdout"].split()[0])
    if not a.skip_naive:
        results.append(run("(b) naive per-line Python parser", [py, str(HERE / "naive_parser.py"), str(log)]))
        results[-1]["all_wall_s"] = [round(results[-1]["wall_s"], 2)]
    collect = [py, "-m", "auditor", "--db", str(db), "collect", "--gateway-log", str(log)]
    c = median("(c) auditor collect (fresh DB)", collect, fresh=True, env=env)
    d = c.pop("then")
    d["all_wall_s"] = [round(d["wall_s"], 2)]
    results += [c, d]
    db_size = db.stat().st_size

    by = {r["name"][:3]: r for r in results}
    for r in results:
        r["mb_per_s"] = size / 1e6 / r["wall_s"]
        r["lines_per_s"] = lines / r["wall_s"]
    w = by["(a)"]
    checks = []
    if "(b)" in by:
        speedup = by["(b)"]["wall_s"] / c["wall_s"]
        checks.append(("(c) at least 10x faster than (b)", f"{speedup:.1f}x", speedup >= 10))
    ratio = c["wall_s"] / w["wall_s"]
    checks.append(("(c) within 30x of (a) wc -l", f"{ratio:.1f}x slower", ratio <= 30))
    checks.append(("(c) peak RSS below the file size", f"{human(c['peak_rss_bytes'])} vs {human(size)}",
                   c["peak_rss_bytes"] < size))
    pct = 100 * d["wall_s"] / c["wall_s"]
    checks.append(("(d) under 5% of (c)", f"{pct:.1f}%", pct < 5))

    mach = machine()
    print(f"\nfile: {log} ({human(size)}, {lines:,} lines, format {a.fmt}); DuckDB file after (c): {human(db_size)}")
    print(f"machine: {mach['nproc']} CPUs ({mach['cpu']}), memory: {mach['memory']}; "
          f"python {mach['python']}, duckdb {mach['duckdb']}, polars {mach['polars']}; "
          f"tokenizer: {mach['tokenizer']}\n")
    print("| contender | wall s | CPU s | MB/s | lines/s | peak RSS | all runs, wall s |")
    print("|---|---:|---:|---:|---:|---:|---|")
    for r in results:
        print(f"| {r['name']} | {r['wall_s']:.2f} | {r['cpu_s']:.2f} | {r['mb_per_s']:,.0f} | "
              f"{r['lines_per_s']:,.0f} | {human(r['peak_rss_bytes'])} | {', '.join(map(str, r['all_wall_s']))} |")
    print()
    for what, got, ok in checks:
        print(f"{'PASS' if ok else 'FAIL'}  {what}: {got}")
    print("\n(c) reported:", "; ".join(x for x in c["stderr"].splitlines() if x.startswith("gateway_log:")))
    if a.json:
        a.json.write_text(json.dumps({"file": str(log), "bytes": size, "lines": lines, "format": a.fmt,
                                      "db_bytes": db_size, "machine": mach, "results": results,
                                      "checks": [{"target": t, "value": v, "pass": ok} for t, v, ok in checks]},
                                     indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
