"""Ctrl-C inside a long DuckDB query.

Python runs its SIGINT handler (the KeyboardInterrupt) only when the main thread is back in
Python code, and a DuckDB query runs in C++: a query of minutes (an ``auditor sql`` join, a
kept table of a busy day) ran to its end before the interrupt was seen. The signal's C
handler writes its number to a wakeup pipe at once (``signal.set_wakeup_fd``); a watcher
thread reads it and interrupts every open connection (``track``), so the query stops at
its next chunk of rows and the CLI says ``auditor: interrupted`` (exit 130). A SIGINT the
process was started to ignore (``nohup``, a shell's background job) stays ignored. SIGTERM
stops a run the same way: ``auditor: terminated (SIGTERM)``, exit 143.
"""

from __future__ import annotations

import os
import signal
import threading
import weakref
from typing import Any

_open: weakref.WeakSet = weakref.WeakSet()      # the DuckDB connections a Ctrl-C interrupts
_installed = False
_terminated = False                             # the stop was a SIGTERM, not a Ctrl-C


def track(con: Any) -> Any:
    """``con``, interrupted by a Ctrl-C from now on while it stays open."""
    _open.add(con)
    return con


def stopped() -> tuple[str, int]:
    """The line and the exit code of a run a signal stopped: Ctrl-C (130) or SIGTERM (143)."""
    return ("auditor: terminated (SIGTERM)", 143) if _terminated else ("auditor: interrupted", 130)


def _on_term(signum: int, frame: Any) -> None:
    """SIGTERM (`timeout`, systemd, `kill`) stops the run as Ctrl-C does: its transaction rolled
    back and its temporary files removed. Python's default died at once, leaving the spool of
    a stdin read (a whole stream, hundreds of MB) in the temporary folder."""
    global _terminated
    _terminated = True
    raise KeyboardInterrupt


def install() -> None:
    """Watch for SIGINT beside Python's own handler, and stop on SIGTERM as on SIGINT (once per
    process, from the main thread, and only when each signal has Python's default handler)."""
    global _installed
    if _installed or threading.current_thread() is not threading.main_thread():
        return
    if signal.getsignal(signal.SIGTERM) is signal.SIG_DFL:
        signal.signal(signal.SIGTERM, _on_term)
    if signal.getsignal(signal.SIGINT) is not signal.default_int_handler:
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
        if signal.SIGINT in signals or signal.SIGTERM in signals:
            for con in list(_open):
                try:
                    con.interrupt()
                except Exception:       # closed meanwhile: nothing to stop
                    pass
