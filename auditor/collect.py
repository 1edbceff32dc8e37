"""Collection orchestration: which sources to read, with which client, in which order.

The CLI resolves flags and environment into a :class:`Sources`; this module opens
the HTTP clients (or a loopback replay server for ``--replay``), runs each
source's collector and returns their run reports. Each collector stores what it
got even when something is missing; the reports say what is missing.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .errors import SourceError, UsageError

if TYPE_CHECKING:                     # the CLI imports this module for its flags: keep duckdb off that path
    from .progress import Progress
    from .result import CollectReport
    from .store import Store


@dataclass
class Sources:
    nodes: list[str] = field(default_factory=list)
    accounting: list[str] = field(default_factory=list)
    gateway_logs: list[str] = field(default_factory=list)
    metrics: list[str] = field(default_factory=list)
    rate: float = 20.0
    record: Path | None = None
    replay: list[Path] = field(default_factory=list)
    timeout: float = 10.0
    retries: int = 3
    offline: bool = False      # analyses: use only what the store holds
    refresh: bool = False      # fetch a finished epoch again

    @property
    def any(self) -> bool:
        return bool(self.nodes or self.accounting or self.gateway_logs or self.metrics or self.replay)


@contextmanager
def resolved(sources: Sources) -> Iterator[Sources]:
    """Start a loopback replay server for ``--replay`` and point each URL source that
    was not given explicitly at it, when the recording holds answers for that source. The
    sources it yields have no ``replay`` left, so resolving them again is a no-op."""
    if not sources.replay:
        yield sources
        return
    from .sources.replay import ReplayServer

    with ReplayServer(sources.replay) as server:
        paths = {key[0] for key in server.table}
        yield replace(
            sources,
            nodes=sources.nodes or ([server.url] if any(p.startswith("/chain-") for p in paths) else []),
            accounting=sources.accounting or ([server.url] if any(p.startswith("/api/v1/") for p in paths) else []),
            metrics=sources.metrics or ([server.url + "/metrics"] if "/metrics" in paths else []),
            replay=[],
            rate=0.0,
        )


def client(sources: Sources, bases: list[str], record_subdir: str, **kw: Any):
    """The shared HTTP client for ``bases``, recording under ``--record DIR/record_subdir``;
    ``kw`` sets the rest (``burst``, and a test's ``clock`` and ``sleep``)."""
    from .sources.http import JsonClient

    record = sources.record / record_subdir if sources.record else None
    return JsonClient(bases, rate_per_min=sources.rate, timeout=sources.timeout,
                      retries=sources.retries, record_dir=record, **kw)


def collect(store: Store, sources: Sources, epochs: list[int], progress: Progress,
            *, refresh: bool = False) -> list[CollectReport]:
    """Collect every configured source; chain epochs first (the others join onto them)."""
    if not sources.any:
        raise UsageError("nothing to collect: give --node, --accounting, --gateway-log or --metrics "
                         "(or set AUDITOR_NODE), or --replay DIR")
    reports: list[CollectReport] = []
    with ExitStack() as stack:
        if sources.nodes:
            if not epochs:
                raise UsageError("--node needs --epoch N: which epoch to collect from the chain")
            from .sources import chain

            node = stack.enter_context(client(sources, sources.nodes, "chain"))
            for epoch in epochs:
                try:
                    reports.append(chain.collect_epoch(store, node, epoch, progress, refresh=refresh))
                except SourceError as exc:
                    if len(epochs) == 1:
                        raise
                    # one of several (history's last 7): the others are still collected, and
                    # this one is said MISSING (exit 3)
                    from .result import CollectReport

                    reports.append(CollectReport(f"chain epoch {epoch}", missing=[str(exc)]))
        if sources.accounting:
            from .sources import accounting

            c = stack.enter_context(client(sources, sources.accounting, "accounting"))
            reports.append(accounting.collect(store, c, epochs or None, progress))
        if sources.gateway_logs:
            from .sources import gatewaylog

            reports.append(gatewaylog.ingest(store, sources.gateway_logs, progress))
        if sources.metrics:
            from .sources import metrics

            for url in sources.metrics:
                c = stack.enter_context(client(sources, [url], "metrics"))
                reports.append(metrics.scrape(store, c, progress))
        if sources.nodes:
            # last: the escrow ids to probe come from the logs and accounting read above
            from .sources import escrows

            # the same client: one rate budget per node, and its recordings beside the chain's
            reports.append(escrows.collect(store, node, progress, epochs))
    return reports

