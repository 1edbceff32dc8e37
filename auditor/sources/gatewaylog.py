"""Gateway log ingestion: ``auditor collect --gateway-log PATH`` (docs: gateway-logs.md).

Reads devshardctl logs (plain files, globs, ``.gz``, ``-`` for stdin) into the ``log_*``
tables of schema 003, incrementally:

* a plain file is identified by path, device/inode and the sha256 of its first bytes
  (up to 4 KiB); a second run reads only what was appended after the last complete line
  (``log_files.byte_offset``). A file whose inode or head changed (rotated) or that shrank
  below the offset (truncated) is read again from its start, its old rows replaced. A
  rotated file that moved to another path given in the same run (``app.log`` ->
  ``app.log.1``) keeps its rows and is continued there. A last line without its newline
  waits for the next run.
* a ``.gz`` file is read whole, and again only when it changed (size, mtime, inode, head).
* stdin is spooled to a temporary file and identified by the sha256 of its content: the
  same content is never stored twice.

Blocks of whole lines (8 MiB, read without copies) are parsed (:mod:`.gatewaylog_parse`:
the compiled tokenizer for the common text lines, polars and the line parser for the rest)
by two worker threads while this thread stores the results in order; rows, rejected-line
counts and the file's new position are committed together, four DuckDB row groups
(491,520 rows) per transaction, so an interrupted run resumes where the last commit stopped
and never stores a line twice. Memory stays flat whatever the file size.
Lines that are not gateway lines are counted per file and reason (``log_rejects``) with a
few samples (``log_reject_samples``); they are never fatal. A path that does not exist or
cannot be read is listed in the report's ``missing`` (the CLI then exits 3) and the other
files are still read.
"""

from __future__ import annotations

import bisect
import glob
import gzip
import hashlib
import os
import queue
import sys
import tempfile
import threading
import zlib
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any, BinaryIO, Callable

import duckdb

from ..errors import SourceError
from ..result import CollectReport
from ..progress import Progress
from ..store import Store, coverage_row, utcnow

SOURCE = "gateway_log"
BLOCK_SIZE = 8 << 20
ROWS_PER_COMMIT = 4 * 122_880    # whole DuckDB row groups per transaction (see _Ingest._stream)
SAMPLES_PER_FILE = 5         # rejected lines kept per file and reason
PARSE_WORKERS = 2
HEAD_BYTES = 4096            # a plain file's identity: sha256 of (up to) its first 4 KiB
MAX_LINE = 64 << 20          # a "line" longer than this is rejected (line_too_long), not buffered
STDIN = "-"
_GLOB_CHARS = set("*?[")



def _insert_events() -> str:
    """log_events rows of a parsed block (``_gw_block``): its codes (gatewaylog_parse's
    TS_SOURCE_CODES and FMT_CODES) as the table's ENUM values."""
    from .gatewaylog_parse import FMT_CODES, TS_SOURCE_CODES

    def case(col: str, codes: dict[str, int]) -> str:
        return f"CASE {col} " + " ".join(f"WHEN {c} THEN '{name}'" for name, c in codes.items()) + " END"

    return f"""
INSERT INTO log_events
SELECT ? AS file_id, line_no, byte_offset, ts, {case('src', TS_SOURCE_CODES)}, {case('fmt', FMT_CODES)},
       level, CASE WHEN is_stage THEN 'stage' ELSE 'event' END, name, request,
       escrow, nonce, nullif(host, ''), fields
FROM _gw_block
"""


@dataclass
class FileRec:
    """A log_files row."""

    file_id: int
    path: str
    kind: str
    device: int | None = None
    inode: int | None = None
    size: int | None = None
    mtime: datetime | None = None
    head_len: int = 0
    head_sha256: str | None = None
    content_sha256: str | None = None
    byte_offset: int = 0
    lines: int = 0
    events: int = 0
    rejected: int = 0
    complete: bool = False
    generation: int = 0
    first_read_at: datetime | None = None
    last_read_at: datetime | None = None


_COLS = list(FileRec.__dataclass_fields__)


@dataclass
class Target:
    path: str                 # absolute path, or '-' for stdin
    given: str                # as the user wrote it
    st: os.stat_result | None = None


