"""The benchmark scripts whose figures benchmarks/README.md records run, and say what they
measured: pairs.py (two commands in alternating pairs) and bench_floor.py (the floor of a
fresh collect), each on something small."""

from __future__ import annotations

import subprocess
import sys

from conftest import FIXTURES, ROOT, run_cli


def test_pairs_gives_each_command_and_the_ratios_pair_by_pair():
    fast, slow = f"{sys.executable} -c pass", f"{sys.executable} -c 'import time; time.sleep(0.3)'"
    r = subprocess.run([sys.executable, str(ROOT / "benchmarks/pairs.py"), "--runs", "2", "--a", fast, "--b", slow],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert [x.split()[0] for x in lines] == ["A", "B", "A/B", "A/B"], r.stdout
    assert r.stderr.count("pair ") == 2
    wall = float(lines[2].split()[2])
    assert 0 < wall < 1, r.stdout          # A needs no 0.3 s sleep: its ratio is below 1


def test_pairs_stops_with_the_exit_code_of_a_command_that_fails():
    r = subprocess.run([sys.executable, str(ROOT / "benchmarks/pairs.py"), "--a", "true",
                        "--b", f"{sys.executable} -c 'raise SystemExit(7)'"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 7 and "exited 7" in r.stderr, r.stderr


def test_bench_floor_measures_each_part_of_a_collect(tmp_path):
    log = FIXTURES / "hedging" / "small.log"
    db = tmp_path / "a.duckdb"
    assert run_cli("collect", "--gateway-log", str(log), db=db).returncode == 0
    r = subprocess.run([sys.executable, str(ROOT / "benchmarks/bench_floor.py"), "--log", str(log), "--store", str(db),
                        "--runs", "1"], capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert r.returncode == 0, r.stderr
    for part in ("compiled tokenizer alone", "log's rows", "line tables' rows", "floor ", "without the line tables"):
        assert part in r.stdout, r.stdout
    assert "5 GB on 2 cores: at least" in r.stdout
