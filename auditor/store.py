"""The DuckDB store: one file, a versioned schema, transactions and named queries.

Migrations are the files ``queries/schema/NNN_name.sql``, applied once each in
order and recorded in ``schema_migrations``; they hold tables only. The line tables
``queries/lines/<name>.sql`` are typed rows of one kind of gateway log line (one row per
line, its JSON fields read once), kept in step with log_events (``keep_lines``) and made
again when its definition changed. The views the
analyses read are ``queries/views/<name>.sql``, one each (and the macros the queries share,
``in_range``), re-created when a store opened for writing finds them changed. The rows of
the views worked out over many lines are kept in ``derived_<view>`` tables (``derived``) and
brought up to date with new lines by ``queries/refresh/<view>.sql``. Analyses run the SQL
files under ``queries/`` by name (``store.query("misstest_inputs", epoch=433)``). A migration
that declares it converts the store is applied to a copy of it, which replaces it once checked
(``store_convert``).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import stat
import threading
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager, nullcontext
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import duckdb

from . import interrupt, limits, store_convert
from .errors import StoreError, UsageError
from .paths import check_store, opened_store, read_regular
from .times import utc as _utc, utc_text


def queries_dir() -> Path:
    """Where the SQL files live: ``queries/`` beside the package (source or editable install),
    or ``auditor/queries`` inside an installed wheel."""
    here = Path(__file__).resolve().parent
    for candidate in (here.parent / "queries", here / "queries"):
        if (candidate / "schema").is_dir():
            return candidate
    raise StoreError(f"cannot find the queries/ folder next to {here}")


def _migration_files() -> list[Path]:
    return sorted((queries_dir() / "schema").glob("[0-9][0-9][0-9]_*.sql"))


def _sql_files(folder: str) -> dict[str, str]:
    """The SQL files of ``queries/<folder>/`` by name (their stem): each one's text."""
    return {f.stem: f.read_text(encoding="utf-8") for f in sorted((queries_dir() / folder).glob("*.sql"))}


_LINES: dict[str, str] = {}


def line_tables() -> dict[str, str]:
    """The line tables, name -> their SELECT over ``log_events`` (queries/lines/<name>.sql):
    one row per line of one kind, without aggregation, so that the rows of the lines stored
    since a table last read are the rows it lacks (what lets ``keep_lines`` read only those)."""
    if not _LINES:
        for name, text in _sql_files("lines").items():
            sql = text.rstrip().rstrip(";")
            if re.search(r"^\s*WITH\b", sql, re.M | re.I):
                raise StoreError(f"queries/lines/{name}.sql: a line table is one SELECT, without WITH")
            _LINES[name] = sql
    return _LINES


_REFRESH: dict[str, str] = {}


def _refresh_scripts() -> dict[str, str]:
    """queries/refresh/<view>.sql by view: how a kept table is brought up to date with new log
    lines (``Store.derived``); ``changed`` is what every one of them starts from."""
    if not _REFRESH:
        _REFRESH.update(_sql_files("refresh"))
    return _REFRESH


def default_db_path() -> Path:
    """``$AUDITOR_DB`` is resolved by the CLI; this is the fallback under the user's data dir."""
    base = os.environ.get("XDG_DATA_HOME") or os.path.join(os.path.expanduser("~"), ".local", "share")
    return Path(base) / "auditor" / "auditor.duckdb"


def utcnow() -> datetime:
    return datetime.now(timezone.utc)


def coverage_row(source: str, item: str, status: str, detail: str | None = None, *, epoch: int | None = None,
                 url: str | None = None, height: int | None = None,
                 fetched_at: datetime | None = None) -> dict[str, Any]:
    """One row of the ``coverage`` table (queries/schema/001_core.sql)."""
    return {"source": source, "epoch": epoch, "item": item, "status": status, "detail": detail,
            "source_url": url, "height": height, "fetched_at": fetched_at or utcnow()}


_NAME_RE = re.compile(r"^[a-z0-9_/]+$")


# the views over the logs kept as tables, as the progress names them (no table names)
KEPT_WORDS = {"attempts": "requests and attempts", "log_attempts": "attempts", "log_requests": "requests",
              "log_ghosts": "ghost slots", "log_host_lines": "lines per host", "log_host_labels": "host labels",
              "log_participants": "participant addresses", "hedge_attempts": "hedged attempts",
              "hedge_races": "hedged races", "hedge_priors": "hosts' earlier speeds"}