def ingest(store: Store, paths: list[str], progress: Progress, *, block_size: int = BLOCK_SIZE,
           vectorised: bool = True) -> CollectReport:
    """Read the gateway logs ``paths`` (files, globs, ``.gz``, ``-`` for stdin) into the
    store; return the run report (rows loaded, lines rejected by reason, files skipped as
    unchanged, paths missing). ``vectorised=False`` parses line by line (tests only)."""
    report = CollectReport(source=SOURCE)
    targets, unresolved = resolve_paths(paths)
    ing = _Ingest(store, report, progress, block_size, vectorised)
    for given, why in unresolved:
        report.missing.append(f"{given}: {why}")
        ing.coverage(given, "missing", why)
    ing.relocate_moved(targets)
    for t in targets:
        try:
            if t.path == STDIN:
                ing.read_stdin(t, sys.stdin.buffer)
            else:
                ing.read_file(t)
        except OSError as exc:
            why = f"cannot read: {exc.strerror or exc}"
            report.missing.append(f"{t.given}: {why}")
            ing.coverage(t.given, "missing", why)
        except duckdb.Error as exc:
            raise SourceError(f"{t.given}: could not store what was read "
                              f"({str(exc).splitlines()[0]}); the file's earlier rows are kept") from exc
    if not report.loaded:
        report.loaded["log_events"] = 0
    if ing.parsed_bytes:
        from .gatewaylog_parse import compiled_note

        if note := compiled_note():
            report.notes.append(note)
    return report


def resolve_paths(paths: list[str]) -> tuple[list[Target], list[tuple[str, str]]]:
    """Expand globs and ``~``: the files to read (duplicates once), and (path, why) for
    each path that names no readable file."""
    out: list[Target] = []
    missing: list[tuple[str, str]] = []
    seen: set = set()            # paths, and (device, inode) so a file linked twice is read once
    for given in paths:
        given = str(given)
        if given == STDIN:
            if STDIN not in seen:
                seen.add(STDIN)
                out.append(Target(STDIN, given))
            continue
        p = os.path.expanduser(given)
        if _GLOB_CHARS & set(p):
            matches = sorted(m for m in glob.glob(p) if os.path.isfile(m))
            if not matches:
                missing.append((given, "no file matches"))
                continue
        else:
            if not os.path.exists(p):
                missing.append((given, "no such file"))
                continue
            if os.path.isdir(p):
                missing.append((given, f"is a directory; give files or a glob such as {given.rstrip('/')}/*.log"))
                continue
            matches = [p]
        for m in matches:
            a = os.path.abspath(m)
            if a in seen:
                continue
            seen.add(a)
            try:
                st = os.stat(a)
            except OSError as exc:
                missing.append((m, f"cannot read: {exc.strerror}"))
                continue
            if (st.st_dev, st.st_ino) in seen:
                continue
            seen.add((st.st_dev, st.st_ino))
            out.append(Target(a, m if m != p else given, st))
    return out, missing


def _is_gzip(path: str) -> bool:
    if path.endswith(".gz"):
        return True
    with open(path, "rb") as f:
        return f.read(2) == b"\x1f\x8b"


def _mtime(st: os.stat_result) -> datetime:
    return datetime.fromtimestamp(st.st_mtime_ns / 1e9, tz=timezone.utc)


def _sha(b: bytes) -> str:
    return hashlib.sha256(b).hexdigest()


def _read_head(path: str, n: int) -> bytes:
    with open(path, "rb") as f:
        return f.read(n)


