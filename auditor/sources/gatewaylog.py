"""Gateway log ingestion: ``auditor collect --gateway-log PATH`` (docs: gateway-logs.md).

Reads devshardctl logs (plain files, globs, ``.gz``, ``-`` for stdin) into the ``log_*``
tables of schema 003, incrementally. A store is evidence: rows once stored stay, whatever
logrotate does to the files afterwards.

* Every file read has a ``log_files`` row: its path, device/inode, its read position
  (``byte_offset``, the end of the last complete line stored) and the fingerprint of its
  content (sha256 of its first bytes read, up to 4 KiB, uncompressed).
* At the start of a run each given file is matched with a row (``_Ingest.match``): the row
  at its path when it is the same file (same inode, not shorter than what was read, same
  first bytes; for a ``.gz`` also the same size and mtime); else a row whose file was
  renamed to this path (same inode: ``app.log`` -> ``app.log.1``) or whose content this
  file holds (same fingerprint: a copy by copytruncate, a compressed ``app.log.2.gz``).
  A matched row is continued after its position, so a line is never stored twice. A row
  whose content is no longer at its path (rotated away, truncated, deleted) and that no
  given file continues is marked gone (``gone_at``); its rows are kept.
* A plain file is read from the row's position on; a last line without its newline waits
  for the next run. A ``.gz`` is checked first, member by member (CRC and length), and
  only what the check verified is stored: a damaged or truncated member and what follows
  are dropped, and the run says how much. stdin is spooled to a temporary file and
  identified by the sha256 of its content: the same content is never stored twice.

Blocks of whole lines (8 MiB, read without copies) are parsed (:mod:`.gatewaylog_parse`:
the compiled tokenizer for the common text lines, polars and DuckDB for JSON, the line
parser for the rest) by two worker threads while this thread stores the results in order;
rows, rejected-line counts and the file's new position are committed together, four
DuckDB row groups (491,520 rows) per transaction, so an interrupted run resumes where the
last commit stopped and never stores a line twice. Memory stays flat whatever the file
size. Lines that are not gateway lines, or longer than MAX_LINE, are counted per file and
reason (``log_rejects``) with a few samples (``log_reject_samples``); they are never
fatal. A path that does not exist or cannot be read is listed in the report's
``missing`` (the CLI then exits 3) and the other files are still read.
"""

from __future__ import annotations

import bisect
import glob
import hashlib
import os
import queue
import re
import signal
import sys
import tempfile
import threading
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import BinaryIO, Callable

import duckdb

from ..errors import SourceError, StoreError
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
    gone_at: datetime | None = None


_COLS = list(FileRec.__dataclass_fields__)


@dataclass
class Target:
    path: str                 # absolute path, or '-' for stdin
    given: str                # as the user wrote it
    st: os.stat_result | None = None
    kind: str = "plain"       # plain | gz
    head: bytes = b""         # the first HEAD_BYTES of its content (uncompressed)
    fs: str = ""              # the path to open: ``path`` is its text, as stored (see _as_text)


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
    with _interrupt_seen() as interrupted:
        try:
            matched = ing.match(targets)
            for t in sorted(targets, key=lambda t: t.path in ing.copies):    # a copy after what it copies
                try:
                    if t.path == STDIN:
                        ing.read_stdin(t, sys.stdin.buffer)
                    elif t.kind == "gz":
                        ing.read_gz(t, matched.get(t.path))
                    else:
                        ing.read_file(t, matched.get(t.path))
                except OSError as exc:
                    if interrupted.is_set():
                        raise
                    ing.fail(t, f"cannot read: {exc.strerror or exc}")
                except (duckdb.Error, StoreError) as exc:     # StoreError: a commit failed (a full disk)
                    if interrupted.is_set():
                        raise
                    raise SourceError(f"{t.given}: could not store what was read "
                                      f"({str(exc).splitlines()[0]}); the file's earlier rows are kept") from exc
                except Exception as exc:  # noqa: BLE001 - one file's failure must not cost the others
                    if interrupted.is_set():
                        raise
                    ing.fail(t, f"stopped by an unexpected error ({type(exc).__name__}: {exc}); "
                                f"what was stored before it is kept")
        except Exception:
            # DuckDB (and Arrow inside it) turn Ctrl-C during a query into an error of their
            # own ("Query interrupted"); every commit is whole, so the store holds what was
            # committed before it, and the CLI's answer to Ctrl-C applies
            if interrupted.is_set():
                raise KeyboardInterrupt from None
            raise
    if not report.loaded:
        report.loaded["log_events"] = 0
    if ing.parsed_bytes:
        from .gatewaylog_parse import compiled_note

        if note := compiled_note():
            report.notes.append(note)
    return report


