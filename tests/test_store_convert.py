"""Converting a store into a new file, for a migration that declares it (issue 37, auditor/store_convert.py).

Real DuckDB files and the CLI. The converting migration is a toy one, numbered after the real
ones: the tests add it to the store's migrations by replacing ``auditor.store._migration_files``
(the list every part of the store reads: migrate, behind, the conversion), the only hook they use.
A run that must be killed, not fail, is a process of its own that patches the same way and ends
itself with ``os._exit`` at a step of the conversion (``store_convert._at``).
"""

from __future__ import annotations

import errno
import hashlib
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import duckdb
import pytest
from hypothesis import given, strategies as st

from auditor import store as store_mod
from auditor import store_convert
from auditor.store import Store
from tests.conftest import ROOT, old_store, one, run_cli

TOY = """-- toy: a converting migration of the tests
-- converts the store: into a new file
-- changes: coverage
-- check: SELECT o.n AS old_lines, t.n AS toy_lines FROM (SELECT count(*) AS n FROM {old}.log_events) o, (SELECT count(*) AS n FROM {new}.toy_lines) t WHERE o.n <> t.n
CREATE TABLE toy_lines AS SELECT rowid AS line, kind FROM log_events;
DELETE FROM coverage WHERE source = 'gateway_log';
"""

EPOCH = ("epoch", "403", "--offline", "--format", "json")


def _next_version() -> int:
    return max(int(f.name[:3]) for f in store_mod._migration_files()) + 1


def toy_file(folder: Path, text: str = TOY) -> Path:
    (folder / "schema").mkdir(exist_ok=True)
    path = folder / "schema" / f"{_next_version():03d}_toy.sql"
    path.write_text(text, encoding="utf-8")
    return path


@pytest.fixture
def toy(tmp_path, monkeypatch):
    """``toy(text)``: the store's migrations are the real ones and the toy ``text``; its path."""
    real = store_mod._migration_files

    def add(text: str = TOY) -> Path:
        path = toy_file(tmp_path, text)
        monkeypatch.setattr(store_mod, "_migration_files", lambda: [*real(), path])
        return path

    return add


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def beside(db: Path) -> list[str]:
    """The files in the store's folder but the store (a conversion's leftovers)."""
    return sorted(p.name for p in db.parent.iterdir() if p.name != db.name and p.suffix != ".sql"
                  and p.name != "schema")


def counts(db: Path) -> dict[str, int]:
    tables = [t for (t,) in duckdb.connect(str(db), read_only=True).execute(
        "SELECT table_name FROM duckdb_tables() WHERE schema_name = 'main'").fetchall()]
    with duckdb.connect(str(db), read_only=True) as con:
        return {t: con.execute(f'SELECT count(*) FROM "{t}"').fetchone()[0] for t in tables}


def test_an_old_store_is_converted_into_a_new_file_checked_and_put_in_its_place(tmp_path, toy):
    db = old_store(tmp_path)
    before = counts(db)
    answer = run_cli(*EPOCH, db=db)                       # the same command on the store unconverted
    db = old_store(tmp_path, "conv.duckdb")
    inode = db.stat().st_ino
    path = toy()
    r = run_cli(*EPOCH, db=db)
    assert r.returncode == answer.returncode, r.stderr
    assert json.loads(r.stdout) == json.loads(answer.stdout)          # the analyses' answers unchanged
    assert "converting the store to the new layout" in r.stderr
    assert f"converted the store {db} to the new layout" in r.stderr
    assert db.stat().st_ino != inode                                   # a new file has the name
    assert beside(db) == ["old.duckdb"]                               # no .converting, no .before-NNN
    after = counts(db)
    assert after["toy_lines"] == before["log_events"] == 35_736        # the migration ran, on the data
    assert after["coverage"] < before["coverage"]                      # (the change it declared)
    # every migration pending on the old store applied (the real ones since it, then the toy)
    assert after["schema_migrations"] == int(path.name[:3]) > before["schema_migrations"]
    assert {t: n for t, n in after.items() if t not in ("toy_lines", "coverage", "schema_migrations")} == \
        {t: n for t, n in before.items() if t not in ("coverage", "schema_migrations")}
    # once only: the next opening has nothing to convert
    inode = db.stat().st_ino
    r = run_cli(*EPOCH, db=db)
    assert r.returncode == answer.returncode and "converting" not in r.stderr
    assert db.stat().st_ino == inode


def test_a_new_store_is_migrated_in_place_not_converted(tmp_path, toy):
    toy()
    db = tmp_path / "new.duckdb"
    with Store(db) as store:
        assert store.behind() is None
    assert beside(db) == []
    assert one(db, "SELECT count(*) FROM toy_lines") == 0


