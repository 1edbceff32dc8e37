"""`auditor remints N` (issue 10): the #1799 fixture through the CLI, and the classification
rules each tested both ways on variants of the same story (fixtures/remints/build.py)."""

from __future__ import annotations

import html
import importlib.util
import json
import re
import shutil
import sys
from pathlib import Path

import pytest

from auditor.store import Store
from conftest import FIXTURES, run_cli, run_json

HERE = FIXTURES / "remints"
STORY = json.loads((HERE / "story.json").read_text())
DS, MM = "deepseek-ai/DeepSeek-V4-Flash-0731", "MiniMaxAI/MiniMax-M2.7"

_spec = importlib.util.spec_from_file_location("remints_build", HERE / "build.py")
build = importlib.util.module_from_spec(_spec)
sys.modules["remints_build"] = build  # dataclasses look their module up
_spec.loader.exec_module(build)


def sources(d: Path) -> list[str]:
    return ["--replay", str(d / "chain"), "--replay", str(d / "accounting"),
            "--gateway-log", str(d / "gateway.log.1"), "--gateway-log", str(d / "gateway.log")]


def remints(db: Path, d: Path = HERE, *extra: str) -> dict:
    return run_json("remints", "396", *sources(d), "--format", "json", *extra, db=db)


def variant(tmp_path: Path, **kw) -> Path:
    d = tmp_path / "fx"
    build.write(d, build.scenario(**kw))
    return d


def by_escrow(report: dict) -> dict[int, dict]:
    return {d["escrow"]: d for d in report["deactivations"]}


@pytest.fixture(scope="module")
def fixture_store(tmp_path_factory) -> tuple[Path, dict]:
    """A store of the #1799 fixture, collected once by `remints 396`, and that run's report
    (the tests that take it only read it)."""
    db = tmp_path_factory.mktemp("r") / "a.duckdb"
    return db, remints(db)


@pytest.fixture(scope="module")
def fixture_report(fixture_store) -> dict:
    return fixture_store[1]


def test_the_fixture_is_what_the_builder_writes(tmp_path):
    d = variant(tmp_path)
    names = ["gateway.log.1", "gateway.log", "story.json",
             *(str(f.relative_to(HERE)) for f in sorted(HERE.glob("*/*.json")))]
    assert sorted(str(f.relative_to(d)) for f in d.glob("*/*.json")) == names[3:]
    for name in names:
        assert (d / name).read_text() == (HERE / name).read_text(), f"{name}: run fixtures/remints/build.py"


def test_1799_sequence_is_spurious_with_its_numbers(fixture_report):
    d = by_escrow(fixture_report)[80502]
    assert d["classification"] == "spurious" and d["trigger"] == "request" and d["reason"] == "balance_exhausted"
    req = d["request"]
    assert req["request"] == "req-1789648596464179072-1533588" and req["input_bytes"] == 926_912
    assert req["max_tokens"] == 3072 and "default" in req["max_tokens_source"] and req["token_price"] == 100
    assert req["reservation"] == STORY["reservation_80502"] == (926_912 + 3072) * 100
    assert d["balance_estimate"] == STORY["balance_80502_at_least"] == 80_000_000 - 12 * (20_000 + 4096) * 100
    assert "chain amount 80,000,000" in d["balance_source"] and "12 request(s)" in d["balance_source"]
    assert d["timing_ms"]["failure_to_exhausted"] == 16
    assert d["evidence"]["served_requests"] == 12          # the same count as its escrow's requests_served
    assert 4000 <= d["timing_ms"]["failure_to_replacement"] <= 4100
    assert d["replacement_escrow"] == 80620
    cf = d["counterfactual"]
    assert cf["action"] == "route" and cf["escrow"] == STORY["affordable_alternative"]
    life = {e["escrow"]: e for e in fixture_report["escrows"]}[80502]   # creation, use, failure, end
    assert life["created"]["replaces"] == 80401 and life["chain"]["amount"] == 80_000_000
    assert life["requests_served"] == 12 and life["reserved_at_most"] == 12 * (20_000 + 4096) * 100
    assert [f["reservation"] for f in life["failures"]] == [92_998_400] and life["end"] == "spurious"