@contextmanager
def _interrupt_seen() -> Iterator[threading.Event]:
    """An event set when SIGINT arrives (in the main thread; the usual KeyboardInterrupt
    still follows), so that an error raised in its place is known for what it is."""
    seen = threading.Event()
    if threading.current_thread() is not threading.main_thread():
        yield seen
        return
    prev = signal.getsignal(signal.SIGINT)

    def on_sigint(signum, frame):
        seen.set()
        if callable(prev):
            prev(signum, frame)

    signal.signal(signal.SIGINT, on_sigint)
    try:
        yield seen
    finally:
        signal.signal(signal.SIGINT, prev)


def resolve_paths(paths: list[str]) -> tuple[list[Target], list[tuple[str, str]]]:
    """Expand globs and ``~``: the files to read (duplicates once), and (path, why) for
    each path that names no readable file."""
    out: list[Target] = []
    missing: list[tuple[str, str]] = []
    seen: set = set()            # paths, and (device, inode) so a file linked twice is read once
    for given in paths:
        fs_given = str(given)
        given = _as_text(fs_given)
        if given == STDIN:
            if STDIN not in seen:
                seen.add(STDIN)
                out.append(Target(STDIN, given))
            continue
        p = os.path.expanduser(fs_given)
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
            if (what := _not_regular(p)) is not None:
                missing.append((given, f"is {what}, not a regular file: never opened (it may never end); "
                                       "give a log file, a .gz, or - for stdin"))
                continue
            matches = [p]
        for m in matches:
            a = os.path.abspath(m)
            if a in seen:
                continue
            seen.add(a)
            try:
                st = os.stat(a)
                if (st.st_dev, st.st_ino) in seen:      # the same file by another name: read once
                    continue
                kind = "gz" if _is_gzip(a) else "plain"
                head = _content_head(a, kind)
            except OSError as exc:
                missing.append((_as_text(m), f"cannot read: {exc.strerror}"))
                continue
            seen.add((st.st_dev, st.st_ino))
            out.append(Target(_as_text(a), _as_text(m) if m != p else given, st, kind, head, fs=a))
    return out, missing


def _as_text(path: str) -> str:
    """A path as text the store can hold (UTF-8): the bytes of a name that is not UTF-8
    (which Python carries as surrogates, and DuckDB refuses) as ``\\xNN``. What is opened
    is the path itself (Target.fs)."""
    return os.fsencode(path).decode("utf-8", "backslashreplace")


def _fs_path(text: str) -> str:
    """The path a stored path text names (the inverse of _as_text; a name that holds a
    backslash, x and two hex digits itself is read as the byte: it only decides whether a
    record not read in this run is still at its path)."""
    if "\\x" not in text:
        return text
    return os.fsdecode(re.sub(rb"\\x([89a-f][0-9a-f])", lambda m: bytes([int(m[1], 16)]), text.encode()))