def test_a_symbolic_link_to_the_store_stays_one(tmp_path, toy):
    real = old_store(tmp_path)
    link = tmp_path / "link.duckdb"
    link.symlink_to(real)
    toy()
    Store(link).close()
    assert link.is_symlink() and one(real, "SELECT count(*) FROM toy_lines") == 35_736


@pytest.mark.parametrize("step", ["copied", "migrated", "checked", "linked", "renamed"])
def test_a_conversion_killed_at_any_step_loses_nothing_and_the_next_opening_completes(tmp_path, step):
    db = old_store(tmp_path)
    before = counts(db)
    path = toy_file(tmp_path)
    script = (
        "import os, sys\n"
        "from pathlib import Path\n"
        "import auditor.store as s, auditor.store_convert as c\n"
        "real = s._migration_files\n"
        f"s._migration_files = lambda: [*real(), Path({str(path)!r})]\n"
        f"c._at = lambda step: os._exit(9) if step == {step!r} else None\n"
        "from auditor.cli import main\n"
        f"sys.argv = ['auditor', '--db', {str(db)!r}, 'epoch', '403', '--offline', '--format', 'json']\n"
        "main()\n")
    killed = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=ROOT,
                            env={k: v for k, v in os.environ.items() if not k.startswith("AUDITOR_")})
    assert killed.returncode == 9, killed.stderr
    left, aside = [n for n in beside(db) if n != "old.duckdb.converting.wal"], f"old.duckdb.before-{path.name[:3]}"
    if step in ("copied", "migrated", "checked"):
        # the store untouched, the new file half made beside it
        assert counts(db) == before and left == ["old.duckdb.converting"]
    elif step == "linked":
        assert counts(db) == before and left == [aside, "old.duckdb.converting"]
    else:
        assert left == [aside]
    # the next opening: the leftovers gone, the conversion done (again, or finished)
    real = store_mod._migration_files
    try:
        store_mod._migration_files = lambda: [*real(), path]
        r = run_cli(*EPOCH, db=db)
    finally:
        store_mod._migration_files = real
    assert r.returncode in (0, 1), r.stderr
    assert beside(db) == []
    assert one(db, "SELECT count(*) FROM toy_lines") == before["log_events"]
    assert one(db, "SELECT count(*) FROM log_events") == before["log_events"]


def test_a_store_renamed_aside_and_its_name_missing_is_restored(tmp_path, toy, monkeypatch):
    """On a file system without hard links the old file is renamed aside, not linked: interrupted
    then, the store's name is missing, and the next opening puts the old file back first."""
    db = old_store(tmp_path)
    before = counts(db)
    path = toy()

    def no_links(src, dst):
        raise PermissionError(1, "Operation not permitted")

    def interrupted(step):
        if step == "linked":
            raise KeyboardInterrupt

    monkeypatch.setattr(store_convert.os, "link", no_links)
    monkeypatch.setattr(store_convert, "_at", interrupted)
    with pytest.raises(KeyboardInterrupt):
        Store(db)
    assert counts(db) == before and beside(db) == []          # Ctrl-C: put back as it was at once
    # killed instead, between the renames: the name missing, the old file aside
    db.rename(tmp_path / f"old.duckdb.before-{path.name[:3]}")
    (tmp_path / "old.duckdb.converting").write_bytes(b"half")
    monkeypatch.setattr(store_convert, "_at", lambda step: None)
    r = run_cli("sql", "SELECT count(*) AS n FROM log_events", "--format", "json", db=db)
    assert r.returncode == 0, r.stderr
    assert "the conversion of" in r.stderr and "was interrupted" in r.stderr
    assert json.loads(r.stdout)["rows"] == [{"n": before["log_events"]}]
    assert counts(db) == before and beside(db) == []
    Store(db).close()                                          # converted, renaming aside
    assert one(db, "SELECT count(*) FROM toy_lines") == before["log_events"] and beside(db) == []


BAD = {
    "an error in the migration": TOY.replace("FROM log_events;", "FROM no_such_table;"),
    "a check that finds a difference": TOY.replace("FROM log_events;", "FROM log_events LIMIT 10;"),
    "a table changed without saying so": TOY.replace("-- changes: coverage\n", ""),
}


