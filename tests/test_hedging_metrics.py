"""`auditor hedging` against the gateway's own metric (issue 17 item 5): the suppressed losers
the analysis counts in the logs of #2105 compared, in `coverage`, with the increase of
devshard_gateway_attempts_terminal_total{visibility="suppressed_loser"} over the range, from
/metrics scrapes served by a loopback replay server and stored by `collect --metrics`."""

from __future__ import annotations

import json
from datetime import datetime, timezone

import pytest

from conftest import FIXTURES, run_cli, run_json
from tools.recording import write_recording

H = FIXTURES / "hedging"
TRUTH = json.loads((H / "incident.truth.json").read_text())
RANGE = ["--since", "2026-10-23T11:00:00", "--until", "2026-10-23T13:00:00"]
MODEL = "Qwen/Qwen3-4B-Instruct-2507"
BEFORE, MIDDLE, AFTER = (datetime(2026, 10, 23, h, m, tzinfo=timezone.utc) for h, m in ((10, 59), (12, 0), (13, 1)))


def exposition(counts: dict[tuple[str, str], float], at: datetime) -> str:
    """A /metrics body: attempts_terminal_total{visibility="suppressed_loser"} per (participant,
    role), each sample stamped with the scrape's time (ms), and one winner series beside it."""
    ms = int(at.timestamp() * 1000)
    lines = ["# HELP devshard_gateway_attempts_terminal_total Terminal attempts by role, outcome and visibility.",
             "# TYPE devshard_gateway_attempts_terminal_total counter"]
    for (who, role), v in sorted(counts.items()):
        lines.append(f'devshard_gateway_attempts_terminal_total{{model="{MODEL}",outcome="success",'
                     f'participant_key="{who}",role="{role}",visibility="suppressed_loser"}} {v} {ms}')
    lines.append(f'devshard_gateway_attempts_terminal_total{{model="{MODEL}",outcome="success",participant_key='
                 f'"{TRUTH["hosts"][0]["host"]}",role="primary",visibility="user_visible_winner"}} 500 {ms}')
    return "\n".join(lines) + "\n"


def truth_increase() -> dict[tuple[str, str], int]:
    """What the gateway counted over the run: each host's suppressed losers by role."""
    out = {}
    for h in TRUTH["hosts"]:
        if h["suppressed_losers"]:
            out[(h["host"], "primary")] = h["suppressed_losers"]
        if h["secondary_suppressed_losers"]:
            out[(h["host"], "speculative")] = h["secondary_suppressed_losers"]
    return out


def _hedging(tmp_path, record_server, bodies: list[str]) -> dict:
    rec = write_recording(tmp_path / "scrapes", [
        {"path": "/metrics", "body": b, "content_type": "text/plain; version=0.0.4; charset=utf-8"} for b in bodies])
    url = record_server(rec).url + "/metrics"
    db = tmp_path / "a.duckdb"
    args = [a for _ in bodies for a in ("--metrics", url)]
    r = run_cli("collect", "--gateway-log", str(H / "incident.log"), *args, "--rate", "0", db=db)
    assert r.returncode == 0, r.stderr
    return run_json("hedging", "--offline", *RANGE, "--format", "json", db=db)


def _remote() -> str:
    return next(h["host"] for h in TRUTH["hosts"] if h["label"] == "p232vrcn")