def test_the_deactivations_table_says_which_balance_is_a_lower_bound(fixture_store):
    """80502's balance is a lower bound (its finding says 'at least'): the table printed it as a
    plain balance, beside 80401's, which the gateway logged."""
    import csv as csv_

    db, _ = fixture_store
    text = run_cli("remints", "396", "--offline", "--format", "csv", db=db).stdout
    rows = {int(r["escrow"]): r for r in csv_.DictReader(text.splitlines())}
    assert (rows[80502]["balance"], rows[80502]["balance_is"]) == (str(STORY["balance_80502_at_least"]), "at least")
    assert rows[80401]["balance_is"] == "logged"
    assert all(r["balance_is"] == "" for r in rows.values() if r["balance"] == "")


def test_a_csv_whose_findings_fail_the_run_says_them_on_stderr(fixture_store):
    """The CSV is the first table, without the findings: --fail-on warn exited 1 and said
    nothing of why."""
    db, report = fixture_store
    r = run_cli("remints", "396", "--offline", "--format", "csv", "--fail-on", "warn", db=db)
    warned = [f for f in report["findings"] if f["severity"] in ("warn", "error")]
    assert r.returncode == 1 and warned
    lines = [x for x in r.stderr.splitlines() if x.startswith("auditor: ")]
    assert len(lines) == len(warned), r.stderr
    assert {f"auditor: {f['severity']} {f['code']} {f['subject']['id']}: {f['summary']}" for f in warned} == set(lines)
    assert run_cli("remints", "396", "--offline", "--format", "json", "--fail-on", "warn", db=db).stderr == ""


def test_each_finding_names_the_file_and_line_of_its_evidence(fixture_report):
    """A finding's evidence names where its lines are, for a bug report: the query names alone
    sent the reader to the store. Each named line is in that file at that line, with that name."""
    spurious = [f for f in fixture_report["findings"] if f["code"] == "spurious_remint"]
    assert spurious and all(f["evidence"]["log_lines"] for f in fixture_report["findings"])
    req = spurious[0]["evidence"]["request"]["request"]
    for f in fixture_report["findings"]:
        for entry in f["evidence"]["log_lines"]:
            where, name = entry.split(" ")
            path, line = where.rsplit(":", 1)
            text = Path(path).read_text(encoding="utf-8").splitlines()[int(line) - 1]
            assert re.search(rf"(^|[\s=]){re.escape(name)}(\s|$)", text), (entry, text)   # the stage or event
    names = [e.split(" ")[1] for e in spurious[0]["evidence"]["log_lines"]]
    assert "escrow_balance_exhausted" in names and "runner_prepare_failed" in names
    assert any(req in Path(e.split(":")[0]).read_text() for e in spurious[0]["evidence"]["log_lines"])


def test_the_md_a_finding_says_to_attach_keeps_every_line_it_names(fixture_store, fixture_report):
    """The findings' next step is to attach this md to an issue: its evidence was one JSON text cut
    at 600 characters, which dropped the file:line of every line after the escrow's first few."""
    db, _ = fixture_store
    md = run_cli("remints", "396", "--offline", "--format", "md", db=db).stdout
    named = [e for f in fixture_report["findings"] for e in f["evidence"]["log_lines"]]
    assert len(named) > 10 and all(f"`{e}`" in md for e in named), md


