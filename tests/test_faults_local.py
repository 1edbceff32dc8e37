"""Local inputs under faults (issue 18), through the real CLI: nan and inf on the command
line and in auditor.toml, wrong TOML types, a store made by a newer auditor, a FIFO or a
device as --gateway-log, stray dates in a log, NUL bytes in values, non-UTF-8 path names,
unwritable and full output places. Each is one line on stderr and the documented exit code."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest

from conftest import FIXTURES, q, run_cli


def one_line(r, code: int) -> str:
    """The run exited ``code`` with exactly one line on stderr, no traceback; that line."""
    lines = r.stderr.strip().splitlines()
    assert r.returncode == code and len(lines) == 1 and "Traceback" not in r.stderr, (r.returncode, r.stderr)
    return lines[0]


# -- numbers: nan and inf are refused by every float option, at one place (cli._strict_types)
@pytest.mark.parametrize("args", [
    ["collect", "--gateway-log", "x-*.log", "--timeout", "nan"],
    ["collect", "--gateway-log", "x-*.log", "--timeout", "inf"],
    ["collect", "--gateway-log", "x-*.log", "--rate", "nan"],
    ["collect", "--gateway-log", "x-*.log", "--rate", "inf"],
    ["targets", "1", "--offline", "--headroom", "nan"],
    ["targets", "1", "--offline", "--headroom", "inf"],
    ["targets", "1", "--offline", "--per-10000", "nan"],
    ["poc-overload", "1", "--offline", "--per-10000", "inf"],
    ["poc-overload", "1", "--offline", "--lookback", "nan"],
])
def test_nan_and_inf_on_the_command_line_are_usage_errors(args, tmp_path):
    line = one_line(run_cli(*args, db=tmp_path / "a.duckdb"), 2)
    flag = next(a for a in args if a.startswith("--") and a not in ("--gateway-log", "--offline"))
    assert flag in line and "not a finite number" in line, line


@pytest.mark.parametrize("threads", ["x", "0", "-2", "1.5"])
def test_a_thread_count_that_is_not_one_or_more_is_a_usage_error(threads, tmp_path):
    """AUDITOR_THREADS sets DuckDB's threads and whether the epoch report runs two analyses at
    a time: a value that is not a whole number of threads is said, not replaced unseen."""
    line = one_line(run_cli("collect", "--gateway-log", "x-*.log", db=tmp_path / "a.duckdb",
                            env={"AUDITOR_THREADS": threads}), 2)
    assert f"AUDITOR_THREADS={threads!r}" in line and "1 or more" in line, line
    assert not (tmp_path / "a.duckdb").exists()         # said before any store is made


@pytest.mark.parametrize("limit", ["1GB'; COPY (SELECT 42) TO '{out}'; SELECT '", "-1GB", "0GB", "1GB; x", "lots",
                                   "1,5GB", "80%"])
def test_a_memory_limit_that_is_not_a_size_is_a_usage_error(limit, tmp_path):
    """Issue 35, 21: AUDITOR_MEMORY_LIMIT was pasted into SET's text, so a quote in it ran any
    SQL (a COPY to a file, on every command), and -1GB lifted the limit. Now a positive size or
    one line, exit 2, before any store is opened; a command with a valid one runs as before."""
    from conftest import q

    db, out = tmp_path / "a.duckdb", tmp_path / "x"
    assert run_cli("collect", "--gateway-log", str(FIXTURES / "hedging" / "small.log"), db=db).returncode == 0
    for args in (["sql", "SELECT 1"], ["collect", "--gateway-log", "x*.log"]):
        line = one_line(run_cli(*args, db=db, env={"AUDITOR_MEMORY_LIMIT": limit.format(out=out)}), 2)
        assert line.startswith("auditor: error: AUDITOR_MEMORY_LIMIT=") and "give a size such as 4GB" in line, line
        assert not out.exists()
    assert q(db, "SELECT count(*) FROM log_files") == [(1,)]
    r = run_cli("sql", "SELECT current_setting('memory_limit') AS m", "--format", "csv", db=db,
                env={"AUDITOR_MEMORY_LIMIT": " 512MiB "})
    assert r.returncode == 0 and r.stdout == "m\n512.0 MiB\n", (r.stdout, r.stderr)


def test_nan_from_the_environment_is_a_usage_error(tmp_path):
    line = one_line(run_cli("collect", "--gateway-log", "x-*.log", db=tmp_path / "a.duckdb",
                            env={"AUDITOR_RATE": "nan"}), 2)
    assert "--rate" in line and "AUDITOR_RATE" in line


@pytest.mark.parametrize("toml, says", [
    ("db = 5", "db = 5: expected a string"),
    ("gateway_log = [5]", "gateway_log = 5: expected a string"),
    ("record = 5", "record = 5: expected a string"),
    ("offline = 1", "offline = 1: expected true or false"),
    ("rate = nan", "rate = nan: nan is not a finite number"),
    ("timeout = inf", "timeout = inf: inf is not a finite number"),
    ("rate = true", "rate = True: expected a number"),
    ("[report.daily]\nout = 7", "report.daily.out = 7: expected a string"),
    ("[collect]\nepoch = [1.5]", "collect.epoch = 1.5: expected an integer"),
    ("epoch = [3]", "epoch = [3]: expected one value"),      # also an option of report daily, single there
])
def test_wrong_toml_types_are_one_line_and_exit_2(toml, says, tmp_path):
    cfg = tmp_path / "auditor.toml"
    cfg.write_text(toml + "\n")
    line = one_line(run_cli("--config", str(cfg), "collect", "--gateway-log", "x-*.log", db=tmp_path / "a.duckdb"), 2)
    assert f"{cfg}: {says}" in line, line


def test_right_toml_types_still_work(tmp_path):
    cfg = tmp_path / "auditor.toml"
    cfg.write_text('rate = 5\ntimeout = 2.5\n[collect]\nepoch = [3]\ngateway_log = ["none.log"]\n')
    r = run_cli("--config", str(cfg), "collect", db=tmp_path / "a.duckdb")
    # a log path that names nothing is a usage error before any work (issue 33)
    assert r.returncode == 2 and "none.log: no such file" in r.stderr, r.stderr
    assert not (tmp_path / "a.duckdb").exists()


# -- a store made by a newer auditor ----------------------------------------------------------
def test_a_store_from_a_newer_auditor_is_refused_in_one_line(tmp_path):
    """A newer auditor's migration added a column to log_files: this one's inserts would
    fail on the column count (a DuckDB Binder Error), so the store is refused when opened."""
    import duckdb

    from conftest import ROOT

    db = tmp_path / "a.duckdb"
    log = tmp_path / "gw.log"
    log.write_text("2026/09/30 11:00:00 escrow_balance_exhausted escrow=1\n")
    assert run_cli("collect", "--gateway-log", str(log), db=db).returncode == 0
    newer = max(int(f.name[:3]) for f in (ROOT / "queries" / "schema").glob("[0-9]*.sql")) + 1
    with duckdb.connect(str(db)) as con:
        con.execute("ALTER TABLE log_files ADD COLUMN newer_thing VARCHAR")
        con.execute("INSERT INTO schema_migrations VALUES (?, ?, now())", [newer, f"{newer:03d}_newer"])
    log.write_text("2026/09/30 11:00:01 escrow_balance_exhausted escrow=2\n")     # a new file to store
    for args in (["collect", "--gateway-log", str(log)], ["sql", "SELECT 1"]):
        line = one_line(run_cli(*args, db=db), 3)
        assert f"{db} was made by a newer auditor (schema version {newer}" in line, line


# -- --gateway-log: regular files (plain or gzip) and - only ------------------------------------
@pytest.mark.parametrize("kind", ["fifo", "/dev/zero", "socket"])
def test_a_gateway_log_that_is_not_a_regular_file_is_never_opened(kind, tmp_path):
    """A FIFO nobody writes blocked the open forever (deaf to Ctrl-C), /dev/zero was read
    forever: each is missing (exit 3) with one line saying what it is, checked before
    anything is opened, and the regular file given with it is still stored. The timeout
    makes a regression a failure, not a hung suite."""
    import os
    import socket

    if kind == "fifo":
        path = tmp_path / "gw.fifo"
        os.mkfifo(path)
    elif kind == "socket":
        path = tmp_path / "gw.sock"
        sock = socket.socket(socket.AF_UNIX)
        sock.bind(str(path))
    else:
        path = Path(kind)
    good = tmp_path / "gw.log"
    good.write_text("2026/09/30 11:00:00 escrow_balance_exhausted escrow=1\n")
    db = tmp_path / "a.duckdb"
    r = run_cli("collect", "--gateway-log", str(path), "--gateway-log", str(good), db=db, timeout=30)
    assert r.returncode == 3 and "Traceback" not in r.stderr, r.stderr
    missing = [x for x in r.stderr.splitlines() if "MISSING" in x]
    what = {"fifo": "a FIFO", "/dev/zero": "a character device", "socket": "a socket"}[kind]
    assert len(missing) == 1 and f"{path}: is {what}" in missing[0] and "not a regular file" in missing[0], r.stderr
    from conftest import q

    assert q(db, "SELECT count(*) FROM log_events")[0][0] == 1
    assert q(db, "SELECT status FROM coverage WHERE item = ?", [str(path)]) == [("missing",)]


def test_dev_stdin_as_a_pipe_is_refused_and_dash_reads_it(tmp_path):
    db = tmp_path / "a.duckdb"
    line = "2026/09/30 11:00:00 escrow_balance_exhausted escrow=1\n"
    r = run_cli("collect", "--gateway-log", "/dev/stdin", db=db, stdin=line, timeout=30)
    assert r.returncode == 3 and "/dev/stdin: is a FIFO" in r.stderr, r.stderr
    r = run_cli("collect", "--gateway-log", "-", db=db, stdin=line, timeout=30)
    assert r.returncode == 0 and "loaded log_events 1" in r.stderr, r.stderr


# -- outputs: an unusable path, a full disk ------------------------------------------------------
@pytest.fixture(scope="module")
def demo(tmp_path_factory) -> Path:
    """A store holding every bundled source of epoch 403 (as tests/test_reports.py's)."""
    from conftest import FIXTURES

    db = tmp_path_factory.mktemp("demo") / "auditor.duckdb"
    r = run_cli("collect", "--epoch", "403", "--replay", str(FIXTURES / "chain" / "epoch-403"),
                "--replay", str(FIXTURES / "accounting" / "v5"),
                "--gateway-log", str(FIXTURES / "demo-epoch-403" / "gateway.log.gz"), db=db)
    assert r.returncode == 0, r.stderr
    return db


@pytest.fixture
def small_disk(tmp_path):
    """``small_disk(kib)``: a real tmpfs of ``kib`` KiB mounted in tmp_path (a real ENOSPC;
    ``read_only=True``: a real unwritable directory, EROFS, which root cannot write either;
    /dev/full cannot hold the temp file beside it that an atomic write needs). Needs the
    right to mount (root in CI); skipped without it."""
    import subprocess

    mounted = []

    def make(kib: int, read_only: bool = False) -> Path:
        d = tmp_path / f"disk{len(mounted)}"
        d.mkdir()
        opts = f"size={kib}k" + (",ro" if read_only else "")
        r = subprocess.run(["mount", "-t", "tmpfs", "-o", opts, "tmpfs", str(d)], capture_output=True)
        if r.returncode:
            pytest.skip(f"cannot mount a tmpfs here: {r.stderr.decode().strip()}")
        mounted.append(d)
        return d

    yield make
    for d in mounted:
        subprocess.run(["umount", str(d)], check=False)


def fill(disk: Path, leave_kib: int) -> None:
    """Take the disk's free space but ``leave_kib`` KiB."""
    import os

    free = os.statvfs(disk).f_bavail * os.statvfs(disk).f_frsize
    (disk / "filler").write_bytes(b"\0" * max(0, free - leave_kib * 1024))


def test_output_and_out_under_a_file_are_one_line_naming_the_path(demo, tmp_path):
    """An unusable --output was one line and exit 2, --out an internal PermissionError (or
    NotADirectoryError), exit 3: both are now one line naming the path, exit 2."""
    afile = tmp_path / "afile"
    afile.write_text("x")
    line = one_line(run_cli("--quiet", "epoch", "403", "--offline", "-f", "md", "--output", str(afile / "r.md"),
                            db=demo), 2)
    assert f"cannot write {afile / 'r.md'}" in line
    line = one_line(run_cli("--quiet", "report", "daily", "--offline", "--epoch", "403", "--out", str(afile / "reports"),
                            db=demo), 2)
    assert f"cannot write {afile / 'reports'}" in line and "Not a directory" in line, line


def test_output_and_out_on_a_read_only_disk_are_one_line_naming_the_path(demo, small_disk):
    """An unwritable directory (read-only: root too is refused): --output and --out alike
    are one line naming the path and the cause, exit 2 (--out was an internal
    PermissionError, exit 3)."""
    disk = small_disk(64, read_only=True)
    line = one_line(run_cli("--quiet", "epoch", "403", "--offline", "-f", "md", "--output", str(disk / "r.md"),
                            db=demo), 2)
    assert f"cannot write {disk / 'r.md'}: Read-only file system" in line, line
    line = one_line(run_cli("--quiet", "report", "daily", "--offline", "--epoch", "403", "--out", str(disk),
                            db=demo), 2)
    assert f"cannot write {disk}/" in line and "Read-only file system" in line, line


def test_output_on_a_full_disk_is_one_line_naming_the_path_and_the_cause(demo, small_disk):
    disk = small_disk(256)
    fill(disk, 4)
    out = disk / "r.md"
    line = one_line(run_cli("--quiet", "epoch", "403", "--offline", "-f", "md", "--output", str(out), db=demo), 3)
    assert f"cannot write {out}: No space left on device" in line, line
    assert sorted(p.name for p in disk.iterdir()) == ["filler"]       # no temp file left


def test_daily_on_a_full_disk_writes_all_its_files_or_none(demo, small_disk):
    """report daily wrote json and md, then failed on html: now the three are written to
    temp files first and renamed only when all are written. The reports of an earlier run
    stay as they were; no temp file is left; one line names the file and the cause."""
    disk = small_disk(1024)
    r = run_cli("--quiet", "report", "daily", "--offline", "--epoch", "403", "--out", str(disk), db=demo)
    assert r.returncode == 0, r.stderr
    (day,) = [p for p in disk.iterdir() if p.is_dir()]
    for p in day.iterdir():
        p.write_text(f"earlier {p.name}")
    fill(disk, 24)      # room for some of the files, not all
    line = one_line(run_cli("--quiet", "report", "daily", "--offline", "--epoch", "403", "--out", str(disk),
                            db=demo), 3)
    assert f"cannot write {day}/report." in line and "No space left on device" in line, line
    assert {p.name: p.read_text() for p in day.iterdir()} == {
        f"report.{f}": f"earlier report.{f}" for f in ("json", "md", "html")}


def test_a_new_store_on_a_full_disk_is_one_line(small_disk):
    disk = small_disk(64)
    db = disk / "a.duckdb"
    line = one_line(run_cli("collect", "--gateway-log", "none-*.log", db=db), 3)
    assert f"cannot write the database {db}" in line and "No space left on device" in line, line


# -- stray dates: implausible_time ---------------------------------------------------------------
from datetime import datetime, timedelta, timezone  # noqa: E402

from hypothesis import given, settings, strategies as st  # noqa: E402

T0 = datetime(2026, 3, 1, tzinfo=timezone.utc)
DAY = timedelta(days=1)


def _line(t: datetime, i: int) -> str:
    return f"{t:%Y/%m/%d %H:%M:%S} escrow_balance_exhausted escrow={i}"


def _span(res) -> tuple:
    import polars as pl

    ts = pl.from_arrow(res.events)["ts"]
    return ts.min(), ts.max()


@st.composite
def log_with_strays(draw):
    """A log in time order (gaps up to 3 h: any five lines within a day), and up to two
    stray lines dated more than a day outside its span, each at least NEIGHBOURS lines
    from its ends."""
    gaps = draw(st.lists(st.integers(0, 3 * 3600), min_size=11, max_size=80))
    times = [T0 + timedelta(seconds=sum(gaps[:i])) for i in range(len(gaps))]
    clean = [_line(t, i) for i, t in enumerate(times)]
    strays = []
    for _ in range(draw(st.integers(1, 2))):
        if draw(st.booleans()):
            t = draw(st.datetimes(datetime(1970, 1, 1), (times[0] - DAY - timedelta(seconds=1)).replace(tzinfo=None)))
        else:
            t = draw(st.datetimes((times[-1] + DAY + timedelta(seconds=1)).replace(tzinfo=None), datetime(2200, 1, 1)))
        strays.append((draw(st.integers(5, len(clean) - 5)), _line(t, 10**6 + len(strays))))
    lines = list(clean)
    for pos, text in sorted(strays, reverse=True):
        lines.insert(pos, text)
    return lines, (times[0], times[-1]), len(clean)


@settings(max_examples=150, deadline=None)
@given(log_with_strays())
def test_stray_lines_never_widen_the_span_and_no_line_in_order_is_lost(case):
    from auditor.sources.gatewaylog_parse import parse_block

    lines, span, n_clean = case
    data = ("\n".join(lines) + "\n").encode()
    for kw in ({}, {"compiled": False}, {"vectorised": False}):
        res = parse_block(data, **kw)
        assert _span(res) == span, (kw, lines)
        assert res.parsed == n_clean and res.rejected == {"implausible_time": len(lines) - n_clean}


@settings(max_examples=100, deadline=None)
@given(st.lists(st.integers(0, 20 * 86_400), min_size=1, max_size=60))
def test_lines_in_time_order_are_kept_whatever_the_gaps(gaps):
    """A quiet gateway (gaps of days) or a clock that jumps for good loses no line."""
    from auditor.sources.gatewaylog_parse import parse_block

    t0 = datetime(2024, 1, 2, tzinfo=timezone.utc)
    lines = [_line(t0 + timedelta(seconds=sum(gaps[:i + 1])), i) for i in range(len(gaps))]
    res = parse_block(("\n".join(lines) + "\n").encode())
    assert res.parsed == len(lines) and not res.rejected


@settings(max_examples=150, deadline=None)
@given(st.lists(st.integers(-3 * 86_400, 3 * 86_400), min_size=1, max_size=40),
       st.lists(st.datetimes(datetime(1970, 1, 1), datetime(2200, 1, 1)), max_size=3), st.randoms())
def test_the_glance_at_a_blocks_times_keeps_what_the_rule_keeps(steps, far, rnd):
    """_plausible_at_a_glance spares the rule's medians when no line can break it: with it and
    without it, every block gives the same events and rejects (times close together, far
    apart, out of bounds)."""
    from unittest import mock

    import polars as pl

    from auditor.sources import gatewaylog_parse as gp

    t0 = datetime(2026, 3, 1)
    times = [t0 + timedelta(seconds=sum(steps[:i + 1])) for i in range(len(steps))]
    for t in far:
        times.insert(rnd.randrange(len(times) + 1), t)
    data = "".join(_line(t, i) + "\n" for i, t in enumerate(times)).encode()
    glanced = gp.parse_block(data)
    with mock.patch.object(gp, "_plausible_at_a_glance", lambda events, now: False):
        full = gp.parse_block(data)
    assert glanced.rejects == full.rejects
    assert pl.from_arrow(glanced.events).rows() == pl.from_arrow(full.events).rows()


def test_stray_dates_do_not_make_an_unread_window_covered(tmp_path):
    """Issue 18, serious 5, as fed: the log ends 4 minutes before epoch 403's CPoC window;
    two lines dated 1970 and 2100 made poc-overload call the window's evidence 'full, 0
    misses, peak 0' and coverage call it fully covered. They are rejected
    (implausible_time, counted in the collect report); the window stays unknown."""
    import gzip
    import json

    from conftest import FIXTURES, q

    demo = gzip.decompress((FIXTURES / "demo-epoch-403" / "gateway.log.gz").read_bytes()).decode().splitlines()
    before = [x for x in demo if x.startswith("2026/09/22 ")][:2000]
    log = tmp_path / "gw.log"
    log.write_text("\n".join(["1970/01/01 00:00:01 escrow_balance_exhausted escrow=1", *before,
                              "2100/01/01 00:00:01 escrow_balance_exhausted escrow=2"]) + "\n")
    db = tmp_path / "a.duckdb"
    r = run_cli("collect", "--epoch", "403", "--replay", str(FIXTURES / "chain" / "epoch-403"),
                "--gateway-log", str(log), db=db)
    assert r.returncode == 0 and "rejected 2 (implausible_time)" in r.stderr, r.stderr
    assert q(db, "SELECT reason, lines FROM log_rejects") == [("implausible_time", 2)]
    r = run_cli("poc-overload", "403", "--offline", "--format", "json", db=db)
    windows = json.loads(r.stdout)["windows"]
    assert windows and {w["evidence"]["state"] for w in windows} == {"none"}, r.stdout[:2000]
    assert all(w["misses"] is None and w["peak_inflight"] is None for w in windows)
    cov = json.loads(run_cli("epoch", "403", "--offline", "--format", "json", db=db).stdout)["coverage"]
    text = json.dumps(cov)
    assert "cpoc:0: no log lines between" in text and "2100" not in text and "1970" not in text, text


# -- NUL in a value --------------------------------------------------------------------------------
def test_a_nul_in_a_host_value_does_not_make_a_second_host(tmp_path):
    """Issue 18, minor 11: 'host=\\0sl0wh0st' made a host '\\x00sl0wh0st' beside 'sl0wh0st'.
    A line with a NUL in a value (raw, or escaped in a quoted or JSON value) is rejected
    (nul_char), on every parse path; other control characters stay data."""
    from conftest import FIXTURES, q

    raw = (FIXTURES / "hedging" / "small.log").read_bytes()
    hosts = sorted({h for line in raw.splitlines() for h in [line.partition(b" host=")[2].split(b" ")[0]] if h})
    log = tmp_path / "gw.log"
    log.write_bytes(raw.replace(b"host=sl0wh0st", b"host=\x00sl0wh0st", 1)
                    + b'2026/10/23 09:59:00 request=r-x stage=prepared host="sl0\\x00wh0st"\n'
                    + b'2026/10/23 09:59:00 request=r-y stage=prepared host="sl0\\x01wh0st"\n')
    db = tmp_path / "a.duckdb"
    r = run_cli("collect", "--gateway-log", str(log), db=db)
    assert r.returncode == 0 and "rejected 2 (nul_char)" in r.stderr, r.stderr
    stored = sorted(h.encode() for (h,) in q(db, "SELECT DISTINCT host FROM log_events WHERE host IS NOT NULL"))
    assert stored == sorted(hosts + [b"sl0\x01wh0st"])
    assert q(db, "SELECT reason, lines FROM log_rejects") == [("nul_char", 2)]


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["host=", 'host="', "a=", "request="]), st.text("ab\x00\x01", max_size=6),
                          st.booleans()), min_size=1, max_size=150))