@pytest.mark.parametrize("why", sorted(BAD))
def test_a_failed_conversion_leaves_the_store_byte_for_byte_as_it_was(tmp_path, toy, why):
    db = old_store(tmp_path)
    was = digest(db)
    toy(BAD[why])
    r = run_cli(*EPOCH, db=db)
    assert r.returncode == 3
    lines = r.stderr.strip().splitlines()
    assert lines[-1].startswith(f"auditor: error: cannot convert the store {db} to the new layout: ")
    assert lines[-1].endswith("(the store is as it was)") and "Traceback" not in r.stderr
    assert {"an error in the migration": "no_such_table", "a check that finds a difference": "toy_lines=10",
            "a table changed without saying so": "the table coverage has"}[why] in lines[-1]
    assert digest(db) == was and beside(db) == []


def test_no_room_for_the_new_file_is_refused_before_starting(tmp_path, toy, monkeypatch):
    db = old_store(tmp_path)
    was = digest(db)
    toy()
    monkeypatch.setattr(store_convert.shutil, "disk_usage", lambda p: type("U", (), {"free": 1_000_000})())
    r = run_cli(*EPOCH, db=db)
    assert r.returncode == 3
    assert "the new file needs 17.3 MB beside it" in r.stderr and "has 1.0 MB free" in r.stderr
    assert digest(db) == was and beside(db) == []


def test_a_disk_full_during_the_copy_leaves_the_store_as_it_was(tmp_path, toy, monkeypatch):
    """The disk filling up under the copy (after the room was checked: another process's writes)."""
    db = old_store(tmp_path)
    was = digest(db)
    toy()

    def fills_up(src, dst, length=0):
        dst.write(src.read(1 << 20))
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(store_convert.shutil, "copyfileobj", fills_up)
    r = run_cli(*EPOCH, db=db)
    assert r.returncode == 3 and "Traceback" not in r.stderr
    assert r.stderr.strip().splitlines()[-1] == (f"auditor: error: cannot convert the store {db} to the new layout: "
                                                 "[Errno 28] No space left on device (the store is as it was)")
    assert digest(db) == was and beside(db) == []


def test_a_read_only_opening_says_the_store_needs_converting_and_does_not_convert(tmp_path, toy):
    db = old_store(tmp_path)
    was = digest(db)
    path = toy()
    r = run_cli("sql", "SELECT count(*) AS n FROM log_events", "--format", "json", db=db)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["rows"] == [{"n": 35_736}]                      # read as it is
    assert f"it needs converting to the new layout of queries/schema/{path.name}" in r.stderr
    assert "`auditor sql` does not convert it" in r.stderr
    with Store(db, read_only=True) as store:
        assert "needs converting" in store.behind()
    assert digest(db) == was and beside(db) == []


def test_the_old_store_fixture_is_todays_layout(tmp_path):
    """fixtures/stores/demo-403-schema016.duckdb.gz: the layout before issue 37's (schema 016)."""
    db = old_store(tmp_path)
    assert one(db, "SELECT max(version) FROM schema_migrations") == 16
    assert one(db, "SELECT count(*) FROM log_events") == 35_736


_NAMES = st.from_regex(r"[a-z_][a-z0-9_]{0,20}", fullmatch=True)
_SQL = st.text(st.characters(blacklist_categories=("Cc", "Cs", "Zl", "Zp")), min_size=1, max_size=60).filter(
    lambda t: t.strip() != "")


@given(converts=st.booleans(), changes=st.lists(st.lists(_NAMES, min_size=1, max_size=4), max_size=3),
       checks=st.lists(_SQL, max_size=3), body=st.sampled_from(["", "CREATE TABLE t (x INTEGER);\n"]))
def test_a_migration_header_reads_back_what_it_declares(tmp_path_factory, converts, changes, checks, body):
    """store_convert.Migration reads the marker, every ``-- changes:`` line and every ``-- check:``
    line of a file, wherever they are; the marker only as a line of its own."""
    lines = ["-- 099 a migration", f"-- it says: {store_convert.MARKER} (not on a line of its own)"]
    lines += [store_convert.MARKER + "  "] if converts else []
    lines += ["-- changes: " + ", ".join(c) for c in changes]
    lines += ["-- check: " + c for c in checks]
    path = tmp_path_factory.mktemp("m") / "099_m.sql"
    path.write_text("\n".join(lines) + "\n" + body, encoding="utf-8")
    m = store_convert.Migration(path)
    assert (m.version, m.converts) == (99, converts)
    assert m.changes == {t for c in changes for t in c}
    assert m.checks == [c.strip() for c in checks]


