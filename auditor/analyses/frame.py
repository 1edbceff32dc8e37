"""The contract every analysis follows, and the few rules they share.

An analysis is a module with ``run(store, epoch, options) -> Result`` (``auditor.result``):
it reads the store through its SQL files in ``queries/``, and returns its data, tables,
findings and the coverage it relied on. It never prints. ``auditor epoch N`` runs the
list in ``epoch_report.ANALYSES``; each analysis command runs one of them.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from ..errors import SourceError
from ..store import Store


@dataclass(frozen=True)
class Options:
    """What narrows an analysis. Every analysis accepts these; one that needs more
    subclasses it (with defaults, so the epoch report can build it from these alone)."""

    participant: str | None = None     # only this host, where the analysis is per host
    since: datetime | None = None      # time range, for analyses that work over one
    until: datetime | None = None


def epoch_state(store: Store, epoch: int) -> tuple[bool, bool] | None:
    """``(settled, complete)`` of a stored epoch, or None when the store does not hold it."""
    row = store.one("SELECT settled, complete FROM chain_epochs WHERE epoch = ?", [epoch])
    return None if row is None else (bool(row[0]), bool(row[1]))


def require_epoch(store: Store, epoch: int) -> tuple[bool, bool]:
    """:func:`epoch_state`, with a clear error when the epoch is not stored."""
    state = epoch_state(store, epoch)
    if state is None:
        raise SourceError(not_stored(epoch))
    return state


def not_stored(epoch: int) -> str:
    """The one message for an epoch the store does not hold."""
    return (f"epoch {epoch} is not in the store; collect it first: "
            f"auditor collect --epoch {epoch} --node URL (or --replay DIR)")
