"""Gateway-log ingestion under faults, through the real CLI: killed at random points and run
again (compared with a clean run, row for row), Ctrl-C, corrupt and truncated gzip, a line
no parser foresaw, over-long lines. The figures go to RELIABILITY.md."""

from __future__ import annotations

import gzip
import json
import os
import random
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from conftest import ROOT, ctrl_c_able, q, run_cli
from tools.synth import generate_lines

COMMIT_ROWS = 4000          # small commits, so that a kill falls between many of them

HARNESS = """
import sys, time
import auditor.sources.gatewaylog_read as read
import auditor.sources.gatewaylog_store as g
g.ROWS_PER_COMMIT = int(sys.argv[1])
read.MAX_LINE = int(sys.argv[2])
if float(sys.argv[3]):                  # stall before the first commit (to be killed there)
    commit = g._Writer._commit
    def stalled(self, *a, **kw):
        print("committing", file=sys.stderr, flush=True)
        time.sleep(float(sys.argv[3]))
        return commit(self, *a, **kw)
    g._Writer._commit = stalled
from auditor.cli import main
main(sys.argv[4:])
"""


def start(db: Path, *paths: Path, commit_rows: int = COMMIT_ROWS, max_line: int = 64 << 20,
          stall: float = 0) -> subprocess.Popen:
    """``auditor collect`` with a smaller commit size (or line limit, or a stall before
    each commit), in its own process."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("AUDITOR_")}
    args = [a for p in paths for a in ("--gateway-log", str(p))]
    return subprocess.Popen([sys.executable, "-c", HARNESS, str(commit_rows), str(max_line), str(stall),
                             "--db", str(db), "collect", *args], cwd=ROOT, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, preexec_fn=ctrl_c_able)


def finish(p: subprocess.Popen, timeout: float = 120) -> tuple[int, str]:
    _, err = p.communicate(timeout=timeout)
    return p.returncode, err


def snapshot(db: Path) -> dict[str, list]:
    """Everything an ingest stores, in a comparable order."""
    return {
        "events": q(db, "SELECT f.path, e.line_no, e.byte_offset, e.ts, e.ts_source, e.fmt, e.level, e.kind, e.name,"
                        " e.request, e.escrow, e.nonce, e.host, e.fields::VARCHAR FROM log_events e"
                        " JOIN log_files f USING (file_id) ORDER BY f.path, e.line_no"),
        "rejects": q(db, "SELECT f.path, r.reason, r.lines FROM log_rejects r JOIN log_files f USING (file_id)"
                         " ORDER BY 1, 2"),
        "files": q(db, "SELECT path, kind, byte_offset, lines, events, rejected, complete, gone_at IS NULL"
                       " FROM log_files ORDER BY path"),
    }


@pytest.fixture(scope="module")
def logs(tmp_path_factory) -> list[Path]:
    d = tmp_path_factory.mktemp("faults")
    lines, _ = generate_lines(12_000_000, seed=5, fmt="docker")      # ~55,000 lines
    cut = 2 * len(lines) // 3
    plain = d / "gw.log"
    plain.write_text("\n".join(lines[:cut]) + "\nnot a gateway line\n", encoding="utf-8")
    gz = d / "gw.log.1.gz"
    gz.write_bytes(gzip.compress(("\n".join(lines[cut:]) + "\n").encode()))
    return [plain, gz]


@pytest.fixture(scope="module")
def clean(logs, tmp_path_factory) -> dict[str, list]:
    db = tmp_path_factory.mktemp("clean") / "clean.duckdb"
    rc, err = finish(start(db, *logs))
    assert rc == 0, err
    return snapshot(db)


@pytest.fixture(scope="module")
def clean_s(logs, tmp_path_factory) -> tuple[float, float]:
    """How long a clean run takes (on this machine, now): in all, and from its first
    'reading' line on (what follows the start-up, whose time varies most with the load)."""
    t0 = time.monotonic()
    p = start(tmp_path_factory.mktemp("timing") / "t.duckdb", *logs)
    while "reading" not in p.stderr.readline() and p.poll() is None:
        pass
    t_reading = time.monotonic()
    rc, err = finish(p)
    assert rc == 0, err
    return time.monotonic() - t0, time.monotonic() - t_reading


def test_killed_at_random_points_then_run_again_matches_a_clean_run(logs, clean, clean_s, tmp_path):
    """SIGKILL at a random moment of each run, then run again, until a run completes: the
    store equals a clean run's, row for row, and no run reports a rotation that did not
    happen (the log_files row of a new file is written with its first rows)."""
    rng = random.Random(11)
    clean_s, _ = clean_s
    db = tmp_path / "killed.duckdb"
    kills = 0
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        p = start(db, *logs)
        time.sleep(rng.uniform(0, clean_s))
        if p.poll() is None:
            p.kill()
            p.wait()
            kills += 1
            continue
        rc, err = finish(p)
        assert rc == 0, err
        assert "rotated" not in err and "gone" not in err, err
        if kills >= 8:
            break
    assert kills >= 8
    rc, err = finish(start(db, *logs))
    assert rc == 0 and "rotated" not in err and "gone" not in err, err
    assert snapshot(db) == clean
    print(f"\nkills survived: {kills}")


def test_killed_before_the_first_commit_no_rotation_is_reported(logs, clean, tmp_path):
    """Issue 11: the log_files row of a new file used to be written before its first rows,
    outside their transaction; killed in between, the next run saw a file without an inode
    and reported a rotation that did not happen."""
    db = tmp_path / "a.duckdb"
    p = start(db, *logs, stall=60)
    deadline = time.monotonic() + 60
    for line in p.stderr:                       # bounded: the process is killed at the deadline
        if "committing" in line or time.monotonic() > deadline:
            break
    p.kill()
    p.wait()
    rc, err = finish(start(db, *logs))
    assert rc == 0 and "rotated" not in err and "gone" not in err, err
    assert snapshot(db) == clean


def test_ctrl_c_exits_130_with_one_line_and_a_consistent_store(logs, clean, clean_s, tmp_path):
    """SIGINT at random moments past the start-up (while reading and committing): exit
    130, one line, and a store a later run completes to the clean run's."""
    rng = random.Random(7)
    _, reading_s = clean_s
    db = tmp_path / "int.duckdb"
    interrupted = 0
    for _ in range(8):
        p = start(db, *logs)
        err_lines: list[str] = []
        reader = threading.Thread(target=lambda: err_lines.extend(p.stderr), daemon=True)
        reader.start()
        deadline = time.monotonic() + 30
        while not any("reading" in x for x in err_lines) and p.poll() is None and time.monotonic() < deadline:
            time.sleep(0.01)                    # past the start-up: reading and committing
        time.sleep(rng.uniform(0, 0.6) * reading_s)
        if p.poll() is None:
            p.send_signal(signal.SIGINT)
        rc = p.wait(timeout=120)
        reader.join(timeout=10)
        err = "".join(err_lines)
        if rc == 0 or (rc == -signal.SIGINT and "loaded log_events" in err):
            continue        # too late: the run had finished (Python dies of a SIGINT at its very exit)
        assert rc == 130, err
        assert err.strip().splitlines()[-1] == "auditor: interrupted" and "Traceback" not in err, err
        interrupted += 1
    assert interrupted >= 1
    rc, err = finish(start(db, *logs))
    assert rc == 0, err
    assert snapshot(db) == clean
    print(f"\nCtrl-C survived: {interrupted}")