def _converter(db: Path, toy_path: Path, at: str) -> str:
    """A process converting ``db`` that stops at step ``at`` of the conversion: it makes
    ``<db>.paused`` there and goes on once ``<db>.go`` exists."""
    return (
        "import os, sys, time\n"
        "from pathlib import Path\n"
        "import auditor.store as s, auditor.store_convert as c\n"
        "real = s._migration_files\n"
        f"s._migration_files = lambda: [*real(), Path({str(toy_path)!r})]\n"
        "def at(step):\n"
        f"    if step == {at!r}:\n"
        f"        Path({str(db) + '.paused'!r}).touch()\n"
        f"        while not Path({str(db) + '.go'!r}).exists():\n"
        "            time.sleep(0.05)\n"
        "c._at = at\n"
        "from auditor.cli import main\n"
        f"sys.argv = ['auditor', '--db', {str(db)!r}, 'epoch', '403', '--offline', '--format', 'json']\n"
        "main()\n")


@pytest.mark.parametrize("step", ["migrated", "linked"])
def test_the_store_is_locked_while_it_is_converted(tmp_path, step):
    """Another command meets the store's lock, from the copy to the renaming, and leaves what the
    conversion made beside it alone (its .before-NNN is the converting process's, held)."""
    db = tmp_path / "store" / "old.duckdb"
    db.parent.mkdir()
    old_store(db.parent)
    path = toy_file(tmp_path)
    paused, go = Path(str(db) + ".paused"), Path(str(db) + ".go")
    p = subprocess.Popen([sys.executable, "-c", _converter(db, path, step)], cwd=ROOT, stdout=subprocess.DEVNULL,
                         stderr=subprocess.PIPE, text=True,
                         env={k: v for k, v in os.environ.items() if not k.startswith("AUDITOR_")})
    try:
        for _ in range(600):
            if paused.exists() or p.poll() is not None:
                break
            time.sleep(0.05)
        assert paused.exists(), p.stderr.read() if p.poll() is not None else "not paused"
        left = beside(db)
        for args in (("sql", "SELECT count(*) FROM log_events"), EPOCH):
            r = run_cli(*args, db=db)
            assert r.returncode == 3 and "is locked by another process" in r.stderr, r.stderr
        assert beside(db) == left
        go.touch()
        assert p.wait(timeout=120) == 0, p.stderr.read()
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    assert sorted(set(beside(db)) - {paused.name, go.name}) == []
    assert one(db, "SELECT count(*) FROM toy_lines") == 35_736


def test_export_refuses_a_store_that_needs_converting_with_one_line(tmp_path, toy):
    """export demand reads the store read-only by the current layout: an unconverted one is one line
    saying what converts it (and the store untouched), then after a writing command it exports."""
    db = old_store(tmp_path)
    was = digest(db)
    path = toy()
    export = ("export", "demand", "--epochs", "403..403", "--out", str(tmp_path / "d.parquet"), "--name", "demo")
    r = run_cli(*export, db=db)
    assert r.returncode == 3 and not (tmp_path / "d.parquet").exists()
    assert r.stderr.strip() == (f"auditor: error: the database {db} is an older auditor's store: it needs converting "
                                f"to the new layout of queries/schema/{path.name}, into a new file beside it, which a "
                                "command that writes to the store does (auditor collect, auditor epoch): run one first")
    assert digest(db) == was
    assert run_cli(*EPOCH, db=db).returncode in (0, 1)
    assert run_cli(*export, db=db).returncode == 0 and (tmp_path / "d.parquet").exists()


def test_an_old_store_answers_as_a_fresh_collect_does(tmp_path):
    """The store of fixtures/stores/ (the layout at 9c64b57), opened by this auditor (converted,
    once a migration asks for it), gives the demo's epoch report a fresh collect of the same
    sources gives, but where the sources were read from (the log's path, the replay's port)."""
    fresh = run_cli("epoch", "403", "--replay", str(ROOT / "fixtures/chain/epoch-403"), "--replay",
                    str(ROOT / "fixtures/accounting/v5"), "--gateway-log",
                    str(ROOT / "fixtures/demo-epoch-403/gateway.log.gz"), "--format", "json", db=tmp_path / "fresh.duckdb")
    old = run_cli(*EPOCH, db=old_store(tmp_path))
    assert fresh.returncode == old.returncode == 0, fresh.stderr + old.stderr

    def where_from(text: str) -> dict:
        answer = json.loads(re.sub(r"http://127\.0\.0\.1:\d+/", "http://127.0.0.1:PORT/", text))
        for f in answer["coverage"]["gateway_log"]["files"]:
            f["path"] = Path(f["path"]).name
        return answer

    assert where_from(old.stdout) == where_from(fresh.stdout)