def test_a_nul_is_rejected_alike_on_every_parse_path(values):
    """Raw NULs, and NULs escaped in a quoted value (\\x00), in text lines: every path agrees
    (check_block), and every stored value is free of NUL."""
    import polars as pl

    from auditor.sources.gatewaylog_parse import parse_block

    lines = []
    for i, (key, v, escaped) in enumerate(values):
        v = v.replace("\x00", "\\x00") if escaped and key.endswith('"') else v
        lines.append(f"2026/09/30 11:00:00 request=r{i} stage=s {key}{v}{chr(34) if key.endswith(chr(34)) else ''}")
    data = ("\n".join(lines) + "\n").encode()
    results = [parse_block(data, **kw) for kw in ({}, {"compiled": False}, {"vectorised": False})]
    for res in results:
        assert res.rejects == results[-1].rejects and res.parsed + sum(res.rejected.values()) == len(lines)
        assert pl.from_arrow(res.events).rows() == pl.from_arrow(results[-1].events).rows()
    ev = pl.from_arrow(results[0].events)
    assert not any("\x00" in str(x) for c in ("host", "request") for x in ev[c].to_list())
    assert not ev["fields"].str.contains("\\u0000", literal=True).any()


_NULS = ["\x00", "\\x00", "\\000", "\\u0000", "\\U00000000", "\\x01", "\\u00e9", "\\\\x00", "\\\\"]


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["text", "quoted", "json", "docker"]),
                          st.lists(st.sampled_from(["a", " ", *_NULS]), max_size=4)), min_size=1, max_size=30))
