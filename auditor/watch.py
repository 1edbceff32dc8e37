"""The ``auditor watch`` command: read the running epoch (``sources/live.py``), assess it
(``analyses/watch.py``), store every reading, keep the textfile current, print.

- ``--once``: one reading, one report through the usual renderers, the usual exit codes.
- Without ``--once``: a reading every ``--interval`` (at least the time the reading took),
  the first one printed whole, then one line per participant whose verdicts, finding or
  margin changed. The requests to each node follow a token bucket of ``--rate`` a minute
  (20 by default: the public node's limit) with a burst of 20. Ctrl-C ends it (exit 130).
  A store another process holds, or a textfile that cannot be written, ends nothing
  (:class:`Keeper`): the readings wait in memory and are stored, in order, when the store is
  free; each is tried again with backoff, and the run says so on stderr.
- ``--backtest N``: epoch N's stored readings against its settled verdicts (collected first
  from the source flags, unless --offline).
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

from .analyses.watch import WatchCall
from .errors import AuditorError, SourceError, UsageError
from .report.view import json_text


def _options(c: WatchCall, participants: tuple[str, ...] | None = None):
    from .analyses.watch import WatchOptions

    return WatchOptions(margin_share=c.margin_share, participants=c.participants if participants is None
                        else participants, mine=c.mine)


def backtest(db: Path, c: WatchCall, sources, out, collect: Callable, command: str, *, progress: Any) -> int:
    """``--backtest N``: collect epoch N (its settled verdicts) unless --offline, then the
    backtest; ``progress`` is the store's (what its collect reports through)."""
    from .analyses import watch
    from .report import render
    from .store import Store

    assert c.backtest is not None
    with Store(db, progress=progress) as store:
        code = 0
        if not sources.offline and sources.any:
            code = collect(store, sources, [c.backtest])
        result = watch.run(store, c.backtest, _options(c))
    if result.unavailable:
        raise SourceError(result.unavailable)
    render.emit(result, out.fmt, out.path, render.View(wide=out.wide, command=command))
    if not result.complete:         # exit 3 says why
        from .report.collect_report import print_incomplete

        print_incomplete(result, sources.offline)
    return code or result.exit_code(out.fail_on)


FIRST_WAIT = 1.0         # seconds before a store or textfile that failed is tried again; doubles
LONGEST_WAIT = 300.0
MAX_HELD = 1000          # readings held while the store is busy; past it the oldest is dropped, said


class Keeper:
    """The loop's keep: every reading stored, the textfile kept current. A store another
    process holds (``report daily``, ``auditor sql`` writing, a backup) or that fails, and a
    textfile whose folder is briefly unusable, are tried again with backoff (1 s, doubling up
    to 5 minutes) and said in one line each time they fail; the readings wait, in order (at
    most MAX_HELD), and the latest result is what the textfile gets. Nothing here ends the loop."""

    def __init__(self, store: Callable[[list[tuple[Any, Any]]], None], textfile: Callable[[Any], None] | None,
                 clock: Callable[[], float], err: Any = None) -> None:
        self.store, self.textfile, self.clock, self.err = store, textfile, clock, err
        self.held: list[tuple[Any, Any]] = []
        self.dropped = 0
        self.due = {"store": 0.0, "textfile": 0.0}
        self.wait = {"store": 0.0, "textfile": 0.0}

    def __call__(self, result: Any, reading: Any) -> None:
        self.held.append((result, reading))
        if len(self.held) > MAX_HELD:
            self.held.pop(0)
            self.dropped += 1
        waiting = len(self.held)
        if self._attempt("store", lambda: self.store(self.held), f"{len(self.held)} reading(s) held"):
            if waiting > 1 or self.dropped:
                self._say(f"the store is free again: {waiting} held reading(s) stored"
                          + (f"; {self.dropped} older one(s) dropped (at most {MAX_HELD} are held)"
                             if self.dropped else ""))
            self.dropped = 0
        if self.textfile is not None:
            self._attempt("textfile", lambda: self.textfile(result), "it keeps the last reading written")

    def _attempt(self, what: str, do: Callable[[], None], meanwhile: str) -> bool:
        """``do`` unless ``what`` waits after a failure; False when it failed or waits."""
        if self.clock() < self.due[what]:
            return False
        try:
            do()
        except AuditorError as exc:
            self.wait[what] = min(max(self.wait[what] * 2, FIRST_WAIT), LONGEST_WAIT)
            self.due[what] = self.clock() + self.wait[what]
            self._say(f"the {what} could not be written: {exc}; {meanwhile}, trying again in {self.wait[what]:g} s")
            return False
        if self.wait[what] and what == "textfile":
            self._say("the textfile is written again")
        self.wait[what] = 0.0
        return True

    def _say(self, text: str) -> None:
        import sys

        from .report.text import plain

        print(f"auditor: watch: {plain(text)}", file=self.err or sys.stderr, flush=True)