class Store:
    """A DuckDB connection with the project's schema applied."""

    def __init__(self, path: str | Path, *, read_only: bool = False, progress: Any = None) -> None:
        """``progress`` (``auditor.progress.Progress``) shows the store's own long work: line
        tables catching up with an older store's log, a kept derived table being worked out."""
        self.path = str(path)
        self.progress = progress
        try:
            self.path.encode("utf-8")
        except UnicodeEncodeError:
            shown = os.fsencode(self.path).decode("utf-8", "backslashreplace")
            raise UsageError(f"--db {shown}: the path is not UTF-8, which DuckDB cannot open; "
                             "rename it or give another --db") from None
        check_store(self.path)         # a regular file or a new path, on this machine (issue 35)
        if self.path != ":memory:":
            note = store_convert.recover(self.path)   # what an interrupted conversion left beside it
            if note and progress is not None:
                progress.log(note)
            p = Path(self.path)
            if not read_only:
                p.parent.mkdir(parents=True, exist_ok=True)
            elif not p.exists():
                raise StoreError(f"no database at {p}; run `auditor collect` first")
        self.threads = thread_count()      # with more than one, an epoch report runs two analyses at once
        self.memory_limit = memory_limit()  # both checked before the store is opened
        self._open(read_only)
        self.read_only = read_only
        self._in_tx = False
        self._types: dict[str, dict[str, str]] = {}
        # how often each named query ran (by name), each SQL text an analysis ran ("sql:<text>")
        # and each derived table was built ("derived:<view>"; "refreshed:<view>" when brought up
        # to date rather than worked out whole) on this connection: tests check
        # that a run does its work once
        self.executed: Counter[str] = Counter()
        self._counting = threading.Lock()            # executed is shared with this store's workers
        self._shadowed: Counter[str] = Counter()     # views read from their derived tables (derived)
        # view -> the log_events row counts its last refresh on this connection went from and to
        self._refreshed: dict[str, tuple[int, int] | None] = {}
        self._changed: tuple[int, int] | None = None   # the same, of queries/refresh/changed.sql's tables
        if not read_only:
            try:
                if pending := self.pending_conversion():
                    store_convert.convert(self, pending)
                self.migrate()
                self.create_lines()
                self.create_views()
                self.keep_lines()
            except BaseException:
                self.con.close()
                raise
        elif self._one("SELECT 1 FROM duckdb_tables() WHERE table_name = 'schema_migrations'"):
            self._refuse_newer(self._applied(), _migration_files())

    def _open(self, read_only: bool) -> None:
        """Connect to the store's file, in UTC and within the resource limits."""
        try:
            self.con = _connect(self.path, read_only)
        except duckdb.IOException as exc:  # another process holds the write lock
            msg = str(exc)
            if "lock" in msg.lower():
                # the holder may be any DuckDB client; name it as DuckDB does ("held in PROG (PID N)")
                holder = re.search(r"held in (.+?) \(PID (\d+)\)", msg)
                who = f" ({Path(holder[1]).name}, PID {holder[2]})" if holder else ""
                raise StoreError(
                    f"the database {self.path} is locked by another process{who}; "
                    "wait for it to finish or use another --db"
                ) from exc
            raise StoreError(f"cannot open the database {self.path}: {msg.splitlines()[0]}") from exc
        except duckdb.Error as exc:
            raise StoreError(f"cannot open the database {self.path}: {str(exc).splitlines()[0]}") from exc
        opened_store(self.path)            # no output is written over it
        _in_utc(self.con)
        self._limit_resources()

    def reopen(self) -> None:
        """Close the connection and open the store's file again (a conversion gave it a new file)."""
        self.con.close()
        self._types.clear()
        self._open(False)

    def pending_conversion(self) -> list[store_convert.Migration] | None:
        """The pending migrations, when one converts the store into a new file (store_convert)."""
        if self.path == ":memory:" or not self._one(
                "SELECT 1 FROM duckdb_tables() WHERE table_name = 'schema_migrations'"):
            return None
        return store_convert.pending_conversion(self._applied(), _migration_files())

    def refuse_unconverted(self) -> None:
        """For a command that reads the store opened read-only, by the current layout: a store that
        needs converting is one line (exit 3) saying what converts it, not a query failing on it."""
        if pending := self.pending_conversion():
            raise StoreError(f"the database {self.path} is an older auditor's store: {store_convert.describe(pending)}, "
                             "which a command that writes to the store does (auditor collect, auditor epoch): "
                             "run one first")

    def _limit_resources(self) -> None:
        """DuckDB's share of the machine, set rather than left to its defaults (80% of the RAM,
        a thread per core of the host): at most limits.MEMORY_LIMIT for its buffers (beyond it,
        large joins and aggregates spill to ``<db>.tmp``), so that DuckDB's part of a command
        over a busy day is bounded whatever the machine's RAM; threads, ``thread_count()``.
        ``$AUDITOR_MEMORY_LIMIT`` (a DuckDB size, e.g. ``4GB``) overrides the first."""
        try:
            # values, not SQL: bound as parameters
            self.con.execute("SET memory_limit = ?", [self.memory_limit])
            self.con.execute("SET threads = ?", [self.threads])
        except duckdb.Error as exc:
            self.con.close()
            raise UsageError(f"AUDITOR_MEMORY_LIMIT / AUDITOR_THREADS: {str(exc).splitlines()[0]}") from exc

    # -- schema -------------------------------------------------------------
    def migrate(self) -> list[str]:
        """Apply every migration not yet applied, each in its own transaction."""
        self.con.execute(
            "CREATE TABLE IF NOT EXISTS schema_migrations ("
            " version INTEGER PRIMARY KEY, name VARCHAR NOT NULL, applied_at TIMESTAMPTZ NOT NULL)"
        )
        done = self._applied()
        files = _migration_files()
        self._refuse_newer(done, files)
        applied = []
        for f in files:
            version = int(f.name[:3])
            if version in done:
                continue
            try:
                with self.transaction():
                    self.con.execute(f.read_text(encoding="utf-8"))
                    self.con.execute(
                        "INSERT INTO schema_migrations VALUES (?, ?, ?)", [version, f.stem, utcnow()]
                    )
            except duckdb.Error as exc:   # rolled back whole: the store is as it was (one line, what helps)
                raise StoreError(f"cannot apply the schema migration queries/schema/{f.name}: "
                                 f"{str(exc).splitlines()[0]}") from exc
            applied.append(f.stem)
        return applied

    def _refuse_newer(self, done: set[int], files: list[Path]) -> None:
        """A store migrated by a newer auditor has tables this one does not know the shape
        of (its inserts would fail on a column count, or worse, succeed wrongly)."""
        known = max((int(f.name[:3]) for f in files), default=0)
        if done and max(done) > known:
            raise StoreError(f"the database {self.path} was made by a newer auditor (schema version {max(done)}; "
                             f"this one knows up to {known}): upgrade auditor, or use another --db")

    def create_lines(self) -> None:
        """Define the line tables (queries/lines/): a table whose definition changed since it
        was made is made again, empty (``keep_lines`` fills it); those no longer defined are
        dropped. lines_state records each one's definition and how many log_events rows it
        has read."""
        files = line_tables()
        built = dict(self.con.execute("SELECT name, digest FROM lines_state").fetchall())
        digests = {name: _digest(sql) for name, sql in files.items()}
        if built == digests:
            return
        with self.transaction():
            for name, sql in files.items():
                if built.get(name) == digests[name]:
                    continue
                # a view of that name (a store from before it was a line table) makes way
                if self._one("SELECT 1 FROM duckdb_views() WHERE schema_name = 'main' AND view_name = ?", [name]):
                    self.con.execute(f"DROP VIEW main.{name}")
                try:
                    self.con.execute(f"CREATE OR REPLACE TABLE main.{name} AS SELECT * FROM ({sql}) LIMIT 0")
                except duckdb.Error as exc:
                    raise StoreError(f"cannot define the line table of queries/lines/{name}.sql: "
                                     f"{str(exc).splitlines()[0]}") from exc
                self.replace("lines_state", {"name": name}, [{"name": name, "digest": digests[name], "rows_read": 0}])
            for name in set(built) - set(files):
                self.con.execute(f"DROP TABLE IF EXISTS main.{name}")
                self.con.execute("DELETE FROM lines_state WHERE name = ?", [name])

    def keep_lines(self) -> int:
        """Bring every line table up to date with log_events: read the rows added since it
        last read (log_events only grows, rows in the order stored: see 009), in one
        transaction. Returns the log_events rows read (0 when all were up to date). Collecting
        gateway logs calls it at the end; every opening of the store for writing, too (a store
        collected by an older auditor, or a collect stopped before that step)."""
        total = self._one("SELECT count(*) FROM log_events")[0]
        behind = self.con.execute("SELECT name, rows_read FROM lines_state WHERE rows_read < ?", [total]).fetchall()
        if not behind or self.read_only:
            return 0
        files = line_tables()
        rows = total - min(r for _, r in behind)
        with self._step(f"indexing {rows:,} stored log lines"), self.transaction():
            for name, rows_read in behind:
                self._count(f"lines:{name}")
                # NOT MATERIALIZED: a definition that reads log_events twice (a UNION ALL)
                # would otherwise copy every new row into a temporary result first
                self.con.execute(f"INSERT INTO main.{name} SELECT * FROM (WITH log_events AS NOT MATERIALIZED "
                                 f"(SELECT * FROM main.log_events WHERE rowid >= {int(rows_read)}) {files[name]})")
                self.con.execute("UPDATE lines_state SET rows_read = ? WHERE name = ?", [total, name])
        return rows

    # -- the gateway log's lines, by time (auditor prune) --------------------------------
    def log_line_tables(self) -> list[str]:
        """The tables that hold the gateway log's lines, one row a line with its time in ``ts``
        (NULL: the line had none): what ``drop_lines_before`` deletes from, by one rule. Today
        log_events and the line tables (queries/lines/), each line in both."""
        return ["log_events", *line_tables()]

    def drop_lines_before(self, cutoff: datetime) -> tuple[dict[str, int], list[str]]:
        """Delete the gateway log's lines timed before ``cutoff`` from every table that holds
        them (``log_line_tables``; a line without a time stays), in one transaction with what
        depends on them: the kept derived tables are forgotten (``forget_derived``: the next
        analysis works them out from the lines left) and the line tables' bookkeeping is
        brought in step (``lines_deleted``). Then a CHECKPOINT, so that the freed blocks are
        reused by the next collect. log_files, log_rejects and their samples stay (a file's
        read position stays, so collecting it again reads none of the dropped lines back).
        The rows deleted per table, and the kept tables forgotten; when no row is deleted,
        nothing else is done."""
        self.keep_lines()       # the line tables have read all of log_events (lines_deleted counts on it)
        forgotten: list[str] = []
        with self._step(f"dropping the log lines timed before {utc_text(cutoff)}"), self.transaction():
            dropped = {t: self._one(f"DELETE FROM main.{t} WHERE ts < ?", [cutoff])[0]
                       for t in self.log_line_tables()}
            if any(dropped.values()):
                forgotten = self.forget_derived()
                self.lines_deleted()
        if any(dropped.values()):
            self.con.execute("CHECKPOINT")
        return dropped, forgotten

    def lines_deleted(self) -> None:
        """The bookkeeping over log_events' rows, in step again after rows were deleted from it
        (in the caller's transaction). It counts rows and reads the new ones by rowid
        (lines_state.rows_read, derived_state.log_events, queries/refresh/: ``rowid >= count``),
        which holds while the rowids are 0..count-1 in the order stored; a DELETE leaves gaps,
        and DuckDB's checkpoint renumbers some rows. So log_events is written again, the same
        rows in the same order (its DDL as the store has it), and every line table has then
        read all of it (they were up to date, and lost the same lines)."""
        ddl = self._one("SELECT sql FROM duckdb_tables() WHERE schema_name = 'main' AND table_name = 'log_events'")[0]
        packed, n = re.subn(r"^CREATE TABLE (main\.)?log_events\s*\(", "CREATE TABLE main.log_events_packed(", ddl)
        if n != 1:
            raise StoreError(f"cannot read the definition of log_events in {self.path}: {ddl[:80]!r}")
        with self.transaction():
            self.con.execute(packed)
            self.con.execute("INSERT INTO main.log_events_packed SELECT * FROM main.log_events")   # in rowid order
            self.con.execute("DROP TABLE main.log_events")
            self.con.execute("ALTER TABLE main.log_events_packed RENAME TO log_events")
            self.con.execute("UPDATE lines_state SET rows_read = (SELECT count(*) FROM main.log_events)")

    def forget_derived(self) -> list[str]:
        """Drop every kept derived table (``derived``) and its derived_state row, so that the
        next analysis works it out again from the lines the store holds: after lines were
        deleted its rows are of lines no longer there. The views it forgot, by name."""
        if any(self._shadowed.values()):
            raise StoreError("the kept tables cannot be forgotten while an analysis reads them")
        tables = {t for (t,) in self.con.execute(
            "SELECT table_name FROM duckdb_tables() WHERE schema_name = 'main' AND table_name LIKE 'derived\\_%' "
            "ESCAPE '\\' AND table_name <> 'derived_state'").fetchall()}
        names = sorted({n for (n,) in self.con.execute("SELECT name FROM derived_state").fetchall()}
                       | {t.removeprefix("derived_") for t in tables})
        with self.transaction():
            for name in names:
                _check_name(name)
                self.con.execute(f"DROP TABLE IF EXISTS main.derived_{name}")
            self.con.execute("DELETE FROM derived_state")
        self._refreshed.clear()         # what this connection refreshed is gone with them
        self._changed = None
        return names

    def create_views(self) -> None:
        """Define every view of ``queries/views/`` (when their text changed since the last
        time) and drop views that are no longer defined there. A view that reads another
        (its file names it) is defined after it."""
        files = _sql_files("views")
        digest = _views_digest()
        self.con.execute("CREATE TABLE IF NOT EXISTS schema_views (digest VARCHAR NOT NULL)")
        if self._one("SELECT digest FROM schema_views") == (digest,):
            return
        with self.transaction():
            for name in _dependency_order(files):
                try:
                    self.con.execute(files[name])
                except duckdb.Error as exc:
                    raise StoreError(f"cannot define the view in queries/views/{name}.sql: "
                                     f"{str(exc).splitlines()[0]}") from exc
            for (name,) in self.con.execute(
                    "SELECT view_name FROM duckdb_views() WHERE NOT internal AND schema_name = 'main'").fetchall():
                if name not in files:
                    self.con.execute(f'DROP VIEW "{name}"')
            self.con.execute("DELETE FROM schema_views")
            self.con.execute("INSERT INTO schema_views VALUES (?)", [digest])

    # -- derived tables -------------------------------------------------------
    @contextmanager
    def derived(self, *views: str) -> Iterator[None]:
        """Within the block, each of ``views`` (views of queries/views/ over the gateway logs; a
        later one may read an earlier) is read from a table of its rows kept in the store,
        ``derived_<view>``, instead of being worked out again. The table is brought up to date
        first when log_events has gained rows since it was built, and built again when the
        definitions changed (derived_state). Working out a busy day's attempts takes seconds;
        they change only when logs are collected. Blocks nest: a view already read from its table stays so
        until the outermost block that asked for it ends."""
        stamp = None          # asked once, and only when a view is not read from its table yet
        entered: list[str] = []
        try:
            for view in views:
                _check_name(view)
                if not self._shadowed[view]:
                    stamp = stamp or self._stamp()
                    self._build_derived(view, stamp)
                    self._read_from_kept(view)
                self._shadowed[view] += 1
                entered.append(view)
            yield
        finally:
            for view in reversed(entered):
                self._shadowed[view] -= 1
                if not self._shadowed[view]:
                    self.con.execute(f"DROP VIEW IF EXISTS temp.{view}")

    def read_kept(self) -> None:
        """Read each view whose kept table is up to date (built from the store's definitions
        of the views, over every stored log line) from that table, as ``derived`` does, but
        build none: for `auditor sql`, whose store is read-only, so that a busy day's
        ``hedge_races`` is its kept rows rather than the views under it worked out over the
        whole log again. A view whose table is missing or behind is worked out as usual."""
        tables = {t for (t,) in self.con.execute("SELECT table_name FROM duckdb_tables() WHERE schema_name = 'main'")
                  .fetchall()}
        if not {"derived_state", "schema_views"} <= tables or not self._one("SELECT 1 FROM schema_views"):
            return              # a store no auditor that keeps tables has written to
        kept = [name for (name,) in self.con.execute(
            "SELECT name FROM derived_state WHERE views_digest = ? AND log_events = ? ORDER BY name",
            list(self._stamp())).fetchall() if f"derived_{name}" in tables]
        for view in kept:
            _check_name(view)
            self._read_from_kept(view)
            self._shadowed[view] += 1

    def _read_from_kept(self, view: str) -> None:
        # a temporary view of the same name is found before main's
        self.con.execute(f"CREATE OR REPLACE TEMP VIEW {view} AS SELECT * FROM main.derived_{view}")

    def _stamp(self) -> tuple[str, int]:
        """What a kept table is up to date at: the views' definitions (their digest) and the
        log_events rows it has read."""
        return self._one("SELECT digest FROM schema_views")[0], self._one("SELECT count(*) FROM log_events")[0]

    def _build_derived(self, view: str, stamp: tuple[str, int]) -> None:
        """(Re)build ``derived_<view>`` unless derived_state says it was built at ``stamp``:
        brought up to date with the lines stored since (``_refresh_script``), or worked out
        whole."""
        table = f"derived_{view}"
        built = self._one("SELECT views_digest, log_events FROM derived_state WHERE name = ?", [view])
        exists = self._one("SELECT 1 FROM duckdb_tables() WHERE schema_name = 'main' AND table_name = ?", [table])
        if built == stamp and exists:
            return
        since = built[1] if exists and built is not None and built[0] == stamp[0] else None
        script = self._refresh_script(view, since, stamp)
        self._count(f"derived:{view}")
        if script is not None:
            self._count(f"refreshed:{view}")
        noun = KEPT_WORDS.get(view, view.replace("_", " "))
        what = (f"bringing the logs' {noun} up to date with {stamp[1] - since:,} new log lines" if script is not None
                else f"working out the logs' {noun}")
        try:
            with self._step(f"{what} (kept until more log is collected)"), self.transaction():
                if script is not None:
                    self._refresh(script, since, stamp[1])
                else:
                    self.con.execute(f"CREATE OR REPLACE TABLE main.{table} AS SELECT * FROM main.{view}")
                self.replace("derived_state", {"name": view}, [{"name": view, "views_digest": stamp[0],
                                                                "log_events": stamp[1], "built_at": utcnow()}])
        except BaseException:
            self._changed = None        # its temporary tables went with the transaction
            raise
        finally:
            self._drop_made(script or "", keep=f"refresh_{view}_before")
        self._refreshed[view] = (since, stamp[1]) if script is not None else None

    def _refresh_script(self, view: str, since: int | None, stamp: tuple[str, int]) -> str | None:
        """How to bring ``derived_<view>``, built from the same definitions at ``since`` rows of
        log_events, up to date: ``queries/refresh/<view>.sql``, when there is one. Only the rows
        the new lines can change are worked out again, so a daily collect into a store of many
        days costs the day, not the store. The kept tables it reads ({store}.derived_<other>)
        are brought up to date first. None (work it out whole) without a table to refresh, when
        the new lines are as many as those it was built from (the whole is then as quick), and
        when the script reads the rows another refresh replaced (refresh_<other>_before) but
        that refresh did not just run over the same lines on this connection."""
        if since is None or stamp[1] - since >= since or view not in _refresh_scripts():
            return None
        script = _refresh_scripts()[view]
        for other in dict.fromkeys(re.findall(r"\{store\}\.derived_(\w+)", script)):
            if other != view:
                self._build_derived(other, stamp)
        before = [o for o in re.findall(r"\brefresh_(\w+)_before\b", script) if o != view]
        return None if any(self._refreshed.get(o) != (since, stamp[1]) for o in before) else script

    def _drop_made(self, script: str, keep: str) -> None:
        """Drop the temporary tables and views ``script`` made, but ``keep`` (rows a later
        refresh reads); a view read from its kept table (``derived``) is made so again."""
        for kind, name in dict.fromkeys(re.findall(r"CREATE OR REPLACE TEMP (VIEW|TABLE) (\w+)", script)):
            if kind == "TABLE" and name != keep:
                self.con.execute(f"DROP TABLE IF EXISTS temp.{name}")
            elif kind == "VIEW":
                self.con.execute(f"DROP VIEW IF EXISTS temp.{name}")
                if self._shadowed[name]:
                    self.con.execute(f"CREATE OR REPLACE TEMP VIEW {name} AS SELECT * FROM main.derived_{name}")

    def _refresh(self, script: str, since: int, until: int) -> None:
        """Run a refresh script of queries/refresh/ over the log lines from rowid ``since`` on
        (``until`` rows in all), after ``changed`` (run once for every refresh of the same lines)."""
        # {store}: the store's own tables, named in full (main.x would find the temporary view
        # x of the same name first)
        store = '"' + self._one("SELECT current_database()")[0].replace('"', '""') + '".main'

        def run(sql: str) -> None:
            self.con.execute(sql.replace("{since}", str(int(since))).replace("{store}", store))

        if self._changed != (since, until):
            run(_refresh_scripts()["changed"])
            self._changed = (since, until)
        run(script)

    def _step(self, what: str):
        """A step of the store's own long work, shown by its ``progress`` when it has one."""
        return self.progress.task(what, None) if self.progress is not None else nullcontext()

    @contextmanager
    def registered(self, name: str, table: Any) -> Iterator[None]:
        """Make an Arrow table (or data frame) queryable as ``name`` for the block."""
        self.con.register(name, table)
        try:
            yield
        finally:
            try:
                self.con.unregister(name)
            except duckdb.Error:
                pass  # an aborted transaction refuses even this; the caller rolls back

    # -- transactions ---------------------------------------------------------
    @contextmanager
    def transaction(self) -> Iterator[duckdb.DuckDBPyConnection]:
        """One transaction; a nested call joins the outer one."""
        if self._in_tx:
            yield self.con
            return
        self.con.execute("BEGIN TRANSACTION")
        self._in_tx = True
        try:
            yield self.con
        except BaseException:
            try:
                self.con.execute("ROLLBACK")
            except duckdb.Error:
                # closed first (a Ctrl-C that ended the run before this block was left):
                # DuckDB dropped the transaction with the connection
                pass
            raise
        else:
            try:
                self.con.execute("COMMIT")
            except (duckdb.IOException, duckdb.TransactionException) as exc:
                # a full disk or a failing one: nothing of the transaction was stored
                raise StoreError(f"cannot write the database {self.path}: {str(exc).splitlines()[0]}") from exc
        finally:
            self._in_tx = False

    def replace(
        self,
        table: str,
        where: Mapping[str, Any],
        rows: Sequence[Mapping[str, Any]],
    ) -> int:
        """Delete the rows of ``table`` matching ``where`` and insert ``rows``.

        Call inside ``transaction()`` to make several replacements atomic together;
        on its own it is one transaction.
        """
        _check_name(table)
        with self.transaction():
            if where:
                cond = " AND ".join(f'"{k}" IS NOT DISTINCT FROM ?' for k in where)
                self.con.execute(f"DELETE FROM {table} WHERE {cond}", list(where.values()))
            return self.insert(table, rows)

    def put_coverage(self, row: dict[str, Any]) -> None:
        """Record one coverage row, replacing the earlier one for the same source, epoch and item."""
        self.replace("coverage", {k: row[k] for k in ("source", "epoch", "item")}, [row])

    def insert(self, table: str, rows: Sequence[Mapping[str, Any]]) -> int:
        """Insert dict rows in one statement. Columns are typed from the table itself:
        types Arrow has no exact match for (HUGEINT, DECIMAL, lists) travel as text and
        DuckDB casts them, so 64-bit counts and decimals arrive exactly; timestamps are
        taken as UTC when naive. Many rows go through Arrow (executemany is far too slow for
        thousands), a few as parameters (no Arrow to import: a quick run stays quick). A
        row missing a column inserts NULL. Joins an open transaction."""
        if not rows:
            return 0
        _check_name(table)
        types = self.column_types(table)
        cols: list[str] = []
        for r in rows:
            for k in r:
                if k not in cols:
                    cols.append(k)
        if unknown := [c for c in cols if c not in types]:
            raise ValueError(f"{table} has no column {unknown[0]}")
        as_text = {c for c in cols if types[c].upper() not in _ARROW_TYPES}
        columns = [[_utc(r.get(c)) if c not in as_text else (None if r.get(c) is None else _as_text(r[c]))
                    for r in rows] for c in cols]
        select = ", ".join(f'CAST("{c}" AS {types[c]})' if c in as_text else f'"{c}"' for c in cols)
        col_sql = ", ".join(f'"{c}"' for c in cols)
        if len(rows) <= SMALL_INSERT and not any(types[c].upper().startswith("MAP") for c in cols):
            marks = ", ".join(f"CAST(? AS {types[c]})" if c in as_text else "?" for c in cols)
            self.con.executemany(f"INSERT INTO {table} ({col_sql}) VALUES ({marks})", list(zip(*columns)))
            return len(rows)
        import pyarrow as pa

        arrays = {c: pa.array(v, type=pa.string() if c in as_text else _arrow_type(pa, _ARROW_TYPES[types[c].upper()]))
                  for c, v in zip(cols, columns)}
        name = f"_insert_{table}"
        with self.registered(name, pa.table(arrays)):
            self.con.execute(f"INSERT INTO {table} ({col_sql}) SELECT {select} FROM {name}")
        return len(rows)

    def column_types(self, table: str) -> dict[str, str]:
        if table not in self._types:
            self._types[table] = dict(self.con.execute(
                "SELECT column_name, data_type FROM information_schema.columns WHERE table_name = ?",
                [table]).fetchall())
            if not self._types[table]:
                raise StoreError(f"no table {table} in the store")
        return self._types[table]

    def key_columns(self, table: str) -> list[str]:
        """The columns of ``table``'s primary key ([] without one)."""
        row = self.con.execute("SELECT constraint_column_names FROM duckdb_constraints() WHERE table_name = ? "
                               "AND constraint_type = 'PRIMARY KEY'", [table]).fetchone()
        return list(row[0]) if row else []

    # -- named queries ----------------------------------------------------------
    def query(self, name: str, **params: Any) -> list[dict[str, Any]]:
        """Run ``queries/<name>.sql`` with ``$param`` placeholders; rows as dicts."""
        _check_name(name)
        path = queries_dir() / f"{name}.sql"
        if not path.is_file():
            raise StoreError(f"no query file queries/{name}.sql")
        self._count(name)
        return self._rows(path.read_text(encoding="utf-8"), params)

    # SQL run as text (not a file of queries/) counts in ``executed`` under its text; the
    # store's own bookkeeping (migrations, view digests, derived tables) does not
    def one(self, sql: str, params: Sequence[Any] | None = None) -> tuple | None:
        """The first row of a query, or None. Reads the result to its end: DuckDB refuses
        further work on a connection whose last result was not fully fetched."""
        self._count(_sql_key(sql))
        return self._one(sql, params)

    def rows(self, sql: str, params: Mapping[str, Any] | Sequence[Any] | None = None) -> list[dict[str, Any]]:
        self._count(_sql_key(sql))
        return self._rows(sql, params)

    def cursor(self, sql: str) -> duckdb.DuckDBPyConnection:
        """``sql`` run, its rows not fetched (``auditor sql`` takes them a chunk at a time)."""
        self._count(_sql_key(sql))
        return self.con.execute(sql)

    @classmethod
    def for_query(cls, path: str | Path, *, files: bool = False, progress: Any = None) -> "Store":
        """The store as ``auditor sql`` reads it: read-only, locked down (``lock_down``), the
        views whose kept tables are up to date read from them (``read_kept``). An older
        auditor's store (``behind``) is brought up to date first, as every command that writes
        to it does (its migrations, views and line tables), and ``progress`` says so; when it
        cannot be (a read-only file, another process writing), it is read as it is, and that
        is said. A store that needs converting into a new file (store_convert) is read as it is,
        and that is said: the conversion rewrites the store, which a query does not."""
        store = cls(path, read_only=True, progress=progress)   # it says what it recovered
        try:
            behind = store.behind()
            if behind and store.pending_conversion():
                # converting rewrites the whole store into a new file: a command that writes does it
                if progress is not None:
                    progress.log(f"{path} is an older auditor's store ({behind}): `auditor sql` does not convert "
                                 "it, a command that writes to the store does (auditor collect, auditor epoch); "
                                 "it is read as it is, and the tables and views it lacks will not be found")
            elif behind:
                store.close()
                try:
                    cls(path, progress=progress).close()
                    note = f"{path} was an older auditor's store ({behind}): brought up to date first"
                except (StoreError, UsageError) as exc:
                    note = (f"{path} is an older auditor's store ({behind}) and could not be brought up to date "
                            f"({exc}): the tables and views it lacks will not be found")
                if progress is not None:
                    progress.log(note)
                store = cls(path, read_only=True)
            store.read_kept()
            store.lock_down(files=files)
        except BaseException:
            store.close()
            raise
        return store

    def lock_down(self, *, files: bool = False) -> None:
        """For ``auditor sql``, on a store opened read-only: no file other than the store is
        read or written (DuckDB's ``enable_external_access`` off: COPY … TO, read_text,
        read_csv, ATTACH, EXPORT, extensions), unless ``files``; and no setting can be changed
        afterwards (``lock_configuration``), so that the query's own SET cannot undo it, nor
        lift the memory limit."""
        if not files:
            self.con.execute("SET enable_external_access = false")
        self.con.execute("SET lock_configuration = true")

    def behind(self) -> str | None:
        """What makes a store an older auditor's (schema versions not applied, views of older
        definitions): what a command that writes to it brings up to date. None when current,
        and for a DuckDB file no auditor made (no schema_migrations): that is not ours to change."""
        tables = {t for (t,) in self.con.execute("SELECT table_name FROM duckdb_tables() WHERE schema_name = 'main'")
                  .fetchall()}
        if "schema_migrations" not in tables:
            return None
        done = self._applied()
        missing = [f.stem for f in _migration_files() if int(f.name[:3]) not in done]
        why = [f"schema migrations not applied: {', '.join(missing)}"] if missing else []
        if pending := store_convert.pending_conversion(done, _migration_files()):
            why.append(store_convert.describe(pending))
        if "schema_views" not in tables or self._one("SELECT digest FROM schema_views") != (_views_digest(),):
            why.append("views of an older auditor")
        return "; ".join(why) or None

    def _applied(self) -> set[int]:
        """The schema migrations applied to the store, by number (what migrate and behind compare)."""
        return {v for (v,) in self.con.execute("SELECT version FROM schema_migrations").fetchall()}

    def _count(self, key: str) -> None:
        with self._counting:
            self.executed[key] += 1

    def _one(self, sql: str, params: Sequence[Any] | None = None) -> tuple | None:
        rows = self.con.execute(sql, params or None).fetchall()
        return rows[0] if rows else None

    def _rows(self, sql: str, params: Mapping[str, Any] | Sequence[Any] | None = None) -> list[dict[str, Any]]:
        return self._table(sql, params)[1]

    def _table(self, sql: str, params: Mapping[str, Any] | Sequence[Any] | None) -> tuple[list[str], list[dict[str, Any]]]:
        """Columns, and rows as dicts. One ``execute``: the query is planned once (a relation,
        ``con.sql``, plans it to learn its columns and again to run it, a third of a small
        query's time over the views)."""
        cur = self.con.execute(sql, params or None)
        if cur.description is None:                      # not a query: nothing to fetch
            return [], []
        cols = [d[0] for d in cur.description]
        return cols, [dict(zip(cols, r)) for r in cur.fetchall()]

    @contextmanager
    def worker(self) -> Iterator[Store]:
        """This store on a connection of its own, for another thread to query while this one
        does (a DuckDB connection runs one query at a time): the same database and settings,
        the views this store reads from their kept tables read from them too, and the same
        ``executed`` counts. Meant for reading: the epoch report builds every kept table its
        analyses read before they start."""
        import copy

        w = copy.copy(self)
        w.con = interrupt.track(self.con.cursor())
        w._in_tx = False
        w._shadowed = Counter(self._shadowed)
        w._refreshed = dict(self._refreshed)
        try:
            _in_utc(w.con)
            for view, n in self._shadowed.items():
                if n:
                    w._read_from_kept(view)
            yield w
        finally:
            w.con.close()

    def close(self) -> None:
        self.con.close()

    def __enter__(self) -> "Store":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


