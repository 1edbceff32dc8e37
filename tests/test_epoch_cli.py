"""`auditor epoch`, `auditor misstest` and `auditor sql` through the CLI, against the
bundled epoch-403 recording served on loopback."""

from __future__ import annotations

import csv
import io
import json
import os
import re
import shutil

import pytest

from conftest import FIXTURES, run_cli, run_json

REC = FIXTURES / "chain" / "epoch-403"
STORY = json.loads((FIXTURES / "chain" / "epoch-403.story.json").read_text())


@pytest.fixture
def collected(db):
    r = run_cli("collect", "--epoch", "403", "--replay", str(REC), db=db)
    assert r.returncode == 0, r.stderr
    return db


def test_epoch_json_contract(db):
    report = run_json("epoch", "403", "--replay", str(REC), "--format", "json", db=db)
    for key in ("epoch", "heights", "models", "cpoc_events", "coverage", "miss_test"):
        assert key in report
    assert report["epoch"] == 403 and report["settled"] is True
    heights = [h["height"] for h in report["heights"]]
    assert heights == sorted(heights) and all(h["time"] for h in report["heights"])
    assert {m["model_id"]: m["preserved_target"] for m in report["models"]} == {
        "MiniMaxAI/MiniMax-M2.7": 152955, "deepseek-ai/DeepSeek-V4-Flash-0731": 15467, "zai-org/GLM-5.3-Flash": 2577}
    (ev,) = report["cpoc_events"]
    assert ev["gen_start"] == ev["trigger_height"] + 20 and ev["val_end"] == ev["gen_start"] + 60 - 1 + 5 + 480 - 1
    assert report["coverage"]["chain"]["missing"] == []
    verdicts = {p["participant"]: p["verdict"] for p in report["miss_test"]["participants"]}
    assert verdicts[STORY["victim"]] == "zeroed_by_miss_test"
    assert verdicts[STORY["boundary_fail"]] == "zeroed_by_miss_test"
    assert verdicts[STORY["boundary_pass"]] == "passed"
    assert verdicts[STORY["excluded"]] == "zero_for_other_reason"
    assert verdicts[STORY["idle"]] == "no_requests"


def test_misstest_json_contract(collected):
    out = run_json("misstest", "403", "--offline", "--format", "json", db=collected)
    assert out["epoch"] == 403 and out["p0"] == pytest.approx(0.1)
    assert 0 < out["network_miss_share"] < 0.05
    assert len(out["participants"]) == 27
    for p in out["participants"]:
        assert isinstance(p["participant"], str) and p["participant"].startswith("gonka1")
        assert isinstance(p["missed"], int) and isinstance(p["total"], int)
        assert isinstance(p["passed"], bool) and isinstance(p["rewarded_coins"], int)
        assert p["verdict"] in {"passed", "zeroed_by_miss_test", "zero_for_other_reason", "no_requests"}
        assert p["critical_misses"] is None or isinstance(p["critical_misses"], int)


def test_misstest_csv_and_markdown(collected):
    r = run_cli("misstest", "403", "--offline", "--format", "csv", db=collected)
    assert r.returncode == 0
    rows = list(csv.DictReader(io.StringIO(r.stdout)))
    assert len(rows) == 27 and {"participant", "verdict", "critical_misses"} <= set(rows[0])
    victim = next(x for x in rows if x["participant"] == STORY["victim"])
    assert victim["verdict"] == "zeroed_by_miss_test" and victim["rewarded_coins"] == "0"
    md = run_cli("misstest", "403", "--offline", "--format", "md", db=collected).stdout
    assert "| participant |" in md and STORY["victim"] in md


def test_participant_filter(collected):
    out = run_json("misstest", "403", "--offline", "-p", STORY["victim"], "--format", "json", db=collected)
    assert [p["participant"] for p in out["participants"]] == [STORY["victim"]]
    assert out["p0"] == pytest.approx(0.1)  # still the network p0


def test_table_output_lines_up(collected):
    r = run_cli("epoch", "403", "--offline", db=collected)
    assert r.returncode == 0, r.stderr
    assert "Heights" in r.stdout and "Miss test" in r.stdout
    assert f"gonka1…{STORY['victim'][-8:]}" in r.stdout and STORY["victim"] not in r.stdout
    wide = run_cli("epoch", "403", "--offline", "--wide", db=collected)
    assert wide.returncode == 0 and STORY["victim"] in wide.stdout