def test_the_html_keeps_times_whole_and_groups_quantities(fixture_store):
    """The browser broke a time at its hyphens (2026-09- / 17T06:31:45Z), and the cost table's
    mixed column printed 80000000 where the other views print 80,000,000."""
    db, report = fixture_store
    page = run_cli("remints", "396", "--offline", "--format", "html", db=db).stdout
    locked = report["costs"]["funds_locked_in_replacements"]
    assert locked >= 1000 and f">{locked:,}<" in page and f">{locked}<" not in page
    at = report["deactivations"][0]["at"].replace("Z", "")[:19]
    assert re.search(rf'<td><span class="nb">{re.escape(at)}[0-9.]*Z</span></td>', page), at
    # a next step's times too (mint_peak's "from 2026-09- / 17T08:45:03Z"), and the lines a finding
    # rests on beside it, as the md gives them (they were only inside the evidence's JSON)
    peak = next(f for f in report["findings"] if f["code"] == "mint_peak")
    start = peak["evidence"]["start"]
    assert re.search(rf'next: [^\n]*?from <span class="nb">{re.escape(start)}</span>', page), start
    shown = [[html.unescape(re.sub(r"<[^>]+>", "", c)) for c in re.findall(r"<code[^>]*>(.*?)</code>", row)]
             for row in re.findall(r'<span class="action">lines: (.*?)</span></li>', page)]
    assert shown == [f["evidence"]["log_lines"] for f in report["findings"]], shown


def test_every_deactivation_of_the_fixture_is_classified(fixture_report):
    got = {str(k): v["classification"] for k, v in by_escrow(fixture_report).items()}
    assert got == STORY["classification"]
    d = by_escrow(fixture_report)
    assert d[80401]["trigger"] == "low_balance" and d[80401]["balance_estimate"] == 842_000
    assert d[80402]["trigger"] == "high_nonce" and d[80402]["evidence"]["nonce_check"]["nonce"] == 19_803
    assert {d[80311]["trigger"], d[80312]["trigger"]} == {"rotation"}
    assert {d[80311]["reason"], d[80312]["reason"]} == {"escrow rotation temp retired"}    # as logged
    assert d[80401]["replacement_escrow"] == 80502 and d[80402]["replacement_escrow"] == 80560
    assert d[80402]["evidence"]["nonce_check"]["accounting_latest_nonce"] == 19_803
    # an escrow only the accounting API names was probed on chain too, and is part of the epoch
    only_acct = {e["escrow"]: e for e in fixture_report["escrows"]}[80640]
    assert only_acct["chain_status"] == "found" and only_acct["created"] is None and only_acct["end"] is None


def test_rotated_away_evidence_is_unknown_and_says_what_is_missing(fixture_report):
    d = by_escrow(fixture_report)[80405]
    assert d["classification"] == "unknown" and d["replacement_escrow"] == 80590
    text = " ".join(d["missing"])
    assert "runner_prepare_failed" in text and "escrow_balance_exhausted" in text
    assert "2026-09-17T07:59:59.040000Z to 2026-09-17T08:45:03.000000Z" in text   # the gap, named
    assert "the triggering request" in text and "its balance" in text
    assert d["balance_estimate"] is None  # unknown, not zero


def test_the_failed_request_kept_but_its_exhaustion_rotated_away_is_unknown(tmp_path):
    """The older file keeps the request's insufficient-balance failure; the lines that
    ended the escrow rotated away: still unknown, not a crash."""
    import shutil

    d = tmp_path / "fx"
    shutil.copytree(HERE, d)
    with (d / "gateway.log.1").open("a") as f:
        f.write("2026-09-17T07:59:58.000000000Z 2026/09/17 07:59:58 request=req-1-9 stage=runner_prepare_failed "
                'escrow=80405 error="prepare: local apply: mandatory start inference: insufficient escrow balance"\n')
    r = run_cli("remints", "396", *sources(d), "--format", "json", db=tmp_path / "a.duckdb")
    assert r.returncode in (0, 1) and "internal error" not in r.stderr, r.stderr
    assert by_escrow(json.loads(r.stdout))[80405]["classification"] == "unknown"

def test_the_same_escrow_with_its_log_still_there_is_decided(tmp_path):
    report = remints(tmp_path / "a.duckdb", variant(tmp_path, rotated_away=False))
    d = by_escrow(report)[80405]
    assert d["classification"] == "spurious" and d["missing"] == []
    assert d["request"]["reservation"] == (600_000 + 3072) * 100


