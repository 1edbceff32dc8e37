"""Gateway log ingestion: the ``log_files`` records, and which one each given file continues.

Every file read has a ``log_files`` row (:class:`FileRec`): its path, device/inode, its
read position (``byte_offset``, the end of the last complete line stored) and the
fingerprint of its content (sha256 of its first bytes read, up to 4 KiB, uncompressed).
:meth:`LogFiles.match` pairs each given file with the record it continues (the same file
at its path, a file renamed, a copy); records whose content is no longer at their path are
marked gone, their rows kept.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from datetime import datetime

from ..store import Store, utcnow
from .gatewaylog_files import STDIN, Target, _fs_path, _mtime, _sha
from .gatewaylog_report import RunReport


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


def _identifies(head: bytes | None) -> bool:
    """Whether a file's first bytes tell its content from another's: not when they are all NUL
    (a writer without O_APPEND after logrotate's copytruncate leaves a run of NULs at the start
    of every such file, so one was taken for a copy of another and its lines never read)."""
    return bool(head) and bool(head.strip(b"\0"))


class LogFiles:
    """The log_files records of a store, as this run reads and moves them."""

    def __init__(self, store: Store, run: RunReport) -> None:
        self.store = store
        self.run = run
        rows = store.rows(f"SELECT {', '.join(_COLS)} FROM log_files")
        self.recs = {r["file_id"]: FileRec(**r) for r in rows}
        self.unsaved: set[int] = set()    # records not yet in log_files (written with their first rows)
        # path -> the record (read this run) it is a copy of, or the path of a file new to the
        # store it is a copy of (read first, its record made then)
        self.copies: dict[str, FileRec | str] = {}

    def by_path(self, path: str) -> FileRec | None:
        return next((r for r in self.recs.values() if r.path == path and r.gone_at is None), None)

    def new(self, path: str, kind: str) -> FileRec:
        """A record for a file not read before; stored with the first commit of its rows, so
        a run killed before that leaves no trace of it. A copy of a file read in this run
        (``match``) starts where that file's record ends: what it holds before is stored."""
        fid = max(self.recs, default=0) + 1
        now = utcnow()
        rec = FileRec(fid, path, kind, first_read_at=now, last_read_at=now)
        src = self.copies.get(path)
        if isinstance(src, str):
            src = self.by_path(src)
        if src is not None:
            rec.byte_offset, rec.lines, rec.head_len, rec.head_sha256 = (src.byte_offset, src.lines,
                                                                        src.head_len, src.head_sha256)
            self.run.note(f"{path}: a copy of {src.path} (the same first bytes): read after byte "
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

    # -- which record each file continues ---------------------------------------------------
    @staticmethod
    def _head_matches(rec: FileRec, t: Target) -> bool:
        return len(t.head) >= rec.head_len and _sha(t.head[:rec.head_len]) == rec.head_sha256

    def same_file(self, rec: FileRec, t: Target) -> bool:
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
        if not by_inode and not _identifies(t.head):
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
            if rec is not None and self.same_file(rec, t):
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
        # one content given under two names, both new (a copy someone made, `gzip -k`, not a
        # rotation: that would have moved a record): the first given is read, the other after
        # it from where that one ends; a .gz and the plain file it compresses alike
        first: dict[str, str] = {}
        for t in files:
            if t.path not in out and t.path not in self.copies and _identifies(t.head):
                src = first.setdefault(_sha(t.head), t.path)
                if src != t.path:
                    self.copies[t.path] = src
        given = {t.path for t in files}
        gone = [r for r in free if r.gone_at is None and (r.path in given or not os.path.exists(_fs_path(r.path)))]
        if moves or gone:
            self._move_and_mark_gone(moves, gone)
        return out

    def _move_and_mark_gone(self, moves: list[tuple[FileRec, Target]], gone: list[FileRec]) -> None:
        """Records continued at another path take it; records whose content is no longer
        at their path are marked gone (their rows are kept): one transaction."""
        now = utcnow()
        with self.store.transaction():
            for rec, t in moves:
                old = rec.path
                if rec.gone_at is not None:
                    old += " (gone)"
                rec.path, rec.kind, rec.gone_at = t.path, t.kind, None
                rec.device, rec.inode = t.st.st_dev, t.st.st_ino
                self.save(rec)
                self.run.note(f"{old}: rotated to {t.path}; continued there after byte "
                              f"{rec.byte_offset} ({rec.lines} lines)")
            for rec in gone:
                rec.gone_at = now
                self.save(rec)
                why = (f"gone: no longer at this path (rotated away, truncated or deleted); its {rec.events} "
                       f"rows are kept")
                self.run.note(f"{rec.path}: {why}")
                self.run.coverage(f"{rec.path} (gone, file {rec.file_id})", "skipped", why)
