"""Gateway log ingestion: reading blocks of whole lines and parsing them in order.

:func:`blocks` cuts what a file gives into blocks of whole lines (BLOCK_SIZE, read without
copies); a line longer than MAX_LINE is rejected (``line_too_long``), never buffered.
:func:`stream` hands the blocks to PARSE_WORKERS parse threads (:mod:`.gatewaylog_parse`:
polars and DuckDB release the GIL) and the results, in file order, to a writer
(:mod:`.gatewaylog_store`) in this thread. Memory stays flat whatever the file size.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Callable

from ..progress import Progress
from .gatewaylog_records import FileRec
from .gatewaylog_store import _Writer

BLOCK_SIZE = 8 << 20
PARSE_WORKERS = 2
MAX_LINE = 64 << 20          # a "line" longer than this is rejected (line_too_long), not buffered


def blocks(readinto: Callable[[memoryview], int], rec: FileRec, block_size: int, final: bool,
           progress_pos: Callable[[], int] | None) -> Iterator[tuple]:
    """Cut what ``readinto`` reads into blocks of whole lines, numbered from ``rec``'s
    position. Yields ``("parse", block, first_line, offset, progress)`` (the block a
    memoryview of the bytes read, not a copy), ``("done", BlockResult, nbytes,
    progress)`` for an over-long line, ``("progress", n)``, and finally ``("end",
    bytes_left_unread)``."""
    from .gatewaylog_parse import count_lines

    bs = block_size
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

def stream(rec: FileRec, readinto: Callable[[memoryview], int], w: _Writer, progress: Progress, *,
           block_size: int, vectorised: bool, final: bool, total: int, label: str,
           progress_pos: Callable[[], int] | None = None) -> int:
    """Read blocks with ``readinto`` from ``rec.byte_offset`` on, parse them in a worker
    thread (polars and DuckDB release the GIL) while this thread stores the previous
    ones with ``w``, and return the bytes of an incomplete last line left unread (0 when
    ``final``: the last line is then taken as it is)."""
    from functools import partial

    from .gatewaylog_parse import parse_block

    parse = partial(parse_block, vectorised=vectorised)
    q: queue.Queue = queue.Queue(maxsize=PARSE_WORKERS)      # futures in file order
    stop = threading.Event()
    pool = ThreadPoolExecutor(max_workers=PARSE_WORKERS, thread_name_prefix="gatewaylog-parse")

    def dispatch() -> None:
        """Reader thread: cut blocks and hand them to the parse pool, in order."""
        try:
            prog = 0
            for item in blocks(readinto, rec, block_size, final, progress_pos):
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
        with progress.task(f"reading {label}", total or None) as advance:
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
