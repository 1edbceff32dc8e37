"""`auditor sql` read-only and bounded (issue 35: 11, 12, 13, 22, 27), through the CLI on real
DuckDB files: the query reads and writes no file but the store unless --allow-files, and
cannot change a setting; rows are written as they are fetched, in bounded memory, in every
format; columns of one name stay apart; JSON never holds NaN; an older auditor's store is
brought up to date first."""

from __future__ import annotations

import json

import duckdb
import pytest

from auditor.store import Store
from conftest import FIXTURES, q, run_cli
from test_http_hostile import assert_rss_within, run_measured


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    db = tmp_path_factory.mktemp("sql") / "a.duckdb"
    assert run_cli("collect", "--gateway-log", str(FIXTURES / "hedging" / "small.log"), db=db).returncode == 0
    return db


def one_line(r, code: int) -> str:
    lines = r.stderr.strip().splitlines()
    assert r.returncode == code and len(lines) == 1 and "Traceback" not in r.stderr, (r.returncode, r.stderr)
    return lines[0]


def strict_json(text: str):
    def refuse(word):
        raise AssertionError(f"{word} is not JSON")

    return json.loads(text, parse_constant=refuse)


# -- 22: read-only, no files, settings locked ------------------------------------------------------
@pytest.mark.parametrize("query, says", [
    ("COPY (SELECT 42 AS answer) TO '{out}'", "file system operations are disabled"),
    ("COPY log_files TO '{out}' (FORMAT csv)", "file system operations are disabled"),
    ("SELECT * FROM read_text('/etc/hostname')", "file system operations are disabled"),
    ("SELECT * FROM read_csv('/etc/passwd')", "file system operations are disabled"),
    ("SELECT * FROM glob('/etc/*')", "file system operations are disabled"),
    ("ATTACH '{out}' AS other", "file system operations are disabled"),
    ("EXPORT DATABASE '{out}'", "file system operations are disabled"),
    ("SET enable_external_access = true; COPY (SELECT 1) TO '{out}'", "the configuration has been locked"),
    ("RESET enable_external_access", "the configuration has been locked"),
    ("SET memory_limit = '-1GB'", "the configuration has been locked"),
    ("CREATE TABLE t AS SELECT 1", "read-only"),
    ("DELETE FROM log_files", "read-only"),
])
def test_the_query_writes_and_reads_no_file_and_changes_no_setting(store, tmp_path, query, says):
    """COPY ... TO wrote files and read_text() read any file, and nothing said so. Now DuckDB's
    external access is off and the configuration locked, so the query's own SET cannot undo it:
    one line, exit 2, no file made; the store unchanged."""
    out = tmp_path / "x.csv"
    line = one_line(run_cli("sql", query.format(out=out), db=store), 2)
    assert line.startswith("auditor: error: query failed:") and says in line, line
    assert not out.exists()
    assert q(store, "SELECT count(*) FROM log_files") == [(1,)]


def test_allow_files_lets_the_query_use_files_and_the_store_stays_read_only(store, tmp_path):
    out, src = tmp_path / "x.csv", tmp_path / "in.txt"
    src.write_text("hello")
    r = run_cli("sql", f"COPY (SELECT 42 AS answer) TO '{out}'", "--allow-files", db=store)
    assert r.returncode == 0, r.stderr
    assert out.read_text() == "answer\n42\n"
    r = run_cli("sql", f"SELECT content FROM read_text('{src}')", "--allow-files", "--format", "csv", db=store)
    assert r.returncode == 0 and r.stdout == "content\nhello\n", r.stderr
    assert "read-only" in one_line(run_cli("sql", "CREATE TABLE t AS SELECT 1", "--allow-files", db=store), 2)
    assert "locked" in one_line(run_cli("sql", "SET threads = 1", "--allow-files", db=store), 2)


# -- 11: rows streamed, memory bounded -----------------------------------------------------------
ROWS = 400_000
BIG = f"SELECT i, i::VARCHAR || 'abcdefghijabcdefghij' AS s, i / 7 AS r FROM range({ROWS}) t(i)"