def test_sigterm_stops_a_stdin_collect_cleanly_and_leaves_no_spool(logs, clean, tmp_path):
    """`timeout`, systemd and `kill` send SIGTERM: Python's default died at once, leaving the
    spool of the stdin read (the whole stream) in the temporary folder and no line said. It
    stops as Ctrl-C does: one line, exit 143, nothing left in TMPDIR, and a later run
    completes the store to the clean run's."""
    spool = tmp_path / "tmp"
    spool.mkdir()
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("AUDITOR_")}, "TMPDIR": str(spool)}
    db = tmp_path / "term.duckdb"
    with open(logs[0], "rb") as src:
        p = subprocess.Popen([sys.executable, "-c", HARNESS, str(COMMIT_ROWS), str(64 << 20), "30",
                              "--db", str(db), "collect", "--gateway-log", "-"], cwd=ROOT, env=env, stdin=src,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, preexec_fn=ctrl_c_able)
        while "committing" not in p.stderr.readline() and p.poll() is None:
            pass                                    # the spool is written; the first commit stalls
        p.send_signal(signal.SIGTERM)
        rc, err = finish(p)
    assert rc == 143 and err.strip().splitlines()[-1] == "auditor: terminated (SIGTERM)", (rc, err)
    assert "Traceback" not in err and list(spool.iterdir()) == [], (err, list(spool.iterdir()))
    with open(logs[0], "rb") as src:
        r = subprocess.run([sys.executable, "-m", "auditor", "--db", str(db), "collect", "--gateway-log", "-"],
                           cwd=ROOT, env=env, stdin=src, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    stored = {k: [row[1:] for row in v] for k, v in snapshot(db).items() if k != "files"}
    want = {k: [row[1:] for row in v if row[0] == str(logs[0])] for k, v in clean.items() if k != "files"}
    assert stored == want


def _members(lines: list[str], n: int) -> list[bytes]:
    k = len(lines) // n
    return [gzip.compress(("\n".join(lines[i * k:(i + 1) * k]) + "\n").encode()) for i in range(n)]


@pytest.fixture(scope="module")
def gz_lines() -> list[str]:
    lines, _ = generate_lines(9_000_000, seed=9, fmt="text")
    assert len(lines) >= 40_000
    return lines[:40_000]


def _lines_read(db: Path, path: Path) -> int:
    """The lines of ``path`` stored or rejected, checked to be the file's first lines."""
    stored = [r[0] for r in q(db, "SELECT e.line_no FROM log_events e JOIN log_files f USING (file_id) "
                                  "WHERE f.path = ? ORDER BY 1", [str(path)])]
    rejected = q(db, "SELECT coalesce(sum(r.lines), 0) FROM log_rejects r JOIN log_files f USING (file_id) "
                     "WHERE f.path = ?", [str(path)])[0][0]
    assert not stored or stored[-1] <= len(stored) + rejected
    return len(stored) + rejected


@pytest.mark.parametrize("damage", ["altered", "truncated"])
def test_a_damaged_gzip_member_and_what_follows_are_dropped(tmp_path, gz_lines, damage):
    """Four members of 10,000 lines; the third is damaged (50 bytes altered in its middle,
    or the file cut there). The lines of the first two are stored, exactly those; the run
    exits 3 and says how much it dropped."""
    members = _members(gz_lines, 4)
    third = bytearray(members[2])
    mid = len(third) // 2
    if damage == "altered":
        third[mid:mid + 50] = bytes(b ^ 0x5A for b in third[mid:mid + 50])
        data = members[0] + members[1] + bytes(third) + members[3]
    else:
        data = members[0] + members[1] + bytes(third[:mid])
    gz = tmp_path / "gw.log.2.gz"
    gz.write_bytes(data)
    db = tmp_path / "a.duckdb"
    r = run_cli("collect", "--gateway-log", str(gz), db=db)
    assert r.returncode == 3 and "damaged gzip" in r.stderr and "dropped" in r.stderr, r.stderr
    assert _lines_read(db, gz) == 20_000
    status, detail = q(db, "SELECT status, detail FROM coverage WHERE item = ?", [str(gz)])[0]
    assert status == "partial" and "gzip member 3" in detail
    assert q(db, "SELECT lines, complete FROM log_files WHERE path = ?", [str(gz)])[0] == (20_000, False)
    # the stored rows are the original lines: names and nonces as the lines say
    for line_no, name in q(db, "SELECT line_no, name FROM log_events WHERE line_no % 997 = 0"):
        assert name in gz_lines[line_no - 1]
    # run again: nothing more is stored, the damage is reported again
    r = run_cli("collect", "--gateway-log", str(gz), db=db)
    assert r.returncode == 3 and _lines_read(db, gz) == 20_000


def test_single_member_gzip_altered_stores_nothing(tmp_path, gz_lines):
    data = bytearray(gzip.compress(("\n".join(gz_lines) + "\n").encode()))
    mid = len(data) // 2
    data[mid:mid + 50] = bytes(b ^ 0x5A for b in data[mid:mid + 50])
    gz = tmp_path / "gw.log.gz"
    gz.write_bytes(bytes(data))
    db = tmp_path / "a.duckdb"
    r = run_cli("collect", "--gateway-log", str(gz), db=db)
    assert r.returncode == 3 and "damaged gzip" in r.stderr
    assert q(db, "SELECT count(*) FROM log_events")[0][0] == 0


def test_a_line_with_a_lone_surrogate_is_rejected_and_the_rest_is_stored(tmp_path):
    """Issue 11, defect 1: the Docker json-file record whose time holds \\ud800 used to end
    the run; it is one rejected line, the lines around it and the next file are stored."""
    def rec(t: str, msg: str) -> str:
        return json.dumps({"log": msg + "\n", "stream": "stderr", "time": t})

    good = [rec(f"2026-09-30T11:21:{s:02d}Z", f"2026/09/30 11:21:{s:02d} escrow_balance_exhausted escrow={s}")
            for s in range(40)]
    bad = '{"log":"2026/09/30 11:21:48 escrow_balance_exhausted escrow=99\\n","stream":"stderr",' \
          '"time":"2026-09-30T11:21\\ud800:48Z"}'
    a = tmp_path / "a.log"
    a.write_text("\n".join(good[:20] + [bad] + good[20:]) + "\n")
    b = tmp_path / "b.log"
    b.write_text("2026/09/30 11:30:00 escrow_balance_exhausted escrow=7\n")
    db = tmp_path / "a.duckdb"
    r = run_cli("collect", "--gateway-log", str(a), "--gateway-log", str(b), db=db)
    assert r.returncode == 0, r.stderr
    assert q(db, "SELECT count(*) FROM log_events")[0][0] == 41
    assert q(db, "SELECT reason, lines FROM log_rejects") == [("bad_json", 1)]


def test_over_long_lines_are_rejected_line_by_line(tmp_path):
    """Issue 11, defect 10: the line-length limit holds for every line, also one that fits
    in a read block (or follows a long start carried over from the block before)."""
    limit = 3000

    def line(n: int) -> bytes:
        head = b"2026/09/30 11:00:00 stage=x v="
        return head + b"a" * (n - len(head))

    lens = [100, limit, limit + 1, 10_000, 200, 3 * limit, 50]
    log = tmp_path / "gw.log"
    log.write_bytes(b"\n".join(line(n) for n in lens) + b"\n")
    db = tmp_path / "a.duckdb"
    rc, err = finish(start(db, log, max_line=limit))
    assert rc == 0, err
    assert q(db, "SELECT line_no FROM log_events ORDER BY 1") == [(1,), (2,), (5,), (7,)]
    assert q(db, "SELECT reason, lines FROM log_rejects") == [("line_too_long", 3)]
    assert q(db, "SELECT lines, byte_offset FROM log_files")[0] == (7, log.stat().st_size)


def test_a_progress_line_is_written_whole_with_its_newline(monkeypatch):
    """Off a terminal a progress line is one write, its newline in it: print() wrote the line and
    its end apart, and a Ctrl-C between the two left 'reading x.gz ...auditor: interrupted' on
    one line (seen once in test_ctrl_c_exits_130 on a fresh machine)."""
    import io
    import sys

    from auditor.progress import Progress

    class Writes(io.StringIO):
        def __init__(self) -> None:
            super().__init__()
            self.calls: list[str] = []

        def write(self, s: str) -> int:
            self.calls.append(s)
            return super().write(s)

        def isatty(self) -> bool:
            return False

    err = Writes()
    monkeypatch.setattr(sys, "stderr", err)
    p = Progress(quiet=False)
    p.log("reading gw.log.1.gz ...")
    with p.task("indexing", None):
        pass
    assert err.calls and all(c.endswith("\n") and c.count("\n") == 1 for c in err.calls), err.calls
