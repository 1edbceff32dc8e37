#!/usr/bin/env python
"""The floor of a fresh collect: what its parts cost at the least, each measured alone.

    python benchmarks/bench_floor.py --log DIR/day-1GB.log --store STORE [--runs 3]

STORE is a store that collected LOG (bench_day.py leaves DIR/this-1GB.duckdb). Three parts
of `collect --gateway-log`, each timed by itself in this process (CPU s: user + sys of the
process, DuckDB's threads included; the best of --runs):

* tokenizing: the compiled tokenizer alone over LOG's blocks (auditor._logscan.scan, one
  thread; the blocks cut as the collect cuts them, gatewaylog_read.blocks), without the
  Python steps that follow it or reading the file (read first);
* the log's rows: STORE's log_events copied into an in-memory database first, then stored
  into a fresh store's log_events (its schema as the store makes it, `fields` compressed
  with zstd), ROWS_PER_COMMIT rows per transaction, as the collect commits them;
* the line tables' rows: STORE's line tables (queries/lines/) copied to memory and stored
  likewise: what any layout that keeps their typed rows must write, however they are
  worked out (their working out is not counted).

The sum is a floor for a collect that keeps what this store keeps (every line's row with its
fields, and the typed line rows the analyses read): no parse, no JSON, no Python counted. It
is printed per GB of log and for the 5 GB day on 2 cores, at full use of both and at the
use a collect gets now (--use, default 0.83: 18 CPU-s over 10.85 s wall on 2 cores for the
1 GB day); and without the line tables' rows, the floor of a collect that left them to the
first analysis after it.
"""

from __future__ import annotations

import argparse
import os
import resource
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def best(runs: int, fn) -> float:
    """The least CPU s of ``runs`` calls of ``fn``."""
    out = []
    for _ in range(runs):
        c = cpu()
        fn()
        out.append(cpu() - c)
    return min(out)


def tokenizing(log: Path, runs: int) -> float:
    from auditor.sources import gatewaylog_parse as gp
    from auditor.sources.gatewaylog_read import BLOCK_SIZE, blocks as cut
    from auditor.sources.gatewaylog_records import FileRec

    if gp._logscan is None:
        sys.exit("bench_floor: auditor._logscan is not built")
    with open(log, "rb") as f:        # read whole first, cut as the collect cuts it
        blocks = [item[1] for item in cut(f.readinto, FileRec(0, str(log), "plain"), BLOCK_SIZE, True, None)
                  if item[0] == "parse"]

    def scan_all() -> None:
        for b in blocks:          # each block's buffers let go before the next, as in the collect
            gp._scan(b, 1, 0)

    return best(runs, scan_all)


def storing(store: Path, tables: list[str], runs: int) -> float:
    """CPU s to store ``tables`` of ``store``, from memory, into a fresh store."""
    import duckdb

    from auditor.sources.gatewaylog_store import ROWS_PER_COMMIT
    from auditor.store import Store

    mem = duckdb.connect()
    mem.execute("ATTACH ? AS src (READ_ONLY)", [str(store)])
    for t in tables:
        mem.execute(f"CREATE TABLE {t} AS SELECT * FROM src.main.{t}")
    mem.execute("DETACH src")
    out = []
    for _ in range(runs):
        with tempfile.TemporaryDirectory() as d:
            fresh = Path(d) / "fresh.duckdb"
            Store(fresh).close()          # the schema, as the store makes it
            mem.execute("ATTACH ? AS dst", [str(fresh)])
            c = cpu()
            for t in tables:
                n = mem.execute(f"SELECT count(*) FROM {t}").fetchone()[0]
                for lo in range(0, n, ROWS_PER_COMMIT):
                    mem.execute("BEGIN")
                    mem.execute(f"INSERT INTO dst.main.{t} SELECT * FROM {t} "
                                f"WHERE rowid >= {lo} AND rowid < {lo + ROWS_PER_COMMIT}")
                    mem.execute("COMMIT")
            mem.execute("CHECKPOINT dst")
            out.append(cpu() - c)
            mem.execute("DETACH dst")
    return min(out)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--log", type=Path, required=True, help="the log STORE collected")
    ap.add_argument("--store", type=Path, required=True, help="a store that collected --log")
    ap.add_argument("--runs", type=int, default=3, help="runs of each part; the least CPU counts (default 3)")
    ap.add_argument("--use", type=float, default=0.83, help="the share of 2 cores a collect keeps busy (default 0.83)")
    args = ap.parse_args(argv)
    from auditor.store import line_tables

    gb = os.path.getsize(args.log) / 1e9
    t0 = time.time()
    parts = {
        "tokenizing (compiled tokenizer alone)": tokenizing(args.log, args.runs),
        "storing the log's rows (log_events)": storing(args.store, ["log_events"], args.runs),
        "storing the line tables' rows": storing(args.store, sorted(line_tables()), args.runs),
    }
    print(f"{args.log.name}: {gb:.2f} GB; best of {args.runs} runs, CPU s per GB of log "
          f"({time.time() - t0:.0f} s to measure)")
    for name, c in parts.items():
        print(f"  {name:42s} {c / gb:5.2f}")
    rows = list(parts.values())
    for what, floor in (("floor", sum(rows) / gb), ("floor without the line tables", sum(rows[:2]) / gb)):
        print(f"  {what:42s} {floor:5.2f}   5 GB on 2 cores: at least {floor * 5 / 2:.1f} s at full use, "
              f"{floor * 5 / (2 * args.use):.1f} s at {args.use:.0%}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
