"""The /metrics scrape: the exposition parser (unit) and scrapes through the real CLI
against a loopback replay server (end to end)."""

from __future__ import annotations

import math

import pytest

from auditor.sources.metrics import ExpositionError, parse_exposition

from conftest import FIXTURES, q, run_cli, write_recording

SCRAPE1 = FIXTURES / "metrics" / "scrape1"
BODY = (FIXTURES / "metrics" / "scrape1.prom").read_text(encoding="utf-8")
A = "gonka1kx9mca3xm8u8ypzfuhmxey66u0ufxhs7nm6wc5"
TEXT = "text/plain; version=0.0.4; charset=utf-8"


def test_parse_counter_gauge_histogram():
    rows = parse_exposition(
        "# TYPE x_total counter\nx_total{a=\"1\",b=\"\"} 3\n"
        "# TYPE g gauge\ng NaN\n"
        "# TYPE h histogram\nh_bucket{le=\"1\"} 1\nh_bucket{le=\"+Inf\"} 2\nh_sum 1.5\nh_count 2\n"
        "untyped_thing 7 1700000000000\n")
    assert [(r["family"], r["type"], r["sample_name"]) for r in rows] == [
        ("x", "counter", "x_total"), ("g", "gauge", "g"),
        ("h", "histogram", "h_bucket"), ("h", "histogram", "h_bucket"), ("h", "histogram", "h_sum"),
        ("h", "histogram", "h_count"), ("untyped_thing", "unknown", "untyped_thing")]
    assert rows[0]["labels"] == {"a": "1", "b": ""} and rows[0]["value"] == 3.0
    assert math.isnan(rows[1]["value"])
    assert rows[3]["labels"] == {"le": "+Inf"}
    assert rows[-1]["sample_timestamp"].year == 2023
    assert all(r["sample_timestamp"] is None for r in rows[:-1])


@pytest.mark.parametrize("text", ["", "  \n", "<html><body>502 Bad Gateway</body></html>", '{"error": "x"}',
                                  "metric_without_value\n", "m{a=\"1\"} notanumber\n"])
def test_parse_rejects_what_is_not_an_exposition(text):
    with pytest.raises(ExpositionError):
        parse_exposition(text)


def test_fixture_parses_to_the_documented_families():
    rows = parse_exposition(BODY)
    assert len(rows) == 43 and len({r["family"] for r in rows}) == 18


def test_scrapes_append_with_new_ids(db, record_server):
    # the same gateway scraped twice in one run; then once more later (see the failure test)
    url = record_server(SCRAPE1).url + "/metrics"
    r = run_cli("collect", "--metrics", url, "--metrics", url, "--rate", "0", db=db)
    assert r.returncode == 0, r.stderr
    assert r.stderr.count("metrics: loaded metric_scrapes 1, metric_samples 43") == 2

    assert q(db, "SELECT scrape_id, samples, families, url LIKE 'http://127.0.0.1:%/metrics' FROM metric_scrapes "
                 "ORDER BY scrape_id") == [(1, 43, 18, True), (2, 43, 18, True)]
    assert q(db, "SELECT scrape_id, count(*) FROM metric_samples GROUP BY ALL ORDER BY 1") == [(1, 43), (2, 43)]
    assert q(db, "SELECT count(DISTINCT scraped_at) FROM metric_samples") == [(2,)]
    # counter: the suppressed losers (the metric view of the hedging waste)
    assert q(db, f"""SELECT family, type, value FROM metric_samples WHERE scrape_id = 2
                    AND sample_name = 'devshard_gateway_attempts_terminal_total'
                    AND labels['visibility'] = 'suppressed_loser' AND labels['participant_key'] = '{A}'""") == [
        ("devshard_gateway_attempts_terminal", "counter", 77.0)]
    assert q(db, """SELECT labels['reason'], value FROM metric_samples WHERE scrape_id = 1
                    AND family = 'devshard_gateway_slot_decisions' AND labels['decision'] = 'ghost_no_send'
                    ORDER BY 1""") == [("participant_throttled_no_send", 13.0), ("poc_unavailable_host", 48.0)]
    # gauges, with and without labels
    assert q(db, "SELECT type, value, cardinality(labels) FROM metric_samples WHERE scrape_id = 2 "
                 "AND sample_name = 'devshard_gateway_capacity_scale'") == [("gauge", 0.75, 0)]
    assert q(db, "SELECT value FROM metric_samples WHERE scrape_id = 1 AND sample_name = "
                 "'devshard_accounting_disposition' AND labels['no_send_reason'] = 'poc_unavailable_host'") == [(48.0,)]
    # histogram: cumulative buckets ending at +Inf = _count, and the _sum
    hist = dict(q(db, """SELECT coalesce(labels['le'], sample_name), value FROM metric_samples
                         WHERE scrape_id = 1 AND family = 'devshard_gateway_participant_receipt_seconds'"""))
    assert hist == {"0.25": 310.0, "1": 540.0, "5": 565.0, "+Inf": 603.0,
                    "devshard_gateway_participant_receipt_seconds_sum": 612.5,
                    "devshard_gateway_participant_receipt_seconds_count": 603.0}
    assert q(db, "SELECT DISTINCT type FROM metric_samples WHERE family = "
                 "'devshard_http_request_duration_seconds'") == [("histogram",)]
    assert q(db, "SELECT item, status, detail FROM coverage WHERE source = 'metrics' ORDER BY item")[-1][1:] == (
        "ok", "scrape 2: 43 samples in 18 families")


def test_unparsable_body_is_missing_and_writes_nothing(db, tmp_path):
    rec = write_recording(tmp_path / "bad", [
        {"path": "/metrics", "content_type": "text/html", "body": "<html><body>502 Bad Gateway</body></html>\n"}])
    r = run_cli("collect", "--replay", str(rec), db=db)
    assert r.returncode == 3
    missing = [line for line in r.stderr.splitlines() if "MISSING" in line]
    assert len(missing) == 1 and missing[0].startswith("metrics: MISSING http://127.0.0.1:")
    assert "/metrics: not a Prometheus text exposition (" in missing[0]
    assert "Traceback" not in r.stderr
    assert q(db, "SELECT count(*) FROM metric_scrapes") == [(0,)]
    assert q(db, "SELECT count(*) FROM metric_samples") == [(0,)]
    assert q(db, "SELECT status FROM coverage WHERE source = 'metrics'") == [("missing",)]


def test_failed_scrape_keeps_earlier_scrapes(tmp_path, record_server):
    from auditor.progress import Progress
    from auditor.sources.http import JsonClient
    from auditor.sources.metrics import scrape
    from auditor.store import Store

    bad_body = BODY.replace("} 1180", "} eleven-eighty")
    server = record_server(write_recording(tmp_path / "seq", [      # served in order: good, bad, good
        {"path": "/metrics", "content_type": TEXT, "body": b} for b in (BODY, bad_body, BODY)]))
    url = server.url + "/metrics"
    with Store(tmp_path / "m.duckdb") as store:
        outcomes = []
        for _ in range(3):
            with JsonClient([url], rate_per_min=0, retries=0) as client:
                outcomes.append(scrape(store, client, Progress(quiet=True)).missing)
        assert outcomes[0] == outcomes[2] == []
        assert len(outcomes[1]) == 1 and "could not convert string to float" in outcomes[1][0]
        assert store.con.execute("SELECT scrape_id, url FROM metric_scrapes ORDER BY 1").fetchall() == [
            (1, url), (2, url)]
        assert store.con.execute("SELECT count(*) FROM metric_samples").fetchone() == (86,)
