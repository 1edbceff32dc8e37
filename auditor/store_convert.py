"""Converting a store into a new file beside it, for a migration that rewrites most of it (issue 37).

A migration whose file has the line ``-- converts the store: into a new file`` (``MARKER``) is
not applied in place to a store that holds data (one with any migration applied): the store
is copied, checkpointed, into ``<store>.converting`` beside it, the pending migrations run
there, the copy is checked, and only then does it take the store's name. A brand-new store
is migrated in place as usual (there is nothing to convert).

- The copy is checked: every table of the old store has as many rows in the new one, but the
  tables a pending migration declares it changes (``-- changes: t1, t2``), and each
  ``-- check: SQL`` of a pending migration returns no rows (``{old}`` and ``{new}`` in it are
  the two stores' schemas: ``{old}.log_events``; each row it returns is a discrepancy).
  ``schema_migrations`` has a row more for each migration applied.
- The old file is kept until the new one is complete and checked: it is linked to
  ``<store>.before-NNN`` (NNN: the converting migration), the new file is renamed over the
  store's name (so the name always holds a whole store), and the old one is removed once the
  store is opened again. Kept longer, it would double the disk the store takes, and it is of
  no use to this auditor (its layout is the old one) nor needed to trust the new one (checked).
- Interrupted anywhere, nothing is lost: a leftover ``.converting`` is removed and the
  conversion starts again at the next opening for writing; a ``.before-NNN`` left beside the
  store is removed (the store is the converted one, or the same file), and restored to the
  store's name when the name is missing (a file system without hard links, where the old file
  is renamed aside rather than linked; ``recover``).
- A failure (an error in a migration or a check, a full disk, Ctrl-C) leaves the store as it
  was, and is one line (StoreError, exit 3). The room for the copy is checked first.
- The store's write lock (DuckDB's, on the open file) is held from the copy to the renaming:
  the old file stays open until the new one has the store's name.
"""

from __future__ import annotations

import glob
import os
import re
import shutil
from pathlib import Path
from typing import Any

import duckdb

from .errors import StoreError

Store = Any     # auditor.store.Store, which imports this module (so not imported back)

MARKER = "-- converts the store: into a new file"
CONVERTING = ".converting"          # the new file, while it is made
BEFORE = ".before-"                 # the old file, kept (by a link) until the new one has the name
_ALIAS = "auditor_converted"        # the new file's name in the store's connection while converting