def test_the_glance_for_nuls_keeps_what_the_look_keeps(lines):
    """_may_hold_nul spares the look at every value when no line can hold a NUL: with it and
    without it, every block gives the same events and rejects, whichever way a NUL is written
    (raw; Go's \\x00, \\000, \\u0000, \\U00000000; JSON's \\u0000; inside a Docker wrapper)."""
    import json as js
    from unittest import mock

    import polars as pl

    from auditor.sources import gatewaylog_parse as gp

    out = []
    for i, (shape, parts) in enumerate(lines):
        v = "".join(parts)
        text = f"2026/09/30 11:00:00 request=r{i} stage=s host={v.replace(' ', '')}"
        if shape == "quoted":
            text = f'2026/09/30 11:00:00 request=r{i} stage=s host="{v}"'
        elif shape == "json":
            text = ('{"time":"2026-09-30T11:00:00Z","level":"INFO","msg":"stage","request":"r%d","stage":"s",'
                    '"host":"%s"}' % (i, v.replace('"', "")))
        elif shape == "docker":
            text = js.dumps({"log": f'2026/09/30 11:00:00 request=r{i} stage=s host="{v}"\n', "stream": "stderr",
                             "time": "2026-09-30T11:00:00.5Z"})
        out.append(text)
    data = ("\n".join(out) + "\n").encode("utf-8", "surrogatepass")
    glanced = gp.parse_block(data)
    with mock.patch.object(gp, "_may_hold_nul", lambda block: True):
        full = gp.parse_block(data)
    assert glanced.rejects == full.rejects
    assert pl.from_arrow(glanced.events).rows() == pl.from_arrow(full.events).rows()


