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


def require_epoch(store: Store, epoch: int) -> tuple[bool, bool]:
    """``(settled, complete)`` of a stored epoch; a clear error when it is not stored."""
    row = store.one("SELECT settled, complete FROM chain_epochs WHERE epoch = ?", [epoch])
    if row is None:
        raise SourceError(not_stored(epoch))
    return bool(row[0]), bool(row[1])


def not_stored(epoch: int) -> str:
    """The one message for an epoch the store does not hold."""
    return (f"epoch {epoch} is not in the store; collect it first: "
            f"auditor collect --epoch {epoch} --node URL (or --replay DIR)")
