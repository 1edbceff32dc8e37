"""`auditor poc-overload N` (issue 8): the rules (cap, in flight, the capped replay, the
verdict flip) and the command on the fixtures of ``fixtures/poc-overload`` (incident 2107's
mechanism and the cases that must not be flagged) and on the bundled demo."""

from __future__ import annotations

import json
import re
from datetime import datetime, timedelta, timezone
from decimal import Decimal

import pytest

from auditor.analyses import poc_overload as po
from tests.conftest import FIXTURES, run_cli, run_json

FIX = FIXTURES / "poc-overload"
STORY = json.loads((FIX / "story.json").read_text())
S, B, M = STORY["small_host"], STORY["large_host"], STORY["idle_preserved_host"]
MODEL = STORY["model"]
T = datetime(2026, 9, 23, 0, 0, tzinfo=timezone.utc)


def sec(x: float) -> datetime:
    return T + timedelta(seconds=x)


# -- rules --------------------------------------------------------------------------------------
def test_host_cap_is_the_proposed_rule():
    assert po.host_cap(2841, 10.0) == 2
    assert po.host_cap(1809, 10.0) == 1            # the incident's host: 0.24 % of DeepSeek
    assert po.host_cap(38_421, 10.0) == 38         # gateway-logs.md 7.2 example
    assert po.host_cap(0, 10.0) == 1               # max(1, ...)
    assert po.host_cap(24_728, 5.0) == 12
    assert po.host_cap(None, 10.0) is None         # unknown weight: unknown cap, not 1


def test_inflight_profile_peak_and_per_second():
    iv = [(sec(0), sec(10)), (sec(2), sec(5)), (sec(4), sec(6)), (sec(5), sec(7)), (sec(-5), sec(1))]
    prof = po.inflight_profile(iv, sec(0), sec(10))
    assert prof["peak"] == 3 and prof["peak_at"] == sec(4)      # [0,10) [2,5) [4,6); [5,7) starts as [2,5) ends
    assert prof["per_second"][:8] == [2, 1, 2, 2, 3, 3, 2, 1]
    assert len(prof["per_second"]) == 10
    assert po.inflight_profile([], sec(0), sec(3))["per_second"] == [0, 0, 0]


def _attempts(n: int, every: float, dur: float, miss: bool = True) -> list[dict]:
    return [{"start_ts": sec(i * every), "end_ts": sec(i * every + dur), "miss": miss} for i in range(n)]


def test_replay_with_cap_refuses_over_the_cap_only_in_the_span():
    att = _attempts(20, 1.0, 10.0)                 # 10 in flight at steady state
    r = po.replay_with_cap(att, 2, sec(0), sec(100))
    assert r["admitted"] == 4 and r["refused"] == 16          # 2 at t=0,1; the next free at t=10,11
    assert r["misses_avoided"] == 16 and r["misses_remaining"] == 4
    # outside the span nothing is refused
    assert po.replay_with_cap(att, 2, sec(50), sec(100))["refused"] == 0
    # a cap at the peak refuses nothing: the replay must depend on the cap it is given
    assert po.replay_with_cap(att, 10, sec(0), sec(100))["refused"] == 0
    refused = [po.replay_with_cap(att, c, sec(0), sec(100))["refused"] for c in range(1, 12)]
    assert refused == sorted(refused, reverse=True) and refused[0] > refused[-1]
    with pytest.raises(ValueError):
        po.replay_with_cap(att, 0, sec(0), sec(1))


def test_flip_verdict():
    # 4386 requests, 980 missed at p0 0.1: fails (rate rule); without 975 window misses: 5 missed, passes
    f = po.flip_verdict(980, 4386, 975, Decimal("0.1"))
    assert f["flips"] and f["passed"] and f["missed"] == 5 and f["total"] == 4386
    assert not po.flip_verdict(980, 4386, 100, Decimal("0.1"))["flips"]
    assert po.flip_verdict(980, 4386, 5000, Decimal("0.1"))["missed"] == 0      # never more than missed