@pytest.mark.parametrize("esc", [b"\x00", b"\\x00", b"\\000", b"\\u0000", b"\\U00000000"])
def test_the_glance_for_nuls_sees_an_escape_cut_between_two_pieces(esc):
    """_may_hold_nul reads a block NUL_PIECE bytes at a time: an escape that starts at any of
    the last bytes of a piece, or just after it, is seen; an escape that is no NUL is not."""
    from auditor.sources import gatewaylog_parse as gp

    for at in range(gp.NUL_PIECE - 3, gp.NUL_PIECE + 2):
        assert gp._may_hold_nul(memoryview(b"a" * at + esc + b"b" * 8)), at
        assert not gp._may_hold_nul(memoryview(b"a" * at + b"\\x11" + b"b" * 8)), at


# -- path names that are not UTF-8 ---------------------------------------------------------------
def test_a_log_whose_name_is_not_utf8_is_stored(tmp_path):
    """Its rows were refused by DuckDB (a surrogate in log_files.path), exit 3. The path is
    stored with the odd bytes as \\xNN, the file read again is known (unchanged), a glob
    finds it, and a path not there is missing in one line."""
    import gzip
    import os

    from conftest import q

    d = os.fsencode(tmp_path)
    (Path(os.fsdecode(d + b"/gw-\xff.log"))).write_bytes(b"2026/09/30 11:00:00 escrow_balance_exhausted escrow=1\n")
    Path(os.fsdecode(d + b"/gw-\xfe.log.gz")).write_bytes(
        gzip.compress(b"2026/09/30 11:00:01 escrow_balance_exhausted escrow=2\n"))
    db = tmp_path / "a.duckdb"
    logs = [os.fsdecode(d + n) for n in (b"/gw-\xff.log", b"/gw-\xfe.log.gz", b"/no-\xfd.log")]
    r = run_cli("collect", *[x for p in logs for x in ("--gateway-log", p)], db=db)
    # a path not there is a usage error before any work (issue 33), its name shown escaped
    assert r.returncode == 2 and f"--gateway-log {tmp_path}/no-\\xfd.log: no such file" in r.stderr, r.stderr
    assert not db.exists()
    r = run_cli("collect", *[x for p in logs[:2] for x in ("--gateway-log", p)], db=db)
    assert r.returncode == 0 and "loaded log_events 2" in r.stderr, r.stderr
    assert sorted(q(db, "SELECT path, lines FROM log_files")) == [
        (f"{tmp_path}/gw-\\xfe.log.gz", 1), (f"{tmp_path}/gw-\\xff.log", 1)]
    r = run_cli("collect", "--gateway-log", os.fsdecode(d + b"/gw-*"), db=db)
    assert r.returncode == 0 and r.stderr.count("(unchanged)") == 2 and "gone" not in r.stderr, r.stderr
    r = run_cli("collect", "--gateway-log", logs[0], db=db)     # the other file is not given: still there
    assert r.returncode == 0 and "gone" not in r.stderr, r.stderr