# the DuckDB column types that Arrow carries exactly, by pyarrow type name (the others
# travel as text and are cast)
_ARROW_TYPES = {
    "BIGINT": "int64", "INTEGER": "int32", "SMALLINT": "int16", "UBIGINT": "uint64", "UINTEGER": "uint32",
    "VARCHAR": "string", "JSON": "string", "BOOLEAN": "bool_", "DOUBLE": "float64",
    "TIMESTAMP WITH TIME ZONE": "timestamp_utc", "MAP(VARCHAR, VARCHAR)": "map_string",
}


def _arrow_type(pa, name: str):
    if name == "timestamp_utc":
        return pa.timestamp("us", tz="UTC")
    if name == "map_string":
        return pa.map_(pa.string(), pa.string())
    return getattr(pa, name)()


SMALL_INSERT = 64


HEADER_BYTES = 12_288      # a DuckDB file's headers: all a new store holds before its first block


def _connect(path: str, read_only: bool) -> duckdb.DuckDBPyConnection:
    """``duckdb.connect``. A store whose making was cut off (the process killed while DuckDB
    wrote its headers) is an empty file or DuckDB's first header alone, which DuckDB refuses
    for good; it holds nothing, and opened for writing it is made anew. Any other file DuckDB
    refuses is left as it is, and so is anything that is not a regular file (a device, a FIFO:
    never removed). A symbolic link to the store stays one: the file it leads to is made anew."""
    try:
        return interrupt.track(duckdb.connect(path, read_only=read_only))
    except duckdb.IOException:
        if read_only or not _making_cut_off(path):
            raise
    real = os.path.realpath(path)
    if not stat.S_ISREG(os.lstat(real).st_mode):
        raise StoreError(f"cannot open the database {path}: not a regular file")
    os.remove(real)
    return interrupt.track(duckdb.connect(path))