# -- the command on the fixtures ----------------------------------------------------------------
@pytest.fixture(scope="module")
def fixture_db(tmp_path_factory):
    db = tmp_path_factory.mktemp("poc") / "a.duckdb"
    r = run_cli("collect", "--epoch", "403", "--replay", str(FIX / "chain"), "--replay", str(FIX / "accounting"),
                "--gateway-log", str(FIX / "gateway.log.gz"), db=db)
    assert r.returncode == 0, r.stderr
    return db


@pytest.fixture(scope="module")
def report(fixture_db):
    return run_json("poc-overload", "403", "--offline", "--format", "json", db=fixture_db)


def _win(rep, episode, participant, model=MODEL):
    [w] = [w for w in rep["windows"] if w["episode"] == episode and w["participant"] == participant
           and w["model"] == model]
    return w


def test_output_contract(report):
    assert {"epoch", "findings", "coverage", "windows"} <= set(report)
    assert report["epoch"] == 403 and report["windows"] and report["findings"]
    for w in report["windows"]:
        assert {"participant", "model", "weight", "cap", "peak_inflight", "requests", "misses",
                "counterfactual"} <= set(w)
    for f in report["findings"]:
        assert {"code", "severity", "subject", "model", "summary", "evidence"} <= set(f)
        assert f["subject"]["kind"] in ("participant", "escrow", "model")


def test_the_overloaded_small_host_is_flagged_with_its_evidence(report):
    flagged = [f for f in report["findings"] if f["code"] == "poc_overload"]
    assert [(f["subject"]["id"], f["severity"], f["model"]) for f in flagged] == [(S, "error", MODEL)]
    ev = flagged[0]["evidence"]
    assert ev["episode"] == "cpoc:0" and ev["cap"] == 2 and ev["weight"] == 2841
    assert ev["peak_inflight"] > 10 * ev["cap"]
    assert ev["misses"] == STORY["s_misses_cpoc0"]
    assert ev["misses_by_kind"] == {"failed_after_receipt": STORY["s_failed"],
                                    "refused_before_receipt": STORY["s_refused"]}
    assert ev["window_flips_verdict"] is True
    assert ev["miss_test"]["verdict"] == "zeroed_by_miss_test"
    assert ev["miss_test"]["missed"] == STORY["s_chain_missed"]
    [esc] = ev["escrows"]
    assert esc["escrow"] == STORY["escrow_single_preserved"] and esc["slots"] == 16
    assert esc["preserved_slots"] == 1 and esc["host_slots"] == 1 and esc["slot_list_source"] == "chain"
    assert esc["other_slots_ghosts"]["poc_unavailable_host/confirmation_poc"] > 15 * ev["requests"] * 0.9
    assert ev["before"]["requests_per_minute"] < 2 < ev["requests_per_minute"]


def test_counterfactual_applies_the_cap(report, fixture_db):
    cf = _win(report, "cpoc:0", S)["counterfactual"]
    assert cf["cap"] == 2 and cf["refused"] > 0
    assert cf["misses_remaining"] + cf["misses_avoided"] == STORY["s_misses_cpoc0"]
    assert cf["would_pass_miss_test"] is True
    assert any("refused before any receipt" in a for a in cf["assumptions"])
    # with a cap the host never reaches, nothing is refused and the verdict stays: the replay uses the cap
    wide = run_json("poc-overload", "403", "--offline", "-f", "json", "--per-10000", "10000", db=fixture_db)
    cf2 = _win(wide, "cpoc:0", S)["counterfactual"]
    assert cf2["cap"] == 2841 and cf2["refused"] == 0 and cf2["would_pass_miss_test"] is False
    assert wide["per_10000_source"] == "given with --per-10000"
    assert "default" in report["per_10000_source"]
    # the whole window instead of generation only: at least as many refusals
    win = run_json("poc-overload", "403", "--offline", "-f", "json", "--cap-span", "window", db=fixture_db)
    assert _win(win, "cpoc:0", S)["counterfactual"]["refused"] >= cf["refused"]