def test_findings_flag_the_spurious_remint_and_the_peak_only(fixture_report):
    codes = [(f["code"], f["severity"], f["subject"]["kind"], f["subject"]["id"]) for f in fixture_report["findings"]]
    assert sorted(codes) == [("mint_peak", "warn", "model", MM), ("spurious_remint", "warn", "escrow", "80502")]
    spur = next(f for f in fixture_report["findings"] if f["code"] == "spurious_remint")
    assert spur["model"] == DS and spur["evidence"]["request"]["reservation"] == 92_998_400
    assert set(fixture_report) >= {"epoch", "findings", "coverage", "deactivations", "mints"}


def test_mints_per_model_and_the_peak(fixture_report):
    mints = {m["model"]: m for m in fixture_report["mints"]}
    assert mints[MM]["rotation_target"] == STORY["rotation_target"][MM]
    assert mints[DS]["rotation_target"] == STORY["rotation_target"][DS]
    assert mints[MM]["by_cause"] == {"rotation": 4, "replacement_unknown": 1, "unexplained": 9}
    assert mints[DS]["by_cause"] == {"rotation": 2, "replacement_legitimate": 2, "replacement_spurious": 1}
    assert sum(h["mints"] for h in mints[MM]["by_hour"]) == 14
    (peak,) = fixture_report["peaks"]
    assert peak["model"] == MM and peak["escrows"] == STORY["peak"]["escrows"]
    assert peak["rest"] == STORY["peak"]["rest"] and peak["explained"] == 0
    assert peak["rest_by"] == {"replacement_unknown": 1, "unexplained": 9}


def test_costs_of_the_spurious_remint(fixture_report):
    c = fixture_report["costs"]
    assert c["replacement_escrows"] == [80620] and c["funds_locked_in_replacements"] == 80_000_000
    assert c["mint_transactions"] == 1 and c["deactivation_settlement_transactions"] == 0
    assert c["failed_requests"] == 1 and c["failed_request_ids"] == ["req-1789648596464179072-1533588"]


# -- the rules, each both ways ------------------------------------------------------------------
def test_same_request_against_a_nearly_empty_escrow_is_legitimate(tmp_path):
    # 15 ordinary requests (3 of them in the 25 s before, after the gateway's last balance check)
    # may have used 36,144,000 of 36,728,800: at least 584,800 left, below the threshold
    d = by_escrow(remints(tmp_path / "a.duckdb", variant(tmp_path, amount_80502=36_728_800, burst_80502=3)))[80502]
    assert d["classification"] == "legitimate" and d["balance_estimate"] == 584_800
    assert d["request"]["reservation"] == 92_998_400 and "chain amount" in d["balance_source"]


def test_no_low_balance_line_in_the_last_check_interval_means_at_least_the_threshold(tmp_path):
    # the same nearly-empty estimate, but no request since the last periodic check (30 s): the
    # gateway's own check saw at least 1,000,000 and logged no escrow_balance_low
    d = by_escrow(remints(tmp_path / "a.duckdb", variant(tmp_path, amount_80502=29_500_000)))[80502]
    assert d["classification"] == "spurious" and d["balance_estimate"] == 1_000_000
    assert "periodic balance check" in d["balance_source"]
    assert d["evidence"]["balance"]["from_chain_amount"] == 584_800


def test_the_periodic_checks_bound_is_the_threshold_the_gateway_logged_not_the_flags(tmp_path):
    """The gateway's silence proves the balance was at least ITS threshold (logged: 1,000,000);
    --threshold 60000000 made the evidence say 'at least the 60,000,000 threshold at the last
    check', a number typed on the command line presented as the gateway's own check."""
    d = by_escrow(remints(tmp_path / "a.duckdb", variant(tmp_path, amount_80502=29_500_000),
                          "--threshold", "60000000"))[80502]
    assert d["evidence"]["balance"]["from_periodic_check"] == 1_000_000, d["evidence"]["balance"]
    assert "60,000,000" not in d["balance_source"] and d["evidence"]["balance"]["threshold"] == 60_000_000
    assert d["classification"] == "legitimate"        # at least 1,000,000: below the 60,000,000 it is held to


