#!/usr/bin/env python
"""Issue 21's benchmark: a busy gateway's day of log in the demo chain's epoch 403, collected
and analysed by this checkout's `auditor` and, at --baseline-sizes, by a baseline install.

    python benchmarks/bench_day.py --dir /var/tmp/day [--sizes 0.5GB,1GB,2GB,5GB] [--runs 3]
        [--baseline OLD/bin/auditor [--baseline-sizes 5GB]] [--write-readme]

Per install, the demo chain and accounting are collected once from the bundled recording
(`collect --epoch 403 --replay fixtures/chain/epoch-403 --replay fixtures/accounting/v5`, no
network) into a chain-only store, which every store below starts as a copy of (not timed).
Per size, DIR/day-SIZE.log (day_log.py: 24 h from 18:30 UTC inside epoch 403's span, with its
confirmation PoC) is written unless present. Then a fresh copy collects the log (`collect --gateway-log`: the collect row), then the chain records of the escrows the
log names (`collect --epoch 403 --replay ...`, as an operator's `epoch 403 --node URL` would:
the probe row; the recording has none of them, so each is stored as not found and `remints`
is complete): --runs times. Each command's FIRST run, which may build what the store keeps,
runs on its own copy of the last store as collected, reported apart, not in the median. Then,
after one untimed `epoch 403` on that store, --runs timed runs of every command, installs in
turn (A B A B) so a noisy machine's drift hits both alike. The commands: `misstest`, `poc-overload`, `targets`, `remints` and `epoch` of 403, and `hedging`
over 403's span, with and without `--all-races` (every race in the JSON: the baseline, which
had no flag and listed them all, has no row of its own for it), each `--offline --format json`,
output discarded.

`targets --epochs 403..409` needs 7 stored epochs, and the recording holds one (collecting
others needs a node). So a range store holds epoch 403's chain and accounting rows 7 times:
copied in the store (duckdb) to epochs 404..409, every height 15,391 blocks and every block
time 15,391 x 5.87 s later per epoch (the recording's epoch length and block time), and a
day of log per epoch (`day_log.py --shift K`, --range-size each) placed in that epoch's span.
The copies are stand-ins: the same weights, nodes and story every epoch, a distinct log each.
The range store is filled as a daily cron fills it: the days of 403..408 in one collect and
`epoch 408` made, then 409's day collected and `epoch 409` made, its first run timed (what the
cron waits for every day: what the store keeps is brought up to date with the new day).

Each figure is one whole process from the kernel's accounting (wait4): wall s, CPU s (user
+ sys), peak RSS in MB (10^6 bytes). A command exiting other than 0 or 1 (findings; 3 too for the
range store's epoch reports, whose day of log covers 24 h of a 25 h span) stops the
benchmark. Run it with the checkout's venv python (it needs duckdb, for the range store).
"""

from __future__ import annotations

import argparse
import os
import shlex
import shutil
import statistics
import subprocess
import sys
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # the checkout, for tools/ and benchmarks/
from benchmarks import day_log  # noqa: E402
from benchmarks.bench_cli import byte_compile  # noqa: E402
from tools.synth import parse_size  # noqa: E402

SPAN = ["--since", "2026-09-22T18:09:15Z", "--until", "2026-09-23T19:15:00Z"]   # epoch 403's span
COMMANDS = {"misstest 403": ["misstest", "403"], "poc-overload 403": ["poc-overload", "403"],
            "targets 403": ["targets", "403"], "remints 403": ["remints", "403"],
            "hedging (403's span)": ["hedging", *SPAN], "epoch 403": ["epoch", "403"],
            "hedging --all-races (403's span)": ["hedging", *SPAN, "--all-races"]}
NEW = {"hedging --all-races (403's span)"}    # commands the baseline does not have (it listed every race)
COLLECT, PROBE = "collect --gateway-log (fresh)", "collect --epoch 403 --replay … (the log's escrows)"
LIMITS = {COLLECT: 20, "epoch 403": 15} | {c: 5 for c in list(COMMANDS)[:5]}
RSS_LIMIT_MB = 1500
FIRST, LAST = 403, 409
CPOC_HEIGHTS = ("gen_start", "gen_end", "exchange_end", "val_start", "val_end")   # chain_cpoc_events
ENV = {k: v for k, v in os.environ.items() if not k.startswith("AUDITOR_") and k != "PYTHONPATH"}


