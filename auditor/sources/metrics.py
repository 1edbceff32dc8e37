"""One scrape of a gateway's Prometheus ``/metrics`` into ``metric_samples``.

The body is the Prometheus text exposition (``text/plain; version=0.0.4``), parsed
with ``prometheus_client``'s own parser. Every scrape gets a new ``scrape_id`` and
is appended, never replacing an earlier one, so repeated scrapes form a time series
(counters reset when the gateway restarts). A scrape is stored whole in one
transaction, or, when the body does not parse, not at all. The families the
gateway exports are listed in ``gateway-logs.md`` section 8.
"""

from __future__ import annotations

import math
from datetime import datetime, timezone
from typing import Any

from prometheus_client.parser import text_string_to_metric_families

from ..errors import SourceError
from ..result import CollectReport
from ..progress import Progress
from ..store import Store, coverage_row
from .http import JsonClient

SOURCE = "metrics"


class ExpositionError(ValueError):
    """The body is not a Prometheus text exposition."""


def parse_exposition(text: str) -> list[dict[str, Any]]:
    """Sample rows (family, type, sample_name, labels, value, sample_timestamp) of an
    exposition body. Raises ExpositionError with a one-line reason when it does not
    parse, or holds no sample at all."""
    rows: list[dict[str, Any]] = []
    try:
        for fam in text_string_to_metric_families(text):
            for s in fam.samples:
                ts = s.timestamp
                if ts is not None:
                    # prometheus_client gives seconds (float) or a Timestamp object
                    secs = float(ts) if not hasattr(ts, "sec") else ts.sec + ts.nsec / 1e9
                    ts = datetime.fromtimestamp(secs, tz=timezone.utc) if math.isfinite(secs) else None
                rows.append({"family": fam.name, "type": fam.type, "sample_name": s.name,
                             "labels": dict(s.labels), "value": float(s.value), "sample_timestamp": ts})
    except (ValueError, TypeError, IndexError, KeyError) as exc:
        line = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise ExpositionError(f"not a Prometheus text exposition ({line[:160]})") from exc
    if not rows:
        raise ExpositionError("no samples in the body" if text.strip() else "empty body")
    return rows


def _coverage(url: str, status: str, detail: str, fetched_at: datetime | None = None) -> dict[str, Any]:
    return coverage_row(SOURCE, url, status, detail, url=url, fetched_at=fetched_at)


def scrape(store: Store, client: JsonClient, progress: Progress) -> CollectReport:
    """Scrape ``client.bases[0]`` (the full /metrics URL) once and append it."""
    report = CollectReport(SOURCE)
    url = client.shown[0]  # as it may be stored and printed: credentials redacted
    progress.log(f"metrics: scraping {url}")
    try:
        resp = client.get_text("")
    except SourceError as exc:
        reason = f"{url}: {exc}"
        report.missing.append(reason)
        store.put_coverage(_coverage(url, "missing", str(exc)))
        return report
    text = resp.data
    try:
        samples = parse_exposition(text)
    except ExpositionError as exc:
        report.missing.append(f"{resp.url}: {exc}")
        store.put_coverage(_coverage(url, "missing", str(exc), resp.fetched_at))
        return report
    families = len({(s["family"], s["type"]) for s in samples})
    with store.transaction():
        (scrape_id,) = store.one("SELECT coalesce(max(scrape_id), 0) + 1 FROM metric_scrapes")
        store.insert("metric_scrapes", [{"scrape_id": scrape_id, "url": resp.url, "fetched_at": resp.fetched_at,
                                         "samples": len(samples), "families": families,
                                         "bytes": len(text.encode("utf-8"))}])
        for s in samples:
            s.update(scrape_id=scrape_id, scraped_at=resp.fetched_at, source_url=resp.url)
        store.insert("metric_samples", samples)
        store.put_coverage(_coverage(url, "ok", f"scrape {scrape_id}: {len(samples)} samples in {families} families",
                                     resp.fetched_at))
    report.add("metric_scrapes", 1)
    report.add("metric_samples", len(samples))
    report.notes.append(f"scrape {scrape_id} of {resp.url}")
    return report