def test_a_deposit_below_the_threshold_is_legitimate_whatever_the_logs(tmp_path):
    d = by_escrow(remints(tmp_path / "a.duckdb", variant(tmp_path, amount_80502=900_000, requests_80502=0)))[80502]
    assert d["classification"] == "legitimate" and d["evidence"]["balance"]["upper_bound"] == 900_000


def test_the_threshold_decides(tmp_path):
    # balance at least 37,644,000 - 15 x 2,409,600 = 1,500,000: above the default 1,000,000, below
    # 2,000,000 (3 requests since the last periodic check: it bounds nothing)
    d = variant(tmp_path, amount_80502=37_644_000, burst_80502=3)
    assert by_escrow(remints(tmp_path / "a.duckdb", d))[80502]["classification"] == "spurious"
    high = by_escrow(remints(tmp_path / "b.duckdb", d, "--threshold", "2000000"))[80502]
    assert high["classification"] == "legitimate" and high["balance_estimate"] == 1_500_000


def test_the_reservation_formula_decides(tmp_path):
    # balance at least 92,800,000: the request fails only because max_tokens (3,072) and the token
    # price enter its reservation, (926,912 + 3,072) x 100 = 92,998,400 > 92,800,000; without
    # max_tokens it would be 92,691,200 and fit, and the logs could not explain the failure
    d = by_escrow(remints(tmp_path / "a.duckdb", variant(tmp_path, amount_80502=28_915_200 + 92_800_000)))[80502]
    assert d["balance_estimate"] == 92_800_000 and d["request"]["reservation"] == 92_998_400
    assert d["classification"] == "spurious"
    # and a request that would have fitted that balance is not explained: unknown, with why
    d = by_escrow(remints(tmp_path / "b.duckdb", variant(tmp_path, amount_80502=28_915_200 + 93_000_000)))[80502]
    assert d["classification"] == "unknown" and "does not exceed" in " ".join(d["missing"])


def test_of_two_lines_with_one_time_the_first_logged_is_the_escrows(tmp_path):
    # a second line with the same timestamp (a repeated line, or one logged in the same
    # nanosecond) after 80502's deactivation and after its minting as 80401's replacement:
    # the line before it in the log gives the reason, of the deactivation and of the mint
    d = tmp_path / "fx"
    shutil.copytree(HERE, d)
    log = d / "gateway.log"
    lines = log.read_text().splitlines(keepends=True)
    for marker in ("escrow_depletion_deactivated escrow=80502", "old_escrow=80401 new_escrow=80502"):
        i = next(i for i, x in enumerate(lines) if marker in x)
        lines.insert(i + 1, re.sub(r'reason="[^"]*"', 'reason="logged_second"', lines[i]))
    log.write_text("".join(lines))
    report = remints(tmp_path / "a.duckdb", d)
    assert by_escrow(report)[80502]["reason"] == "balance_exhausted"
    mint, = [e for m in report["mints"] for e in m["events"] if e["escrow"] == 80502]
    assert mint["replacement_reason"] == "low_balance"


def test_without_the_epoch_start_the_rotation_target_is_unknown_not_zero(tmp_path, db):
    d = variant(tmp_path)
    (d / "gateway.log.1").unlink()
    report = run_json("remints", "396", "--replay", str(d / "chain"), "--gateway-log", str(d / "gateway.log"),
                      "--format", "json", db=db)
    mm = {m["model"]: m for m in report["mints"]}[MM]
    assert mm["rotation_target"] is None and mm["rotation_target_source"].startswith("unknown")
    assert report["peaks"] == [] and "mint_peak" not in [f["code"] for f in report["findings"]]
    assert MM in report["peaks_not_assessed"] and any(MM in u for u in report["coverage"]["unknown"])
    assert any("mint peaks not assessed" in n for n in report["notes"])
    given = run_json("remints", "396", "--offline", "--rotation-target", "4", "--format", "json", db=db)
    assert [p["model"] for p in given["peaks"]] == [MM] and given["peaks_not_assessed"] == []