def _making_cut_off(path: str) -> bool:
    try:
        mode, head = read_regular(path, HEADER_BYTES)     # a FIFO put there since: not waited on
    except OSError:
        return False
    return stat.S_ISREG(mode) and len(head) < HEADER_BYTES and (not head or head[8:12] == b"DUCK")


def _in_utc(con: duckdb.DuckDBPyConnection) -> None:
    """Times come back, and date_trunc buckets them, in UTC whatever the machine's zone: a
    setting of each connection (a cursor starts from the machine's zone)."""
    con.execute("SET TimeZone = 'UTC'")


def thread_count() -> int:
    """The threads DuckDB may use: ``$AUDITOR_THREADS`` (a whole number, 1 or more), else the
    CPUs this process may run on (a container's cpuset, not the host's cores)."""
    given = os.environ.get("AUDITOR_THREADS")
    if given:
        if not given.strip().isdigit() or int(given) < 1:
            raise UsageError(f"AUDITOR_THREADS={given!r}: give a whole number of threads, 1 or more")
        return int(given)
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:                  # not Linux
        return os.cpu_count() or 1


# a size as DuckDB's memory_limit reads it, and only that: a positive number and a unit
_SIZE = re.compile(r"\s*([0-9]+(?:\.[0-9]+)?)\s*(?:[KMGT]i?B)\s*", re.IGNORECASE)


