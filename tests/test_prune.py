"""The store's retention rule (issue 37, "the store does not grow without end"): `auditor prune
--keep-epochs N` and `report daily`'s retain_epochs drop the gateway log lines timed before the
oldest of the newest N stored epochs, from every table that holds lines, and keep the rest:
every epoch's chain and accounting, the log files' read positions, the lines without a time.
The analyses of the kept epochs answer as before, from kept tables worked out again; a log
collected again adds nothing; the store keeps working as log arrives (its line tables and kept
tables follow the new lines); a prune that fails midway changes nothing.

The stores hold epoch 403 of the bundled chain recording and its copies 404..406 (as
benchmarks/bench_day.py makes them), and a synthetic day of log in each epoch (day_log.py)."""

from __future__ import annotations

import json
import re
import shutil
import sys
from datetime import datetime, timedelta, timezone
from pathlib import Path

import duckdb
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from conftest import FIXTURES, ROOT, one, q, run_cli
from test_line_tables import _from_definitions, _tables
from test_reports import REC

sys.path.insert(0, str(ROOT))       # benchmarks/
from benchmarks import bench_day, day_log  # noqa: E402

EPOCHS = (403, 406)
ACCOUNTING = FIXTURES / "accounting" / "v5"
BARE = FIXTURES / "gateway-logs" / "section12-bare.log"      # lines without a time
KEPT = ("attempts", "hedge_attempts", "hedge_priors", "hedge_races", "log_ghosts", "log_host_lines",
        "log_participants", "log_requests")
# what an epoch's report says of the whole store rather than of the epoch (so a prune of other
# epochs' lines changes it, as collecting other epochs' lines does): the gateway log's files and
# span (coverage), the span of every race line (hedging's note), the escrows of any epoch without
# a known creation epoch (a remints note), the slot lists of every escrow the store knows and the
# span of every log line (poc-overload)
STORE_WIDE_KEYS = {"gateway_log": "coverage", "slot_lists_known": "structural_risk", "log_span": "attribution"}
STORE_WIDE_NOTES = (re.compile(r"^the race_completed lines read span "), re.compile(r"^\d+ escrow\(s\) with no known creation epoch"))


@pytest.fixture(scope="module")
def logs(tmp_path_factory) -> list[Path]:
    """A day of log in each of epochs 403..406, and one more in 407 (collected later)."""
    d = tmp_path_factory.mktemp("days")
    out = []
    for k in range(EPOCHS[1] - EPOCHS[0] + 2):
        day_log.write(d / f"day{k}.log", 1_200_000, shift=k)
        out.append(d / f"day{k}.log")
    return out


@pytest.fixture(scope="module")
def chain(tmp_path_factory) -> Path:
    """The chain and accounting of epochs 403..406, no log."""
    db = tmp_path_factory.mktemp("chain") / "chain.duckdb"
    r = run_cli("collect", "--epoch", "403", "--replay", str(REC), "--replay", str(ACCOUNTING), db=db)
    assert r.returncode == 0, r.stderr
    bench_day.clone_epochs(db, EPOCHS[1])
    return db


@pytest.fixture(scope="module")
def multi(chain, logs, tmp_path_factory) -> Path:
    """Four epochs, a day of log in each, and lines without a time."""
    db = tmp_path_factory.mktemp("multi") / "multi.duckdb"
    shutil.copy(chain, db)
    _collect(db, *logs[:4], BARE)
    return db


def _collect(db: Path, *paths: Path) -> str:
    r = run_cli("collect", *[a for p in paths for a in ("--gateway-log", str(p))], db=db)
    assert r.returncode == 0, r.stderr
    return r.stderr


def _copy(src: Path, tmp_path: Path) -> Path:
    db = tmp_path / "store.duckdb"
    shutil.copy(src, db)
    return db


def _start(db: Path, epoch: int) -> datetime:
    return one(db, "SELECT start_time FROM chain_windows WHERE epoch = ? AND \"window\" = 'epoch'", [epoch])