def live(db: Path, c: WatchCall, sources, out, command: str, *, clock: Callable[[], float] = time.monotonic,
         sleep: Callable[[float], None] = time.sleep, readings: int | None = None) -> int:
    """A reading (``--once``) or the loop; returns the exit code of ``--once``."""
    from .analyses import watch
    from .collect import client, resolved
    from .report import render
    from .sources import live as src
    from .store import Store

    if sources.offline:
        raise UsageError("--offline: watch reads the running epoch live; --offline goes with --backtest N")
    view = render.View(wide=out.wide, whole=bool(c.participants), command=command)
    with ExitStack() as stack:
        s = stack.enter_context(resolved(sources))
        if not s.nodes:
            raise UsageError("watch needs a chain node: give --node URL (or set AUDITOR_NODE), or --replay DIR")
        src.host_client_bases(list(c.hosts))

        def make(bases: list[str], sub: str) -> Any:
            return stack.enter_context(client(s, bases, sub, burst=src.WATCH_BURST, clock=clock, sleep=sleep))

        reader = src.Reader(make(s.nodes, "chain"), [make([a], f"accounting-{i}") for i, a in enumerate(s.accounting)],
                            [make([h], f"host-{i}") for i, h in enumerate(c.hosts)])

        def store_all(held: list[tuple[Any, Any]]) -> None:
            with Store(db) as store:        # open only to store them: the report daily may run meanwhile
                while held:                 # each one stored leaves the list: none is stored twice
                    result, reading = held[0]
                    every = result if not c.participants else watch.assess(reading, _options(c, ()))
                    watch.store_reading(store, every, reading)
                    held.pop(0)

        if c.once:
            reading = reader.read()
            result = watch.assess(reading, _options(c))
            store_all([(result, reading)])
            if c.prom_textfile is not None:
                watch.write_textfile(c.prom_textfile, result)
            render.emit(result, out.fmt, out.path, view)
            watch.say_missing(result)        # exit 3 says why on stderr, whatever the format
            return result.exit_code(out.fail_on)
        if out.path is not None:
            raise UsageError("--output goes with --once (the loop prints what changed as it happens)")

        def first(result) -> None:
            if out.fmt == "json":          # JSON lines: the first reading whole, then one change a line
                print(json_text(result.to_json()), flush=True)      # the one JSON writer: never NaN
            else:
                render.emit(result, out.fmt, None, view)

        keeper = Keeper(store_all, None if c.prom_textfile is None
                        else lambda result: watch.write_textfile(c.prom_textfile, result), clock)
        if out.fmt == "table" and sys.stdout.isatty():
            with _in_place(view) as show:       # a terminal: one table, redrawn
                watch.loop(reader.read, _options(c), c.interval, keep=keeper, emit_first=first, clock=clock,
                           sleep=sleep, readings=readings, fmt=out.fmt, show=show)
            return 0
        watch.loop(reader.read, _options(c), c.interval, keep=keeper, emit_first=first, clock=clock, sleep=sleep,
                   readings=readings, fmt=out.fmt)
    return 0


@contextmanager
def _in_place(view) -> Iterator[Callable[[Any, float], None]]:
    """The watch on a terminal: the last reading's report (participants by their labels, not
    full addresses, mine first) redrawn in place under a countdown to the next reading. The
    table comes before the findings: what does not fit the terminal's height is cut from the
    bottom (rich's Live), and on a terminal of 24 rows the findings took the table's place."""
    import dataclasses
    import io

    from rich.console import Console, Group
    from rich.live import Live
    from rich.text import Text

    from .report.table import print_table
    from .result import Result

    console = Console(highlight=False)
    shown: list[Any] = [Text("first reading ..."), Text("")]
    view = dataclasses.replace(view, wide=False, whole=False)

    def drawn(result: Any) -> Text:
        out = io.StringIO()
        print_table(result, console=Console(file=out, width=console.width, highlight=False,
                                            color_system=console.color_system, force_terminal=True), view=view)
        return Text.from_ansi(out.getvalue().strip("\n"))

    def show(result: Any, left: float) -> None:
        if result is not None:
            findings = Result(result.key, "", {}, findings=result.findings)
            shown[:] = [drawn(dataclasses.replace(result, findings=[])),
                        drawn(findings) if result.findings else Text("")]
        live.update(Group(Text(f"next reading in {max(0, round(left))} s (Ctrl-C to stop)", style="dim"),
                          shown[0], Text(""), shown[1]))

    with Live(shown[0], console=console, auto_refresh=False, transient=False) as live:
        yield lambda result, left: (show(result, left), live.refresh())