@pytest.mark.parametrize("fmt", ["json", "csv", "table", "md", "html"])
def test_a_large_result_is_written_in_bounded_memory(store, tmp_path, fmt, capsys):
    """3 M rows reached 1.77 GB (every row a Python dict before the first was written; DuckDB's
    memory_limit does not bound them). Now rows are fetched 10,000 at a time: json and csv
    write every row as it comes, table, md and html show the first 10,000 and count all."""
    out = tmp_path / f"out.{fmt}"
    baseline = run_measured("sql", "SELECT 1 AS i", "--format", fmt, "--output", str(out), db=store,
                            tmp_path=tmp_path)[1]
    r, rss = run_measured("sql", BIG, "--format", fmt, "--output", str(out), db=store, tmp_path=tmp_path,
                          timeout=300)
    assert r.returncode == 0, r.stderr
    text = out.read_text()
    if fmt == "json":
        rows = strict_json(text)["rows"]
        assert len(rows) == ROWS and rows[-1] == {"i": ROWS - 1, "s": f"{ROWS - 1}abcdefghijabcdefghij",
                                                   "r": (ROWS - 1) / 7}
    elif fmt == "csv":
        lines = text.splitlines()
        assert len(lines) == ROWS + 1 and lines[-1].startswith(f"{ROWS - 1},{ROWS - 1}abcdefghij")
    else:
        assert f"{ROWS:,} rows" in text.replace("\\", "") and "10,000" in text
    assert_rss_within(rss, baseline, 1.6, f"sql --format {fmt} of {ROWS:,} rows", capsys)


def test_json_of_a_short_and_a_long_result_is_as_before(store):
    """Fetched in chunks, the JSON is the text it was: a short list indented, a long one an
    item a line."""
    from auditor.report.view import to_json
    from auditor.result import SCHEMA_VERSION

    for n in (0, 3, 100, 101, 25_001):
        r = run_cli("sql", f"SELECT i, (i * 0.5)::DOUBLE AS half FROM range({n}) t(i)", "--format", "json", db=store)
        assert r.returncode == 0, r.stderr
        rows = [{"i": i, "half": i * 0.5} for i in range(n)]
        assert r.stdout == to_json({"schema_version": SCHEMA_VERSION, "columns": ["i", "half"], "rows": rows}) + "\n"


def test_an_error_found_while_fetching_is_one_line(store):
    r = run_cli("sql", "SELECT CASE WHEN i < 50000 THEN i::VARCHAR ELSE 'x' END::INT AS n FROM range(60000) t(i)",
                "--format", "csv", db=store)
    assert "query failed: Conversion Error" in one_line(r, 2)


# -- 12: columns of one name ----------------------------------------------------------------------
def test_columns_of_one_name_are_kept_apart(store):
    """SELECT 1 AS x, 2 AS x printed 2,2: the rows were dicts keyed by name. Now a repeated name
    gets _1, _2 (past a name the query uses), as DuckDB names a subquery's columns."""
    query = "SELECT 1 AS x, 2 AS x, 3 AS x_1, 4 AS x"
    r = run_cli("sql", query, "--format", "csv", db=store)
    assert r.returncode == 0 and r.stdout == "x,x_2,x_1,x_3\n1,2,3,4\n", r.stdout
    r = run_cli("sql", query, "--format", "json", db=store)
    assert strict_json(r.stdout) == {"schema_version": 1, "columns": ["x", "x_2", "x_1", "x_3"],
                                     "rows": [{"x": 1, "x_2": 2, "x_1": 3, "x_3": 4}]}
    r = run_cli("sql", query, db=store)         # one row: key: value lines (issue 33)
    assert r.returncode == 0 and r.stdout.splitlines()[-4:] == ["  x: 1", "  x_2: 2", "  x_1: 3", "  x_3: 4"], r.stdout


# -- 13: JSON never holds NaN ---------------------------------------------------------------------
@pytest.mark.parametrize("n", [1, 150])
def test_json_holds_no_nan(store, n):
    """A DOUBLE NaN or infinity went out as NaN / Infinity, which is not JSON: now null, and the
    strings "Infinity" and "-Infinity"; in a short list and in a long one."""
    r = run_cli("sql", "SELECT 'nan'::DOUBLE AS a, 'inf'::DOUBLE AS b, -'inf'::DOUBLE AS c, 1.5::DOUBLE AS d "
                       f"FROM range({n})", "--format", "json", db=store)
    assert r.returncode == 0, r.stderr
    assert strict_json(r.stdout)["rows"] == [{"a": None, "b": "Infinity", "c": "-Infinity", "d": 1.5}] * n


# -- 27: an older auditor's store -----------------------------------------------------------------
def _older(db) -> None:
    """The store as an auditor before migration 012 (watch_readings) and with older views left it."""
    with duckdb.connect(str(db)) as con:
        con.execute("DROP TABLE watch_readings")
        con.execute("DELETE FROM schema_migrations WHERE version = 12")
        con.execute("UPDATE schema_views SET digest = 'an older auditor'")