@pytest.mark.parametrize("cut_at", [0, 4096, 8192])
def test_a_store_whose_making_was_cut_off_is_made_anew(tmp_path, cut_at):
    """Killed while DuckDB wrote a new store's headers (seen once in 570 kills of a first
    collect): an empty file, or the first header alone, which DuckDB refused on every run
    after, exit 3, until the user deleted it. It holds nothing: the next collect makes it anew.
    A short file that is not DuckDB's is left as it is, one line, exit 3."""
    import duckdb

    from conftest import FIXTURES, q

    log = FIXTURES / "hedging" / "small.log"
    db = tmp_path / "cut.duckdb"
    duckdb.connect(str(db)).close()
    with open(db, "r+b") as f:
        f.truncate(cut_at)
    r = run_cli("collect", "--gateway-log", str(log), db=db)
    assert r.returncode == 0, r.stderr
    assert q(db, "SELECT count(*) FROM log_events")[0][0] > 0

    other = tmp_path / "notes.duckdb"
    other.write_bytes(b"my notes, not a store\n" * 100)
    line = one_line(run_cli("collect", "--gateway-log", str(log), db=other), 3)
    assert "cannot open the database" in line and other.read_bytes() == b"my notes, not a store\n" * 100, line


def test_a_db_whose_name_is_not_utf8_is_one_line(tmp_path):
    import os

    db = os.fsdecode(os.fsencode(tmp_path) + b"/a-\xff.duckdb")
    line = one_line(run_cli("--db", db, "collect", "--gateway-log", "none-*.log"), 2)
    assert f"--db {tmp_path}/a-\\xff.duckdb: the path is not UTF-8" in line, line


@pytest.mark.parametrize("fmt", ["md", "html", "json"])
def test_an_output_whose_name_is_not_utf8_is_written(demo, tmp_path, fmt):
    """--output a-\\xff.md (and a command line holding that name, which md and html print)
    was a UnicodeEncodeError; the file is written, as valid UTF-8."""
    import os

    out = os.fsdecode(os.fsencode(tmp_path) + f"/r-\xff.{fmt}".encode("latin-1"))
    r = run_cli("--quiet", "epoch", "403", "--offline", "-f", fmt, "--output", out, db=demo)
    assert r.returncode == 0 and not r.stderr, r.stderr
    text = Path(out).read_bytes().decode("utf-8")
    assert "403" in text


def test_coverage_is_the_densely_covered_stretch_not_first_and_last_line(tmp_path):
    """Two pieces of the demo log, 00:00-00:20 and 00:40-01:02, around a 20-minute hole in
    epoch 403's CPoC window (00:03-00:58): its first and last line span the window, but
    the logs do not cover it. Without the hole it is fully covered."""
    import gzip
    import json

    from conftest import FIXTURES

    demo = gzip.decompress((FIXTURES / "demo-epoch-403" / "gateway.log.gz").read_bytes()).decode().splitlines()
    hole = ("2026/09/23 00:20", "2026/09/23 00:40")

    def windows(lines: list[str], name: str) -> dict:
        log = tmp_path / f"{name}.log"
        log.write_text("\n".join(lines) + "\n")
        db = tmp_path / f"{name}.duckdb"
        r = run_cli("collect", "--epoch", "403", "--replay", str(FIXTURES / "chain" / "epoch-403"),
                    "--gateway-log", str(log), db=db)
        assert r.returncode == 0, r.stderr
        cov = json.loads(run_cli("epoch", "403", "--offline", "--format", "json", db=db).stdout)["coverage"]
        return {w["window"]: w for w in cov["gateway_log"]["windows"]}

    holed = windows([x for x in demo if not hole[0] <= x[:16] < hole[1]], "holed")
    assert holed["cpoc:0"]["lines"] > 0 and not holed["cpoc:0"]["fully_covered"]
    assert windows(demo, "whole")["cpoc:0"]["fully_covered"]


def test_a_log_into_a_store_on_a_full_disk_is_one_line(small_disk):
    """The store fits, the log's rows do not: one line naming the log, the store and the
    cause, exit 3; a later run on a disk with room stores the file whole."""
    from conftest import FIXTURES, q

    disk = small_disk(2048)
    db = disk / "a.duckdb"
    assert run_cli("collect", "--gateway-log", "none-*.log", db=db).returncode == 3     # the schema only
    log = FIXTURES / "demo-epoch-403" / "gateway.log.gz"
    line = one_line(run_cli("--quiet", "collect", "--gateway-log", str(log), db=db), 3)
    assert f"{log}: could not store what was read (cannot write the database {db}" in line, line
    assert "No space left on device" in line and "earlier rows are kept" in line
    import subprocess

    subprocess.run(["mount", "-o", "remount,size=64m", str(disk)], check=True)
    r = run_cli("collect", "--gateway-log", str(log), db=db)
    assert r.returncode == 0, r.stderr
    assert q(db, "SELECT lines, complete FROM log_files WHERE path = ?", [str(log)]) == [(35736, True)]


def test_an_analysis_of_a_store_that_does_not_exist_says_so_and_makes_none(tmp_path):
    """--offline (or no source flag) with no store at --db: nothing to collect and nothing to
    read is one line and exit 3, not an empty store made to be read (nor its directory)."""
    db = tmp_path / "no" / "such" / "x.duckdb"
    for args in (["epoch", "403", "--offline"], ["misstest", "403"], ["hedging", "--offline", "--since", "2026-09-23"]):
        r = run_cli(*args, db=db)
        assert r.returncode == 3, (args, r.stderr)
        assert "no database at" in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr
        assert not (tmp_path / "no").exists()


