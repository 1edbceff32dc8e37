"""Line tables (queries/lines/, issue 21): each kind of gateway log line the analyses read,
typed once and kept in the store, always the same rows as its definition applied to
log_events, however the lines arrived: in one collect or several, from a store an older
auditor made, after a collect stopped before the tables were brought up to date, or after
a definition changed."""

from __future__ import annotations

import shutil
from pathlib import Path

import duckdb
import pytest

from conftest import FIXTURES, run_cli

LOGS = FIXTURES / "gateway-logs"
H = FIXTURES / "hedging"
# every format the gateway writes, the escapes, and the incident log that has every line kind
EVERY_FORMAT = [LOGS / f for f in ("section12.log", "section12-bare.log", "section12-docker.log",
                                   "section12-dockerjson.log", "section12-slog-json.log",
                                   "section12-slog-text.log", "section12-7.log", "escapes.log")]
# today's gateway (issue 34): the line shapes of the escrow holds, funding refusals, retention
OCTOBER = FIXTURES / "october" / "gateway.log"


def _collect(db: Path, *paths: Path) -> None:
    args = [a for p in paths for a in ("--gateway-log", str(p))]
    r = run_cli("collect", *args, db=db)
    assert r.returncode == 0, r.stderr


def _tables(db: Path) -> dict[str, list[tuple]]:
    """Every line table's rows, sorted (a table's row order is not part of it)."""
    from auditor.store import line_tables

    with duckdb.connect(str(db), read_only=True) as con:
        return {name: sorted(con.execute(f"SELECT * FROM {name}").fetchall(), key=repr) for name in line_tables()}


def _from_definitions(db: Path) -> dict[str, list[tuple]]:
    """What each definition gives over the whole of log_events, worked out now."""
    from auditor.store import line_tables

    with duckdb.connect(str(db), read_only=True) as con:
        con.execute("SET TimeZone = 'UTC'")
        return {name: sorted(con.execute(sql).fetchall(), key=repr) for name, sql in line_tables().items()}


@pytest.fixture(scope="module")
def whole(tmp_path_factory) -> Path:
    db = tmp_path_factory.mktemp("lines") / "whole.duckdb"
    _collect(db, *EVERY_FORMAT, H / "incident.log", OCTOBER)
    return db


def test_every_line_table_is_its_definition_over_log_events(whole):
    got, want = _tables(whole), _from_definitions(whole)
    assert got == want
    # and the fixtures give each kind something to hold, so that the comparison means something
    assert [name for name, rows in got.items() if not rows] == []


def test_lines_collected_in_two_runs_equal_one_run(whole, tmp_path):
    db = tmp_path / "two.duckdb"
    _collect(db, *EVERY_FORMAT[:4])
    _collect(db, *EVERY_FORMAT[4:], H / "incident.log", OCTOBER)
    assert _tables(db) == _tables(whole)


def test_a_store_behind_catches_up_when_opened(whole, tmp_path):
    """A collect stopped after its last commit and before the line tables were brought up to
    date (or a store from before a table existed): the next command that opens the store reads
    the lines the tables lack, once."""
    from auditor.store import Store, line_tables

    db = tmp_path / "behind.duckdb"
    shutil.copy(whole, db)
    with duckdb.connect(str(db)) as con:
        for name in line_tables():
            con.execute(f"DELETE FROM {name}")
        con.execute("UPDATE lines_state SET rows_read = 0")
    with Store(db) as st:
        assert st.keep_lines() == 0            # opening it did the work already
        assert all(st.executed[f"lines:{name}"] == 1 for name in line_tables())
    assert _tables(db) == _tables(whole)


def test_a_changed_definition_is_made_again(whole, tmp_path):
    from auditor.store import Store

    db = tmp_path / "changed.duckdb"
    shutil.copy(whole, db)
    with duckdb.connect(str(db)) as con:
        con.execute("UPDATE lines_state SET digest = 'an older definition' WHERE name = 'log_race_lines'")
        con.execute("DELETE FROM log_race_lines WHERE probe")      # the older table's rows differ
    with Store(db) as st:
        assert st.executed["lines:log_race_lines"] == 1
        assert sum(v for k, v in st.executed.items() if k.startswith("lines:")) == 1
    assert _tables(db) == _tables(whole)


def test_the_views_read_no_fields(whole):
    """No view over the logs parses log_events' JSON fields: they read the line tables."""
    from auditor.store import queries_dir

    readers = [f.name for f in (queries_dir() / "views").glob("*.sql")
               if "fields" in "\n".join(line.split("--")[0] for line in f.read_text().splitlines())]
    assert readers == []



def test_lines_left_behind_by_a_stopped_collect_are_read_when_the_store_opens(whole, tmp_path, monkeypatch):
    """A collect that stops after storing log lines and before the line tables read them
    (Ctrl-C, a crash): the next opening of the store reads those lines from log_events."""
    import auditor.store

    monkeypatch.setattr(auditor.store.Store, "keep_lines", lambda self: 0)
    db = tmp_path / "stopped.duckdb"
    _collect(db, *EVERY_FORMAT, H / "incident.log", OCTOBER)
    with duckdb.connect(str(db), read_only=True) as con:
        assert con.execute("SELECT max(rows_read) FROM lines_state").fetchone()[0] == 0   # nothing was read
    monkeypatch.undo()
    with auditor.store.Store(db):
        pass
    assert _tables(db) == _tables(whole)


def test_the_stores_own_long_work_is_said_once(tmp_path):
    """What the store works out by itself says so on stderr (log lines off a terminal) when it
    does it, and only then: an older store's line tables catching up when it is opened, and
    the kept tables of the first analysis after a collect. A busy day's are seconds of work."""
    from auditor.store import line_tables

    rng = ["--since", "2026-10-23T11:00:00", "--until", "2026-10-23T13:00:00"]
    db = tmp_path / "a.duckdb"
    _collect(db, H / "incident.log")
    with duckdb.connect(str(db)) as con:
        lines = con.execute("SELECT count(*) FROM log_events").fetchone()[0]
        for name in line_tables():
            con.execute(f"DELETE FROM {name}")
        con.execute("UPDATE lines_state SET rows_read = 0")
    first = run_cli("hedging", "--offline", *rng, "--format", "json", db=db)
    assert first.returncode == 0, first.stderr
    # in the user's words, no table names (issue 33)
    assert f"indexing {lines:,} stored log lines: done" in first.stderr
    assert "working out the logs' requests and attempts (kept until more log is collected): done" in first.stderr
    again = run_cli("hedging", "--offline", *rng, "--format", "json", db=db)
    assert again.returncode == 0 and again.stdout == first.stdout
    assert "indexing" not in again.stderr and "working out" not in again.stderr


def test_a_step_within_a_bar_is_said_in_log_lines():
    """On a terminal one bar shows at a time (rich allows one live display): the store's own
    step inside a command's bar (a kept table worked out while the report's bar shows) is
    said in log lines, not refused."""
    import io

    from rich.console import Console

    from auditor.progress import Progress

    p = Progress(interactive=True)
    out = io.StringIO()
    p._console = Console(file=out, force_terminal=True, width=120)
    with p.task("epoch 403: analyses", 3) as advance:
        with p.task("working out attempts", None):
            pass
        advance(1)
    with p.task("after", None):        # the bar is free again
        pass
    text = out.getvalue()
    assert "working out attempts ..." in text and "working out attempts: done" in text
    # the bars themselves are each one live line, gone when done (issue 33): no "done" line
    assert "epoch 403: analyses: done" not in text and "after: done" not in text
