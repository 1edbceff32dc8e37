"""The ``auditor watch`` command: read the running epoch (``sources/live.py``), assess it
(``analyses/watch.py``), store every reading, keep the textfile current, print.

- ``--once``: one reading, one report through the usual renderers, the usual exit codes.
- Without ``--once``: a reading every ``--interval`` (at least the time the reading took),
  the first one printed whole, then one line per participant whose verdicts, finding or
  margin changed. The requests to each node follow a token bucket of ``--rate`` a minute
  (20 by default: the public node's limit) with a burst of 20. Ctrl-C ends it (exit 130).
- ``--backtest N``: epoch N's stored readings against its settled verdicts (collected first
  from the source flags, unless --offline).
"""

from __future__ import annotations

import json
import re
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .errors import SourceError, UsageError

DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h)?\s*$")


def seconds(text: str) -> float:
    """``10m``, ``30s``, ``1h``, ``500ms`` or a plain number of seconds."""
    m = DURATION.match(text or "")
    if not m:
        raise UsageError(f"--interval {text!r}: give a duration such as 30s, 10m or 1h")
    value = float(m.group(1)) * {"ms": 0.001, "s": 1, "m": 60, "h": 3600, None: 1}[m.group(2)]
    if value <= 0:
        raise UsageError(f"--interval {text!r}: must be more than 0")
    return value


@dataclass(frozen=True)
class WatchCall:
    participants: tuple[str, ...]
    once: bool
    interval: float
    margin_share: float
    hosts: tuple[str, ...]
    prom_textfile: Path | None
    backtest: int | None


def call(participant, once, interval, margin_share, host, prom_textfile, backtest) -> WatchCall:
    if not 0 <= margin_share < 1:
        raise UsageError(f"--margin-share {margin_share}: give a share in [0, 1), e.g. 0.2")
    live_only = [flag for flag, given in (("--once", once), ("--host", host), ("--prom-textfile", prom_textfile))
                 if given]
    if backtest is not None and live_only:
        raise UsageError(f"{', '.join(live_only)}: only a live watch reads that; --backtest {backtest} replays "
                         "the readings stored (give --participant to narrow it)")
    return WatchCall(tuple(participant or ()), once, seconds(interval), margin_share, tuple(host or ()),
                     prom_textfile, backtest)


def _options(c: WatchCall, participants: tuple[str, ...] | None = None):
    from .analyses.watch import WatchOptions

    return WatchOptions(margin_share=c.margin_share, participants=c.participants if participants is None
                        else participants)


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
        def keep(result, reading) -> None:
            every = result if not c.participants else watch.assess(reading, _options(c, ()))
            with Store(db) as store:        # open only to store it: the report daily may run meanwhile
                watch.store_reading(store, every, reading)
            if c.prom_textfile is not None:
                watch.write_textfile(c.prom_textfile, result)

        if c.once:
            reading = reader.read()
            result = watch.assess(reading, _options(c))
            keep(result, reading)
            render.emit(result, out.fmt, out.path, view)
            watch.say_missing(result)        # exit 3 says why on stderr, whatever the format
            return result.exit_code(out.fail_on)
        if out.path is not None:
            raise UsageError("--output goes with --once (the loop prints what changed as it happens)")
        def first(result) -> None:
            if out.fmt == "json":          # JSON lines: the first reading whole, then one change a line
                print(json.dumps(json.loads(render.render(result, "json", view))), flush=True)
            else:
                render.emit(result, out.fmt, None, view)

        if out.fmt == "table" and sys.stdout.isatty():
            with _in_place(view) as show:       # a terminal: one table, redrawn
                watch.loop(reader.read, _options(c), c.interval, keep=keep, emit_first=first, clock=clock,
                           sleep=sleep, readings=readings, fmt=out.fmt, show=show)
            return 0
        watch.loop(reader.read, _options(c), c.interval, keep=keep, emit_first=first, clock=clock, sleep=sleep,
                   readings=readings, fmt=out.fmt)
    return 0


@contextmanager
def _in_place(view) -> Iterator[Callable[[Any, float], None]]:
    """The watch on a terminal: the last reading's report (participants by their labels, not
    full addresses) redrawn in place, with a countdown to the next reading."""
    import dataclasses
    import io

    from rich.console import Console, Group
    from rich.live import Live
    from rich.text import Text

    from .report.table import print_table

    console = Console(highlight=False)
    shown: list[Any] = [Text("first reading ...")]
    view = dataclasses.replace(view, wide=False, whole=False)

    def show(result: Any, left: float) -> None:
        if result is not None:
            drawn = io.StringIO()
            print_table(result, console=Console(file=drawn, width=console.width, highlight=False,
                                                color_system=console.color_system, force_terminal=True), view=view)
            shown[:] = [Text.from_ansi(drawn.getvalue().rstrip("\n"))]
        live.update(Group(*shown, Text(f"next reading in {max(0, round(left))} s (Ctrl-C to stop)", style="dim")))

    with Live(shown[0], console=console, auto_refresh=False, transient=False) as live:
        yield lambda result, left: (show(result, left), live.refresh())