def test_an_older_store_is_brought_up_to_date_first(tmp_path):
    """sql on a store from an older auditor said "Table ... does not exist" and no more. Now it
    is brought up to date first, as any command that writes does, and stderr says so."""
    db = tmp_path / "a.duckdb"
    Store(db).close()
    _older(db)
    r = run_cli("sql", "SELECT count(*) AS n FROM watch_readings", "--format", "csv", db=db)
    assert r.returncode == 0 and r.stdout == "n\n0\n", r.stderr
    assert "an older auditor's store (schema migrations not applied: 012_watch_readings; views of an older auditor)" in r.stderr
    assert "brought up to date first" in r.stderr and r.stderr.count("\n") == 1
    r = run_cli("sql", "SELECT 1 AS one", "--format", "csv", db=db)
    assert r.returncode == 0 and r.stderr == "", r.stderr           # up to date now: nothing said
    assert q(db, "SELECT count(*) FROM schema_migrations WHERE version = 12") == [(1,)]


def test_a_duckdb_file_no_auditor_made_is_queried_as_it_is(tmp_path):
    db = tmp_path / "other.duckdb"
    with duckdb.connect(str(db)) as con:
        con.execute("CREATE TABLE mine AS SELECT 7 AS n")
    r = run_cli("sql", "SELECT n FROM mine", "--format", "csv", db=db)
    assert r.returncode == 0 and r.stdout == "n\n7\n" and r.stderr == "", r.stderr
    assert q(db, "SELECT table_name FROM duckdb_tables()") == [("mine",)]


@pytest.mark.parametrize("query", ["", "   ", ";", " ; ;"])
def test_an_empty_query_is_a_usage_error(store, query):
    """It was `auditor: internal error: AttributeError: 'NoneType' object has no attribute
    'description'`, exit 3."""
    line = one_line(run_cli("sql", query, db=store), 2)
    assert line == 'auditor: error: the query is empty: give one SQL statement, e.g. "SELECT * FROM coverage"'


def test_several_statements_say_whose_rows_are_shown(store):
    r = run_cli("sql", "SELECT 1 AS a; SELECT 2 AS b", "--format", "md", db=store)
    assert r.returncode == 0, r.stderr
    assert "| b |" in r.stdout and "| a |" not in r.stdout
    assert "2 statements were run: the rows are the last one's" in r.stdout


def test_a_small_number_is_never_shown_as_zero(store):
    """Four decimals showed 0.000012345 as 0 and -0.00001 as -0 in md, table and html."""
    query = "SELECT 0.000012345::DOUBLE AS e, -0.00001::DOUBLE AS m, -0.0::DOUBLE AS z, 2.5::DOUBLE AS h"
    md = run_cli("sql", query, "--format", "md", db=store).stdout
    assert "| 1.234e-05 | -1e-05 | 0 | 2.5 |" in md, md
    html = run_cli("sql", query, "--format", "html", db=store).stdout
    assert ">1.234e-05</td>" in html and ">-1e-05</td>" in html
    assert json.loads(run_cli("sql", query, "--format", "json", db=store).stdout)["rows"][0]["e"] == 0.000012345


def test_ctrl_c_stops_a_long_query_at_once(store):
    """A query of hours (10^12 rows) stops within seconds of Ctrl-C: exit 130, one line. Python
    sees SIGINT only back in Python code, and DuckDB's query ran to its end first (a 24 s
    query was interrupted after 20 s); now a watcher interrupts the connection."""
    import os
    import signal
    import subprocess
    import sys
    import time

    from conftest import ctrl_c_able

    query = "SELECT sum(a.range * b.range) FROM range(1000000) a, range(1000000) b"
    p = subprocess.Popen([sys.executable, "-m", "auditor", "--db", str(store), "sql", query],
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, preexec_fn=ctrl_c_able)
    def cpu_seconds() -> float:         # the child's, from /proc: its start-up takes well under 1 s
        fields = open(f"/proc/{p.pid}/stat").read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    try:
        deadline = time.monotonic() + 60
        while cpu_seconds() < 2.0 and time.monotonic() < deadline:      # deep in the query, however slow the machine
            time.sleep(0.05)
        assert p.poll() is None
        sent = time.monotonic()
        p.send_signal(signal.SIGINT)
        err = p.communicate(timeout=60)[1]
        took = time.monotonic() - sent
    finally:
        p.kill()
    assert p.returncode == 130, err
    assert err.strip().splitlines() == ["auditor: interrupted"], err
    assert took < 10, took
