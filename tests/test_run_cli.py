"""run_cli runs the CLI in this process (fast); it must answer exactly as `python -m auditor`
in a process of its own does: the same exit code, stdout and stderr, one run after another
(nothing of the last run's --db, --quiet, streams or environment left behind)."""

from __future__ import annotations

import re

import pytest

from conftest import FIXTURES, run_cli

REC = FIXTURES / "chain" / "epoch-403"
LOG = FIXTURES / "demo-epoch-403" / "gateway.log.gz"


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    db = tmp_path_factory.mktemp("both") / "auditor.duckdb"
    r = run_cli("collect", "--epoch", "403", "--replay", str(REC), db=db, process=True)
    assert r.returncode == 0, r.stderr
    return db


def _normaliser(tmp_path):
    """What differs between two runs by the clock or by their own temp folders (a/ and b/)."""
    def norm(s):
        s = re.sub(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ auditor:", "TIME auditor:", s)
        return s.replace(str(tmp_path / "a"), "DIR").replace(str(tmp_path / "b"), "DIR")
    return norm


# (name, args, stdin): every one through both runners, in this order (the state of one run
# must not leak into the next: --quiet then a run that logs, --debug then one that does not)
CASES = [
    ("success-table", ["misstest", "403", "--offline"], None),
    ("json", ["--quiet", "epoch", "403", "--offline", "--format", "json", "--fail-on", "error"], None),
    ("usage-error", ["epoch", "403", "--no-such-flag"], None),
    ("help", ["poc-overload", "--help"], None),
    ("debug-traceback", ["sql", "SELECT 1", "--db", "{tmp}/nope.duckdb", "--debug"], None),
    ("source-error-3", ["sql", "SELECT 1", "--db", "{tmp}/nope.duckdb"], None),
    ("not-in-store-3", ["misstest", "404", "--offline"], None),
    ("md-to-file", ["epoch", "403", "--offline", "--format", "md", "--output", "{tmp}/out/epoch.md"], None),
    ("stdin-log", ["collect", "--gateway-log", "-", "--db", "{tmp}/s.duckdb"], "stdin"),
    ("csv-after-stdin", ["sql", "SELECT count(*) AS n FROM log_events", "--format", "csv",
                         "--db", "{tmp}/s.duckdb"], None),
]


def _run_all(store, tmp, process: bool) -> list[tuple]:
    import gzip

    tmp.mkdir()
    answers = []
    for name, args, stdin in CASES:
        args = [a.replace("{tmp}", str(tmp)) for a in args]
        data = gzip.decompress(LOG.read_bytes()).decode()[:200_000] if stdin else None
        r = run_cli(*args, db=None if "--db" in args else store, stdin=data, process=process)
        written = [(p.name, p.read_text()) for p in sorted((tmp / "out").glob("*"))] if name == "md-to-file" else []
        answers.append((name, r.returncode, r.stdout, r.stderr, written))
    return answers


def test_in_process_answers_as_a_process_does(store, tmp_path):
    in_process = _run_all(store, tmp_path / "a", process=False)
    own_process = _run_all(store, tmp_path / "b", process=True)
    norm = _normaliser(tmp_path)
    for mine, theirs in zip(in_process, own_process):
        name = mine[0]
        assert mine[1] == theirs[1], (name, mine[3], theirs[3])
        assert norm(mine[2]) == norm(theirs[2]), name
        assert norm(mine[3]) == norm(theirs[3]), name
        assert [(n, norm(t)) for n, t in mine[4]] == [(n, norm(t)) for n, t in theirs[4]], name
    codes = {a[0]: a[1] for a in in_process}          # the cases cover what they say they do
    assert (codes["success-table"], codes["json"], codes["usage-error"], codes["source-error-3"],
            codes["md-to-file"]) == (0, 1, 2, 3, 0)
    assert in_process[-1][2].strip().splitlines()[1] != "0"     # the stdin log was read
    [md] = [a[4] for a in in_process if a[0] == "md-to-file"]
    assert [n for n, _ in md] == ["epoch.md"] and "## Findings" in md[0][1]   # a report was written


def test_bytes_in_bytes_out(store):
    """stdin given as bytes: stdout and stderr come back as bytes, as subprocess.run gives them."""
    args = ("sql", "SELECT 'é' AS e, 'a\r\nb' AS crlf", "--format", "csv")
    mine, theirs = (run_cli(*args, db=store, stdin=b"", process=p) for p in (False, True))
    assert (mine.returncode, mine.stdout, mine.stderr) == (theirs.returncode, theirs.stdout, theirs.stderr)
    assert mine.stdout == 'e,crlf\né,"a\r\nb"\n'.encode()


def test_cwd_is_the_runs(store, tmp_path):
    """cwd=: the run finds ./auditor.toml there (and the test's own directory is back after)."""
    import os

    # (its paths stay in its folder: the store is given as a flag)
    (tmp_path / "auditor.toml").write_text('offline = true\n[misstest]\nformat = "json"\n')
    here = os.getcwd()
    mine, theirs = (run_cli("misstest", "403", db=store, cwd=tmp_path, process=p) for p in (False, True))
    assert os.getcwd() == here
    assert (mine.returncode, mine.stdout, mine.stderr) == (theirs.returncode, theirs.stdout, theirs.stderr)
    assert mine.returncode == 0 and mine.stdout.startswith("{"), mine.stderr


def test_a_hung_run_times_out_in_process_too(store):
    """`serve` runs until Ctrl-C: at run_cli's timeout the run ends with TimeoutExpired, as a
    subprocess's does, and the next run is unaffected (the alarm and its handler are gone)."""
    import signal
    import subprocess

    before = signal.getsignal(signal.SIGALRM)
    with pytest.raises(subprocess.TimeoutExpired):
        run_cli("serve", str(REC), "--port", "0", timeout=1)
    assert signal.getsignal(signal.SIGALRM) is before and signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)
    assert run_cli("sql", "SELECT 1 AS one", "--format", "csv", db=store).stdout == "one\n1\n"


def test_what_this_process_cannot_give_a_run_gets_a_process():
    from conftest import _needs_a_process

    assert _needs_a_process(["collect", "--gateway-log", "/dev/stdin"], {})         # the real fd 0
    assert _needs_a_process(["epoch", "403"], {"PYTHONPATH": "/elsewhere"})          # another auditor
    assert _needs_a_process(["hedging"], {"TZ": "Asia/Kolkata"})                     # read at start-up
    assert not _needs_a_process(["collect", "--gateway-log", "-"], {"AUDITOR_RATE": "0"})
