"""The contract every analysis follows, and the few rules they share.

An analysis is a module with ``run(store, epoch, options) -> Result`` (``auditor.result``):
it reads the store through its SQL files in ``queries/``, and returns its data, tables,
findings and the coverage it relied on. It never prints. ``registry.py`` lists them, one
record each: ``auditor epoch N`` runs them all in one run; each analysis command runs one.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, fields
from datetime import datetime
from typing import Any

from ..errors import SourceError
from ..store import Store


@dataclass(frozen=True)
class Options:
    """What narrows an analysis. Every analysis accepts these; one that needs more
    subclasses it (with defaults, so the epoch report can build it from these alone)."""

    participant: str | None = None     # only this host, where the analysis is per host
    since: datetime | None = None      # time range, for analyses that work over one
    until: datetime | None = None

    @classmethod
    def of(cls, options: "Options | None") -> "Options":
        """``options`` as this class: itself when it is one, else the shared fields
        (participant, since, until) carried over and the rest at their defaults."""
        if isinstance(options, cls):
            return options
        if options is None:
            return cls()
        return cls(**{f.name: getattr(options, f.name) for f in fields(Options)})


def epoch_state(store: Store, epoch: int) -> tuple[bool, bool] | None:
    """``(settled, complete)`` of a stored epoch, or None when the store does not hold it."""
    row = store.one("SELECT settled, complete FROM chain_epochs WHERE epoch = ?", [epoch])
    return None if row is None else (bool(row[0]), bool(row[1]))


def require_epoch(store: Store, epoch: int, ctx: Any = None) -> tuple[bool, bool]:
    """:func:`epoch_state`, with a clear error when the epoch is not stored; asked once in a
    run ``ctx`` (``context.Run``), whichever of its analyses asks first."""
    state = epoch_state(store, epoch) if ctx is None else ctx.shared("epoch_state", lambda: epoch_state(store, epoch))
    if state is None:
        raise SourceError(not_stored(epoch))
    return state


def not_stored(epoch: int) -> str:
    """The one message for an epoch the store does not hold."""
    return (f"epoch {epoch} is not in the store; collect it first: "
            f"auditor collect --epoch {epoch} --node URL (or --replay DIR)")


@dataclass(frozen=True)
class Call:
    """What one analysis command asks for, once its flags are checked: the epoch (None for a
    time range), the analysis's options, the epochs to collect first (default: the epoch),
    and, for a variant of the analysis (``targets --epochs A..B``), the function to run
    instead of its ``run`` (called ``fn(store, epoch, options)``). ``pick``: for a call whose
    epochs depend on the sources (``history``'s last 7 settled epochs), ``pick(call, sources,
    store)`` is the call with them, made before anything is collected."""

    epoch: int | None
    options: Options
    collect: tuple[int, ...] | None = None
    run: Callable[..., Any] | None = None
    pick: Callable[..., "Call"] | None = None

    def collect_epochs(self) -> list[int]:
        if self.collect is not None:
            return list(self.collect)
        return [] if self.epoch is None else [self.epoch]


# -- what the charts of the analyses share (their ``charts(result)``, registry.py) ----------------
def chart_label(address: str | None) -> str:
    """A participant on a chart's axis: its last 8 characters."""
    return "?" if not address else address[-8:]


def chart_time(v: Any) -> datetime:
    """A time of a result's data on a chart's axis: a datetime, or its ISO text."""
    return v if isinstance(v, datetime) else datetime.fromisoformat(str(v).replace("Z", "+00:00"))
