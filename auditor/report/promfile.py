"""A report's findings and key figures as Prometheus metrics, for node_exporter's textfile
collector. Written with the Prometheus client library's exposition code, atomically (a temp
file beside the target, then a rename: ``render.write_atomic``), or in place on a FIFO or device.

Metrics (gauges): the report's own, ``registry.REPORT_METRICS``, then the ones each analysis
declares in its registry record (``analyses/registry.py``), whose samples its module's
``metrics(result)`` yields. The README's table of them is generated from the same records.
The facts of an epoch carry its ``epoch`` label; the run's own (complete, when, which
epoch) do not, so an alert on them reads one series across epochs. With ``--mine`` the
per-participant families also carry ``mine="1"`` (one of the operator's hosts) or ``mine="0"``.

Every run writes the file, a failed one too (:func:`write_failed`): ``auditor_report_complete
0``, when it ran, and the epoch when it was known.
"""

from __future__ import annotations

import time
from collections import Counter
from pathlib import Path
from typing import Any

from ..analyses import registry as analyses
from ..analyses.registry import REPORT_METRICS
from ..result import SEVERITIES, Result


METRICS = tuple(m.name for m in (*REPORT_METRICS, *(m for a in analyses.ANALYSES for m in a.metrics)))


def _part(result: Result, key: str) -> Result | None:
    for p in result.parts or [result]:
        if p.key == key and isinstance(p.data, dict) and not p.unavailable:
            return p
    return None


def _gauges(epoch: int | None, complete: bool, now: float | None, mine: Any = None):
    """A registry of every declared family, and the run's own samples set; ``gauge(name,
    *labels)`` is a family's child (the epoch label first where the family has it; with
    ``mine``, --mine's addresses, a per-participant family's ``mine`` label last)."""
    from prometheus_client import CollectorRegistry, Gauge

    reg = CollectorRegistry()
    families = {m.name: (m, m.all_labels(mine is not None)) for m in analyses.metrics(live=False)}
    # a family without labels is made when set: made unset it would say 0 (unknown is not zero)
    g = {name: Gauge(name, m.help, labels, registry=reg) for name, (m, labels) in families.items() if labels}

    def gauge(name: str, *labels: str) -> Any:
        m, names = families[name]
        if not names:
            return g.setdefault(name, Gauge(name, m.help, registry=reg))
        return g[name].labels(*m.label_values(labels, epoch, mine))

    gauge("auditor_report_complete").set(1 if complete else 0)
    gauge("auditor_report_timestamp_seconds").set(time.time() if now is None else now)
    if epoch is not None:
        gauge("auditor_report_epoch").set(epoch)
    return reg, gauge


def registry(result: Result, epoch: int, now: float | None = None, complete: bool | None = None):
    """The metrics of ``result``, the report of ``epoch``; ``complete``: the run's word on it
    (default: the result's own)."""
    reg, gauge = _gauges(epoch, result.complete if complete is None else complete and result.complete, now,
                         result.mine)
    for (code, sev), n in Counter((f.code, f.severity) for f in result.findings).items():
        gauge("auditor_findings", code, sev).set(n)
    counts = Counter(f.severity for f in result.findings)
    for sev in SEVERITIES:
        gauge("auditor_findings_by_severity", sev).set(counts[sev])

    for a in analyses.ANALYSES:
        part = _part(result, a.key)
        if part is None:
            continue
        declared = {m.name for m in a.metrics}
        for name, labels, value in a.samples(part):
            if name not in declared:
                raise KeyError(f"analysis {a.key} yields metric {name}, which its registry record does not declare")
            gauge(name, *labels).set(value)
    return reg


def write(path: Path, result: Result, epoch: int, complete: bool | None = None) -> None:
    write_registry(path, registry(result, epoch, complete=complete))


def write_failed(path: Path, epoch: int | None, now: float | None = None) -> None:
    """A failed run's textfile: not complete, when it ran, the epoch when known; no findings
    (unknown, not zero)."""
    write_registry(path, _gauges(epoch, False, now)[0])


def write_registry(path: Path, reg: Any) -> None:
    """A textfile (``report daily``'s, ``watch``'s): the client library's exposition text,
    written atomically (a temp file beside it, then a rename), or in place on a device, a FIFO
    or ``-`` (``render.write_atomic``). A path that cannot be used is one line, exit 2; a full
    disk one line, exit 3 (``errors.cannot_write``)."""
    from prometheus_client import generate_latest

    from .render import write_atomic

    write_atomic(Path(path), generate_latest(reg).decode("utf-8"), "--prom-textfile")
