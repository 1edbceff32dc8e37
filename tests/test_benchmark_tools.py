"""The benchmark scripts whose figures benchmarks/README.md records run, and say what they
measured: pairs.py (two commands in alternating pairs) and bench_floor.py (the floor of a
fresh collect), each on something small."""

from __future__ import annotations

import json
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


def test_the_ci_fuzz_checks_the_corpus_then_the_same_blocks_for_one_commit(tmp_path):
    """Issue 35, 34: .ci/run's fuzz was a new random seed each run, so any change could fail
    by chance. Now: the fixed corpus first, then random blocks from a seed that comes from
    the commit, counted (time is only a cap). Run here on the installed tokenizer (the child
    alone: no sanitizer build): two runs of one commit check the same blocks."""
    import importlib.util

    from auditor import _logscan
    from fuzz import fuzz_logscan

    def run(*args):
        r = subprocess.run([sys.executable, str(ROOT / "tests/fuzz/fuzz_logscan.py"), "--child", _logscan.__file__,
                            "--blocks", "15", "--seconds", "120", "--out", str(tmp_path), *args],
                           capture_output=True, text=True, timeout=300, cwd=ROOT)
        assert r.returncode == 0, r.stderr
        stats = json.loads(r.stdout.strip().splitlines()[-1])
        assert stats["corpus_blocks"] >= 1 and stats["blocks"] == 15 and not stats["cut_by_time"]
        return {k: stats[k] for k in ("seed", "blocks", "lines", "bytes", "scans")}

    first = run("--seed", "commit")
    assert first == run("--seed", "commit")
    assert first["seed"] == fuzz_logscan.commit_seed()
    assert run("--seed", str(first["seed"] + 1))["bytes"] != first["bytes"]
    ci = (ROOT / ".ci/run").read_text()
    assert "fuzz_logscan.py --seed commit --blocks" in ci
    assert importlib.util.find_spec("fuzz.fuzz_logscan") is not None


def test_a_block_the_fuzzer_finds_joins_the_corpus_under_a_new_name(tmp_path):
    from fuzz import fuzz_logscan

    a = fuzz_logscan.add_to_corpus(b"x\n", 7, 3, 10, 20, folder=tmp_path)
    b = fuzz_logscan.add_to_corpus(b"y\n", 7, 3, 10, 20, folder=tmp_path)
    assert (a.name, b.name) == ("0001-seed7-block3.L10.O20.bin", "0002-seed7-block3.L10.O20.bin")
    assert [(p.name, d, bl, bo) for p, d, bl, bo in fuzz_logscan.corpus_blocks(tmp_path)] == [
        (a.name, b"x\n", 10, 20), (b.name, b"y\n", 10, 20)]