def test_offline_without_data_is_a_clear_error(db, tmp_path):
    r = run_cli("epoch", "403", "--offline", db=db)             # no store at all
    assert r.returncode == 3 and "no database at" in r.stderr and "Traceback" not in r.stderr
    assert not db.exists()
    other = tmp_path / "other.duckdb"
    assert run_cli("collect", "--epoch", "403", "--replay", str(REC), db=other).returncode == 0
    r = run_cli("epoch", "404", "--offline", db=other)          # a store without that epoch
    assert r.returncode == 3 and "not in the store" in r.stderr and "Traceback" not in r.stderr
    r = run_cli("misstest", "404", "--offline", db=other)
    assert r.returncode == 3 and "collect it first" in r.stderr


def test_env_vars_stand_in_for_flags(tmp_path, record_server):
    server = record_server(REC)
    db = tmp_path / "env.duckdb"
    logs = os.pathsep.join(str(FIXTURES / "gateway-logs" / f) for f in ("section12.log", "escapes.log"))
    r = run_cli("collect", "--epoch", "403", env={"AUDITOR_NODE": server.url, "AUDITOR_DB": str(db),
                                                  "AUDITOR_RATE": "0", "AUDITOR_GATEWAY_LOG": logs})
    assert r.returncode == 0, r.stderr
    out = run_json("sql", "SELECT count(*) AS files FROM log_files", "--format", "json", env={"AUDITOR_DB": str(db)})
    assert out["rows"] == [{"files": 2}]
    assert run_json("sql", "SELECT count(*) AS n FROM chain_epochs", "--format", "json", db=db)["rows"] == [{"n": 1}]


def test_bad_format_is_a_usage_error(collected):
    assert run_cli("epoch", "403", "--offline", "--format", "xml", db=collected).returncode == 2


def test_sql_command(collected):
    out = run_json("sql", "SELECT count(*) AS n FROM chain_performance WHERE epoch = 403", "--format", "json", db=collected)
    assert out["rows"] == [{"n": 27}]
    r = run_cli("sql", "SELECT * FROM no_such_table", db=collected)
    assert r.returncode == 2 and "query failed" in r.stderr
    r = run_cli("sql", "SELECT participant, rewarded_coins FROM chain_performance ORDER BY 1 LIMIT 2", "--format", "csv", db=collected)
    assert r.stdout.splitlines()[0] == "participant,rewarded_coins" and len(r.stdout.splitlines()) == 3


def test_sql_on_a_missing_database(tmp_path):
    r = run_cli("sql", "SELECT 1", db=tmp_path / "nope.duckdb")
    assert r.returncode == 3 and "no database" in r.stderr and "Traceback" not in r.stderr
    r = run_cli("--debug", "sql", "SELECT 1", db=tmp_path / "nope.duckdb")
    assert r.returncode == 3 and "Traceback" in r.stderr


DEMO_LOG = FIXTURES / "demo-epoch-403" / "gateway.log.gz"
DEMO_TRUTH = json.loads((FIXTURES / "demo-epoch-403" / "gateway.summary.json").read_text())


def test_epoch_with_every_source_reports_gateway_coverage(db):
    report = run_json("epoch", "403", "--replay", str(REC), "--replay", str(FIXTURES / "accounting" / "v5"),
                      "--gateway-log", str(DEMO_LOG), "--format", "json", db=db)
    cov = report["coverage"]
    assert set(cov) == {"chain", "chain_escrows", "accounting", "gateway_log", "metrics"}
    assert cov["chain_escrows"]["collected"] and cov["chain_escrows"]["missing"] == []   # the logs' escrows, probed
    acct = cov["accounting"]
    assert acct["collected"] and acct["schema_versions"] == [5] and acct["loaded"]["participant_records"] > 0
    logs = cov["gateway_log"]
    assert logs["collected"] and logs["loaded"]["lines"] == DEMO_TRUTH["lines"]
    assert logs["rejected"] == {}
    windows = {w["window"]: w for w in logs["windows"]}
    assert windows["cpoc:0"]["fully_covered"] and windows["cpoc:0"]["lines"] > 0
    # the log spans 1.5 hours of a day-long epoch: that gap is reported, not hidden
    assert not windows["epoch"]["fully_covered"]
    assert any(m.startswith("epoch: logs cover only") for m in logs["missing"])
    assert cov["metrics"] == {"collected": False, "urls": [], "loaded": {}, "time_range": None, "windows": [],
                              "missing": ["no metrics scraped (collect with --metrics URL)"]}


def test_no_gateway_source_is_unknown_not_zero(collected):
    cov = run_json("epoch", "403", "--offline", "--format", "json", db=collected)["coverage"]
    for source in ("accounting", "gateway_log", "metrics"):
        assert cov[source]["collected"] is False and cov[source]["missing"]
        assert cov[source]["loaded"] == {}