class Migration:
    """What a migration file declares about a conversion (its lines ``-- converts the store: into a
    new file``, ``-- changes: t1, t2``, ``-- check: SQL``)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.version = int(path.name[:3])
        text = path.read_text(encoding="utf-8")
        self.converts = any(line.strip() == MARKER for line in text.splitlines())
        self.changes = {t.strip() for m in re.finditer(r"^--\s*changes:(.*)$", text, re.M)
                        for t in m[1].split(",") if t.strip()}
        self.checks = [m[1].strip() for m in re.finditer(r"^--\s*check:(.*)$", text, re.M)]


def pending_conversion(done: set[int], files: list[Path]) -> list[Migration] | None:
    """The pending migrations, when one of them converts the store and the store holds data (a
    migration applied): they run in the new file. None when the store is migrated in place."""
    if not done:
        return None
    pending = [Migration(f) for f in files if int(f.name[:3]) not in done]
    return pending if any(m.converts for m in pending) else None


def describe(pending: list[Migration]) -> str:
    """How ``Store.behind`` and the refusal of a read-only opening name a pending conversion."""
    m = next(m for m in pending if m.converts)
    return f"it needs converting to the new layout of queries/schema/{m.path.name}, into a new file beside it"


def _before(path: str) -> list[str]:
    return sorted(glob.glob(glob.escape(path) + BEFORE + "[0-9][0-9][0-9]"))


def _held(path: str) -> bool:
    """Whether another process holds a lock on ``path`` (DuckDB's, of a conversion under way).
    Read from /proc/locks where there is one, without opening the file: closing a descriptor of it
    would drop the locks this process holds on it (a store it has open)."""
    import fcntl

    try:
        st = os.stat(path)
        with open("/proc/locks", encoding="ascii") as f:
            locks = f.read().splitlines()
    except FileNotFoundError:               # not Linux: ask for a lock
        fd = os.open(path, os.O_RDONLY)
        try:
            fcntl.lockf(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
            return False
        except OSError:
            return True
        finally:
            os.close(fd)
    ident = f"{os.major(st.st_dev):02x}:{os.minor(st.st_dev):02x}:{st.st_ino}"
    return any(len(w) > 5 and w[5] == ident and w[4] != str(os.getpid())
               for w in (line.split() for line in locks))


def recover(path: str) -> str | None:
    """Before a store is opened: finish what an interrupted conversion left beside it. Its old
    file (``.before-NNN``) is restored to the store's name when the name is missing (interrupted
    between the renames), and removed otherwise (the store is the converted one, checked before
    it took the name, or the same file, linked). What was done, for the progress, or None."""
    real = os.path.realpath(path)
    befores = _before(real)
    if not befores or _held(befores[-1]):      # a conversion under way: its lock is met on opening
        return None
    try:
        if not os.path.lexists(real):
            os.rename(befores[-1], real)
            _remove(real + CONVERTING)
            return f"the conversion of {path} was interrupted: the store is back as it was, converted at the next write"
        for b in befores:
            _remove(b)
    except OSError as exc:
        raise StoreError(f"cannot finish the interrupted conversion of {path} ({befores[-1]}): "
                         f"{exc.strerror or exc}") from None
    return None


def _remove(path: str) -> None:
    for p in (path, path + ".wal"):
        try:
            os.remove(p)
        except FileNotFoundError:
            pass


def _at(step: str) -> None:
    """A point between the steps of a conversion (tests interrupt it here): "copied", "migrated",
    "checked", "linked" (the old file also at .before-NNN), "renamed" (the new file has the name)."""


def convert(store: Store, pending: list[Migration]) -> None:
    """Convert ``store`` (opened for writing, its migrations ``pending``) into a new file, which
    then takes its name; ``store.con`` is the new file's connection afterwards."""
    path = store.path
    real = os.path.realpath(path)
    new, before = real + CONVERTING, real + BEFORE + f"{max(m.version for m in pending if m.converts):03d}"
    what = f"converting the store to the new layout ({', '.join(m.path.stem for m in pending)})"
    failed = f"cannot convert the store {path} to the new layout"
    old = store._one("SELECT current_database()")[0]
    catalogs = {"old": _quoted(old) + ".main", "new": _quoted(_ALIAS) + ".main"}
    store.con.execute("CHECKPOINT")            # the file holds everything; no .wal goes with it
    _remove(new)                               # an interrupted conversion's
    size = os.path.getsize(real)
    free = shutil.disk_usage(os.path.dirname(real)).free
    if free < size:
        raise StoreError(f"{failed}: the new file needs {size / 1e6:,.1f} MB beside it and "
                         f"{os.path.dirname(real)} has {free / 1e6:,.1f} MB free; free some space and run "
                         "again (the store is as it was)")
    linked = moved = False
    # read through a descriptor kept open until the old file's connection is closed: closing any
    # descriptor of a file drops every POSIX lock the process holds on it, DuckDB's write lock too
    src = os.open(real, os.O_RDONLY)
    try:
        with store._step(f"{what}: copying {size / 1e6:,.1f} MB into {os.path.basename(new)}"):
            _copy(src, new)
        _at("copied")
        store.con.execute(f"ATTACH {_string(new)} AS {_quoted(_ALIAS)}")
        store.con.execute(f"USE {_quoted(_ALIAS)}")
        with store._step(f"{what}: applying the migrations"):
            store.migrate()
        _at("migrated")
        with store._step(f"{what}: checking the new file against the old"):
            _check(store, pending, old, catalogs)
        store.con.execute(f"USE {_quoted(old)}")
        store.con.execute(f"DETACH {_quoted(_ALIAS)}")     # checkpointed: no .wal of its own
        _fsync(new)                            # as the migrations left it
        _at("checked")
        try:
            os.link(real, before)
            linked = True
        except FileExistsError:                # recover removed any left over: not ours to replace
            raise
        except OSError:                        # no hard links here: renamed aside (recover restores it)
            os.rename(real, before)
            moved = True
        _at("linked")
        os.replace(new, real)                  # the name holds a whole store throughout
    except BaseException as exc:
        _undo(store, old, new, real, before, linked, moved)
        store.con.close()                      # the store's lock held until its file is closed
        os.close(src)
        if isinstance(exc, StoreError):
            raise StoreError(f"{failed}: {exc} (the store is as it was)") from exc
        if isinstance(exc, (duckdb.Error, OSError)):
            raise StoreError(f"{failed}: {str(exc).splitlines()[0]} (the store is as it was)") from exc
        raise
    try:
        _fsync(os.path.dirname(real))
        _at("renamed")
        store.reopen()                         # the old file closed (written nothing since the copy)
    finally:
        os.close(src)
    _remove(before)
    if store.progress is not None:
        store.progress.log(f"converted the store {path} to the new layout; the old file, kept until the new one "
                           "was checked, is removed")


