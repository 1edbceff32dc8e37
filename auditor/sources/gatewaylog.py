"""Gateway log ingestion: ``auditor collect --gateway-log PATH`` (docs: gateway-logs.md).

Reads devshardctl logs (plain files, globs, ``.gz``, ``-`` for stdin) into the ``log_*``
tables of schema 003, incrementally. A store is evidence: rows once stored stay, whatever
logrotate does to the files afterwards.

* Every file read has a ``log_files`` row: its path, device/inode, its read position
  (``byte_offset``, the end of the last complete line stored) and the fingerprint of its
  content (sha256 of its first bytes read, up to 4 KiB, uncompressed).
* At the start of a run each given file is matched with a row (``LogFiles.match``): the row
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

import hashlib
import os
import signal
import sys
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from typing import BinaryIO, Callable

import duckdb

from ..errors import SourceError, StoreError
from ..progress import Progress
from ..result import CollectReport
from ..store import Store
from .gatewaylog_files import HEAD_BYTES, STDIN, Target, _mtime, resolve_paths
from .gatewaylog_gzip import MaybeGzip, gz_verified, verified_reader
from .gatewaylog_read import BLOCK_SIZE, stream
from .gatewaylog_records import FileRec, LogFiles
from .gatewaylog_report import SOURCE, RunReport  # noqa: F401 - SOURCE: the coverage rows' source, named here too
from .gatewaylog_store import RowStore

# The steps, one module each: finding the files (gatewaylog_files), their records and which
# one each file continues (gatewaylog_records), checking a .gz (gatewaylog_gzip), reading and
# parsing blocks (gatewaylog_read, gatewaylog_parse), storing (gatewaylog_store) and the run
# report (gatewaylog_report). This module reads each kind of source with them.


def ingest(store: Store, paths: list[str], progress: Progress, *, block_size: int = BLOCK_SIZE,
           vectorised: bool = True) -> CollectReport:
    """Read the gateway logs ``paths`` (files, globs, ``.gz``, ``-`` for stdin) into the
    store; return the run report (rows loaded, lines rejected by reason, files skipped as
    unchanged, paths missing). ``vectorised=False`` parses line by line (tests only)."""
    report = CollectReport(source=SOURCE)
    targets, unresolved = resolve_paths(paths)
    ing = _Ingest(store, report, progress, block_size, vectorised)
    for given, why in unresolved:
        ing.run.missing(given, why)
    with _interrupt_seen() as interrupted:
        try:
            matched = ing.files.match(targets)
            for t in sorted(targets, key=lambda t: t.path in ing.files.copies):    # a copy after what it copies
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
                    ing.run.missing(t.given, f"cannot read: {exc.strerror or exc}")
                except (duckdb.Error, StoreError) as exc:     # StoreError: a commit failed (a full disk)
                    if interrupted.is_set():
                        raise
                    raise SourceError(f"{t.given}: could not store what was read "
                                      f"({str(exc).splitlines()[0]}); the file's earlier rows are kept") from exc
                except Exception as exc:  # noqa: BLE001 - one file's failure must not cost the others
                    if interrupted.is_set():
                        raise
                    ing.run.missing(t.given, f"stopped by an unexpected error ({type(exc).__name__}: {exc}); "
                                            f"what was stored before it is kept")
            _keep_lines(store)
        except Exception:
            # DuckDB (and Arrow inside it) turn Ctrl-C during a query into an error of their
            # own ("Query interrupted"); every commit is whole, so the store holds what was
            # committed before it, and the CLI's answer to Ctrl-C applies
            if interrupted.is_set():
                raise KeyboardInterrupt from None
            raise
    if not report.loaded:
        report.loaded["log_events"] = 0
    if covers := log_covers(store):
        report.notes.append(covers)
    if ing.rows.parsed_bytes:
        from .gatewaylog_parse import compiled_note

        if note := compiled_note():
            report.notes.append(note)
    return report


def log_covers(store: Store) -> str | None:
    """The time range the stored gateway logs cover, in words; None when no line carried a time."""
    from ..times import utc_text

    row = store.query("log_time_range")[0]
    if row["first_ts"] is None:
        return None
    return f"the stored gateway logs cover {utc_text(row['first_ts'])} to {utc_text(row['last_ts'])}"


def _keep_lines(store: Store) -> None:
    """Read the lines just stored into the line tables (queries/lines/), once, here: every
    analysis after reads their typed rows instead of parsing log_events' fields again (the
    store's progress says so; nothing when nothing new was stored)."""
    try:
        store.keep_lines()
    except (duckdb.Error, StoreError) as exc:
        raise SourceError(f"the gateway log lines are stored, but the line tables could not be brought up to "
                          f"date ({str(exc).splitlines()[0]}); the next command that opens the store tries again"
                          ) from exc