def _line_tables() -> list[str]:
    from auditor.store import line_tables

    return ["log_events", *line_tables()]


def _contents(db: Path, tables=None) -> dict[str, tuple]:
    """Each table's row count and an order-free digest of its rows."""
    with duckdb.connect(str(db), read_only=True) as con:
        names = tables or [t for (t,) in con.execute(
            "SELECT table_name FROM duckdb_tables() WHERE schema_name = 'main' ORDER BY 1").fetchall()]
        return {t: con.execute(f"SELECT count(*), sum(hash(x)::HUGEINT) FROM main.{t} x").fetchone() for t in names}


def _epoch_json(db: Path, epoch: int) -> dict:
    r = run_cli("epoch", str(epoch), "--offline", "--format", "json", db=db)
    assert r.returncode in (0, 1, 3), r.stderr
    return json.loads(r.stdout)


def _of_the_epoch(v):
    """An epoch's report less what it says of the whole store (STORE_WIDE_*)."""
    if isinstance(v, dict):
        return {k: _of_the_epoch(x) for k, x in v.items() if k not in STORE_WIDE_KEYS}
    if isinstance(v, list):
        return [_of_the_epoch(x) for x in v if not (isinstance(x, str) and any(p.match(x) for p in STORE_WIDE_NOTES))]
    return v


def _kept_against_views(db: Path) -> None:
    """Every kept table that exists holds what its view gives over the store now."""
    with duckdb.connect(str(db), read_only=True) as con:
        con.execute("SET TimeZone = 'UTC'")
        built = {n for (n,) in con.execute("SELECT name FROM derived_state").fetchall()}
        assert built == set(KEPT)
        for v in KEPT:
            kept = sorted(con.execute(f"SELECT * FROM main.derived_{v}").fetchall(), key=repr)
            assert kept == sorted(con.execute(f"SELECT * FROM main.{v}").fetchall(), key=repr), v


# -- what goes, what stays ---------------------------------------------------------------------
def test_prune_drops_the_lines_before_the_oldest_kept_epoch_and_keeps_everything_else(multi, tmp_path):
    db = _copy(multi, tmp_path)
    cutoff = _start(db, 405)
    tables = _line_tables()
    before = _contents(db)
    old = {t: one(db, f"SELECT count(*) FROM {t} WHERE ts < ?", [cutoff]) for t in tables}
    untimed = one(db, "SELECT count(*) FROM log_events WHERE ts IS NULL")
    assert old["log_events"] > 10_000 and untimed > 50 and one(db, "SELECT count(*) FROM chain_epochs") == 4
    with duckdb.connect(str(db), read_only=True) as con:
        newer = sorted(con.execute("SELECT * FROM log_events WHERE ts >= ? OR ts IS NULL", [cutoff]).fetchall(),
                       key=repr)

    r = run_cli("prune", "--keep-epochs", "2", db=db)
    assert r.returncode == 0, r.stderr
    assert r.stdout == ""
    assert f"prune: kept epochs 405..406 (2 of 4 stored): the gateway log from 2026-09-24T20:20:45.372913Z on" in r.stderr
    assert f"prune: dropped {old['log_events']:,} log lines timed 2026-09-22T" in r.stderr
    assert f"prune: kept {untimed:,} log lines without a time (unknown is not old)" in r.stderr

    # no line before the cutoff is left in any table that holds lines; every later line stays
    assert {t: one(db, f"SELECT count(*) FROM {t} WHERE ts < ?", [cutoff]) for t in tables} == dict.fromkeys(tables, 0)
    after = _contents(db)
    for t in tables:
        assert after[t][0] == before[t][0] - old[t], t
    with duckdb.connect(str(db), read_only=True) as con:
        assert sorted(con.execute("SELECT * FROM log_events").fetchall(), key=repr) == newer
    assert _tables(db) == _from_definitions(db)         # each line table is its definition over what is left
    # the chain, the accounting, the files' read positions, coverage, rejects: as they were
    bookkeeping = {"lines_state", "derived_state"}
    same = [t for t in before if t not in tables and t not in bookkeeping and not t.startswith("derived_")]
    assert {"chain_epochs", "chain_block_times", "acct_counters", "log_files", "coverage", "log_rejects"} <= set(same)
    assert {t: after[t] for t in same} == {t: before[t] for t in same}


