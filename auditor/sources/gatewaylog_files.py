"""Gateway log ingestion: finding the files to read (docs: gateway-logs.md).

The paths given to ``collect --gateway-log`` (files, globs, ``~``, ``-`` for stdin) become
targets (:class:`Target`): each readable regular file once (a file linked twice is read once), with
its stat, its kind (plain or gzip) and its first bytes (its identity, see
:mod:`.gatewaylog_records`); a path that names no readable file is returned with the reason.
"""

from __future__ import annotations

import glob
import hashlib
import os
import re
import zlib
from dataclasses import dataclass
from datetime import datetime, timezone

from .gatewaylog_gzip import GZIP_MAGIC, gunzip

HEAD_BYTES = 4096            # a plain file's identity: sha256 of (up to) its first 4 KiB
STDIN = "-"
_GLOB_CHARS = set("*?[")


@dataclass
class Target:
    path: str                 # absolute path, or '-' for stdin
    given: str                # as the user wrote it
    st: os.stat_result | None = None
    kind: str = "plain"       # plain | gz
    head: bytes = b""         # the first HEAD_BYTES of its content (uncompressed)
    fs: str = ""              # the path to open: ``path`` is its text, as stored (see _as_text)


def absent(paths: list[str]) -> list[str]:
    """The paths (as given) that name nothing: neither ``-``, nor a glob, nor an existing
    path (``<(zcat ...)``'s /dev/fd/N exists). A usage error before any work (issue 33):
    otherwise the whole report ran, and said at its end that the log was missing."""
    return [_as_text(str(g)) for g in paths
            if str(g) != STDIN and not _GLOB_CHARS & set(str(g)) and not os.path.lexists(os.path.expanduser(str(g)))]


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
    """gzip by its first bytes, as gzip tells it, whatever the name; a ``.gz`` that does not
    start so is gzip still (a damaged one, said so) unless it starts as text: a plain log
    named .gz was dropped whole as 'damaged gzip'."""
    import codecs

    with open(path, "rb") as f:
        head = f.read(HEAD_BYTES)
    if head.startswith(GZIP_MAGIC):
        return True
    if not path.endswith(".gz"):
        return False
    try:
        codecs.getincrementaldecoder("utf-8")().decode(head)   # a character cut at the end is no fault
    except UnicodeDecodeError:
        return True
    return b"\0" in head


def _content_head(path: str, kind: str) -> bytes:
    """The first HEAD_BYTES of the file's content (decompressed for a .gz; what precedes
    damage, if any)."""
    with open(path, "rb") as f:
        if kind != "gz":
            return f.read(HEAD_BYTES)
        out = bytearray()
        try:
            for chunk, _ in gunzip(f, HEAD_BYTES):
                out += chunk
                if len(out) >= HEAD_BYTES:
                    break
        except (zlib.error, EOFError):
            pass
        return bytes(out[:HEAD_BYTES])


def _mtime(st: os.stat_result) -> datetime:
    return datetime.fromtimestamp(st.st_mtime_ns / 1e9, tz=timezone.utc)


def _sha(b: bytes) -> str:
    return hashlib.sha256(b).hexdigest()