class _Ingest:
    """One ingest run: the log_files records, and reading each kind of source."""

    def __init__(self, store: Store, report: CollectReport, progress: Progress, block_size: int,
                 vectorised: bool = True) -> None:
        self.vectorised = vectorised
        self.parsed_bytes = 0         # bytes handed to the parsers in this run
        self.store = store
        self.report = report
        self.progress = progress
        self.block_size = max(1024, int(block_size))
        rows = store.rows(f"SELECT {', '.join(_COLS)} FROM log_files")
        self.recs = {r["file_id"]: FileRec(**r) for r in rows}
        self.samples: dict[tuple[int, str], int] = {}   # (file, reason) seen this run -> samples stored

    # -- records ----------------------------------------------------------------------
    def by_path(self, path: str) -> FileRec | None:
        return next((r for r in self.recs.values() if r.path == path), None)

    def new_rec(self, path: str, kind: str) -> FileRec:
        fid = max(self.recs, default=0) + 1
        now = utcnow()
        rec = FileRec(fid, path, kind, first_read_at=now, last_read_at=now)
        self.recs[fid] = rec
        self.store.insert("log_files", [self._row(rec)])
        return rec

    def _row(self, rec: FileRec) -> dict[str, Any]:
        return {c: getattr(rec, c) for c in _COLS}

    def save(self, rec: FileRec) -> None:
        sets = ", ".join(f"{c} = ?" for c in _COLS[1:])
        self.store.con.execute(f"UPDATE log_files SET {sets} WHERE file_id = ?",
                               [getattr(rec, c) for c in _COLS[1:]] + [rec.file_id])

    def reset(self, rec: FileRec, why: str) -> None:
        """Forget what was read of ``rec`` (its rows) before reading it again from the start."""
        with self.store.transaction() as con:
            for t in ("log_events", "log_rejects", "log_reject_samples"):
                con.execute(f"DELETE FROM {t} WHERE file_id = ?", [rec.file_id])
            rec.byte_offset = rec.lines = rec.events = rec.rejected = 0
            rec.head_len, rec.head_sha256, rec.complete = 0, None, False
            rec.generation += 1
            self.save(rec)
        self.samples = {k: v for k, v in self.samples.items() if k[0] != rec.file_id}
        self.report.notes.append(f"{rec.path}: {why}; read again from the start (its earlier rows replaced)")

    def head_matches(self, rec: FileRec, path: str) -> bool:
        if not rec.head_len:
            return True
        return _sha(_read_head(path, rec.head_len)) == rec.head_sha256

    def relocate_moved(self, targets: list[Target]) -> None:
        """A plain file renamed by log rotation (app.log -> app.log.1), both given in this
        run: its record follows it to the new path, so it is continued, not read again."""
        by_inode = {(t.st.st_dev, t.st.st_ino): t for t in targets if t.st is not None}
        moves: dict[int, str] = {}
        for rec in self.recs.values():
            if rec.kind != "plain" or rec.inode is None:
                continue
            here = next((t for t in targets if t.path == rec.path), None)
            if here is not None and (here.st.st_dev, here.st.st_ino) == (rec.device, rec.inode):
                continue
            t = by_inode.get((rec.device, rec.inode))
            if t is None or t.path == rec.path:
                continue
            holder = self.by_path(t.path)
            if holder is not None and (holder.device, holder.inode) == (rec.device, rec.inode):
                continue
            try:
                if t.st.st_size < rec.byte_offset or not self.head_matches(rec, t.path):
                    continue
            except OSError:
                continue
            moves[rec.file_id] = t.path
        if not moves:
            return
        with self.store.transaction():
            # records displaced from a path another record moves into keep their rows
            # under a detached name until their own file is seen again
            for rec in self.recs.values():
                if rec.file_id not in moves and rec.path in moves.values():
                    rec.path = f"{rec.path} (moved away, file {rec.file_id})"
                    self.save(rec)
            for fid, path in moves.items():
                old = self.recs[fid].path
                self.recs[fid].path = path
                self.save(self.recs[fid])
                self.report.notes.append(f"{old}: rotated to {path}; continued there")

    # -- coverage -----------------------------------------------------------------------
    def coverage(self, item: str, status: str, detail: str | None) -> None:
        self.store.put_coverage(coverage_row(SOURCE, item, status, detail))

    # -- plain files and .gz --------------------------------------------------------------
    def read_file(self, t: Target) -> None:
        path, st = t.path, t.st
        if _is_gzip(path):
            return self.read_gz(t)
        rec = self.by_path(path)
        is_new = rec is None
        why = None
        if rec is not None and rec.kind != "plain":
            why = "was a compressed file before"
        elif rec is not None and (rec.device, rec.inode) != (st.st_dev, st.st_ino):
            why = "rotated (another file now at this path)"
        elif rec is not None and st.st_size < rec.byte_offset:
            why = f"truncated (size {st.st_size} < {rec.byte_offset} bytes read before)"
        elif rec is not None and not self.head_matches(rec, path):
            why = "rotated (its first bytes changed)"
        if rec is None:
            rec = self.new_rec(path, "plain")
        elif why:
            rec.kind = "plain"
            self.reset(rec, why)
        rec.device, rec.inode = st.st_dev, st.st_ino
        if st.st_size == rec.byte_offset and not why and not is_new:
            self.report.skipped.append(f"{t.given} (unchanged)")
            self.coverage(t.given, "skipped", "unchanged since the last read")
            return
        with open(path, "rb") as f:
            head = f.read(HEAD_BYTES)
            f.seek(rec.byte_offset)
            left = self._stream(rec, f.readinto, final=False, total=max(0, st.st_size - rec.byte_offset),
                                label=t.given, head=head, size=st.st_size, mtime=_mtime(st))
        if left:
            self.report.notes.append(f"{t.given}: last line incomplete ({left} bytes), left for the next run")
        self.coverage(t.given, "ok", f"read to byte {rec.byte_offset} ({rec.lines} lines)")

    def read_gz(self, t: Target) -> None:
        path, st = t.path, t.st
        head_c = _read_head(path, HEAD_BYTES)
        hh = _sha(head_c)
        rec = self.by_path(path)
        same = (rec is not None and rec.kind == "gz" and rec.size == st.st_size
                and (rec.device, rec.inode) == (st.st_dev, st.st_ino) and rec.head_sha256 == hh
                and rec.mtime == _mtime(st))
        if rec is not None and same and rec.complete:
            self.report.skipped.append(f"{t.given} (unchanged)")
            self.coverage(t.given, "skipped", "unchanged since the last read")
            return
        if rec is None:
            rec = self.new_rec(path, "gz")
        elif not same:
            rec.kind = "gz"
            self.reset(rec, "changed")
        rec.device, rec.inode = st.st_dev, st.st_ino
        raw = open(path, "rb")
        damaged: list[BaseException] = []
        done = [0]

        def readinto(view: memoryview) -> int:
            """Decompressed bytes into ``view``; at a damaged spot, the end of the data
            (remembered)."""
            got = 0
            while got < len(view) and not damaged:
                try:                                # read1: keep what precedes a damaged spot
                    b = gz.read1(len(view) - got)
                except (EOFError, zlib.error, OSError) as exc:      # BadGzipFile is an OSError
                    damaged.append(exc)
                    break
                if not b:
                    break
                view[got:got + len(b)] = b
                got += len(b)
            done[0] = raw.tell()
            return got

        try:
            gz = gzip.GzipFile(fileobj=raw, mode="rb")
            skip = rec.byte_offset                 # resuming an interrupted read
            while skip and not damaged:
                n = readinto(memoryview(bytearray(min(skip, self.block_size))))
                if not n:
                    break
                skip -= n
            if not damaged:
                self._stream(rec, readinto, final=lambda: not damaged, total=st.st_size, label=t.given, head=None,
                             size=st.st_size, mtime=_mtime(st), progress_pos=lambda: done[0],
                             head_override=(len(head_c), hh))
        finally:
            raw.close()
        if damaged:
            msg = (f"damaged gzip: read to uncompressed byte {rec.byte_offset} ({rec.lines} lines stored), "
                   f"then {str(damaged[0]) or type(damaged[0]).__name__}")
            self.report.missing.append(f"{t.given}: {msg}")
            self.coverage(t.given, "partial", msg)
            return
        self.coverage(t.given, "ok", f"read whole ({rec.lines} lines)")

    # -- stdin ------------------------------------------------------------------------------
    def read_stdin(self, t: Target, src: BinaryIO) -> None:
        h = hashlib.sha256()
        tmp = tempfile.NamedTemporaryFile(prefix="auditor-stdin-", suffix=".log", delete=False)
        try:
            with tmp:
                while True:
                    b = src.read(1 << 20)
                    if not b:
                        break
                    h.update(b)
                    tmp.write(b)
            digest = h.hexdigest()
            rec = next((r for r in self.recs.values() if r.kind == "stdin" and r.content_sha256 == digest), None)
            if rec is not None and rec.complete:
                self.report.skipped.append(f"stdin (same content as read before: {rec.path})")
                self.coverage("stdin", "skipped", f"same content as {rec.path}")
                return
            if rec is None:
                rec = self.new_rec(f"stdin:{digest[:16]}", "stdin")
                rec.content_sha256 = digest
            size = os.path.getsize(tmp.name)
            with open(tmp.name, "rb") as f:
                head = f.read(HEAD_BYTES)
                f.seek(rec.byte_offset)
                self._stream(rec, f.readinto, final=True, total=max(0, size - rec.byte_offset), label="stdin",
                             head=head, size=size, mtime=None)
            self.coverage("stdin", "ok", f"{rec.path}: {rec.lines} lines")
        finally:
            try:
                os.unlink(tmp.name)
            except OSError:
                pass

    # -- the read / parse / write loop --------------------------------------------------------
    def _blocks(self, readinto: Callable[[memoryview], int], rec: FileRec, final: bool | Callable[[], bool],
                progress_pos: Callable[[], int] | None) -> Iterator[tuple]:
        """Cut what ``readinto`` reads into blocks of whole lines, numbered from ``rec``'s
        position. Yields ``("parse", block, first_line, offset, progress)`` (the block a
        memoryview of the bytes read, not a copy), ``("done", BlockResult, nbytes,
        progress)`` for an over-long line, ``("progress", n)``, and finally ``("end",
        bytes_left_unread)``."""
        from .gatewaylog_parse import count_lines

        bs = self.block_size
        off, line = rec.byte_offset, rec.lines + 1
        carry = b""           # the start of a line read with the previous block
        long_len = 0          # inside a line longer than MAX_LINE: its bytes so far
        read_pos = last_pos = 0

        def moved() -> int:
            nonlocal last_pos
            pos = progress_pos() if progress_pos is not None else read_pos
            d, last_pos = pos - last_pos, pos
            return d

        while True:
            buf = bytearray(len(carry) + bs)
            buf[:len(carry)] = carry
            got = readinto(memoryview(buf)[len(carry):])
            if not got:
                break
            read_pos += got
            start, end = 0, len(carry) + got
            if long_len:                            # carry is empty
                nl = buf.find(b"\n", 0, end)
                if nl < 0:
                    long_len += got
                    yield ("progress", moved())
                    continue
                long_len += nl + 1
                yield ("done", _long_line(line, off), long_len, moved())
                off, line, long_len = off + long_len, line + 1, 0
                start = nl + 1
            cut = buf.rfind(b"\n", start, end) + 1
            if cut == 0:
                if end - start > MAX_LINE:
                    long_len, carry = end - start, b""
                else:
                    carry = bytes(buf[start:end])
                yield ("progress", moved())
                continue
            block = memoryview(buf)[start:cut]
            carry = bytes(buf[cut:end])
            yield ("parse", block, line, off, moved())
            off += len(block)
            line += count_lines(block)
        final = final() if callable(final) else final
        if final and long_len:
            yield ("done", _long_line(line, off), long_len, moved())
            long_len = 0
        elif final and carry:
            yield ("parse", carry, line, off, moved())
            carry = b""
        yield ("end", len(carry) + long_len)

    def _stream(self, rec: FileRec, readinto: Callable[[memoryview], int], *, final: bool | Callable[[], bool], total: int,
                label: str,
                head: bytes | None, size: int | None, mtime: datetime | None,
                progress_pos: Callable[[], int] | None = None,
                head_override: tuple[int, str] | None = None) -> int:
        """Read blocks with ``readinto`` from ``rec.byte_offset`` on, parse them in a worker
        thread (polars and DuckDB release the GIL) while this thread stores the previous
        ones, and return the bytes of an incomplete last line left unread (0 when ``final``:
        the last line is then taken as it is).

        Rows are inserted ROWS_PER_COMMIT at a time (whole DuckDB row groups: such a commit
        writes its row groups once, compressed, instead of logging them in the WAL), each
        in one transaction with the rejected lines before it and the file position of the
        first line after it."""
        from functools import partial

        from .gatewaylog_parse import parse_block

        parse = partial(parse_block, vectorised=self.vectorised)
        w = _Writer(self, rec, dict(head=head, size=size, mtime=mtime, head_override=head_override))
        q: queue.Queue = queue.Queue(maxsize=PARSE_WORKERS)      # futures in file order
        stop = threading.Event()
        pool = ThreadPoolExecutor(max_workers=PARSE_WORKERS, thread_name_prefix="gatewaylog-parse")

        def dispatch() -> None:
            """Reader thread: cut blocks and hand them to the parse pool, in order."""
            try:
                prog = 0
                for item in self._blocks(readinto, rec, final, progress_pos):
                    if stop.is_set():
                        return
                    tag = item[0]
                    if tag == "progress":
                        prog += item[1]
                    elif tag == "parse":
                        _, block, line, off, p = item
                        q.put((pool.submit(parse, block, line, off), len(block), prog + p))
                        prog = 0
                    elif tag == "done":
                        q.put((item[1], item[2], prog + item[3]))
                        prog = 0
                    else:
                        q.put(("end", item[1], prog))
                        return
            except BaseException as exc:  # noqa: BLE001 - raised again by the writer
                q.put(("error", exc, 0))

        reader = threading.Thread(target=dispatch, name="gatewaylog-read", daemon=True)
        reader.start()
        left = 0
        try:
            with self.progress.task(f"reading {label}", total or None) as advance:
                while True:
                    fut, nbytes, prog = q.get()
                    if fut == "error":
                        raise nbytes
                    if fut == "end":
                        left = nbytes
                        advance(prog)
                        break
                    w.add(fut.result() if isinstance(fut, Future) else fut, nbytes)
                    advance(prog)
            w.flush(complete=final() if callable(final) else final)
        finally:
            stop.set()
            while reader.is_alive():
                try:
                    item = q.get(timeout=0.05)
                    if isinstance(item[0], Future):
                        item[0].cancel()
                except queue.Empty:
                    pass
            reader.join()
            pool.shutdown(wait=True, cancel_futures=True)
        return left

    def _finish_state(self, rec: FileRec, state: dict) -> None:
        head, head_override = state["head"], state["head_override"]
        if head_override is not None:
            rec.head_len, rec.head_sha256 = head_override
        elif head is not None:
            n = min(len(head), rec.byte_offset, HEAD_BYTES)
            rec.head_len, rec.head_sha256 = n, (_sha(head[:n]) if n else None)
        rec.size, rec.mtime = state["size"], state["mtime"]
        rec.last_read_at = utcnow()
        self.save(rec)

    def _write_rejects(self, rec: FileRec, counts: dict[str, int], samples: dict[str, list]) -> None:
        con = self.store.con
        fid = rec.file_id
        for reason, n in counts.items():
            if not n:
                continue
            key = (fid, reason)
            if key not in self.samples:
                have, stored = self.store.one(
                    "SELECT (SELECT count(*) FROM log_rejects WHERE file_id = $1 AND reason = $2),"
                    "       (SELECT count(*) FROM log_reject_samples WHERE file_id = $1 AND reason = $2)",
                    [fid, reason])
                if not have:
                    con.execute("INSERT INTO log_rejects VALUES (?, ?, 0)", [fid, reason])
                self.samples[key] = stored
            con.execute("UPDATE log_rejects SET lines = lines + ? WHERE file_id = ? AND reason = ?", [n, fid, reason])
            rows = samples.get(reason, [])[:max(0, SAMPLES_PER_FILE - self.samples[key])]
            if rows:
                con.executemany("INSERT INTO log_reject_samples VALUES (?, ?, ?, ?, ?)",
                                [[fid, reason, ln, off, text] for ln, off, text in rows])
                self.samples[key] += len(rows)