def test_a_store_of_no_more_epochs_than_kept_is_left_as_it_was(multi, tmp_path):
    db = _copy(multi, tmp_path)
    before = _contents(db)
    r = run_cli("prune", "--keep-epochs", "4", db=db)
    assert r.returncode == 0, r.stderr
    assert r.stderr.strip() == ("prune: kept every epoch: the store holds 4 (403..406), not more than --keep-epochs 4; "
                                "nothing dropped")
    assert _contents(db) == before


# -- the kept epochs' analyses -----------------------------------------------------------------
def test_the_kept_epochs_analyses_answer_as_before_from_kept_tables_worked_out_again(multi, tmp_path):
    db = _copy(multi, tmp_path)
    before = {e: _epoch_json(db, e) for e in (405, 406)}
    assert one(db, "SELECT count(*) FROM derived_state") == len(KEPT)      # the analyses kept their tables
    size = db.stat().st_size

    r = run_cli("prune", "--keep-epochs", "2", db=db)
    assert r.returncode == 0, r.stderr
    assert "prune: the kept tables attempts, hedge_attempts" in r.stderr
    # the sizes it says are the file's (no .wal beside it), before and after
    assert not db.with_name(db.name + ".wal").exists()
    assert (f"prune: the store file: {size / 1e6:,.1f} MB before, {db.stat().st_size / 1e6:,.1f} MB after "
            "(the space freed is reused") in r.stderr
    # forgotten: none of them is left with rows of the lines dropped
    assert one(db, "SELECT count(*) FROM derived_state") == 0
    assert q(db, "SELECT table_name FROM duckdb_tables() WHERE table_name LIKE 'derived\\_%' ESCAPE '\\' "
                 "AND table_name <> 'derived_state'") == []

    after = {e: _epoch_json(db, e) for e in (405, 406)}
    for e in (405, 406):
        assert _of_the_epoch(after[e]) == _of_the_epoch(before[e]), e
    assert after[406]["poc_overload"]["windows"]            # the comparison has something in it
    _kept_against_views(db)
    # coverage counts the events the store holds now (it counted the dropped ones too)
    loaded = after[406]["coverage"]["gateway_log"]["loaded"]
    assert loaded["events"] == one(db, "SELECT count(*) FROM log_events") < before[406]["coverage"]["gateway_log"][
        "loaded"]["events"]


def test_collecting_after_a_prune_reads_no_dropped_line_back_and_follows_new_lines(multi, logs, tmp_path):
    """The log files' read positions stay: the same files collected again add nothing. A new
    day's log is then read into the line tables and refreshed into the kept tables (whose
    bookkeeping counts log_events' rows)."""
    db = _copy(multi, tmp_path)
    assert run_cli("prune", "--keep-epochs", "2", db=db).returncode == 0
    _epoch_json(db, 406)                                    # the kept tables worked out again
    lines = one(db, "SELECT count(*) FROM log_events")

    err = _collect(db, *logs[:4], BARE)
    assert "gateway_log: loaded log_events 0\n" in err
    assert one(db, "SELECT count(*) FROM log_events") == lines
    assert one(db, "SELECT count(*) FROM log_events WHERE ts < ?", [_start(db, 405)]) == 0

    _collect(db, logs[4])                                   # the next day
    assert one(db, "SELECT count(*) FROM log_events") > lines
    assert _tables(db) == _from_definitions(db)
    _epoch_json(db, 406)                                    # brings the kept tables up to date
    _kept_against_views(db)