@pytest.mark.parametrize("span, says", [
    ("generation", "the cap applied during PoC generation only (grace + generation, as proposed)"),
    ("window", "the cap applied over the whole window (--cap-span window)")])
def test_the_counterfactual_says_its_span_in_the_table_and_the_finding(fixture_db, span, says):
    """cf_* read 'the window replayed with the proposed per-host cap' where, by default, the cap
    is applied to PoC generation alone (7.7 of a 55-minute window): 'capping barely helps' was
    read of the whole window. The table's note and the finding's evidence say the span."""
    r = run_cli("poc-overload", "403", "--offline", "--cap-span", span, "--participant", S, db=fixture_db)
    assert r.returncode == 0 and says in r.stdout.replace("\n", " "), r.stdout
    rep = run_json("poc-overload", "403", "--offline", "-f", "json", "--cap-span", span, db=fixture_db)
    cf = next(f for f in rep["findings"] if f["code"] == "poc_overload")["evidence"]["counterfactual"]
    assert cf["span"] == span and cf["span_start"] < cf["span_end"], cf


def test_larger_and_idle_preserved_hosts_and_the_quiet_cpoc_are_not_flagged(report):
    big = _win(report, "cpoc:0", B)
    assert big["requests"] > 100 and big["peak_inflight"] <= big["cap"] and big["misses"] == 0
    idle = _win(report, "cpoc:0", M)
    assert idle["requests"] == 0 and idle["peak_inflight"] == 0 and idle["evidence"]["state"] == "full"
    quiet = _win(report, "cpoc:1", S)
    assert quiet["misses"] == 0 and quiet["requests"] > 0
    assert not [f for f in report["findings"] if f["code"] == "poc_overload" and f["evidence"]["episode"] != "cpoc:0"]


def test_a_window_without_gateway_evidence_is_unknown_not_zero(report):
    for p in (S, B, M):
        w = _win(report, "cpoc:2", p)
        assert w["evidence"]["state"] == "none"
        assert w["peak_inflight"] is None and w["requests"] is None and w["misses"] is None
        assert w["counterfactual"] is None
    assert any(u.startswith(f"cpoc:2 {MODEL}") for u in report["coverage"]["unknown"])
    # a model the gateway served no traffic for is no evidence either
    glm = [w for w in report["windows"] if w["model"].startswith("zai-org")]
    assert glm and all(w["requests"] is None and w["evidence"]["state"] == "none" for w in glm)
    # chain data alone still shows the structural risk: the escrow whose only preserved slot is the small host
    risk = _win(report, "cpoc:2", S)["structural_risk"]
    assert risk["tiny"] is True and risk["only_preserved_slot_in_escrows"] == [STORY["escrow_single_preserved"]]
    assert _win(report, "cpoc:2", B)["structural_risk"]["tiny"] is False


def test_reward_zeroed_finding_counts_the_misses_in_cpoc_windows(report):
    zeroed = {f["subject"]["id"]: f for f in report["findings"] if f["code"] == "reward_zeroed_miss_test"}
    ev = zeroed[S]["evidence"]
    assert ev["misses_in_cpoc_windows"] == STORY["s_misses_cpoc0"]
    assert "lower bound" in ev["misses_in_cpoc_windows_is"]          # cpoc:2 has no evidence
    glm_victim = json.loads((FIXTURES / "chain" / "epoch-403.story.json").read_text())["victim"]
    assert zeroed[glm_victim]["evidence"]["misses_in_cpoc_windows"] is None      # no evidence: not 0
    assert report["cpoc_misses"][S]["misses_in_cpoc_windows"] == STORY["s_misses_cpoc0"]