@contextmanager
def _interrupt_seen() -> Iterator[threading.Event]:
    """An event set when SIGINT or SIGTERM arrives (in the main thread; the usual
    KeyboardInterrupt still follows), so that an error raised in its place is known for what
    it is."""
    seen = threading.Event()
    if threading.current_thread() is not threading.main_thread():
        yield seen
        return
    prev = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}

    def on_signal(signum, frame):
        seen.set()
        if callable(prev[signum]):
            prev[signum](signum, frame)

    for sig, handler in prev.items():
        if callable(handler):       # a signal ignored (nohup) or left to the OS stays so
            signal.signal(sig, on_signal)
    try:
        yield seen
    finally:
        for sig, handler in prev.items():
            signal.signal(sig, handler)


class _Ingest:
    """One ingest run: reading each kind of source (a plain file, a .gz, stdin) into the
    store, with the run's records, row store and report."""

    def __init__(self, store: Store, report: CollectReport, progress: Progress, block_size: int,
                 vectorised: bool = True) -> None:
        self.store = store
        self.vectorised = vectorised
        self.progress = progress
        self.block_size = max(1024, int(block_size))
        self.run = RunReport(store, report)
        self.files = LogFiles(store, self.run)
        self.rows = RowStore(store, self.files, self.run)

    def read_file(self, t: Target, rec: FileRec | None) -> None:
        st = t.st
        if rec is None:
            rec = self.files.new(t.path, "plain")
        elif st.st_size == rec.byte_offset and (rec.device, rec.inode) == (st.st_dev, st.st_ino):
            return self.run.unchanged(t)
        rec.device, rec.inode = st.st_dev, st.st_ino
        with open(t.fs, "rb") as f:
            f.seek(rec.byte_offset)
            left = self._stream(rec, f.readinto, final=False, total=max(0, st.st_size - rec.byte_offset),
                                label=t.given, head=t.head, size=st.st_size, mtime=_mtime(st))
        if left:
            self.run.note(f"{t.given}: last line incomplete ({left} bytes), left for the next run")
        self.run.coverage(t.given, "ok", f"read to byte {rec.byte_offset} ({rec.lines} lines)")

    def read_gz(self, t: Target, rec: FileRec | None) -> None:
        """A .gz: checked whole first, then only what the check verified is read, from the
        record's position on (a compressed copy of a file read before goes on after it)."""
        st = t.st
        if rec is not None and rec.complete and self.files.same_file(rec, t):
            return self.run.unchanged(t)
        if rec is None:
            rec = self.files.new(t.path, "gz")
        rec.device, rec.inode = st.st_dev, st.st_ino
        verified, decoded, damage = gz_verified(t.fs)
        if rec.byte_offset < verified:
            self._read_gz_from(t, rec, verified, damage)
        elif damage is None:     # all it holds is stored already (a compressed copy): not decompressed again
            rec.complete = True
            with self.store.transaction():
                self.rows.finish_state(rec, dict(head=t.head, size=st.st_size, mtime=_mtime(st)))
        if damage:
            msg = (f"damaged gzip ({damage}): stored the {verified} uncompressed bytes its check verified "
                   f"({rec.lines} lines in all); dropped the {decoded - verified} bytes decoded after them, and "
                   f"anything that follows")
            self.run.report.missing.append(f"{t.given}: {msg}")
            self.run.coverage(t.given, "partial", msg)
            return
        self.run.coverage(t.given, "ok", f"read whole ({rec.lines} lines)")

    def _read_gz_from(self, t: Target, rec: FileRec, verified: int, damage: str | None) -> None:
        """Store the verified uncompressed bytes of ``t`` after ``rec.byte_offset`` (decompressed
        again from the start; what is stored already is skipped)."""
        st = t.st
        with open(t.fs, "rb") as raw:
            readinto = verified_reader(raw, verified, rec.byte_offset, self.block_size)
            self._stream(rec, readinto, final=damage is None, total=st.st_size, label=t.given, head=t.head,
                         size=st.st_size, mtime=_mtime(st), progress_pos=lambda: raw.tell())

    # -- stdin ------------------------------------------------------------------------------
    def read_stdin(self, t: Target, src: BinaryIO) -> None:
        """Store what stdin holds, a gzip stream decompressed (``zcat``-less ``cat app.log.gz |``;
        its lines were rejected as invalid UTF-8), and of a damaged one only what its check
        verified, as for a .gz file. The same content as a stdin read before is skipped; content
        that starts with all of one read before (``docker logs gw | auditor collect
        --gateway-log -`` again a day later) is stored from where that one ended: its earlier
        lines were stored again each time."""
        h = hashlib.sha256()
        before = [r for r in self.files.recs.values() if r.kind == "stdin" and r.complete and r.content_sha256]
        cuts = sorted({r.byte_offset for r in before if r.byte_offset})
        prefix: dict[int, str] = {}         # a length of a stdin read before -> the digest of as many first bytes
        written = verified = 0
        at_verified = h.copy()              # the digest of the first `verified` bytes
        source = MaybeGzip(src)
        tmp = tempfile.NamedTemporaryFile(prefix="auditor-stdin-", suffix=".log", delete=False)
        try:
            with tmp:
                for b, done in source.chunks():
                    for cut in (c for c in cuts if written < c <= written + len(b)):
                        at = h.copy()
                        at.update(b[:cut - written])
                        prefix[cut] = at.hexdigest()
                    h.update(b)
                    tmp.write(b)
                    written += len(b)
                    if done:
                        verified, at_verified = written, h.copy()
                tmp.truncate(verified)      # a damaged member's bytes are not stored
            if not written:                 # a cron's `docker logs gw |` whose docker call failed
                self.run.missing("stdin", "empty: no bytes came (did the command writing to it fail?); nothing stored")
                return
            digest = at_verified.hexdigest()
            prefix = {cut: d for cut, d in prefix.items() if cut <= verified}
            label = "stdin (gzip)" if source.gzip else "stdin"
            if source.damage:
                msg = (f"damaged gzip ({source.damage}): stored the {verified} uncompressed bytes its check "
                       f"verified; dropped the {written - verified} bytes decoded after them, and anything that follows")
                self.run.report.missing.append(f"{label}: {msg}")
            rec = next((r for r in self.files.recs.values() if r.kind == "stdin" and r.content_sha256 == digest),
                       None)
            if rec is not None and rec.complete:
                self.run.report.skipped.append(f"{label} (same content as read before: {rec.path})")
                self.run.coverage("stdin", "skipped", f"same content as {rec.path}")
                return
            if rec is None:
                rec = self.files.new(f"stdin:{digest[:16]}", "stdin")
                rec.content_sha256 = digest
                grown = [r for r in before if prefix.get(r.byte_offset) == r.content_sha256]
                if grown:           # the longest stdin read before that this one starts with
                    old = max(grown, key=lambda r: r.byte_offset)
                    rec.byte_offset, rec.lines = old.byte_offset, old.lines
                    self.run.note(f"{label}: starts with all of {old.path} ({old.lines:,} lines, stored then): "
                                  f"read after its byte {old.byte_offset:,}")
            with open(tmp.name, "rb") as f:
                head = f.read(HEAD_BYTES)
                f.seek(rec.byte_offset)
                self._stream(rec, f.readinto, final=source.damage is None, total=max(0, verified - rec.byte_offset),
                             label=label, head=head, size=verified, mtime=None)
            if source.damage:
                self.run.coverage("stdin", "partial", f"{rec.path}: {rec.lines} lines; {msg}")
            else:
                self.run.coverage("stdin", "ok", f"{rec.path}: {rec.lines} lines")
        finally:
            try:
                os.unlink(tmp.name)
            except OSError:
                pass

    def _stream(self, rec: FileRec, readinto: Callable[[memoryview], int], *, final: bool, total: int,
                label: str, head: bytes | None, size: int | None, mtime: datetime | None,
                progress_pos: Callable[[], int] | None = None) -> int:
        """Read, parse and store ``rec``'s lines from its position on (gatewaylog_read.stream);
        ``head``, ``size`` and ``mtime`` are the file's, kept in its record."""
        left = stream(rec, readinto, self.rows.writer(rec, head, size, mtime), self.progress,
                      block_size=self.block_size, vectorised=self.vectorised, final=final, total=total,
                      label=label, progress_pos=progress_pos)
        self.progress.log(f"reading {label}: {rec.lines:,} lines")     # as given: two app.log of two folders apart
        return left


__all__ = ["ingest", "resolve_paths", "BLOCK_SIZE"]