# -- refusals ----------------------------------------------------------------------------------
@pytest.mark.parametrize("value", ["0", "-1", "two"])
def test_keep_epochs_below_one_is_a_usage_error(multi, tmp_path, value):
    db = _copy(multi, tmp_path)
    before = _contents(db)
    r = run_cli("prune", "--keep-epochs", value, db=db)
    assert r.returncode == 2
    assert r.stderr.startswith("auditor: error: Invalid value for '--keep-epochs'") and r.stderr.count("\n") == 1
    assert _contents(db) == before


def test_prune_refuses_a_store_that_cannot_tell_epochs_apart(logs, tmp_path):
    """A store of logs without chain epochs, an empty store, no store: one line, exit 3."""
    db = tmp_path / "logs.duckdb"
    _collect(db, logs[0])
    lines = one(db, "SELECT count(*) FROM log_events")
    r = run_cli("prune", "--keep-epochs", "1", db=db)
    assert (r.returncode, r.stdout) == (3, "")
    assert r.stderr == ("auditor: error: the store holds no chain epoch, so prune cannot tell the epochs apart: "
                        "nothing dropped; collect the chain first (auditor collect --epoch N --node URL)\n")
    assert one(db, "SELECT count(*) FROM log_events") == lines

    from auditor.store import Store

    empty = tmp_path / "empty.duckdb"
    Store(empty).close()
    r = run_cli("prune", "--keep-epochs", "1", db=empty)
    assert r.returncode == 3 and "holds no chain epoch" in r.stderr and r.stderr.count("\n") == 1

    r = run_cli("prune", "--keep-epochs", "1", db=tmp_path / "none.duckdb")
    assert (r.returncode, r.stderr) == (3, f"auditor: error: no database at {tmp_path / 'none.duckdb'}; "
                                           "nothing to prune\n")
    assert not (tmp_path / "none.duckdb").exists()


def test_an_oldest_kept_epoch_without_a_start_time_is_refused(multi, tmp_path):
    db = _copy(multi, tmp_path)
    with duckdb.connect(str(db)) as con:
        con.execute("DELETE FROM chain_block_times WHERE height = "
                    "(SELECT effective_height FROM chain_epochs WHERE epoch = 405)")
    before = _contents(db)
    r = run_cli("prune", "--keep-epochs", "2", db=db)
    assert r.returncode == 3
    assert re.fullmatch(r"auditor: error: the start of epoch 405 \(the time of block \d+\) is not stored, so prune "
                        r"cannot tell which log lines are older: nothing dropped; collect it \(auditor collect "
                        r"--epoch 405 --node URL\)\n", r.stderr)
    assert _contents(db) == before


def test_prune_takes_the_stores_write_lock(multi, tmp_path):
    """A store another process writes to (here: this one, holding it open) is not pruned."""
    db = _copy(multi, tmp_path)
    before = _contents(db)
    holder = duckdb.connect(str(db))
    try:
        r = run_cli("prune", "--keep-epochs", "1", db=db, process=True)
    finally:
        holder.close()
    assert r.returncode == 3 and r.stderr.count("\n") == 1, r.stderr
    assert r.stderr.startswith("auditor: error: the database") and "locked by another process" in r.stderr
    assert _contents(db) == before


@pytest.mark.parametrize("stop", [KeyboardInterrupt, RuntimeError])
def test_a_prune_stopped_midway_leaves_the_store_as_it_was(multi, tmp_path, monkeypatch, stop):
    """Ctrl-C or a failure after the lines were deleted and the kept tables dropped, while
    log_events is written again: the one transaction rolls back, and the store answers as before."""
    from auditor.store import Store

    db = _copy(multi, tmp_path)
    _epoch_json(db, 406)                                    # kept tables to lose
    before = _contents(db)
    real = Store.lines_deleted

    def stopped(self):
        real(self)
        assert self.con.execute("SELECT count(*) FROM derived_state").fetchone()[0] == 0     # midway indeed
        raise stop("stopped")

    monkeypatch.setattr(Store, "lines_deleted", stopped)
    r = run_cli("prune", "--keep-epochs", "2", db=db)
    assert r.returncode == (130 if stop is KeyboardInterrupt else 3), r.stderr
    monkeypatch.undo()
    assert _contents(db) == before
    r = run_cli("prune", "--keep-epochs", "2", db=db)      # and it can be pruned afterwards
    assert r.returncode == 0, r.stderr


