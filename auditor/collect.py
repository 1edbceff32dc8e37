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
    # a gateway's identity where it is not its URL's (gateways()): a replay server's URL has a
    # new port each run, its recording is the gateway
    gateway_names: dict[str, str] = field(default_factory=dict)
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

    with ExitStack() as stack:
        server = stack.enter_context(ReplayServer(sources.replay))
        paths = {key[0] for key in server.table}
        # the replayed gateway is the folder(s) holding the accounting answers, not the chain's
        # beside them: one recording is one gateway however it is replayed; a recording of
        # several gateways (record_subdir) is each of them again, each served on its own
        folders = [] if sources.accounting else server.holding("/api/v1/")
        split = [g for d in folders for g in recorded_gateways(d)]
        if len(split) > len(folders):
            names = {stack.enter_context(ReplayServer(g)).url: f"replay:{g.parent.resolve().name}/{g.name}"
                     for g in split}
        else:
            names = {server.url: "replay:" + "+".join(d.resolve().name for d in folders)} if folders else {}
        yield replace(
            sources,
            nodes=sources.nodes or ([server.url] if any(p.startswith("/chain-") for p in paths) else []),
            accounting=sources.accounting or list(names),
            gateway_names={**sources.gateway_names, **names},
            metrics=sources.metrics or ([server.url + "/metrics"] if "/metrics" in paths else []),
            replay=[],
            rate=0.0,
        )


def record_subdir(i: int) -> str:
    """Where ``--record DIR`` keeps the ``i``-th (from 0) ``--accounting`` gateway's answers:
    ``accounting``, then ``accounting-2``, ``accounting-3``..."""
    return "accounting" + (f"-{i + 1}" if i else "")


def recorded_gateways(folder: Path) -> list[Path]:
    """The gateways' folders in a recording: a ``--record DIR`` of several gateways holds
    ``DIR/accounting``, ``DIR/accounting-2``... (:func:`record_subdir`), one a gateway; any
    other folder is one."""
    from .sources.wire_int import is_decimal

    subs = sorted(p for p in folder.glob("accounting-*") if p.is_dir() and is_decimal(p.name[11:], signed=False))
    return [folder / "accounting", *subs] if subs and (folder / "accounting").is_dir() else [folder]


def gateways(urls: list[str], names: dict[str, str] | None = None) -> dict[str, str]:
    """The gateways that ``--accounting`` URLs name, in the order given: identity
    (:func:`auditor.sources.accounting.gateway_id`, the redacted base URL) -> the URL to ask.
    A URL given twice (a trailing ``/`` aside) is one gateway, asked once; two different URLs
    that are one identity once redacted (``https://u:A@gw`` and ``https://u:B@gw``) cannot
    be stored apart: a usage error. ``names``: identities given for some URLs (a replay's)."""
    from .redact import redact_url
    from .sources.accounting import gateway_id

    out: dict[str, str] = {}
    for url in urls:
        gw = (names or {}).get(url) or gateway_id(url)
        if gw in out and out[gw].strip().rstrip("/") != url.strip().rstrip("/"):
            raise UsageError(f"--accounting {redact_url(out[gw])} and --accounting {redact_url(url)} are one "
                             f"gateway once credentials are redacted ({gw}): give each gateway once")
        out.setdefault(gw, url)
    return out


# what the bases of a recording's subfolder are, as the line says when none answered
ANSWERERS = {"chain": "node", "accounting": "gateway", "metrics": "metrics endpoint", "host": "host"}


def client(sources: Sources, bases: list[str], record_subdir: str, **kw: Any):
    """The shared HTTP client for ``bases``, recording under ``--record DIR/record_subdir``
    (``chain``, ``accounting-2``, ...: also what the bases are, ANSWERERS); ``kw`` sets the
    rest (``burst``, and a test's ``clock`` and ``sleep``)."""
    from .sources.http import JsonClient

    record = sources.record / record_subdir if sources.record else None
    return JsonClient(bases, answerer=ANSWERERS.get(record_subdir.split("-", 1)[0], "server"),
                      rate_per_min=sources.rate, timeout=sources.timeout, retries=sources.retries,
                      record_dir=record, **kw)


def collect(store: Store, sources: Sources, epochs: list[int], progress: Progress,
            *, refresh: bool = False) -> list[CollectReport]:
    """Collect every configured source; chain epochs first (the others join onto them)."""
    if not sources.any:
        raise UsageError("nothing to collect: give --node, --accounting, --gateway-log or --metrics "
                         "(or set AUDITOR_NODE), or --replay DIR")
    gws = gateways(sources.accounting, sources.gateway_names)          # a usage error before anything is collected
    reports: list[CollectReport] = []
    with ExitStack() as stack:
        if sources.nodes:
            if not epochs:
                raise UsageError("--node (or a --replay recording of a node) needs --epoch N: which epoch to "
                                 "collect from the chain")
            from .sources import chain

            node = stack.enter_context(client(sources, sources.nodes, "chain"))
            for epoch in epochs:
                try:
                    reports.append(chain.collect_epoch(store, node, epoch, progress, refresh=refresh))
                except SourceError as exc:
                    if len(epochs) == 1 and not (sources.accounting or sources.gateway_logs or sources.metrics):
                        raise           # nothing else to collect: the one line
                    # said MISSING (exit 3), and the other epochs and sources are still collected:
                    # a node that is down loses no log or accounting given beside it
                    from .result import CollectReport

                    reports.append(CollectReport(f"chain epoch {epoch}", missing=[str(exc)]))
        if sources.accounting:
            from .sources import accounting

            # each --accounting URL is its own gateway (not failover): each is collected and
            # stored as that gateway's, the same one given twice once (gateways())
            for i, (gw, url) in enumerate(gws.items()):
                c = stack.enter_context(client(sources, [url], record_subdir(i)))
                reports.append(accounting.collect(store, c, epochs or None, progress, gateway=gw,
                                                  name=f"accounting {gw}" if len(gws) > 1 else accounting.SOURCE))
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