def _check(store: Store, pending: list[Migration], old: str, catalogs: dict[str, str]) -> None:
    """The new file against the old: the same rows in every table no migration says it changes,
    and each migration's checks without a row."""
    changes = set().union(*(m.changes for m in pending))
    new_tables = {t for (t,) in store.con.execute(
        "SELECT table_name FROM duckdb_tables() WHERE database_name = ? AND schema_name = 'main'", [_ALIAS]).fetchall()}
    for (table,) in store.con.execute(
            "SELECT table_name FROM duckdb_tables() WHERE database_name = ? AND schema_name = 'main' "
            "ORDER BY table_name", [old]).fetchall():
        if table in changes:
            continue
        if table not in new_tables:
            raise StoreError(f"the table {table} is missing from the new file, and no migration says it changes it")
        a, b = store.con.execute(f"SELECT (SELECT count(*) FROM {catalogs['old']}.{_quoted(table)}), "
                                 f"(SELECT count(*) FROM {catalogs['new']}.{_quoted(table)})").fetchone()
        if table == "schema_migrations":        # the store's own record gains the migrations applied
            a += len(pending)
        if a != b:
            raise StoreError(f"the table {table} has {b:,} rows in the new file and {a:,} in the old, "
                             "and no migration says it changes it")
    for m in pending:
        for sql in m.checks:
            try:
                cur = store.con.execute(sql.replace("{old}", catalogs["old"]).replace("{new}", catalogs["new"]))
                row = cur.fetchone()
            except duckdb.Error as exc:
                raise StoreError(f"the check of queries/schema/{m.path.name} failed to run: "
                                 f"{str(exc).splitlines()[0]}") from exc
            if row is not None:
                shown = ", ".join(f"{d[0]}={v}" for d, v in zip(cur.description, row))
                raise StoreError(f"the check of queries/schema/{m.path.name} found a difference ({shown})")


def _undo(store: Store, old: str, new: str, real: str, before: str, linked: bool, moved: bool) -> None:
    """After a failure: the store as it was, the new file gone."""
    for sql in (f"USE {_quoted(old)}", f"DETACH DATABASE IF EXISTS {_quoted(_ALIAS)}"):
        try:
            store.con.execute(sql)
        except duckdb.Error:
            pass
    _remove(new)
    if moved:
        os.rename(before, real)
    elif linked:
        os.remove(before)


def _copy(src: int, new: str) -> None:
    """The open file ``src``, whole, into the new file ``new``, on disk when this returns."""
    os.lseek(src, 0, os.SEEK_SET)
    with open(new, "wb") as out:
        shutil.copyfileobj(os.fdopen(src, "rb", buffering=0, closefd=False), out, 16 << 20)
        out.flush()
        os.fsync(out.fileno())


def _fsync(path: str) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _quoted(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _string(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"
