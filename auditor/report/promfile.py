"""A report's findings and key figures as Prometheus metrics, for node_exporter's textfile
collector. Written with the Prometheus client library's exposition code, atomically
(``write_to_textfile`` writes a temp file beside the target, then renames it).

Metrics (gauges; every one carries the ``epoch`` label of the report):

- ``auditor_report_complete``: 1 when every source the report needed was complete, else 0
- ``auditor_report_timestamp_seconds``: when the report was made
- ``auditor_findings{code,severity}``: how many findings of each code and severity
- ``auditor_findings_by_severity{severity}``: the same by severity, 0 included, to alert on
- ``auditor_miss_test_passed{participant}``: 1 passed, 0 failed (the recomputed test)
- ``auditor_miss_test_missed_requests{participant}``, ``auditor_miss_test_critical_misses{participant}``
- ``auditor_poc_overload_peak_inflight{participant,model,episode}``, ``auditor_poc_overload_cap{...}``
- ``auditor_preserved_target_gap_weight{model}``: suggested target minus the chain's target
- ``auditor_wasted_attempt_seconds{host}``: attempt-seconds of suppressed losers (hedging)
- ``auditor_remint_deactivations{classification}``: escrow deactivations by classification
"""

from __future__ import annotations

import time
from collections import Counter
from pathlib import Path
from typing import Any

from ..errors import UsageError
from ..result import SEVERITIES, Result

METRICS = ("auditor_report_complete", "auditor_report_timestamp_seconds", "auditor_findings",
           "auditor_findings_by_severity", "auditor_miss_test_passed", "auditor_miss_test_missed_requests",
           "auditor_miss_test_critical_misses", "auditor_poc_overload_peak_inflight", "auditor_poc_overload_cap",
           "auditor_preserved_target_gap_weight", "auditor_wasted_attempt_seconds",
           "auditor_remint_deactivations")


def _part(result: Result, key: str) -> dict[str, Any]:
    for p in result.parts or [result]:
        if p.key == key and isinstance(p.data, dict) and not p.unavailable:
            return p.data
    return {}


def registry(result: Result, epoch: int, now: float | None = None):
    from prometheus_client import CollectorRegistry, Gauge

    reg = CollectorRegistry()
    e = str(epoch)

    def gauge(name: str, doc: str, labels: tuple[str, ...] = ()) -> Any:
        return Gauge(name, doc, ("epoch", *labels), registry=reg)

    gauge("auditor_report_complete", "1 when the report's data was complete, else 0").labels(e).set(
        1 if result.complete else 0)
    gauge("auditor_report_timestamp_seconds", "When the report was made (Unix time)").labels(e).set(
        time.time() if now is None else now)
    findings = gauge("auditor_findings", "Findings by code and severity", ("code", "severity"))
    for (code, sev), n in Counter((f.code, f.severity) for f in result.findings).items():
        findings.labels(e, code, sev).set(n)
    by_sev = gauge("auditor_findings_by_severity", "Findings by severity", ("severity",))
    counts = Counter(f.severity for f in result.findings)
    for sev in SEVERITIES:
        by_sev.labels(e, sev).set(counts[sev])

    mt = _part(result, "miss_test")
    passed = gauge("auditor_miss_test_passed", "1 when the recomputed miss test passed", ("participant",))
    missed = gauge("auditor_miss_test_missed_requests", "Missed requests in the epoch", ("participant",))
    crit = gauge("auditor_miss_test_critical_misses", "The most misses the test allowed", ("participant",))
    for p in mt.get("participants", []):
        passed.labels(e, p["participant"]).set(1 if p["passed"] else 0)
        missed.labels(e, p["participant"]).set(p["missed"])
        if p.get("critical_misses") is not None:
            crit.labels(e, p["participant"]).set(p["critical_misses"])

    po = _part(result, "poc_overload")
    peak = gauge("auditor_poc_overload_peak_inflight", "Peak in-flight requests of a preserved host in a cPoC window",
                 ("participant", "model", "episode"))
    cap = gauge("auditor_poc_overload_cap", "The proposed per-host cap of a preserved host",
                ("participant", "model", "episode"))
    for w in po.get("windows", []):
        labels = (e, str(w.get("participant")), str(w.get("model")), str(w.get("episode")))
        if w.get("peak_inflight") is not None:
            peak.labels(*labels).set(w["peak_inflight"])
        if w.get("cap") is not None:
            cap.labels(*labels).set(w["cap"])

    gap = gauge("auditor_preserved_target_gap_weight", "Suggested preserved target minus the chain's", ("model",))
    for t in _part(result, "preserved_targets").get("preserved_targets", []):
        if t.get("gap") is not None:
            gap.labels(e, str(t["model_id"])).set(t["gap"])

    wasted = gauge("auditor_wasted_attempt_seconds", "Attempt-seconds of suppressed losers", ("host",))
    for h in _part(result, "hedging").get("hosts", []):
        if h.get("wasted_seconds") is not None:
            wasted.labels(e, str(h.get("host") or h.get("label"))).set(h["wasted_seconds"])

    deact = gauge("auditor_remint_deactivations", "Escrow deactivations by classification", ("classification",))
    for cls, n in Counter(d.get("classification") for d in _part(result, "remints").get("deactivations", [])).items():
        deact.labels(e, str(cls)).set(n)
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