def test_accounting_evidence(report, tmp_path):
    acct = _win(report, "cpoc:0", S)["accounting_cpoc"]
    assert acct["misses"] == STORY["s_misses_cpoc0"] and "no times" in acct["scope"]
    assert acct["misses_by_kind"] == {"failed_after_receipt": STORY["s_failed"],
                                      "refused_before_receipt": STORY["s_refused"]}
    [esc] = acct["escrows"]
    assert esc["escrow"] == str(STORY["escrow_single_preserved"]) and esc["slots"] == [5]
    assert esc["other_slots_ghosts"] == {"poc_unavailable_host": STORY["ghosts"][str(STORY["escrow_single_preserved"])]}
    # the accounting API alone: no window can be placed in time (unknown), the CPoC misses still counted
    d = run_json("poc-overload", "403", "--replay", str(FIX / "chain"), "--replay", str(FIX / "accounting"),
                 "-f", "json", db=tmp_path / "acct.duckdb")
    assert all(w["requests"] is None and w["evidence"]["state"] == "none" for w in d["windows"])
    # the accounting's CPoC-phase misses are the evidence: they flip S's miss test (issue 17)
    assert [(f["subject"]["id"], f["severity"]) for f in d["findings"] if f["code"] == "poc_overload"] == [(S, "error")]
    [z] = [f for f in d["findings"] if f["code"] == "reward_zeroed_miss_test" and f["subject"]["id"] == S]
    assert z["evidence"]["misses_in_cpoc_windows"] == STORY["s_misses_cpoc0"]
    assert z["evidence"]["misses_in_cpoc_windows_source"] == "accounting"
    assert z["evidence"]["misses_in_cpoc_windows_accounting"] == STORY["s_misses_cpoc0"]
    # a host preserved on MiniMax whose only accounting record is of DeepSeek (its turns there
    # ghosted): its CPoC misses are unknown, not the 0 of that record (it said 0, source accounting)
    other = d["cpoc_misses"]["gonka1y2a9p56kv044327uycmqdexl7zs82fs5ryv5le"]
    assert other["misses_in_cpoc_windows"] is None and other["misses_in_cpoc_windows_accounting"] is None, other
    assert any("no record of it on MiniMaxAI/MiniMax-M2.7, where it was preserved" in e for e in other["evidence"])
    # the table's row of those misses says they flip the test, as the finding does (it said —), and
    # the caveat calls only the load and the counterfactual unknown, not the misses it shows
    import csv as csv_

    text = run_cli("poc-overload", "403", "--offline", "--format", "csv", db=tmp_path / "acct.duckdb").stdout
    [row] = [r for r in csv_.DictReader(text.splitlines()) if r["participant"] == S and r["misses"]]
    assert (row["misses"], row["window_flips"]) == (str(STORY["s_misses_cpoc0"]), "True"), row
    assert d["coverage"]["sources"] == ["chain", "accounting", "gateway_log"]
    [caveat] = [u for u in d["coverage"]["unknown"] if u.startswith(f"cpoc:0 {MODEL}:")]
    assert caveat.endswith("load and counterfactual unknown; misses only the accounting API's of the hosts it "
                           "counts, every CPoC together"), caveat


def test_participant_filter_fail_on_and_formats(fixture_db):
    r = run_cli("poc-overload", "403", "--offline", "-f", "json", "--participant", B, db=fixture_db)
    assert r.returncode == 0
    d = json.loads(r.stdout)
    assert {w["participant"] for w in d["windows"]} == {B}
    assert {f["subject"]["id"] for f in d["findings"]} <= {B}       # no other host's findings
    assert not [f for f in d["findings"] if f["code"] == "poc_overload"]
    assert run_cli("poc-overload", "403", "--offline", "--participant", B, "--fail-on", "info",
                   db=fixture_db).returncode == 0
    assert run_cli("poc-overload", "403", "--offline", "--fail-on", "error", db=fixture_db).returncode == 1
    for fmt in ("table", "md", "csv"):
        r = run_cli("poc-overload", "403", "--offline", "-f", fmt, db=fixture_db)
        assert r.returncode == 0 and "cpoc:0" in r.stdout, r.stderr
    assert run_cli("poc-overload", "403", "--offline", "--cap-span", "bogus", db=fixture_db).returncode == 2
    assert run_cli("poc-overload", "999", "--offline", db=fixture_db).returncode == 3