def test_unknown_host_labels_are_reported(collected, tmp_path):
    log = tmp_path / "gw.log"
    log.write_text("2026/09/23 00:10:00 request=req-1-1 stage=prepared escrow=97311 nonce=17 host=zzzzzzzz\n"
                   f"2026/09/23 00:10:01 request=req-1-1 stage=started escrow=97311 nonce=17 host={STORY['victim'][-8:]}\n")
    assert run_cli("collect", "--gateway-log", str(log), db=collected).returncode == 0
    gl = run_json("epoch", "403", "--offline", "--format", "json", db=collected)["coverage"]["gateway_log"]
    assert gl["host_labels"] == {"resolved": 1, "unresolved": [{"label": "zzzzzzzz", "status": "unknown", "candidates": []}]}
    assert any("zzzzzzzz (unknown)" in m for m in gl["missing"])


def test_metrics_coverage_says_which_windows_counters_can_measure(db):
    cov = run_json("epoch", "403", "--replay", str(REC), "--replay", str(FIXTURES / "metrics" / "scrape1"),
                   "--format", "json", db=db)["coverage"]["metrics"]
    assert cov["collected"] and cov["loaded"] == {"scrapes": 1} and len(cov["urls"]) == 1
    # one scrape, taken now: after every window of epoch 403 and before none of them
    assert [w["window"] for w in cov["windows"]] == ["epoch", "cpoc:0"]
    assert all(w["scrape_after_end"] and w["scrape_before_start"] is None and not w["measurable"]
               for w in cov["windows"])
    assert len(cov["missing"]) == 2


def test_a_window_without_block_times_is_reported_not_guessed(db, tmp_path):
    rec = tmp_path / "rec"
    shutil.copytree(REC, rec)
    for f in rec.glob("*.json"):  # drop the block time of cpoc:0's val_end
        if json.loads(f.read_text())["query"] == "height=6218778":
            f.unlink()
    r = run_cli("collect", "--epoch", "403", "--replay", str(rec), "--gateway-log", str(DEMO_LOG), db=db)
    assert r.returncode == 3 and "block time 6218778" in r.stderr
    r = run_cli("epoch", "403", "--offline", "--format", "json", db=db)
    assert r.returncode == 3     # the analyses that need the window's times say their data is incomplete
    cov = json.loads(r.stdout)["coverage"]["gateway_log"]
    assert [w["window"] for w in cov["windows"]] == ["epoch"]
    assert "cpoc:0: window times unknown (block times not collected)" in cov["missing"]


# a date and a time of day, in any of the forms the report used to mix: 'T' or ' ', seconds
# with any fraction, 'Z' or an offset (or neither)
ANY_TIME = re.compile(r"\d{4}-\d\d-\d\d[T ]\d\d:\d\d(?::\d\d(?:\.\d+)?)?(?:Z|[+-]\d\d:?\d\d)?")


def test_the_demo_epoch_json_has_one_time_format(db):
    """Every time in the demo epoch report, whether a value of its own or inside a sentence
    (a note, a finding's summary), is written one way: UTC, microseconds, 'Z'
    (auditor/times.py). The report used to mix the chain's nanosecond text, '… 00:03:36Z'
    and '+00:00'."""
    from auditor.times import TIME_PATTERN

    r = run_cli("collect", "--epoch", "403", "--replay", str(REC), "--replay", str(FIXTURES / "accounting" / "v5"),
                "--gateway-log", str(DEMO_LOG), db=db)
    assert r.returncode == 0, r.stderr
    report = run_json("epoch", "403", "--offline", "--format", "json", db=db)
    times, texts = [], []

    def walk(v):
        if isinstance(v, dict):
            for k, x in v.items():
                walk(k)
                walk(x)
        elif isinstance(v, list):
            for x in v:
                walk(x)
        elif isinstance(v, str):
            found = ANY_TIME.findall(v)
            (times if len(found) == 1 and ANY_TIME.fullmatch(v) else texts).append(v)
            assert all(TIME_PATTERN.fullmatch(t) for t in found), v

    walk(report)
    # the report's own times (heights, cPoC windows, log spans, races, mints) and the sentences
    assert len(times) > 50 and any(ANY_TIME.search(t) for t in texts)
    # the chain's block time, sent with nanoseconds (…T17:04:11.482913928Z), to the microsecond
    assert report["heights"][0]["time"] == "2026-09-22T17:04:11.482913Z"
    # the text formats write times with the same formatter: the same form, the table cells to
    # the millisecond (issue 20), the sentences in full
    shown = re.compile(TIME_PATTERN.pattern.replace(r"\.\d{6}Z", r"\.(?:\d{3}|\d{6})Z"))
    for fmt in ("md", "html"):
        out = run_cli("epoch", "403", "--offline", "--format", fmt, db=db).stdout
        found = ANY_TIME.findall(out)
        assert found and all(shown.fullmatch(t) for t in found), fmt
        assert any(TIME_PATTERN.fullmatch(t) for t in found) and any(len(t) == 24 for t in found), fmt