# -- DuckDB out of the memory it may use ---------------------------------------------------------
def test_duckdb_out_of_memory_is_one_line_saying_what_helps_and_stores_nothing_half_done(tmp_path):
    """Past AUDITOR_MEMORY_LIMIT DuckDB raises its OutOfMemoryException, whose advice is SQL
    (SET memory_limit=...): one line, exit 3, naming the limit and the settings that help, for
    an analysis and for `auditor sql`; the kept tables it was building are not half stored, so
    the same store then gives the same answer as a store that never ran short."""
    from conftest import FIXTURES, run_json

    log = str(FIXTURES / "hedging" / "incident.log")
    span = ["--since", "2026-10-23T11:00:00", "--until", "2026-10-23T13:00:00", "--format", "json"]
    short, plenty = tmp_path / "short.duckdb", tmp_path / "plenty.duckdb"
    for db in (short, plenty):
        assert run_cli("--quiet", "collect", "--gateway-log", log, db=db).returncode == 0
    low = {"AUDITOR_MEMORY_LIMIT": "2MB"}
    for args in (["hedging", "--offline", *span], ["sql", "SELECT count(*) FROM hedge_races"]):
        line = one_line(run_cli("--quiet", *args, db=short, env=low), 3)
        assert "ran out of the memory it may use (2MB;" in line and "AUDITOR_MEMORY_LIMIT=4GB" in line, line
        assert "internal error" not in line and "SET memory_limit" not in line, line
    assert run_json("hedging", "--offline", *span, db=short) == run_json("hedging", "--offline", *span, db=plenty)
    # a collect short of memory says what it stored, and what helps
    for limit in ("2MB", "8MB"):
        line = one_line(run_cli("--quiet", "collect", "--gateway-log", log, db=tmp_path / f"{limit}.duckdb",
                                env={"AUDITOR_MEMORY_LIMIT": limit}), 3)
        assert f"DuckDB may use {limit}:" in line and "AUDITOR_MEMORY_LIMIT=4GB" in line, line