class _Writer:
    """Buffers parsed blocks and stores them in row-group-sized transactions."""

    def __init__(self, ing: _Ingest, rec: FileRec, state: dict) -> None:
        self.ing, self.rec, self.state = ing, rec, state
        self.tables: list = []                      # pyarrow tables of events, in line order
        self.rows = 0
        self.rejects: dict[str, list[int]] = {}     # reason -> line numbers not yet committed
        self.samples: dict[str, list] = {}
        self.end_off, self.end_lines = rec.byte_offset, rec.lines   # after the last line received

    def add(self, res, nbytes: int) -> None:
        self.ing.parsed_bytes += nbytes
        if res.parsed:
            self.tables.append(res.events)
            self.rows += res.parsed
        for reason, lines in res.rejects.items():
            self.rejects.setdefault(reason, []).extend(lines)
        for reason, ss in res.samples.items():
            self.samples.setdefault(reason, []).extend(ss)
        self.end_off += nbytes
        self.end_lines += res.lines
        while self.rows > ROWS_PER_COMMIT:
            import pyarrow as pa

            tbl = pa.concat_tables(self.tables)
            head, tail = tbl.slice(0, ROWS_PER_COMMIT), tbl.slice(ROWS_PER_COMMIT)
            first = tail.slice(0, 1).to_pylist()[0]      # the first line not committed
            self._commit(head, first["line_no"], first["byte_offset"], first["line_no"] - 1)
            self.tables, self.rows = [tail], tail.num_rows
        if sum(len(v) for v in self.rejects.values()) > 1_000_000:    # a file of mostly non-gateway lines
            self.flush(complete=False)

    def flush(self, complete: bool) -> None:
        import pyarrow as pa

        tbl = pa.concat_tables(self.tables) if self.tables else None
        self.rec.complete = complete
        self._commit(tbl, None, self.end_off, self.end_lines)
        self.tables, self.rows = [], 0

    def _commit(self, tbl, upto: int | None, offset: int, lines: int) -> None:
        """Store ``tbl`` and the rejected lines before line ``upto`` (all when None), and
        move the file position to ``offset`` / ``lines``: one transaction."""
        ing, rec = self.ing, self.rec
        counts, samples = {}, {}
        for reason, nums in self.rejects.items():
            k = len(nums) if upto is None else bisect.bisect_left(nums, upto)
            counts[reason] = k
            self.rejects[reason] = nums[k:]
            ss = self.samples.get(reason, [])
            samples[reason] = [x for x in ss if upto is None or x[0] < upto]
            self.samples[reason] = [x for x in ss if upto is not None and x[0] >= upto]
        n = tbl.num_rows if tbl is not None else 0
        con = ing.store.con
        with ing.store.transaction():
            if n:
                # one Arrow chunk (cheap: string views are not copied); DuckDB makes partial
                # row groups of a chunked table, and spends twice the time
                with ing.store.registered("_gw_block", _as_json(tbl.combine_chunks())):
                    con.execute(_insert_events(), [rec.file_id])
            ing._write_rejects(rec, counts, samples)
            rec.byte_offset, rec.lines = offset, lines
            rec.events += n
            rec.rejected += sum(counts.values())
            ing._finish_state(rec, self.state)
        if n or not ing.report.loaded:
            ing.report.add("log_events", n)
        for reason, k in counts.items():
            if k:
                ing.report.rejected[reason] = ing.report.rejected.get(reason, 0) + k


def _as_json(tbl):
    """``tbl`` with its ``fields`` column typed as Arrow's JSON extension, which DuckDB takes
    as JSON without parsing every value again: the parsers write valid JSON (the property
    tests load every ``fields`` they make), and the check cost 5% of the ingestion's CPU."""
    import pyarrow as pa

    i = tbl.schema.get_field_index("fields")
    col = tbl.column(i)
    typ = pa.json_(col.type)
    return tbl.set_column(i, pa.field("fields", typ, nullable=False),
                          pa.chunked_array([pa.ExtensionArray.from_storage(typ, c) for c in col.chunks], typ))


def _long_line(line_no: int, off: int):
    """A BlockResult for one line longer than MAX_LINE: rejected, not stored."""
    from .gatewaylog_parse import BlockResult, _empty_events

    res = BlockResult(events=None, lines=1)
    import polars as pl

    res.events = _empty_events().to_arrow(compat_level=pl.CompatLevel.newest())
    res.rejects["line_too_long"] = [line_no]
    res.samples["line_too_long"] = [(line_no, off, f"(a line longer than {MAX_LINE} bytes; not kept)")]
    return res


__all__ = ["ingest", "resolve_paths", "BLOCK_SIZE"]