def test_epoch_report_has_the_sections_and_findings(fixture_db):
    d = run_json("epoch", "403", "--offline", "-f", "json", db=fixture_db)
    assert "poc_overload" in d and "preserved_targets" in d
    codes = [(f["code"], f["subject"]["id"]) for f in d["findings"]]
    assert ("poc_overload", S) in codes
    assert codes.count(("reward_zeroed_miss_test", S)) == 1      # the miss test's, not repeated


def test_demo_bundle_victim(tmp_path):
    """The bundled demo (fixtures/chain/epoch-403 + demo log): the GLM host preserved alone in
    cpoc:0 and zeroed by the miss test is flagged."""
    db = tmp_path / "demo.duckdb"
    d = run_json("poc-overload", "403", "--replay", str(FIXTURES / "chain" / "epoch-403"), "--gateway-log",
                 str(FIXTURES / "demo-epoch-403" / "gateway.log.gz"), "-f", "json", db=db)
    victim = json.loads((FIXTURES / "chain" / "epoch-403.story.json").read_text())["victim"]
    flagged = [f for f in d["findings"] if f["code"] == "poc_overload"]
    assert [(f["subject"]["id"], f["severity"]) for f in flagged] == [(victim, "error")]
    w = [w for w in d["windows"] if w["participant"] == victim and w["model"] == "zai-org/GLM-5.3-Flash"][0]
    assert w["peak_inflight"] > w["cap"] == 8


def test_metrics_scrape_during_generation_checks_the_per_10000_value():
    ev = [{"episode": "cpoc:0", "trigger_time": sec(0), "gen_end_time": sec(480), "val_end_time": sec(3300)}]
    scrape = {"scrape_id": 1, "scraped_at": sec(60), "effective_max": 38.0, "total_weight": 38_421.0,
              "baseline_weight": 60_000.0}
    [b] = po._metrics_budget([scrape], ev, 10.0)
    assert b["per_10000_between"] == [9.8904, 10.1507] and b["consistent_with_used_value"]
    assert not po._metrics_budget([scrape], ev, 5.0)[0]["consistent_with_used_value"]
    assert po._metrics_budget([{**scrape, "scraped_at": sec(600)}], ev, 10.0) == []   # validation: another budget


def test_cpoc_misses_for_the_miss_test(fixture_db):
    """What the epoch report adds to reward_zeroed_miss_test (the analysis's cpoc_misses)."""
    from auditor.store import Store

    with Store(fixture_db, read_only=True) as store:
        c = po.run(store, 403).data["cpoc_misses"]
    assert c[S]["misses_in_cpoc_windows"] == STORY["s_misses_cpoc0"]
    assert c[S]["misses_in_cpoc_windows_accounting"] == STORY["s_misses_cpoc0"]
    assert c[S]["windows_without_evidence"] == [f"cpoc:2 {MODEL}"]
    assert c[B]["misses_in_cpoc_windows"] == 0                       # seen, and none
    glm_victim = json.loads((FIXTURES / "chain" / "epoch-403.story.json").read_text())["victim"]
    assert c[glm_victim]["misses_in_cpoc_windows"] is None            # never seen: unknown


def test_error_only_for_a_host_the_chain_did_not_pay():
    """A failing recomputed miss test on a host the chain paid is a discrepancy, not a
    zeroed reward: the overload finding stays warn; an unknown weight share is said so."""
    from auditor.analyses.poc_overload import PocOverloadOptions, _finding

    entry = {k: None for k in ("peak_at", "attribution", "before", "counterfactual", "escrows", "misses_by_kind",
                               "model_weight", "requests", "requests_per_minute", "unfinished_not_missed",
                               "weight", "window", "share")}
    entry.update(episode="cpoc:0", model="m", participant="gonka1x", cap=2, peak_inflight=99, misses=975,
                 window_flips_verdict=True)
    sev = {}
    for paid in (0, 5):
        entry["miss_test"] = {"verdict": "zeroed_by_miss_test", "rewarded_coins": paid}
        f = _finding(entry, PocOverloadOptions(), None, None)
        sev[paid] = f.severity
        assert "unknown share" in f.summary
    assert sev == {0: "error", 5: "warn"}