# -- report daily ------------------------------------------------------------------------------
def test_report_daily_with_retain_epochs_prunes_after_collecting_and_says_so(multi, logs, tmp_path):
    """retain_epochs in auditor.toml: the day's log collected, the store pruned to the newest
    epoch's log, the report made from what is left."""
    db = _copy(multi, tmp_path)
    config = tmp_path / "auditor.toml"
    config.write_text("retain_epochs = 1\n")
    out = tmp_path / "out"
    r = run_cli("--config", str(config), "report", "daily", "--out", str(out), "--epoch", "406",
                "--gateway-log", str(logs[4]), db=db)
    assert r.returncode in (0, 1, 3), r.stderr     # 3: a remint line without a time (section12-bare.log)
    said = r.stderr[r.stderr.index("gateway_log: loaded"):]
    pruned = said.index("report daily: kept epoch 406 (1 of 4 stored): the gateway log from 2026-09-25T21:26:30")
    assert pruned < said.index("report daily: dropped ") < said.index("report daily: wrote ")
    assert one(db, "SELECT count(*) FROM log_events WHERE ts < ?", [_start(db, 406)]) == 0
    assert one(db, "SELECT count(*) FROM log_events WHERE ts > ?", [_start(db, 406) + (_start(db, 406) - _start(db, 405))]) > 0
    assert json.loads((out / "2026-09-25" / "report.json").read_text())["epoch"] == 406


def test_report_daily_keeps_the_log_of_the_epoch_it_reports(multi, tmp_path):
    db = _copy(multi, tmp_path)
    r = run_cli("report", "daily", "--out", str(tmp_path / "out"), "--offline", "--epoch", "404",
                "--retain-epochs", "1", db=db)
    assert r.returncode in (0, 1, 3), r.stderr     # 3: a remint line without a time (section12-bare.log)
    assert "report daily: kept epochs 404..406 (3 of 4 stored): the gateway log from 2026-09-23T19:15:00" in r.stderr
    assert one(db, "SELECT min(ts) FROM log_events") >= _start(db, 404)
    assert one(db, "SELECT count(*) FROM log_events WHERE ts < ?", [_start(db, 405)]) > 0


def test_report_daily_on_a_store_it_cannot_prune_says_so_and_reports(multi, tmp_path):
    db = _copy(multi, tmp_path)
    with duckdb.connect(str(db)) as con:
        con.execute("DELETE FROM chain_block_times WHERE height = "
                    "(SELECT effective_height FROM chain_epochs WHERE epoch = 406)")
    lines = one(db, "SELECT count(*) FROM log_events")
    out = tmp_path / "out"
    r = run_cli("--quiet", "report", "daily", "--out", str(out), "--offline", "--epoch", "406",
                "--retain-epochs", "1", "--date", "2026-09-26", db=db)
    assert r.returncode in (0, 1, 3), r.stderr
    assert r.stderr.startswith("auditor: report daily: not pruned: the start of epoch 406 (the time of block ")
    assert one(db, "SELECT count(*) FROM log_events") == lines
    assert json.loads((out / "2026-09-26" / "report.json").read_text())["epoch"] == 406