def measure(cmd: list, err_path: Path, ok: tuple[int, ...] = (0, 1), env: dict | None = None) -> dict[str, float]:
    """Run ``cmd`` to its end (in ``env``, else ENV), stdout discarded: wall s, CPU s and peak
    RSS MB of the process. An exit code not in ``ok`` stops the benchmark with that code
    (128 + N for a signal N, as a shell says), after the end of the command's stderr."""
    with open(err_path, "w+b") as err:
        t = time.perf_counter()
        p = subprocess.Popen([str(c) for c in cmd], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                             stderr=err, env=ENV if env is None else env, cwd=err_path.parent)
        _, status, ru = os.wait4(p.pid, 0)
        wall = time.perf_counter() - t
        p.returncode = os.waitstatus_to_exitcode(status)
        if p.returncode not in ok:
            err.seek(0)
            print(f"{shlex.join(map(str, cmd))} exited {p.returncode}:\n"
                  f"{err.read().decode(errors='replace')[-1500:]}", file=sys.stderr)
            raise SystemExit(p.returncode if p.returncode > 0 else 128 - p.returncode)
    return {"wall": wall, "cpu": ru.ru_utime + ru.ru_stime, "rss": ru.ru_maxrss * 1024 / 1e6}


def commit_of(pkg: Path) -> str | None:
    """The checkout's commit, when the package is a git checkout's (an editable install)."""
    if not (pkg.parent / ".git").exists():
        return None
    git = ["git", "-C", str(pkg.parent)]
    head = subprocess.run([*git, "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=True)
    dirty = subprocess.run([*git, "status", "--porcelain", "--untracked-files=no"], capture_output=True, text=True)
    return head.stdout.strip() + (" + uncommitted changes" if dirty.stdout.strip() else "")


def day(dir_: Path, size: str, shift: int = 0) -> tuple[Path, dict]:
    log = dir_ / (f"day-{size}.log" if not shift else f"day-{size}-epoch{FIRST + shift}.log")
    if not log.exists():
        tmp = log.with_suffix(".partial")
        summary = day_log.write(tmp, parse_size(size), shift=shift)
        log.with_suffix(".lines").write_text(f"{summary['lines']} {summary['requests']}\n")
        tmp.rename(log)
    lines, requests = map(int, log.with_suffix(".lines").read_text().split())
    return log, {"lines": lines, "requests": requests}


def clone_epochs(db: Path, last: int = LAST) -> None:
    """Epoch 403's chain and accounting rows again as epochs 404..``last``, one epoch length
    later each (tests/test_prune.py makes its stores of several epochs with it too)."""
    import duckdb
    con = duckdb.connect(str(db))
    con.execute("SET TimeZone = 'UTC'")
    cols: dict[str, list[str]] = {}
    for t, c in con.execute("SELECT table_name, column_name FROM information_schema.columns JOIN "
                            "information_schema.tables USING (table_schema, table_name) "
                            "WHERE table_type = 'BASE TABLE' ORDER BY ordinal_position").fetchall():
        cols.setdefault(t, []).append(c)
    us = day_log.EPOCH_TIME // timedelta(microseconds=1)
    for k in range(1, last - FIRST + 1):
        dh, dt = k * day_log.EPOCH_BLOCKS, f"INTERVAL {k * us} MICROSECONDS"
        for t in (t for t, cs in cols.items() if "epoch" in cs):
            heights = [c for c in cols[t] if c.endswith("height") or (t == "chain_cpoc_events" and c in CPOC_HEIGHTS)]
            new = [f"epoch + {k} AS epoch"] + [f"{c} + {dh} AS {c}" for c in heights]
            if t == "coverage":   # 'block time H' names the height
                new.append(f"CASE WHEN item LIKE 'block time %' THEN 'block time ' || (item[12:]::BIGINT + {dh}) "
                           "ELSE item END AS item")
            con.execute(f"INSERT INTO {t} SELECT * REPLACE ({', '.join(new)}) FROM {t} WHERE epoch = {FIRST}")
        # S(N+1) of one copy is S(N) of the next: the same block, once
        con.execute(f"INSERT OR IGNORE INTO chain_block_times SELECT height + {dh}, time + {dt}, "
                    f"strftime(time + {dt}, '%Y-%m-%dT%H:%M:%S.%fZ'), source_url, fetched_at FROM chain_block_times "
                    f"WHERE height IN (SELECT height FROM chain_epoch_heights WHERE epoch = {FIRST})")
    con.close()


def secs(x: float) -> str:
    return f"{x:.2f}" if x < 10 else f"{x:.1f}" if x < 100 else f"{x:.0f}"


def cell(r: dict) -> str:
    runs, first = r["runs"], r["first"]
    if not runs:
        return "—"
    w = [m["wall"] for m in runs]
    text = (f"**{secs(statistics.median(w))} s** ({secs(min(w))}–{secs(max(w))}), "
            f"{statistics.median(m['cpu'] for m in runs):.1f} CPU-s, {max(m['rss'] for m in runs):,.0f} MB")
    return text + (f"; first {secs(first['wall'])} s, {first['rss']:,.0f} MB" if first else "")


def ratio(a: dict, b: dict) -> str:
    rs = [x["wall"] / y["wall"] for x, y in zip(a["runs"], b["runs"])]
    return f"{statistics.median(rs):.3f} ({min(rs):.3f}–{max(rs):.3f})" if rs else "—"


def verdict(name: str, r: dict) -> str:
    every = r["runs"] + ([r["first"]] if r["first"] else [])
    med, rss, limit = statistics.median(m["wall"] for m in r["runs"]), max(m["rss"] for m in every), LIMITS.get(name)
    over = ([f"{secs(med)} s"] if limit and med > limit else []) + ([f"{rss:,.0f} MB"] if rss >= RSS_LIMIT_MB else [])
    if over:
        return "not met: " + ", ".join(over)
    return f"met (first run {secs(r['first']['wall'])} s)" if limit and r["first"] and r["first"]["wall"] > limit \
        else "met"


def md_table(head: list[str], rows: list[list[str]]) -> list[str]:
    return ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)] + ["| " + " | ".join(r) + " |" for r in rows]


