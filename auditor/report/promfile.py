"""A report's findings and key figures as Prometheus metrics, for node_exporter's textfile
collector. Written with the Prometheus client library's exposition code, atomically
(``write_to_textfile`` writes a temp file beside the target, then renames it).

Metrics (gauges; every one carries the ``epoch`` label of the report): the report's own,
``REPORT_METRICS`` below, then the ones each analysis declares in its registry record
(``analyses/registry.py``), whose samples its module's ``metrics(result)`` yields. The
README's table of them is generated from the same records.
"""

from __future__ import annotations

import time
from collections import Counter
from pathlib import Path
from typing import Any

from ..analyses import registry as analyses
from ..analyses.registry import Metric
from ..errors import UsageError
from ..result import SEVERITIES, Result

REPORT_METRICS = (
    Metric("auditor_report_complete", (), "1 when the report's data was complete, else 0",
           "1 when the report's data was complete"),
    Metric("auditor_report_timestamp_seconds", (), "When the report was made (Unix time)", "when it was made"),
    Metric("auditor_findings", ("code", "severity"), "Findings by code and severity",
           "findings of each code and severity"),
    Metric("auditor_findings_by_severity", ("severity",), "Findings by severity",
           "the same by severity, 0 included (alert on it)"),
)

METRICS = tuple(m.name for m in (*REPORT_METRICS, *(m for a in analyses.ANALYSES for m in a.metrics)))


def _part(result: Result, key: str) -> Result | None:
    for p in result.parts or [result]:
        if p.key == key and isinstance(p.data, dict) and not p.unavailable:
            return p
    return None


def registry(result: Result, epoch: int, now: float | None = None):
    from prometheus_client import CollectorRegistry, Gauge

    reg = CollectorRegistry()
    e = str(epoch)

    def gauge(name: str, doc: str, labels: tuple[str, ...] = ()) -> Any:
        return Gauge(name, doc, ("epoch", *labels), registry=reg)

    g = {m.name: gauge(m.name, m.help, m.labels) for m in analyses.metrics()}
    g["auditor_report_complete"].labels(e).set(1 if result.complete else 0)
    g["auditor_report_timestamp_seconds"].labels(e).set(time.time() if now is None else now)
    for (code, sev), n in Counter((f.code, f.severity) for f in result.findings).items():
        g["auditor_findings"].labels(e, code, sev).set(n)
    counts = Counter(f.severity for f in result.findings)
    for sev in SEVERITIES:
        g["auditor_findings_by_severity"].labels(e, sev).set(counts[sev])

    for a in analyses.ANALYSES:
        part = _part(result, a.key)
        if part is None:
            continue
        declared = {m.name for m in a.metrics}
        for name, labels, value in a.samples(part):
            if name not in declared:
                raise KeyError(f"analysis {a.key} yields metric {name}, which its registry record does not declare")
            g[name].labels(e, *labels).set(value)
    return reg


def write(path: Path, result: Result, epoch: int) -> None:
    from prometheus_client import write_to_textfile

    path = Path(path)
    if path.is_dir():
        raise UsageError(f"--prom-textfile {path} is a directory; give a file path")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        write_to_textfile(str(path), registry(result, epoch))
    except OSError as exc:
        raise UsageError(f"cannot write {path}: {exc.strerror or exc}") from exc