# -- the command ------------------------------------------------------------------------------
def test_epoch_report_has_the_remints_section_and_findings(db):
    run_cli("collect", "--epoch", "396", *sources(HERE), db=db)
    report = run_json("epoch", "396", "--offline", "--format", "json", db=db)
    assert report["remints"]["classifications"] == {"legitimate": 4, "spurious": 1, "unknown": 1}
    assert {"spurious_remint", "mint_peak"} <= {f["code"] for f in report["findings"]}
    r = run_cli("remints", "396", "--offline", "--format", "md", db=db)
    assert r.returncode == 0 and "spurious_remint" in r.stdout and "80620" in r.stdout
    r = run_cli("remints", "396", "--offline", "--fail-on", "warn", db=db)
    assert r.returncode == 1


def test_a_failed_escrow_probe_is_exit_3_and_coverage_says_which(tmp_path, db):
    d = variant(tmp_path)
    for f in (d / "chain").glob("*.json"):
        e = json.loads(f.read_text())
        if e["path"].endswith("/devshard_escrow/80502"):
            e.update(status=500, body=json.dumps({"code": 13, "message": "internal"}))
            f.write_text(json.dumps(e))
    r = run_cli("remints", "396", *sources(d), "--format", "json", db=db)
    assert r.returncode == 3, r.stderr
    assert "devshard_escrow/80502" in r.stderr
    report = json.loads(r.stdout)
    assert any("devshard_escrow/80502" in m for m in report["coverage"]["missing"])
    # without the chain record, the reservation of the request is unknown and so is the verdict
    d502 = by_escrow(report)[80502]
    # still decided: the periodic check shows the balance was at least the threshold
    assert d502["request"]["reservation"] is None
    assert (d502["classification"], d502["basis"]) == ("spurious", "balance bound")
    assert "could not reserve an amount that is unknown" in d502["summary"]
    epoch = json.loads(run_cli("epoch", "396", "--offline", "--format", "json", db=db).stdout)
    assert any("devshard_escrow/80502" in m for m in epoch["coverage"]["chain_escrows"]["missing"])


def test_an_epoch_the_logs_do_not_show_is_unknown_not_empty(fixture_store):
    db, _ = fixture_store                                          # the fixture's logs hold epoch 396
    r = run_cli("remints", "999", "--offline", "--format", "json", db=db)
    assert r.returncode == 3, r.stderr
    (missing,) = json.loads(r.stdout)["coverage"]["missing"]
    assert missing.startswith("no escrow of epoch 999 in the logs read")


def test_an_epoch_neither_stored_nor_logged_is_unknown_beside_escrows_of_no_known_epoch(tmp_path):
    """The demo store's two escrows of no known creation epoch hid the caveat: `remints 999`
    printed a clean report of no deactivation, exit 0, for an epoch nothing in the store names."""
    db = tmp_path / "a.duckdb"
    r = run_cli("collect", "--epoch", "403", "--replay", str(FIXTURES / "chain" / "epoch-403"),
                "--gateway-log", str(FIXTURES / "demo-epoch-403" / "gateway.log.gz"), db=db)
    assert r.returncode == 0, r.stderr
    r = run_cli("remints", "999", "--offline", "--format", "json", db=db)
    assert r.returncode == 3, r.stderr
    assert json.loads(r.stdout)["coverage"]["missing"][0].startswith("no escrow of epoch 999 in the logs read")
    assert run_cli("remints", "403", "--offline", "--format", "json", db=db).returncode == 0   # a known epoch


