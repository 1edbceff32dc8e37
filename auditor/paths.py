"""One rule for the paths the tool writes (issue 35).

- The store (``--db``) is a regular file or a new path, on this machine: a device, a FIFO,
  a socket or a directory is refused (one line, exit 2), and so is a name DuckDB would read
  as a remote or MotherDuck database (``md:x``, ``s3://b/x``). Nothing that is not a
  regular file is ever removed (``Store._connect``'s repair of a cut-off store checks it).
- An output (``--output``, ``--prom-textfile``, ``report daily``'s files) that is a device,
  a FIFO, ``-`` or one of the process's own streams (``/dev/stdout``, ``/dev/fd/N``) is
  written in place, streamed, and never replaced nor removed (:func:`in_place`); a regular
  file or a new path is written atomically (``render.write_all_atomic``).
- No output is written over a store this process opened (:func:`not_a_store`).
"""

from __future__ import annotations

import os
import re
import stat
from pathlib import Path

from .errors import UsageError

# what DuckDB opens as something other than a local file: MotherDuck, and any URL scheme
# (s3://, https://, gcs://, az://, hf://, ...), also once pathlib made "s3://b" into "s3:/b"
_NOT_LOCAL = re.compile(r"^(?:md|motherduck):|^[A-Za-z][A-Za-z0-9+.-]+:/", re.I)

# the kind of a file that is not a regular file, as a message names it
_KINDS = ((stat.S_ISDIR, "a directory"), (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
          (stat.S_ISFIFO, "a FIFO"), (stat.S_ISSOCK, "a socket"))


def kind(mode: int) -> str:
    """What a file of ``mode`` (an ``st_mode``) is, for a message: "a FIFO", "a regular file"."""
    return next((name for test, name in _KINDS if test(mode)), "a regular file" if stat.S_ISREG(mode)
                else "not a regular file")


def check_store(path: str | Path) -> None:
    """Refuse a store path that is not a regular file or a new path on this machine: one line,
    exit 2. Stat only (a FIFO is never opened, so it cannot hang the run)."""
    text = str(path)
    if text == ":memory:":
        return
    if _NOT_LOCAL.match(text):
        raise UsageError(f"--db {text}: the store is a local DuckDB file, not a URL or a remote database; "
                         "for a local file of that name give its full path (/...)")
    try:
        mode = os.stat(text).st_mode
    except FileNotFoundError:
        return
    except OSError as exc:
        raise UsageError(f"--db {text}: cannot use it: {exc.strerror or exc}") from None
    if not stat.S_ISREG(mode):
        raise UsageError(f"--db {text} is {kind(mode)}; the store is a regular file or a new path")


# the names of the process's own streams, which are written in place even when they lead to a file
_STREAMS = ("/dev/stdout", "/dev/stderr", "/dev/fd/", "/proc/self/fd/")
_STDOUT = ("/dev/stdout", "/dev/fd/1", "/proc/self/fd/1")     # of _STREAMS, the names of stdout


def in_place(path: str | Path) -> bool:
    """Whether an output at ``path`` is written in place, streamed: ``-``, one of the process's
    own streams (``/dev/stdout``, ``/dev/fd/1``: whatever they lead to, the shell opened it), or
    an existing file that is not a regular file or a directory (a device, a FIFO, a socket)."""
    text = str(path)
    full = os.path.abspath(text)
    if text == "-" or full in _STREAMS[:2] or full.startswith(_STREAMS[2:]):
        return True
    try:
        mode = os.stat(text).st_mode
    except OSError:
        return False                # a new path (or one the atomic write will name the trouble of)
    return not (stat.S_ISREG(mode) or stat.S_ISDIR(mode))


def open_in_place(path: str | Path):
    """A text stream to write an in-place output into (``in_place``): stdout for ``-`` and
    ``/dev/stdout``; else the file opened for appending, never truncated nor created (a device
    or FIFO; a file behind ``/dev/fd/N`` keeps what the shell's redirection made of it). The
    caller closes it (closing stdout's copy leaves stdout open)."""
    import sys

    text = str(path)
    if text == "-" or os.path.abspath(text) in _STDOUT:
        sys.stdout.flush()
        return open(os.dup(sys.stdout.fileno()), "w", encoding="utf-8", errors="backslashreplace")
    fd = os.open(text, os.O_WRONLY | os.O_APPEND | os.O_NOCTTY)
    return open(fd, "w", encoding="utf-8", errors="backslashreplace")


_STORES: list[tuple[str, tuple[int, int] | None]] = []


def read_regular(path: str | Path, limit: int) -> tuple[int, bytes]:
    """``path``'s mode and, when it is a regular file, its first ``limit`` bytes (else none):
    opened without blocking and decided from the open file, so a FIFO put there is never
    waited on and a device never read. OSError when it cannot be opened."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY)
    with open(fd, "rb") as stream:
        mode = os.fstat(fd).st_mode
        return mode, stream.read(limit) if stat.S_ISREG(mode) else b""


def opened_store(path: str | Path) -> None:
    """Note a store this process opened: no output is written over it (:func:`not_a_store`),
    during the run or after the store is closed."""
    text = str(path)
    if text == ":memory:":
        return
    _STORES.append((os.path.realpath(text), _identity(text)))


def _identity(path: str) -> tuple[int, int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_dev, st.st_ino


def not_a_store(path: str | Path, flag: str = "--output") -> None:
    """Refuse (one line, exit 2) to write an output over a store this process opened, or its
    write-ahead log: compared by file identity, and by real path for a file not made yet."""
    real, ident = os.path.realpath(str(path)), _identity(str(path))
    for store, store_ident in _STORES:
        if real in (store, store + ".wal") or (ident is not None and ident in (store_ident,
                                                                              _identity(store + ".wal"))):
            raise UsageError(f"{flag} {path} is the store (--db {store}); an output is never written over it: "
                             "give another path")