def test_the_gateways_count_agrees_across_a_restart(tmp_path, record_server):
    """Earlier counts at the range's start, a gateway restart in the middle (the counter falls:
    a reset), and a series first seen after the start: the increase is the gateway's 29 for
    the remote primary, and every participant agrees with the logs."""
    inc = truth_increase()
    late = (next(h["host"] for h in TRUTH["hosts"] if h["label"] == "kepcgs0y"), "speculative")
    before = {k: 100 for k in inc if k != late}          # counts from before the range; kepcgs0y not yet
    middle = {k: v // 2 for k, v in inc.items()}         # restarted: every counter fell, then rose again
    after = dict(inc)                                    # ... and rose by the rest
    rep = _hedging(tmp_path, record_server, [exposition(before, BEFORE), exposition(middle, MIDDLE),
                                             exposition(after, AFTER)])
    check = rep["coverage"]["suppressed_losers_vs_metrics"]
    assert check["status"] == "agree", check
    assert check["analysis"] == check["gateway"] == sum(inc.values())
    by = {b["participant"]: b for b in check["by_participant"]}
    assert (by[_remote()]["analysis_primary"], by[_remote()]["gateway_primary"]) == (29, 29)
    assert "metrics" in rep["coverage"]["sources"] and not check["disagreements"]


def test_a_gateway_count_that_differs_is_reported(tmp_path, record_server):
    """The metric rose by 30 for the remote primary (as the old rule counted the stalled loser):
    a disagreement, named, in coverage and in the notes."""
    inc = truth_increase()
    after = dict(inc)
    after[(_remote(), "primary")] = 30
    rep = _hedging(tmp_path, record_server, [exposition({}, BEFORE), exposition(after, AFTER)])
    check = rep["coverage"]["suppressed_losers_vs_metrics"]
    assert check["status"] == "disagree"
    assert check["disagreements"] == [_remote()]
    assert (check["analysis"], check["gateway"]) == (sum(inc.values()), sum(inc.values()) + 1)
    by = {b["participant"]: b for b in check["by_participant"]}
    assert (by[_remote()]["analysis"], by[_remote()]["gateway"]) == (29, 30)
    assert any("disagree for " + _remote() in n for n in rep["notes"])


@pytest.mark.parametrize("at", [BEFORE, AFTER])
def test_one_scrape_leaves_the_increase_unknown(tmp_path, record_server, at):
    """A single scrape does not bracket the range: not compared, and said so (never 0)."""
    rep = _hedging(tmp_path, record_server, [exposition(truth_increase(), at)])
    check = rep["coverage"]["suppressed_losers_vs_metrics"]
    assert check["status"] == "not_compared" and check["gateway"] is None
    assert any("is unknown" in n for n in rep["notes"])


def test_no_scrape_no_comparison(tmp_path):
    db = tmp_path / "a.duckdb"
    assert run_cli("collect", "--gateway-log", str(H / "incident.log"), db=db).returncode == 0
    rep = run_json("hedging", "--offline", *RANGE, "--format", "json", db=db)
    assert "suppressed_losers_vs_metrics" not in rep["coverage"] and "metrics" not in rep["coverage"]["sources"]


def test_a_nan_sample_never_makes_the_json_invalid(tmp_path, record_server):
    """Issue 35, 13: a /metrics sample of NaN (the exposition format allows it) reached the
    output as "gateway": NaN, which no strict JSON reader takes. The one JSON writer writes
    null there (no value: unknown)."""
    inc = truth_increase()
    after = dict(inc)
    after[(_remote(), "primary")] = float("nan")
    rec = write_recording(tmp_path / "scrapes", [
        {"path": "/metrics", "body": b, "content_type": "text/plain; version=0.0.4; charset=utf-8"}
        for b in (exposition({}, BEFORE), exposition(after, AFTER))])
    url = record_server(rec).url + "/metrics"
    db = tmp_path / "a.duckdb"
    r = run_cli("collect", "--gateway-log", str(H / "incident.log"), "--metrics", url, "--metrics", url, "--rate", "0",
                db=db)
    assert r.returncode == 0, r.stderr
    r = run_cli("hedging", "--offline", *RANGE, "--format", "json", db=db)
    assert r.returncode in (0, 1), r.stderr

    def refuse(word):
        raise AssertionError(f"{word} in the JSON output")

    rep = json.loads(r.stdout, parse_constant=refuse)
    check = rep["coverage"]["suppressed_losers_vs_metrics"]
    assert check["gateway"] is None, check
    by = {b["participant"]: b for b in check["by_participant"]}
    assert by[_remote()]["gateway_primary"] is None and by[_remote()]["analysis_primary"] == 29