def test_no_gateway_logs_is_a_clear_error(db):
    r = run_cli("remints", "396", "--offline", db=db)
    assert r.returncode == 3 and "--gateway-log" in r.stderr


def test_help_has_an_example():
    r = run_cli("remints", "--help")
    assert r.returncode == 0 and "Example:" in r.stdout and "auditor remints 396" in r.stdout


@pytest.mark.parametrize("seed", [1, 2, 5, 7])
def test_against_the_synthetic_generators_ground_truth(tmp_path, seed):
    """tools/synth.py knows why it retired each escrow and what its balance was. Without chain
    records the balances are unknown to the analysis: the reasons and the mints must match
    exactly; every exhaustion of a healthy escrow must come out spurious; one called spurious on
    a balance bound must really have been healthy. (The fallback for an unknown balance, "it had
    just served ordinary requests", is the issue's rule and can be wrong: it is marked as such.)"""
    from collections import Counter

    from auditor.analyses import remints as rm
    from auditor.progress import Progress
    from auditor.sources.gatewaylog import ingest
    from auditor.store import Store
    from tools.synth import write_excerpt

    sm = write_excerpt(tmp_path / "s.log", seed=seed)
    with Store(tmp_path / "s.duckdb") as store:
        ingest(store, [str(tmp_path / "s.log")], Progress(quiet=True))
        data = rm.run(store, 412, rm.RemintOptions()).data
    assert Counter(d["reason"] for d in data["deactivations"]) == Counter(sm.replacements_by_reason)
    assert sum(m["mints"] for m in data["mints"]) == sm.escrow_rotations
    mine = {d["escrow"]: d for d in data["deactivations"]}
    for rep in sm.replacements:
        d = mine[rep["old"]]
        assert d["replacement_escrow"] == rep["new"]
        if rep["reason"] != "balance_exhausted":
            assert d["classification"] == "legitimate"
        elif rep["balance"] >= 1_000_000:
            assert d["classification"] == "spurious", (rep, d["basis"])
        if d["classification"] == "spurious" and d["basis"] == "balance bound":
            assert rep["balance"] >= 1_000_000
        if d["basis"] and d["basis"].startswith("recent ordinary requests"):
            assert d["balance_estimate"] is None and "unknown" in d["summary"]


def test_the_daily_textfile_counts_the_deactivations(fixture_store, tmp_path):
    """auditor_remint_deactivations{classification} (README's metric) from the epoch's report."""
    from prometheus_client.parser import text_string_to_metric_families

    db, report = fixture_store
    prom = tmp_path / "auditor.prom"
    r = run_cli("report", "daily", "--out", str(tmp_path / "reports"), "--epoch", "396", "--offline",
                "--prom-textfile", str(prom), db=db)
    assert r.returncode in (0, 1, 3), r.stderr
    fam = {f.name: f.samples for f in text_string_to_metric_families(prom.read_text())}
    got = {s.labels["classification"]: s.value for s in fam["auditor_remint_deactivations"]}
    assert got and got == {k: float(v) for k, v in report["classifications"].items()}


def test_an_escrow_known_only_to_accounting_takes_its_model_whatever_the_row_order(fixture_store, tmp_path):
    """Accounting rows of one escrow where one leaves the model empty: the escrow's model is
    the one given, not whichever row DuckDB reads first (the empty one here, stored first)."""
    db = tmp_path / "a.duckdb"
    shutil.copy(fixture_store[0], db)
    with Store(db) as store:
        store.insert("acct_escrow_nonces", [
            {"epoch": 396, "participant": "gonka1acct", "model": "", "escrow_id": "99901", "latest_nonce": 5},
            {"epoch": 397, "participant": "gonka1acct", "model": "Qwen/QwQ-32B", "escrow_id": "99901",
             "latest_nonce": 9}])
        life, = [r for r in store.query("remints_escrow_lives") if r["escrow"] == 99901]
    assert life["model"] == "Qwen/QwQ-32B" and life["acct_epoch"] == 397