def memory_limit() -> str:
    """The memory DuckDB may use for its buffers (``limits.memory_limit``: ``$AUDITOR_MEMORY_LIMIT``,
    else limits.MEMORY_LIMIT), checked: a positive size, a number and KB, MB, GB, TB or KiB … TiB. A
    value DuckDB would read otherwise (``-1GB`` lifts the limit) is a usage error; it is never
    part of SQL's text."""
    given = limits.memory_limit()
    m = _SIZE.fullmatch(given)
    if not m or float(m[1]) <= 0:
        raise UsageError(f"AUDITOR_MEMORY_LIMIT={given!r}: give a size such as 4GB "
                         "(a number above 0 and KB, MB, GB, TB, KiB, MiB, GiB or TiB)")
    return given.strip()


def _as_text(v: Any) -> str:
    if isinstance(v, (list, tuple, dict)):
        return json.dumps(v, default=str)
    return str(v)


def _views_digest() -> str:
    """The digest of the views' definitions (queries/views/). The line tables the views read
    count too, and how their kept tables are brought up to date: a derived table follows all
    three (derived_state), and is built whole again when one changes."""
    return hashlib.sha256(json.dumps([_sql_files("views"), line_tables(), _refresh_scripts()], sort_keys=True)
                          .encode()).hexdigest()


def _dependency_order(views: Mapping[str, str]) -> list[str]:
    """View names ordered so that each comes after the views its SQL names."""
    words = {name: set(re.findall(r"\w+", sql)) & (set(views) - {name}) for name, sql in views.items()}
    order: list[str] = []
    while words:
        ready = sorted(n for n, deps in words.items() if not deps - set(order))
        if not ready:
            raise StoreError("the views in queries/views/ read each other in a cycle: " + ", ".join(sorted(words)))
        order.extend(ready)
        for n in ready:
            del words[n]
    return order


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def _sql_key(sql: str) -> str:
    """How ``Store.executed`` names SQL run as text (``one``, ``rows``): ``sql:`` and the text."""
    return "sql:" + " ".join(sql.split())


def _check_name(name: str) -> None:
    if not _NAME_RE.match(name):
        raise ValueError(f"bad table or query name {name!r}")
