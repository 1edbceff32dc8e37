"""Gateway log ingestion: verifying a ``.gz`` member by member before anything is stored.

A ``.gz`` is read twice: :func:`gz_verified` decompresses it whole and counts the
uncompressed bytes of the members whose CRC and length check passed; :func:`verified_reader`
then hands only those bytes to the block reader. A damaged or truncated member and what
follows are never stored.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterator
from typing import BinaryIO, Callable


GZIP_MAGIC = b"\x1f\x8b"       # how gzip tells its own files, whatever their name


def gunzip(f: BinaryIO, step: int = 1 << 20) -> Iterator[tuple[bytes, bool]]:
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
            # what follows the member is unused_data alone: when the output limit and the member's
            # end meet, zlib leaves the same bytes in unconsumed_tail too (fed twice, a later
            # member's lines were stored twice, or the stream grew without end)
            buf, d, started = d.unused_data, zlib.decompressobj(31), False
        elif out:
            yield out, False


class _Joined:
    """``head`` then the rest of ``f``: a stream whose first bytes were read to look at."""

    def __init__(self, head: bytes, f: BinaryIO) -> None:
        self.head, self.f = head, f

    def read(self, n: int) -> bytes:
        if self.head:
            out, self.head = self.head[:n], self.head[n:]
            return out
        return self.f.read(n)


class MaybeGzip:
    """A stream (stdin) that may be gzip, told by its first bytes, as gzip itself tells it:
    ``chunks()`` yields ``(bytes, verified)``: a plain stream's bytes as they come, each
    verified; a gzip stream's uncompressed bytes, the flag True with the last bytes of each
    member whose check passed. A damaged or truncated member ends it, and ``damage`` says
    what was wrong (the bytes decoded since the last verified ones are not to be stored)."""

    def __init__(self, f: BinaryIO, step: int = 1 << 20) -> None:
        self.f, self.step = f, step
        self.gzip = False
        self.damage: str | None = None

    def chunks(self) -> Iterator[tuple[bytes, bool]]:
        head = self.f.read(max(self.step, 2))
        while 0 < len(head) < 2:                  # a pipe may give one byte at a time
            more = self.f.read(self.step)
            if not more:
                break
            head += more
        if not head.startswith(GZIP_MAGIC):
            while head:
                yield head, True
                head = self.f.read(self.step)
            return
        self.gzip, member = True, 1
        try:
            for out, done in gunzip(_Joined(head, self.f), self.step):
                yield out, done
                member += done
        except (zlib.error, EOFError) as exc:
            self.damage = f"gzip member {member}: {exc}"


def gz_verified(path: str) -> tuple[int, int, str | None]:
    """The first pass over a .gz: (uncompressed bytes in whole members that passed their
    check, bytes decoded in all, what was wrong or None)."""
    verified = decoded = 0
    member = 1
    with open(path, "rb") as f:
        try:
            for chunk, done in gunzip(f):
                decoded += len(chunk)
                if done:
                    verified = decoded
                    member += 1
        except (zlib.error, EOFError) as exc:
            return verified, decoded, f"gzip member {member}: {exc}"
    return verified, decoded, None


def verified_reader(raw: BinaryIO, verified: int, skip: int, step: int) -> Callable[[memoryview], int]:
    """A ``readinto`` of the first ``verified`` uncompressed bytes of the gzip file ``raw``
    (decompressed again from the start), after the first ``skip`` of them (what is stored
    already), which are decompressed and dropped ``step`` bytes at a time."""
    chunks = gunzip(raw)
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

    while skip > 0 and pos[0] < verified:
        skip -= readinto(memoryview(bytearray(min(skip, step))))
    return readinto
