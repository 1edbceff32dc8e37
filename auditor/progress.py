"""Progress for long work: a rich progress bar on a terminal, plain log lines off one (cron).
A message may hold outside text (a path, a URL): it is shown as text, never as rich
markup, its control characters escaped (``report/text.py``)."""

from __future__ import annotations

import sys
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from datetime import datetime, timezone
from typing import TypeVar

from .report.text import plain, terminal
from .times import utc_text

T = TypeVar("T")


class Progress:
    """``log(msg)`` for a status line, ``track(items, what)`` to iterate with a bar,
    ``task(what, total)`` for work measured in units (bytes, requests): on a terminal its one
    live line, off one a line as it starts and one as it ends."""

    def __init__(self, interactive: bool | None = None, quiet: bool = False) -> None:
        self.interactive = sys.stderr.isatty() if interactive is None else interactive
        self.quiet = quiet
        self._console = None
        self._bars = 0          # bars showing: a task within another's is said in log lines
        if self.interactive and not quiet:
            from rich.console import Console

            self._console = Console(stderr=True, log_path=False)

    def log(self, msg: str) -> None:
        if self.quiet:
            return
        if self._console is not None:
            self._console.log(terminal(msg))
        else:
            stamp = utc_text(datetime.now(timezone.utc), "seconds")
            # one write, its newline in it: print() writes the line and its end apart, and a
            # Ctrl-C between the two left the line open for "auditor: interrupted" to join
            sys.stderr.write(f"{stamp} auditor: {plain(msg)}\n")
            sys.stderr.flush()

    def track(self, items: Iterable[T], what: str, total: int | None = None) -> Iterator[T]:
        items = list(items) if total is None else items
        total = len(items) if total is None else total  # type: ignore[arg-type]
        with self.task(what, total) as advance:
            for item in items:
                yield item
                advance(1)

    @contextmanager
    def task(self, what: str, total: float | None):
        if self._console is None or self._bars:
            self.log(f"{what} ...")
            yield lambda n=1: None
            self.log(f"{what}: done")
            return
        from rich.progress import BarColumn, Progress as RichProgress, TaskProgressColumn, TextColumn, TimeElapsedColumn

        # on a terminal a step is its one live line, gone when it is done: the lines that stay
        # are what the steps found ("reading gateway.log.gz: 35,736 lines"), not "done"
        with RichProgress(TextColumn("{task.description}", markup=False), BarColumn(), TaskProgressColumn(),
                          TimeElapsedColumn(), console=self._console, transient=True) as bar:
            tid = bar.add_task(plain(what), total=total)
            self._bars += 1
            try:
                yield lambda n=1: bar.advance(tid, n)
            finally:
                self._bars -= 1