def test_a_damaged_store_is_one_line_saying_so_for_an_analysis_and_for_sql(demo, tmp_path):
    """A block of the store whose checksum does not match (a disk's fault, a copy cut short):
    DuckDB's error read 'internal error' from an analysis and 'query failed', a usage error
    (exit 2), from `auditor sql`. Both say the store is damaged and what to do, exit 3."""
    import shutil

    tables = [t for t, in q(demo, "SELECT table_name FROM duckdb_tables()")]
    every_row = ["sql", "SELECT " + " + ".join(f"(SELECT sum(length(CAST(t AS VARCHAR))) FROM {t} t)" for t in tables)]
    analysis = ["epoch", "403", "--offline", "--format", "json"]
    block, first = 262144, 12288           # DuckDB's block size, after its three header pages
    for k in range((demo.stat().st_size - first) // block - 1, 0, -1):   # from the end, past the catalog
        bad = tmp_path / f"bad-{k}.duckdb"
        shutil.copy(demo, bad)
        with open(bad, "r+b") as f:
            f.seek(first + k * block + 100)
            f.write(b"\xff" * 64)
        if run_cli("sql", "SELECT 1", db=bad).returncode == 0 and run_cli(*analysis, db=bad).returncode != 0:
            break
    else:
        pytest.skip("no block the report reads was found to damage")
    for args in (every_row, analysis):
        line = one_line(run_cli("--quiet", *args, db=bad), 3)
        assert f"the store {bad} is damaged (" in line and "collect again into a new --db" in line, line
        assert "internal error" not in line and "query failed" not in line, line


# -- round 3 (issue 35): paths the tool writes ----------------------------------------------------
def _device(path: Path) -> Path:
    """A character device at ``path`` (a /dev/null of its own), made with mknod (root in CI)."""
    import os
    import stat

    try:
        os.mknod(path, stat.S_IFCHR | 0o666, os.makedev(1, 3))
    except PermissionError:
        pytest.skip("mknod needs root")
    return path


def test_db_on_a_device_is_refused_and_the_device_stays(tmp_path):
    """`--db X` on a character device exited 0 with X removed and a DuckDB file in its place
    (the repair of a store whose making was cut off removed whatever it was given): as root,
    --db /dev/null would do it to the real one. Now one line, exit 2, the device as it was;
    the same through a symbolic link to one."""
    import os
    import stat

    from conftest import FIXTURES

    log = str(FIXTURES / "hedging" / "small.log")
    dev = _device(tmp_path / "dev.duckdb")
    link = tmp_path / "link.duckdb"
    link.symlink_to(dev)
    for db in (dev, link):
        line = one_line(run_cli("collect", "--gateway-log", log, db=db), 2)
        assert f"--db {db} is a character device; the store is a regular file or a new path" in line, line
        assert stat.S_ISCHR(os.stat(db).st_mode)
    assert link.is_symlink() and os.readlink(link) == str(dev)


@pytest.mark.parametrize("args", [["collect", "--gateway-log", "x*.log"], ["sql", "SELECT 1"],
                                  ["epoch", "403", "--offline"]])
def test_db_naming_a_fifo_is_refused_at_once(tmp_path, args):
    """`--db` naming a FIFO hung with no message (DuckDB waited for a writer), and a collect
    would have removed it: one line, exit 2, the FIFO left as it is."""
    import os
    import stat

    fifo = tmp_path / "f.duckdb"
    os.mkfifo(fifo)
    line = one_line(run_cli(*args, db=fifo, timeout=20), 2)
    assert f"--db {fifo} is a FIFO" in line and stat.S_ISFIFO(os.stat(fifo).st_mode), line


@pytest.mark.parametrize("db", ["md:x", "motherduck:x", "s3://b/x", "https://h/x.duckdb", "gcs://b/x"])
def test_db_naming_a_remote_database_is_refused(tmp_path, db):
    """`--db md:x` made DuckDB try to download its MotherDuck extension, `--db s3://b/x` made a
    local folder `s3:`: the store is a local file; one line, exit 2, nothing made."""
    line = one_line(run_cli("collect", "--gateway-log", "x*.log", db=db, cwd=tmp_path), 2)
    assert "the store is a local DuckDB file, not a URL or a remote database" in line, line
    assert list(tmp_path.iterdir()) == []
    assert one_line(run_cli("sql", "SELECT 1", db=db, cwd=tmp_path), 2) == line


def _read_fifo(fifo: Path) -> tuple[threading.Thread, list[bytes]]:
    """A reader of ``fifo`` in a thread: its bytes land in the list when the writer closes."""
    got: list[bytes] = []

    def read() -> None:
        with open(fifo, "rb") as f:
            got.append(f.read())

    t = threading.Thread(target=read, daemon=True)
    t.start()
    return t, got


def test_output_on_a_fifo_or_a_device_is_written_in_place(demo, tmp_path):
    """--output on a FIFO or a device replaced it with a regular file (the temp file, then the
    rename): now either is written in place, streamed, and stays what it was."""
    import os
    import stat

    fifo = tmp_path / "report.fifo"
    os.mkfifo(fifo)
    reader, got = _read_fifo(fifo)
    r = run_cli("--quiet", "epoch", "403", "--offline", "-f", "json", "--output", str(fifo), db=demo, timeout=60)
    reader.join(30)
    assert r.returncode == 0 and not r.stderr, r.stderr
    assert json.loads(got[0])["epoch"] == 403 and stat.S_ISFIFO(os.stat(fifo).st_mode)
    dev = _device(tmp_path / "null.md")
    r = run_cli("--quiet", "epoch", "403", "--offline", "-f", "md", "--output", str(dev), db=demo)
    assert r.returncode == 0 and not r.stderr and stat.S_ISCHR(os.stat(dev).st_mode), r.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["null.md", "report.fifo"]     # no temp file left


@pytest.mark.parametrize("target", ["-", "/dev/fd/1"])
def test_output_to_stdout_is_streamed_there(demo, tmp_path, target):
    """`--output /dev/stdout` made a temp file in /dev and renamed it over /dev/stdout (as
    another user: "Permission denied"; as root the machine's /dev/stdout became a regular
    file, so this test names it /dev/fd/1, which the old code could not rename over); `-` made
    a file named `-`. Both are stdout now."""
    r = run_cli("--quiet", "epoch", "403", "--offline", "-f", "json", "--output", target, db=demo,
                cwd=tmp_path, process=True)
    assert r.returncode == 0 and not r.stderr, r.stderr
    assert json.loads(r.stdout)["epoch"] == 403 and list(tmp_path.iterdir()) == []


def test_an_output_is_never_written_over_the_store(demo, tmp_path):
    """`--output a.duckdb --db a.duckdb` overwrote the whole store with the report, exit 0.
    Now one line, exit 2, the store as it was: by the same name, another name of the same
    file (a hard link), `auditor sql`'s output, and report daily's textfile."""
    import os
    import shutil

    from conftest import q

    db = tmp_path / "a.duckdb"
    shutil.copy(demo, db)
    os.link(db, tmp_path / "same.duckdb")
    before = q(db, "SELECT count(*) FROM log_events")
    for args in (["epoch", "403", "--offline", "-f", "md", "--output", str(db)],
                 ["epoch", "403", "--offline", "-f", "json", "--output", str(tmp_path / "same.duckdb")],
                 ["sql", "SELECT 1 AS x", "-f", "csv", "--output", str(db)],
                 ["report", "daily", "--offline", "--epoch", "403", "--out", str(tmp_path / "out"),
                  "--prom-textfile", str(db)]):
        line = one_line(run_cli("--quiet", *args, db=db), 2)
        assert "is the store (--db" in line and "never written over it" in line, (args, line)
        assert q(db, "SELECT count(*) FROM log_events") == before, args      # still the store, whole
    assert q(db, "SELECT max(epoch) FROM chain_epochs")[0][0] == 403


# -- --record: never overwritten, and a folder that cannot be one is one line (issue 35 #8, #18) --
ACCOUNTING_REC = Path(__file__).resolve().parent.parent / "fixtures" / "accounting" / "v5"


def _recorded(folder: Path) -> dict[str, str]:
    return {f.name: f.read_text() for f in sorted((folder / "accounting").glob("*.json"))}


def test_a_recording_never_overwrites_a_recorded_file(tmp_path):
    """The next file's number was the count of files: after one was deleted, the next run
    overwrote the last one. Now it follows the highest number, and a name taken is skipped."""
    rec = tmp_path / "rec"
    args = ("--quiet", "collect", "--replay", str(ACCOUNTING_REC), "--record", str(rec))
    assert run_cli(*args, db=tmp_path / "a.duckdb").returncode == 0
    first = _recorded(rec)
    (rec / "accounting" / "000001.json").unlink()
    del first["000001.json"]
    assert run_cli(*args, db=tmp_path / "b.duckdb").returncode == 0
    now = _recorded(rec)
    assert {k: now[k] for k in first} == first and len(now) == len(first) + 3, sorted(now)


def test_a_recording_folder_with_a_file_named_by_another_digit_is_recorded_into(tmp_path):
    """A file whose name is a digit of another script (`².json`: str.isdigit() says yes, int()
    says no) made --record end in a traceback; only the wire's decimal names count."""
    rec = tmp_path / "rec" / "accounting"
    rec.mkdir(parents=True)
    (rec / "\u00b2.json").write_text("{}")
    r = run_cli("--quiet", "collect", "--replay", str(ACCOUNTING_REC), "--record", str(tmp_path / "rec"),
                db=tmp_path / "a.duckdb")
    assert r.returncode == 0 and "Traceback" not in r.stderr and "internal error" not in r.stderr, r.stderr
    assert (rec / "000001.json").exists()


def test_two_recordings_into_one_folder_at_once_keep_every_file(tmp_path):
    """Two runs recording into one folder at once both counted the same files and wrote the
    same names: 3 files left of 6. The loopback gateway holds each run's first answer until
    both have asked (so both start recording before either has written). Names are taken
    exclusively (a link that fails when the name exists): all 6 stay."""
    import subprocess
    import sys
    from collections import Counter
    from urllib.parse import urlsplit

    from auditor.sources.replay import _key, load_recording
    from conftest import loopback

    table, both = load_recording(ACCOUNTING_REC), threading.Barrier(2, timeout=30)

    def gateway(path: str, headers: dict[str, str]) -> tuple[int, bytes, str]:
        parts = urlsplit(path)
        if parts.path == "/api/v1/epochs":
            both.wait()
        return 200, table[_key(parts.path, parts.query, None)][0]["body"].encode(), "application/json"

    rec = tmp_path / "rec"
    with loopback(gateway) as url:
        runs = [subprocess.Popen([sys.executable, "-m", "auditor", "--quiet", "--db", str(tmp_path / f"{i}.duckdb"),
                                  "collect", "--accounting", url, "--rate", "0", "--record", str(rec)],
                                 stderr=subprocess.PIPE, text=True, cwd=tmp_path)
                for i in range(2)]
        assert [r.wait(60) for r in runs] == [0, 0], [r.stderr.read() for r in runs]
    files = _recorded(rec)
    assert len(files) == 6, sorted(files)
    assert sorted(Counter(files.values()).values()) == [2, 2, 2]      # each answer, once per run


def test_record_onto_a_file_or_a_read_only_folder_is_one_line(tmp_path, small_disk):
    """--record onto a file, or into a read-only folder, was "internal error", exit 3."""
    afile = tmp_path / "afile"
    afile.write_text("x")
    args = ("collect", "--replay", str(ACCOUNTING_REC), "--record")
    line = one_line(run_cli(*args, str(afile), db=tmp_path / "a.duckdb"), 2)
    assert f"cannot write --record {afile}/accounting: Not a directory" in line and afile.read_text() == "x", line
    disk = small_disk(64, read_only=True)
    line = one_line(run_cli(*args, str(disk), db=tmp_path / "a.duckdb"), 2)
    assert f"cannot write --record {disk}/accounting" in line and "Read-only file system" in line, line


# -- paths the tool reads: ~ and empty list entries (issue 35 #16, #31) ---------------------------
def test_a_tilde_in_auditor_db_is_the_home_folder_for_every_command(tmp_path):
    """AUDITOR_DB=~/x.duckdb: the collect wrote $HOME/x.duckdb (DuckDB expands ~ itself) and
    made an empty ./~, while `sql` and the offline commands said "no database". ~ is now
    expanded once, where every path option is read (flag, environment or auditor.toml)."""
    from conftest import FIXTURES

    home, work = tmp_path / "home", tmp_path / "work"
    home.mkdir()
    work.mkdir()
    env = {"HOME": str(home), "AUDITOR_DB": "~/x.duckdb"}
    log = str(FIXTURES / "hedging" / "small.log")
    assert run_cli("--quiet", "collect", "--gateway-log", log, env=env, cwd=work).returncode == 0
    r = run_cli("sql", "SELECT count(*) AS n FROM log_events", "-f", "csv", env=env, cwd=work)
    assert r.returncode == 0 and r.stdout.split() == ["n", "335"], r.stderr
    r = run_cli("--quiet", "hedging", "--offline", "--since", "2026-10-23T09:00:00", "--until", "2026-10-23T10:00:00",
                "-f", "json", "--output", "~/h.json", env=env, cwd=work)
    assert r.returncode == 0, r.stderr
    assert sorted(p.name for p in home.iterdir()) == ["h.json", "x.duckdb"] and list(work.iterdir()) == []


def test_an_empty_entry_in_auditor_gateway_log_is_no_path(tmp_path):
    """AUDITOR_GATEWAY_LOG=":app.log" made the empty entry "." : "MISSING ." and exit 3 on
    every run. Empty entries of a path list in the environment are dropped."""
    from conftest import FIXTURES

    log = str(FIXTURES / "hedging" / "small.log")
    for value in (f":{log}", f"{log}:", f"{log}::"):
        r = run_cli("collect", env={"AUDITOR_GATEWAY_LOG": value}, db=tmp_path / "a.duckdb")
        assert r.returncode == 0 and "MISSING" not in r.stderr, r.stderr


# -- auditor.toml: one found in the working directory reaches only its folder (issue 35 #10, #23) --
def _bundle(tmp_path: Path, text: str) -> Path:
    """A folder someone sent (an evidence bundle), holding an auditor.toml of theirs."""
    bundle = tmp_path / "bundle"
    bundle.mkdir()
    (bundle / "auditor.toml").write_text(text)
    return bundle


@pytest.mark.parametrize("text, key", [
    ('gateway_log = ["/etc/passwd"]\n', "gateway_log"),
    ('gateway_log = ["../outside/*.log"]\n', "gateway_log"),
    ('output = "../victim.txt"\n', "output"),
    ('output = "link.txt"\n', "output"),                # a link inside the folder to a file outside
    ('db = "~/x.duckdb"\n', "db"),
    ('[report.daily]\nout = "../reports"\n', "report.daily.out"),
])
def test_a_working_directory_config_reaches_only_its_own_folder(tmp_path, text, key):
    """An auditor.toml in the working directory was obeyed silently: in the probe its `output`
    overwrote a file and its `gateway_log` read /etc/passwd into the store. Its paths now resolve
    against its own folder and must stay inside it (links followed): one line, exit 2, nothing
    read or written."""
    bundle = _bundle(tmp_path, text)
    victim = tmp_path / "victim.txt"
    victim.write_text("precious\n")
    (bundle / "link.txt").symlink_to(victim)
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "a.log").write_text("x\n")
    db = tmp_path / "a.duckdb"
    for args in (["collect"], ["sql", "SELECT 1"], ["report", "daily", "--offline", "--epoch", "403"]):
        line = one_line(run_cli(*args, db=db, cwd=bundle, env={"HOME": str(tmp_path / "home")}), 2)
        assert f"{bundle / 'auditor.toml'}: {key} = " in line and f"is outside {bundle}" in line, line
    assert victim.read_text() == "precious\n" and not db.exists()


