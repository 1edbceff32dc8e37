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
import time
from collections.abc import Callable
from contextlib import ExitStack
from pathlib import Path
from typing import Any

from .analyses.watch import DURATION, WatchCall, call, seconds  # noqa: F401  (the flags, checked: analyses/watch.py)
from .errors import SourceError, UsageError


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
    view = render.View(wide=out.wide or bool(c.participants), command=command)
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

        watch.loop(reader.read, _options(c), c.interval, keep=keep, emit_first=first, clock=clock, sleep=sleep,
                   readings=readings, fmt=out.fmt)
    return 0