def write_readme(table: str) -> None:
    """Replace the marked section of benchmarks/README.md with ``table`` (append it if absent)."""
    readme, begin, end = ROOT / "benchmarks" / "README.md", "<!-- bench_day:begin -->", "<!-- bench_day:end -->"
    text = readme.read_text()
    if begin in text and end in text:
        text = text[:text.index(begin) + len(begin)] + "\n" + table + "\n" + text[text.index(end):]
    else:
        text = text.rstrip("\n") + f"\n\n## A busy gateway's day (issue 21)\n\n{begin}\n{table}\n{end}\n"
    readme.write_text(text)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="0.5GB,1GB,2GB,5GB")
    ap.add_argument("--dir", type=Path, required=True, help="keeps the logs and stores between calls")
    ap.add_argument("--auditor", default=shutil.which("auditor"), help="this checkout's auditor (default: on PATH)")
    ap.add_argument("--baseline", help="the baseline's auditor executable")
    ap.add_argument("--baseline-sizes", help="sizes the baseline runs at (default: the largest of --sizes)")
    ap.add_argument("--baseline-commit", default="4a8c0f6", help="the commit the baseline was installed from")
    ap.add_argument("--range-size", default="0.5GB", help="each epoch's day for targets --epochs (0: skip it)")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--write-readme", action="store_true", help="put the table in benchmarks/README.md")
    args = ap.parse_args(argv)
    sizes = args.sizes.split(",")
    base_sizes = args.baseline_sizes.split(",") if args.baseline_sizes else sizes[-1:]
    if args.baseline and not set(base_sizes) <= set(sizes):
        ap.error(f"--baseline-sizes {','.join(base_sizes)}: each must be one of --sizes {args.sizes}")
    if not args.auditor:
        ap.error("no auditor on PATH: give --auditor PATH (this checkout's, e.g. .venv/bin/auditor)")
    d = args.dir.resolve()
    d.mkdir(parents=True, exist_ok=True)
    err, config = d / "last-stderr.txt", d / "empty.toml"
    config.write_text("")   # neither ./auditor.toml nor ~/.config/auditor's sources or defaults apply
    installs = {"this": args.auditor} | ({"baseline": args.baseline} if args.baseline else {})
    load_before, started = os.getloadavg(), datetime.now(timezone.utc)
    pkg = {n: byte_compile(exe) for n, exe in installs.items()}     # each install's auditor package

    def run(name: str, db: Path, *cmd, ok: tuple[int, ...] = (0, 1)) -> dict[str, float]:
        return measure([installs[name], "--config", config, "--db", db, *cmd], err, ok)

    chain = {n: d / f"{n}-chain.duckdb" for n in installs}
    replay = ["--quiet", "collect", "--epoch", "403", "--replay", ROOT / "fixtures/chain/epoch-403",
              "--replay", ROOT / "fixtures/accounting/v5"]
    for n, db in chain.items():
        db.unlink(missing_ok=True)
        run(n, db, *replay)
    analysis = {c: [*cmd, "--offline", "--format", "json"] for c, cmd in COMMANDS.items()}
    res: dict[tuple[str, str], dict] = {}   # (size, install) -> row -> {"runs": [...], "first": ...}
    logs = {}
    for size in sizes:
        log, logs[size] = day(d, size)
        here = [n for n in installs if n == "this" or size in base_sizes]
        for n in here:
            res[size, n] = {c: {"runs": [], "first": None} for c in [COLLECT, PROBE, *COMMANDS]}
        for _ in range(args.runs):
            for n in here:
                db, r = d / f"{n}-{size}.duckdb", res[size, n]
                shutil.copyfile(chain[n], db)
                r[COLLECT]["runs"].append(run(n, db, "--quiet", "collect", "--gateway-log", log))
                r[PROBE]["runs"].append(run(n, db, *replay))
        for c in COMMANDS:       # each first run on its own copy of the store as collected
            for n in (n for n in here if n == "this" or c not in NEW):
                first = d / f"{n}-{size}-first.duckdb"
                shutil.copyfile(d / f"{n}-{size}.duckdb", first)
                res[size, n][c]["first"] = run(n, first, *analysis[c])
                first.unlink()
        for n in here:           # the timed runs' store: as after the epoch report's first run
            run(n, d / f"{n}-{size}.duckdb", *analysis["epoch 403"])
        for _ in range(args.runs):
            for c in COMMANDS:
                for n in (n for n in here if n == "this" or c not in NEW):
                    res[size, n][c]["runs"].append(run(n, d / f"{n}-{size}.duckdb", *analysis[c]))
        print(f"{size} done", file=sys.stderr, flush=True)
    span, ranged = f"{FIRST}..{LAST}", {}
    targets_range = ["targets", "--epochs", span, "--offline", "--format", "json"]
    if parse_size(args.range_size):
        days = [day(d, args.range_size, k)[0] for k in range(LAST - FIRST + 1)]
        for n in installs:
            db = d / f"{n}-range.duckdb"
            shutil.copyfile(chain[n], db)
            clone_epochs(db)
            # the daily cron: days 403..408 in the store and 408's report made, then 409's day
            # collected and its report made: its first run is what the cron waits for each day
            collect = run(n, db, "--quiet", "collect", *[a for p in days[:-1] for a in ("--gateway-log", p)])
            # (exit 3: a day of log covers 24 h of the epoch's 25 h span, and the report says so)
            run(n, db, "epoch", str(LAST - 1), "--offline", "--format", "json", ok=(0, 1, 3))
            day_collect = run(n, db, "--quiet", "collect", "--gateway-log", days[-1])
            daily = run(n, db, "epoch", str(LAST), "--offline", "--format", "json", ok=(0, 1, 3))
            ranged[n] = {"runs": [], "first": run(n, db, *targets_range), "collect": collect,
                         "day_collect": day_collect, "daily": daily}
        for _ in range(args.runs):
            for n in installs:
                ranged[n]["runs"].append(run(n, d / f"{n}-range.duckdb", *targets_range))

    # -- the report ---------------------------------------------------------------------------
    this_commit = commit_of(pkg["this"]) or "unknown (not a git checkout)"
    base = f"; baseline {args.baseline_commit} ({pkg['baseline']})" if args.baseline else ""
    load_after = os.getloadavg()
    out = [f"### A busy gateway's day: `bench_day.py`, {started:%Y-%m-%d %H:%M} UTC", "",
           f"- Measured: auditor {this_commit} ({pkg['this']}){base}.",
           f"- Machine: `nproc` {os.cpu_count()}; load average (1, 5 min) {load_before[0]:.2f}, {load_before[1]:.2f} "
           f"at the start, {load_after[0]:.2f}, {load_after[1]:.2f} at the end.",
           "- Logs (`day_log.py`, seed 21, 24 h inside epoch 403's span): "
           + "; ".join(f"{s} = {v['lines']:,} lines, {v['requests']:,} requests" for s, v in logs.items()) + ".",
           f"- A cell: the median wall of {args.runs} timed run{'s' * (args.runs != 1)} (min–max), the median "
           "CPU (user + sys), the largest peak RSS (MB = 10^6 bytes); `first`: the run straight after a fresh "
           f"collect (on a copy of the store as collected), not in the median. The collect rows: {args.runs} fresh "
           "collects of the log into a copy of the chain-only store, each followed by the probe of the log's escrows "
           "against the recording. Every "
           "command `--offline --format json`, output discarded. Met: the median within the time target and every "
           "run's peak RSS under 1.5 GB, at the largest size.",
           f"- Rerun: `python benchmarks/bench_day.py {shlex.join(sys.argv[1:] if argv is None else argv)}`", ""]
    bcols = [s for s in base_sizes if (s, "baseline") in res]
    rows = []
    for c in res[sizes[0], "this"]:
        limit = LIMITS.get(c)
        rows.append([f"`{c}`"] + [cell(res[s, "this"][c]) for s in sizes] + [cell(res[s, "baseline"][c]) for s in bcols]
                    + [ratio(res[s, "this"][c], res[s, "baseline"][c]) for s in bcols]
                    + [f"≤ {limit} s, < 1.5 GB" if limit else "< 1.5 GB", verdict(c, res[sizes[-1], "this"][c])])
    out += md_table(["command", *sizes, *[f"baseline {s}" for s in bcols],
                     *[f"this / baseline {s}, wall" for s in bcols], "target", f"at {sizes[-1]}"], rows)
    if ranged:
        out += ["", f"`{shlex.join(targets_range)}` over {LAST - FIRST + 1} stored epochs (epoch 403 copied to "
                f"404..{LAST}, see the script), each with a {args.range_size} day of log, collected as a daily cron "
                f"would: the logs of {FIRST}..{LAST - 1} in one run and `epoch {LAST - 1}` made, then {LAST}'s day "
                f"collected and `epoch {LAST}` made (its first run after that collect, when what the store keeps is "
                "brought up to date with the day):", ""]
        both = "baseline" in ranged

        def once(r: dict) -> str:
            return f"{secs(r['wall'])} s, {r['cpu']:.1f} CPU-s, {r['rss']:,.0f} MB"

        out += md_table(["", *ranged] + ["this / baseline, wall"] * both, [
            ["`targets --epochs`", *[cell(r) for r in ranged.values()]]
            + ([ratio(ranged["this"], ranged["baseline"])] if both else []),
            [f"`collect` of the logs of {FIRST}..{LAST - 1}", *[once(r["collect"]) for r in ranged.values()]]
            + [""] * both,
            [f"`collect` of {LAST}'s day into that store", *[once(r["day_collect"]) for r in ranged.values()]]
            + [""] * both,
            [f"`epoch {LAST}`, its first run after that collect", *[once(r["daily"]) for r in ranged.values()]]
            + ([f"{ranged['this']['daily']['wall'] / ranged['baseline']['daily']['wall']:.3f}"] if both else [])])
    table = "\n".join(out)
    print(table)
    if args.write_readme:
        write_readme(table)
    return 0


if __name__ == "__main__":
    sys.exit(main())