@pytest.mark.parametrize("how", [("--retain-epochs", "0"), ("env", "0"), ("toml", "0")])
def test_retain_epochs_below_one_is_a_usage_error(multi, tmp_path, how):
    db = _copy(multi, tmp_path)
    args, env = ["report", "daily", "--out", str(tmp_path / "out"), "--offline"], {}
    if how[0] == "env":
        env["AUDITOR_RETAIN_EPOCHS"] = how[1]
    elif how[0] == "toml":
        (tmp_path / "auditor.toml").write_text(f"[report.daily]\nretain_epochs = {how[1]}\n")
        args = ["--config", str(tmp_path / "auditor.toml"), *args]
    else:
        args += list(how)
    r = run_cli(*args, db=db, env=env)
    assert r.returncode == 2 and "retain" in r.stderr and "0 is not in the range x>=1" in r.stderr, r.stderr
    assert r.stderr.count("\n") == 1
    assert not (tmp_path / "out").exists()


# -- the rule, against an oracle ---------------------------------------------------------------
_T0 = datetime(2026, 9, 1, tzinfo=timezone.utc)


@st.composite
def _stores(draw):
    """Stored epochs (each starting an hour after the one before, some without a start time),
    log lines at times around them (some without a time), N, and an epoch report daily keeps."""
    epochs = sorted(draw(st.sets(st.integers(1, 30), min_size=1, max_size=8)))
    untimed = draw(st.sets(st.sampled_from(epochs)))
    lines = draw(st.lists(st.one_of(st.none(), st.integers(-120, 32 * 60)), max_size=40))
    keep = draw(st.integers(1, 9))
    also = draw(st.one_of(st.none(), st.integers(0, 31)))
    return epochs, untimed, [None if m is None else _T0 + timedelta(minutes=m) for m in lines], keep, also


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_stores())
def test_the_rule_keeps_the_newest_epochs_lines_and_every_untimed_one(case):
    from auditor import prune
    from auditor.errors import SourceError
    from auditor.store import Store

    epochs, untimed, times, keep, also = case
    start = {e: _T0 + timedelta(hours=e) for e in epochs if e not in untimed}
    with Store(":memory:") as store:
        store.insert("chain_epochs", [{"epoch": e, "effective_height": 1000 + e, "settled": True, "complete": True}
                                      for e in epochs])
        store.insert("chain_block_times", [{"height": 1000 + e, "time": t, "time_text": str(t)}
                                           for e, t in start.items()])
        store.insert("log_events", [{"file_id": 1, "line_no": i + 1, "byte_offset": i, "ts": t, "fmt": "text",
                                     "kind": "stage", "name": "gateway_request_received", "request": f"r{i}",
                                     "fields": "{}"} for i, t in enumerate(times)])
        store.keep_lines()
        # the oracle: every stored epoch from the older of the newest N and `also` on
        first = min(epochs[-keep:][0], also if also is not None else epochs[-1])
        kept = [e for e in epochs if e >= first]
        if len(kept) < len(epochs) and kept[0] not in start:
            with pytest.raises(SourceError, match=f"the start of epoch {kept[0]} "):
                prune.run(store, keep, also)
            return
        pruned = prune.run(store, keep, also)
        cutoff = start[kept[0]] if len(kept) < len(epochs) else None
        want = sorted((t for t in times if cutoff is None or t is None or t >= cutoff), key=repr)
        got = [r[0] for r in store.con.execute("SELECT ts FROM log_events ORDER BY line_no").fetchall()]
        assert sorted(got, key=repr) == want
        assert pruned.kept == kept and pruned.cutoff == cutoff
        assert pruned.lines_dropped == len(times) - len(want)
        assert pruned.untimed == (times.count(None) if cutoff else 0)      # counted when there is a cut
        # every line table has read the rows left (lines_state counts log_events' rows)
        assert {n for (n,) in store.con.execute("SELECT rows_read FROM lines_state").fetchall()} == {len(got)}
        assert [r[0] for r in store.con.execute("SELECT line_no FROM log_events ORDER BY rowid").fetchall()] == \
            sorted(r[0] for r in store.con.execute("SELECT line_no FROM log_events").fetchall())