def _not_regular(path: str) -> str | None:
    """What ``path`` is when it is not a regular file (a FIFO, a device, a socket: reading
    one may never end, and a blocked open ignores Ctrl-C), from its stat alone; None for a
    regular file. Checked before anything is opened (globs take regular files only)."""
    import stat

    mode = os.stat(path).st_mode
    for test, what in ((stat.S_ISFIFO, "a FIFO (named pipe)"), (stat.S_ISCHR, "a character device"),
                       (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return what
    return None if stat.S_ISREG(mode) else "not a regular file"


def _is_gzip(path: str) -> bool:
    if path.endswith(".gz"):
        return True
    with open(path, "rb") as f:
        return f.read(2) == b"\x1f\x8b"


def _content_head(path: str, kind: str) -> bytes:
    """The first HEAD_BYTES of the file's content (decompressed for a .gz; what precedes
    damage, if any)."""
    with open(path, "rb") as f:
        if kind != "gz":
            return f.read(HEAD_BYTES)
        out = bytearray()
        try:
            for chunk, _ in _gunzip(f, HEAD_BYTES):
                out += chunk
                if len(out) >= HEAD_BYTES:
                    break
        except (zlib.error, EOFError):
            pass
        return bytes(out[:HEAD_BYTES])


def _gunzip(f: BinaryIO, step: int = 1 << 20) -> Iterator[tuple[bytes, bool]]:
    """Decompress a gzip file member by member, at most ``step`` bytes at a time: yields
    ``(bytes, member_verified)``, the flag True with the last bytes of each member whose
    CRC and length zlib checked. Raises zlib.error at a damaged member and EOFError at a
    truncated one. Zero padding between members is skipped, as gzip does."""
    d = zlib.decompressobj(31)
    buf, started = b"", False
    while True:
        if not buf:
            buf = f.read(step)
            if not buf:
                if started:
                    raise EOFError("the file ends inside a gzip member (truncated)")
                return
        if not started:
            buf = buf.lstrip(b"\x00")
            if not buf:
                continue
            started = True
        out = d.decompress(buf, step)
        buf = d.unconsumed_tail
        if d.eof:
            yield out, True
            buf, d, started = d.unused_data + buf, zlib.decompressobj(31), False
        elif out:
            yield out, False


def _gz_verified(path: str) -> tuple[int, int, str | None]:
    """The first pass over a .gz: (uncompressed bytes in whole members that passed their
    check, bytes decoded in all, what was wrong or None)."""
    verified = decoded = 0
    member = 1
    with open(path, "rb") as f:
        try:
            for chunk, done in _gunzip(f):
                decoded += len(chunk)
                if done:
                    verified = decoded
                    member += 1
        except (zlib.error, EOFError) as exc:
            return verified, decoded, f"gzip member {member}: {exc}"
    return verified, decoded, None


def _mtime(st: os.stat_result) -> datetime:
    return datetime.fromtimestamp(st.st_mtime_ns / 1e9, tz=timezone.utc)


def _sha(b: bytes) -> str:
    return hashlib.sha256(b).hexdigest()


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
        self.unsaved: set[int] = set()    # records not yet in log_files (written with their first rows)
        self.samples: dict[tuple[int, str], int] = {}   # (file, reason) seen this run -> samples stored
        self.copies: dict[str, FileRec] = {}           # path -> the record (read this run) it is a copy of

    # -- records ----------------------------------------------------------------------
    def by_path(self, path: str) -> FileRec | None:
        return next((r for r in self.recs.values() if r.path == path and r.gone_at is None), None)

    def new_rec(self, path: str, kind: str) -> FileRec:
        """A record for a file not read before; stored with the first commit of its rows, so
        a run killed before that leaves no trace of it. A copy of a file read in this run
        (``match``) starts where that file's record ends: what it holds before is stored."""
        fid = max(self.recs, default=0) + 1
        now = utcnow()
        rec = FileRec(fid, path, kind, first_read_at=now, last_read_at=now)
        if (src := self.copies.get(path)) is not None:
            rec.byte_offset, rec.lines, rec.head_len, rec.head_sha256 = (src.byte_offset, src.lines,
                                                                        src.head_len, src.head_sha256)
            self.report.notes.append(f"{path}: a copy of {src.path} (the same first bytes): read after byte "
                                     f"{src.byte_offset}, which that file's record holds")
        self.recs[fid] = rec
        self.unsaved.add(fid)
        return rec

    def save(self, rec: FileRec) -> None:
        if rec.file_id in self.unsaved:
            self.store.insert("log_files", [{c: getattr(rec, c) for c in _COLS}])
            self.unsaved.discard(rec.file_id)
            return
        sets = ", ".join(f"{c} = ?" for c in _COLS[1:])
        self.store.con.execute(f"UPDATE log_files SET {sets} WHERE file_id = ?",
                               [getattr(rec, c) for c in _COLS[1:]] + [rec.file_id])

    def fail(self, t: Target, why: str) -> None:
        self.report.missing.append(f"{t.given}: {why}")
        self.coverage(t.given, "missing", why)

    # -- which record each file continues ---------------------------------------------------
    @staticmethod
    def _head_matches(rec: FileRec, t: Target) -> bool:
        return len(t.head) >= rec.head_len and _sha(t.head[:rec.head_len]) == rec.head_sha256

    def _same_file(self, rec: FileRec, t: Target) -> bool:
        """``t`` is the file ``rec`` was read from, at the same path, changed only by what
        was appended (a .gz: not changed at all)."""
        if rec.kind != t.kind or (rec.device, rec.inode) != (t.st.st_dev, t.st.st_ino):
            return False
        if t.kind == "gz":
            return rec.size == t.st.st_size and rec.mtime == _mtime(t.st) and (
                not rec.head_len or self._head_matches(rec, t))
        return t.st.st_size >= rec.byte_offset and (not rec.head_len or self._head_matches(rec, t))

    def _continues(self, rec: FileRec, t: Target, by_inode: bool) -> bool:
        """``t`` holds what ``rec`` read, from its first byte on (it may hold more): it is
        the same file renamed (``by_inode``) or has the same first bytes."""
        if rec.kind == "stdin" or (t.kind == "plain" and t.st.st_size < rec.byte_offset):
            return False
        if by_inode and (rec.device, rec.inode) != (t.st.st_dev, t.st.st_ino):
            return False
        return self._head_matches(rec, t) if rec.head_len else by_inode

    def match(self, targets: list[Target]) -> dict[str, FileRec]:
        """The record each given file continues (files without one are new); records that
        move to another path, and records whose content is no longer where it was, are
        saved in one transaction."""
        files = [t for t in targets if t.path != STDIN]
        out: dict[str, FileRec] = {}
        for t in files:
            rec = self.by_path(t.path)
            if rec is not None and self._same_file(rec, t):
                out[t.path] = rec
        taken = {r.file_id for r in out.values()}
        free = [r for r in self.recs.values() if r.kind != "stdin" and r.file_id not in taken]
        moves: list[tuple[FileRec, Target]] = []
        # a file renamed (same inode) first, then content found again by its fingerprint
        # (a copy or a compressed copy), the record that read most of it first
        for by_inode in (True, False):
            for t in files:
                if t.path in out:
                    continue
                cands = [r for r in free if self._continues(r, t, by_inode)]
                if cands:
                    rec = max(cands, key=lambda r: r.byte_offset)
                    free = [r for r in free if r is not rec]
                    out[t.path] = rec
                    moves.append((rec, t))
        # a copy of content a record given here still reads (logrotate's copytruncate between its
        # copy and its truncate; `gzip -k`): a new record that starts where that one ends
        for t in files:
            if t.path not in out:
                src = next((r for r in out.values() if r.head_len and self._continues(r, t, False)), None)
                if src is not None:
                    self.copies[t.path] = src
        given = {t.path for t in files}
        gone = [r for r in free if r.gone_at is None and (r.path in given or not os.path.exists(_fs_path(r.path)))]
        if not moves and not gone:
            return out
        now = utcnow()
        with self.store.transaction():
            for rec, t in moves:
                old = rec.path
                if rec.gone_at is not None:
                    old += " (gone)"
                rec.path, rec.kind, rec.gone_at = t.path, t.kind, None
                rec.device, rec.inode = t.st.st_dev, t.st.st_ino
                self.save(rec)
                self.report.notes.append(f"{old}: rotated to {t.path}; continued there after byte "
                                         f"{rec.byte_offset} ({rec.lines} lines)")
            for rec in gone:
                rec.gone_at = now
                self.save(rec)
                why = (f"gone: no longer at this path (rotated away, truncated or deleted); its {rec.events} "
                       f"rows are kept")
                self.report.notes.append(f"{rec.path}: {why}")
                self.coverage(f"{rec.path} (gone, file {rec.file_id})", "skipped", why)
        return out

    # -- coverage -----------------------------------------------------------------------
    def coverage(self, item: str, status: str, detail: str | None) -> None:
        self.store.put_coverage(coverage_row(SOURCE, item, status, detail))

    def _unchanged(self, t: Target) -> None:
        self.report.skipped.append(f"{t.given} (unchanged)")
        self.coverage(t.given, "skipped", "unchanged since the last read")

    # -- plain files and .gz --------------------------------------------------------------
    def read_file(self, t: Target, rec: FileRec | None) -> None:
        st = t.st
        if rec is None:
            rec = self.new_rec(t.path, "plain")
        elif st.st_size == rec.byte_offset and (rec.device, rec.inode) == (st.st_dev, st.st_ino):
            return self._unchanged(t)
        rec.device, rec.inode = st.st_dev, st.st_ino
        with open(t.fs, "rb") as f:
            f.seek(rec.byte_offset)
            left = self._stream(rec, f.readinto, final=False, total=max(0, st.st_size - rec.byte_offset),
                                label=t.given, head=t.head, size=st.st_size, mtime=_mtime(st))
        if left:
            self.report.notes.append(f"{t.given}: last line incomplete ({left} bytes), left for the next run")
        self.coverage(t.given, "ok", f"read to byte {rec.byte_offset} ({rec.lines} lines)")

    def read_gz(self, t: Target, rec: FileRec | None) -> None:
        """A .gz: checked whole first, then only what the check verified is read, from the
        record's position on (a compressed copy of a file read before goes on after it)."""
        st = t.st
        if rec is not None and rec.complete and self._same_file(rec, t):
            return self._unchanged(t)
        if rec is None:
            rec = self.new_rec(t.path, "gz")
        rec.device, rec.inode = st.st_dev, st.st_ino
        verified, decoded, damage = _gz_verified(t.fs)
        if rec.byte_offset < verified:
            self._read_gz_from(t, rec, verified, damage)
        elif damage is None:     # all it holds is stored already (a compressed copy): not decompressed again
            rec.complete = True
            with self.store.transaction():
                self._finish_state(rec, dict(head=t.head, size=st.st_size, mtime=_mtime(st)))
        if damage:
            msg = (f"damaged gzip ({damage}): stored the {verified} uncompressed bytes its check verified "
                   f"({rec.lines} lines in all); dropped the {decoded - verified} bytes decoded after them, and "
                   f"anything that follows")
            self.report.missing.append(f"{t.given}: {msg}")
            self.coverage(t.given, "partial", msg)
            return
        self.coverage(t.given, "ok", f"read whole ({rec.lines} lines)")

    def _read_gz_from(self, t: Target, rec: FileRec, verified: int, damage: str | None) -> None:
        """Store the verified uncompressed bytes of ``t`` after ``rec.byte_offset`` (decompressed
        again from the start; what is stored already is skipped)."""
        st = t.st
        with open(t.fs, "rb") as raw:
            chunks = _gunzip(raw)
            pending = [memoryview(b"")]
            pos = [0]                       # uncompressed bytes taken from chunks

            def readinto(view: memoryview) -> int:
                """Verified uncompressed bytes into ``view``."""
                got = 0
                while got < len(view) and pos[0] < verified:
                    if not pending[0]:
                        pending[0] = memoryview(next(chunks)[0])
                    k = min(len(view) - got, len(pending[0]), verified - pos[0])
                    view[got:got + k] = pending[0][:k]
                    pending[0] = pending[0][k:]
                    got += k
                    pos[0] += k
                return got

            skip = rec.byte_offset                 # what is stored already
            while skip > 0 and pos[0] < verified:
                skip -= readinto(memoryview(bytearray(min(skip, self.block_size))))
            self._stream(rec, readinto, final=damage is None, total=st.st_size, label=t.given, head=t.head,
                         size=st.st_size, mtime=_mtime(st), progress_pos=lambda: raw.tell())

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
    def _blocks(self, readinto: Callable[[memoryview], int], rec: FileRec, final: bool,
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
            carry = bytes(buf[cut:end])
            for s, e, too_long in _runs(buf, start, cut):
                if too_long:
                    yield ("done", _long_line(line, off), e - s, moved())
                    off, line = off + e - s, line + 1
                    continue
                block = memoryview(buf)[s:e]
                yield ("parse", block, line, off, moved())
                off += len(block)
                line += count_lines(block)
        if final and long_len:
            yield ("done", _long_line(line, off), long_len, moved())
            long_len = 0
        elif final and carry:
            yield ("parse", carry, line, off, moved())
            carry = b""
        yield ("end", len(carry) + long_len)

    def _stream(self, rec: FileRec, readinto: Callable[[memoryview], int], *, final: bool, total: int,
                label: str,
                head: bytes | None, size: int | None, mtime: datetime | None,
                progress_pos: Callable[[], int] | None = None,
                ) -> int:
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
        w = _Writer(self, rec, dict(head=head, size=size, mtime=mtime))
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
            w.flush(complete=final)
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
        head = state["head"]
        if head is not None:
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


def _runs(buf: bytearray, start: int, cut: int) -> Iterator[tuple[int, int, bool]]:
    """The whole lines ``buf[start:cut]`` as runs ``(start, end, too_long)``: each line
    longer than MAX_LINE (its newline not counted) on its own, the others together."""
    if cut - start <= MAX_LINE + 1:
        yield start, cut, False
        return
    s = i = start
    while i < cut:
        nl = buf.find(b"\n", i, cut)
        if nl - i > MAX_LINE:
            if s < i:
                yield s, i, False
            yield i, nl + 1, True
            s = nl + 1
        i = nl + 1
    if s < cut:
        yield s, cut, False


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
