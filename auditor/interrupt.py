"""Ctrl-C inside a long DuckDB query.

Python runs its SIGINT handler (the KeyboardInterrupt) only when the main thread is back in
Python code, and a DuckDB query runs in C++: a query of minutes (an ``auditor sql`` join, a
kept table of a busy day) ran to its end before the interrupt was seen. The signal's C
handler writes its number to a wakeup pipe at once (``signal.set_wakeup_fd``); a watcher
thread reads it and interrupts every open connection (``track``), so the query stops at
its next chunk of rows and the CLI says ``auditor: interrupted`` (exit 130). A SIGINT the
process was started to ignore (``nohup``, a shell's background job) stays ignored.
"""

from __future__ import annotations

import os
import signal
import threading
import weakref
from typing import Any

_open: weakref.WeakSet = weakref.WeakSet()      # the DuckDB connections a Ctrl-C interrupts
_installed = False


def track(con: Any) -> Any:
    """``con``, interrupted by a Ctrl-C from now on while it stays open."""
    _open.add(con)
    return con


def install() -> None:
    """Watch for SIGINT beside Python's own handler (once per process, from the main thread,
    and only when SIGINT has Python's default handler)."""
    global _installed
    if _installed or threading.current_thread() is not threading.main_thread() \
            or signal.getsignal(signal.SIGINT) is not signal.default_int_handler:
        return
    read, write = os.pipe()
    os.set_blocking(write, False)
    try:
        signal.set_wakeup_fd(write, warn_on_full_buffer=False)
    except ValueError:          # not the main thread of the main interpreter
        os.close(read)
        os.close(write)
        return
    _installed = True
    threading.Thread(target=_watch, args=(read,), name="auditor-interrupt", daemon=True).start()


def _watch(read: int) -> None:
    while True:
        signals = os.read(read, 64)
        if not signals:
            return
        if signal.SIGINT in signals:
            for con in list(_open):
                try:
                    con.interrupt()
                except Exception:       # closed meanwhile: nothing to stop
                    pass