def test_window_misses_are_the_windows_misses(fixture_db):
    """The count auditor targets reads (cpoc.window_misses, a fact of the run) is the sum of the
    analysis's windows, worked out on its own run: 0 where the logs cover a window without a
    miss (it was left out, so targets said unknown), none where they do not cover it (cpoc:2)."""
    from auditor.analyses import cpoc, poc_overload
    from auditor.analyses.context import Run
    from auditor.store import Store

    with Store(fixture_db) as st:
        res = poc_overload.run(st, 403, poc_overload.PocOverloadOptions())
        summed: dict = {}
        for w in res.data["windows"]:
            if w["misses"] is not None:
                summed[(w["episode"], w["model"])] = summed.get((w["episode"], w["model"]), 0) + w["misses"]
        assert cpoc.window_misses(Run(st, 403)) == summed == {("cpoc:0", MODEL): 975, ("cpoc:1", MODEL): 0}


def test_the_cpoc_window_is_defined_once():
    """views/cpoc_windows.sql is the only SQL that reads the chain's cPoC events; every other
    query and view takes the windows from it (they were defined three times: in
    epoch_cpoc_events.sql, poc_overload_events.sql and views/chain_windows.sql)."""
    import re

    from auditor.store import queries_dir

    readers = sorted(str(f.relative_to(queries_dir())) for f in queries_dir().rglob("*.sql")
                     if f.parent.name != "schema" and re.search(r"\bchain_cpoc_events\b", f.read_text()))
    assert readers == ["views/cpoc_windows.sql"]


def test_an_escrow_without_misses_says_none_not_a_blank(fixture_db):
    """The per-escrow table's counts by kind: "none" for an escrow that missed nothing (its cell
    was blank, which reads as unknown), and the counts grouped as every quantity is."""
    md = run_cli("poc-overload", "403", "--offline", "--format", "md", db=fixture_db).stdout
    table = md.split("## Per escrow in the window", 1)[1].split("\n\n")[1].splitlines()
    head = [c.strip() for c in table[0].strip("|").split("|")]
    rows = [[c.strip() for c in line.strip("|").split("|")] for line in table[2:]]
    kinds = [r[head.index("misses_by_kind")] for r in rows]
    assert all(kinds) and "none" in kinds, table
    assert [r[head.index("misses")] for r in rows if r[head.index("misses_by_kind")] == "none"] == \
        ["0"] * kinds.count("none")
    assert any(re.search(r" \d{1,3}(,\d{3})+$", r[head.index("other_slots_ghosts")]) for r in rows), table


def test_the_accounting_count_is_not_printed_again_beside_the_logged_windows(fixture_db):
    """The logs count the small host's misses in cpoc:0; a window they do not cover printed the
    accounting API's count too (every CPoC's together, cpoc:0's included): 1,950 to a reader
    adding the rows, against 980 missed on chain. It is unknown there, and says why."""
    import csv as csv_

    text = run_cli("poc-overload", "403", "--offline", "--format", "csv", db=fixture_db).stdout
    rows = [r for r in csv_.DictReader(text.splitlines()) if r["participant"] == STORY["small_host"]]
    assert [r["misses_from"] for r in rows][:1] == ["gateway logs"] and len(rows) == 3, rows
    for r in rows[1:]:
        assert r["misses_from"] == "gateway logs" or (
            r["misses"] == "" and r["misses_from"].startswith("unknown: no log of this window")), r
    assert sum(int(r["misses"] or 0) for r in rows) <= STORY["s_chain_missed"], rows