def test_a_config_is_named_on_stderr_and_keeps_its_reach_when_it_is_the_users(tmp_path):
    """Every run names the config file it applied; one found in the working directory is named
    under --quiet too (the user may not have written it), and its paths inside its folder work.
    --config and ~/.config/auditor/auditor.toml keep full reach; --no-config reads none."""
    from conftest import FIXTURES

    log = FIXTURES / "hedging" / "small.log"
    bundle = _bundle(tmp_path, 'gateway_log = ["logs/*.log"]\n')
    (bundle / "logs").mkdir()
    (bundle / "logs" / "app.log").write_bytes(log.read_bytes())
    home = tmp_path / "home"
    env = {"HOME": str(home), "XDG_CONFIG_HOME": ""}
    r = run_cli("--quiet", "collect", db=tmp_path / "a.duckdb", cwd=bundle, env=env)
    assert r.returncode == 0 and r.stderr == (
        f"auditor: config {bundle / 'auditor.toml'} (found in the working directory: its paths stay inside "
        f"{bundle}; --no-config reads none)\n"), r.stderr
    mine = tmp_path / "mine.toml"
    mine.write_text(f'gateway_log = ["{log}"]\n')
    r = run_cli("collect", "--config", str(mine), db=tmp_path / "b.duckdb", cwd=bundle, env=env)
    assert r.returncode == 0 and r.stderr.startswith(f"auditor: config {mine}\n"), r.stderr
    assert run_cli("--quiet", "collect", "--config", str(mine), db=tmp_path / "b.duckdb", env=env).stderr == ""
    (home / ".config" / "auditor").mkdir(parents=True)
    (home / ".config" / "auditor" / "auditor.toml").write_text(f'gateway_log = ["{log}"]\n')
    r = run_cli("collect", db=tmp_path / "c.duckdb", cwd=tmp_path, env=env)
    assert r.returncode == 0 and r.stderr.startswith(f"auditor: config {home}/.config/auditor/auditor.toml\n")
    r = run_cli("collect", "--no-config", db=tmp_path / "d.duckdb", cwd=bundle, env=env)
    assert r.returncode == 2 and "nothing to collect" in r.stderr and "config" not in r.stderr, r.stderr
    line = one_line(run_cli("--no-config", "--config", str(mine), "collect", db=tmp_path / "d.duckdb", env=env), 2)
    assert "--config and --no-config" in line, line


def test_an_unreadable_config_folder_is_one_line_not_an_internal_error(tmp_path):
    """An unreadable ~/.config gave "internal error: PermissionError" on every command. Now one
    line says the file could not be looked for, and the command runs. (Root reads any folder:
    the run drops the capabilities that let it.)"""
    import os
    import shutil
    import subprocess
    import sys

    from conftest import FIXTURES

    if os.geteuid() != 0 or shutil.which("setpriv") is None:
        pytest.skip("needs root and setpriv to make a folder unreadable to the run")
    home = tmp_path / "home"
    (home / ".config").mkdir(parents=True)
    (home / ".config").chmod(0)
    caps = "-dac_override,-dac_read_search"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AUDITOR_", "XDG_"))} | {"HOME": str(home)}
    try:
        r = subprocess.run(["setpriv", f"--inh-caps={caps}", f"--bounding-set={caps}", sys.executable, "-m", "auditor",
                            "--quiet", "--db", str(tmp_path / "a.duckdb"), "collect", "--gateway-log",
                            str(FIXTURES / "hedging" / "small.log")], env=env, cwd=tmp_path, capture_output=True,
                           text=True, timeout=60)
    finally:
        (home / ".config").chmod(0o755)
    assert r.returncode == 0, r.stderr
    assert r.stderr == (f"auditor: cannot look for {home}/.config/auditor/auditor.toml: Permission denied; "
                        "no config read from there (--no-config skips the look)\n"), r.stderr
