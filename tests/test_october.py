"""`auditor remints N` on today's gateway (issue 34): the October fixture (fixtures/october,
one epoch of devshardctl v4.1.2+ lines, the chain and a schema-6 accounting answer over
loopback), through the CLI, for every "Done when" point, and the gateway generation the
coverage says the lines point to."""

from __future__ import annotations

import importlib.util
import json
import shutil
import sys
from pathlib import Path

import pytest

from conftest import FIXTURES, run_cli, run_json

HERE = FIXTURES / "october"
STORY = json.loads((HERE / "story.json").read_text())
DS, MM = "deepseek-ai/DeepSeek-V4-Flash-0731", "MiniMaxAI/MiniMax-M2.7"

_spec = importlib.util.spec_from_file_location("october_build", HERE / "build.py")
build = importlib.util.module_from_spec(_spec)
sys.modules["october_build"] = build
_spec.loader.exec_module(build)


def sources(d: Path) -> list[str]:
    return ["--replay", str(d / "chain"), "--replay", str(d / "accounting"), "--gateway-log", str(d / "gateway.log")]


def remints(db: Path, d: Path = HERE) -> dict:
    return run_json("remints", "417", *sources(d), "--format", "json", db=db)


@pytest.fixture(scope="module")
def store(tmp_path_factory) -> tuple[Path, dict]:
    db = tmp_path_factory.mktemp("oct") / "a.duckdb"
    return db, remints(db)


@pytest.fixture(scope="module")
def report(store) -> dict:
    return store[1]


def deactivations(rep: dict) -> dict[int, dict]:
    return {d["escrow"]: d for d in rep["deactivations"]}


def holds(rep: dict) -> dict[int, list[dict]]:
    out: dict[int, list[dict]] = {}
    for h in rep["holds"]:
        out.setdefault(h["escrow"], []).append(h)
    return out


def causes(rep: dict) -> dict[int, str]:
    return {e["escrow"]: e["cause"] for m in rep["mints"] for e in m["events"]}


def test_the_fixture_is_what_the_builder_writes(tmp_path):
    d = tmp_path / "fx"
    build.write(d, build.scenario())
    names = ["gateway.log", "story.json", *(str(f.relative_to(HERE)) for f in sorted(HERE.glob("*/*.json")))]
    assert sorted(str(f.relative_to(d)) for f in d.glob("*/*.json")) == names[2:]
    for name in names:
        assert (d / name).read_text() == (HERE / name).read_text(), f"{name}: run fixtures/october/build.py"


def test_held_and_released_escrows_are_no_deactivation(report):
    for eid in STORY["not_deactivated"]:
        assert eid not in deactivations(report), eid
        (h,) = holds(report)[eid]
        assert h["outcome"] == "released" and h["release_reason"] == "balance_recovered" and h["ended_at"]
    h = holds(report)[41701][0]
    assert (h["reason"], h["balance"], h["recoverable_in_flight"], h["release_balance"]) == \
        ("balance_exhausted", 1_800_000, 2_400_000, STORY["release_balance"])
    assert h["started_at"] == "2026-10-08T05:56:21.629000Z" and h["held_for_s"] == 90.0
    assert h["request"]["reservation"] == (300_000 + 3072) * 10


def test_a_restored_hold_is_the_same_hold_started_at_on_hold_since(report):
    (h,) = holds(report)[41703]
    assert h["restored"] and h["started_at"] == "2026-10-08T06:26:21.629000Z" and h["held_for_s"] == 60.2


def test_unrecoverable_hold_after_runner_prepare_failed_is_legitimate_on_the_logged_balances(report):
    d = deactivations(report)[41702]
    assert (d["classification"], d["trigger"], d["basis"]) == ("legitimate", "hold", "logged balances")
    assert d["balance_estimate"] == 850_000 and "escrow_hold_unrecoverable" in d["balance_source"]
    assert d["replacement_escrow"] == 41711 and d["evidence"]["hold"]["request"]["request"].startswith("req-")
    (h,) = holds(report)[41702]
    assert (h["outcome"], h["held_for_s"], h["replacement_escrow"]) == ("unrecoverable", 60.2, 41711)
    assert h["at_end"]["overdue_pending_cost"] == 1_500_000 and h["at_end"]["latest_pending_deadline"] is None
    assert causes(report)[41711] == "replacement_legitimate"


def test_a_mid_day_collect_ending_at_an_exhaustion_counts_no_deactivation(tmp_path):
    """A cron's collect whose log ends at 41703's 'gateway_replacing_exhausted_escrow' (the hold
    that answers it comes on the next line): it was a deactivation of unknown class with a
    'balance at least 49,036,160'; the gateway held it and it never ended. Once the next lines
    are read, the hold is there and still no deactivation."""
    d = tmp_path / "fx"
    shutil.copytree(HERE, d)
    whole = (d / "gateway.log").read_text(encoding="utf-8").splitlines(keepends=True)
    cut = next(i for i, ln in enumerate(whole) if "gateway_replacing_exhausted_escrow" in ln and "41703" in ln) + 1
    (d / "gateway.log").write_text("".join(whole[:cut]), encoding="utf-8")
    rep = remints(tmp_path / "a.duckdb", d)
    assert 41703 not in deactivations(rep)
    assert any("ran out on a request just before the logs read end (41703)" in u for u in rep["coverage"]["unknown"])
    (d / "gateway.log").write_text("".join(whole), encoding="utf-8")          # the day goes on
    later = remints(tmp_path / "a.duckdb", d)
    assert 41703 not in deactivations(later) and holds(later)[41703]
    assert not any("just before the logs read end" in u for u in later["coverage"]["unknown"])


# a request too large for 41713 at 10:30, answered by a replacement at once (no hold): on a gateway
# that holds escrows, the sign of a balance below the release balance (gateway-logs.md 14.2)
REPLACED_AT_ONCE = """\
2026-10-08T10:30:00.000000000Z 2026/10/08 10:30:00 request=req-1791455400000000000-2000099 stage=runner_started escrow=41713 input_tokens=1000000 model=MiniMaxAI/MiniMax-M2.7
2026-10-08T10:30:00.010000000Z 2026/10/08 10:30:00 request=req-1791455400000000000-2000099 stage=runner_prepare_failed escrow=41713 error="prepare: local apply: mandatory start inference: insufficient escrow balance"
2026-10-08T10:30:00.020000000Z 2026/10/08 10:30:00 escrow_balance_exhausted escrow=41713
2026-10-08T10:30:00.030000000Z 2026/10/08 10:30:00 gateway_replacing_exhausted_escrow escrow=41713
2026-10-08T10:30:00.040000000Z 2026/10/08 10:30:00 escrow_depletion_deactivated escrow=41713 reason="balance_exhausted" deactivated_in_store=true settlement_due=true
2026-10-08T10:30:04.000000000Z 2026/10/08 10:30:04 escrow_rotation_created role=regular epoch=417 model="MiniMaxAI/MiniMax-M2.7" escrow=41714 tx_hash=777777777777777777777777777777777777777777777777777777770000A2F9
2026-10-08T10:30:04.010000000Z 2026/10/08 10:30:04 escrow_depletion_replacement_created old_escrow=41713 new_escrow=41714 model="MiniMaxAI/MiniMax-M2.7" reason="balance_exhausted" tx_hash=777777777777777777777777777777777777777777777777777777770000A2F9
2026-10-08T10:35:00.000000000Z 2026/10/08 10:35:00 escrow_balance_low escrow=41714 balance=90000000 threshold=1000000 — holding or replacing
"""


def test_a_replacement_without_a_hold_on_a_gateway_that_holds_is_no_1799_remint(tmp_path):
    """A gateway that holds escrows replaces one at once only below the model's release balance
    (2,310,720 here, logged by its holds): 41713's replacement was called a spurious #1799
    remint on a 'balance at least 9,277,120' from its deposit less the logged requests, a bound
    the gateway's own logged balances contradict on this day."""
    d = tmp_path / "fx"
    shutil.copytree(HERE, d)
    with open(d / "gateway.log", "a", encoding="utf-8") as f:
        f.write(REPLACED_AT_ONCE)
    rep = remints(tmp_path / "a.duckdb", d)
    dd = deactivations(rep)[41713]
    assert dd["classification"] != "spurious" and not any(
        f["code"] == "spurious_remint" for f in rep["findings"]), dd
    assert dd["classification"] == "unknown"          # the logged bound is above the release balance
    assert any("release balance 2,310,720, yet the logged requests leave at least" in m for m in dd["missing"]), dd


def test_an_expired_hold_of_older_builds_is_legitimate_too(tmp_path):
    d = tmp_path / "fx"
    build.write(d, build.scenario(expired=True))
    rep = remints(tmp_path / "e.duckdb", d)
    dd = deactivations(rep)[41702]
    assert (dd["classification"], dd["trigger"], dd["basis"]) == ("legitimate", "hold", "logged balances")
    assert dd["replacement_reason"] == "hold_expired"
    (h,) = holds(rep)[41702]
    assert h["outcome"] == "expired" and abs(h["held_for_s"] - 10.002118) < 1e-9


def test_a_hold_whose_replacement_was_skipped_is_legitimate_and_its_stand_in_mint_explained(report):
    d = deactivations(report)[41704]
    assert (d["classification"], d["trigger"], d["replacement_escrow"]) == ("legitimate", "hold", None)
    assert "target_already_met" in d["summary"]
    (h,) = holds(report)[41704]
    assert h["held_for_s"] == 3723.0 and h["reason"] == "low_balance"
    assert causes(report)[41713] == "replacement_skipped"


def test_retention_retirement_is_legitimate_and_no_remint(report):
    d = deactivations(report)[STORY["retention"]]
    assert (d["classification"], d["trigger"], d["replacement_escrow"]) == ("legitimate", "retention", None)
    assert d["evidence"]["retention"]["cutoff"] == 416 and d["evidence"]["retention"]["storage_pruned_at"]
    assert STORY["retention"] not in [e["replaces"] for m in report["mints"] for e in m["events"]]
    assert not [c for c in causes(report).values() if c.startswith("reconciliation")]


def test_the_top_up_is_a_hold_top_up_mint_and_nothing_is_unexplained(report):
    got = causes(report)
    for eid, cause in STORY["mint_causes"].items():
        assert got[int(eid)] == cause
    assert not [c for c in got.values() if "unexplained" in c]
    assert report["peaks"] == []


def test_the_refused_request_is_in_unaffordable_requests(report):
    want = STORY["unaffordable_request"]
    (u,) = report["unaffordable_requests"]
    assert (u["request"], u["model"], u["escrows"], u["escrows_refused"], u["retry_after_seconds"]) == \
        (want["request"], want["model"], want["escrows"], 2, want["retry_after_seconds"])
    assert u["at"] == "2026-10-08T10:06:21.603000Z" and u["reservation"] is None and u["input_bytes"] is None
    assert u["input_tokens_estimate"] == 1_200_000
    assert any(n.startswith(f"1 request(s) no escrow could fund ({MM} 1)") for n in report["notes"])


def test_no_spurious_remint_and_the_healthy_hold_is_a_spurious_hold(report):
    codes = [(f["code"], f["subject"]["id"]) for f in report["findings"]]
    assert "spurious_remint" not in [c for c, _ in codes]
    assert [(c, int(i)) for c, i in codes if c == "spurious_hold"] == [("spurious_hold", e)
                                                                        for e in STORY["spurious_hold"]]
    f = next(f for f in report["findings"] if f["code"] == "spurious_hold")
    ev = f["evidence"]
    assert (ev["balance"], ev["release_balance"], ev["held_for_s"]) == (5_000_000, STORY["release_balance"], 60.2)
    assert ev["request"]["input_bytes"] == 600_000 and ev["request"]["reservation"] == (600_000 + 3072) * 10
    assert "5,000,000" in f["summary"] and "60.2 s" in f["summary"]
    assert f["action"].startswith("attach `auditor remints 417")
    # its numbers as the summary writes them (it said "a balance of 5000000 >= ... 2310720"), the
    # escrow and epoch as ids
    assert f"escrow {f['subject']['id']} was held with a balance of 5,000,000 >= its release balance " \
        f"{STORY['release_balance']:,}" in f["action"]
    # 41701's hold began below its release balance: no finding
    assert ("spurious_hold", "41701") not in codes


def test_a_hold_started_below_its_release_balance_is_no_spurious_hold(tmp_path):
    d = tmp_path / "fx"
    build.write(d, build.scenario(spurious_balance=2_000_000))
    rep = remints(tmp_path / "b.duckdb", d)
    assert holds(rep)[41703][0]["balance"] == 2_000_000
    assert "spurious_hold" not in [f["code"] for f in rep["findings"]]


def test_the_remints_text_shows_the_holds_and_the_refused_requests(store):
    db, _ = store
    r = run_cli("remints", "417", "--offline", db=db)
    assert r.returncode == 0, r.stderr
    assert "Escrow holds" in r.stdout and "Requests no escrow could fund" in r.stdout


def test_auditor_sql_reads_the_new_line_tables(store):
    db, _ = store
    got = run_json("sql", "SELECT event, count(*) AS n FROM log_escrow_holds GROUP BY event ORDER BY event",
                   "--format", "json", db=db)
    assert {r["event"]: r["n"] for r in got["rows"]}["escrow_hold_started"] == 4
    got = run_json("sql", "SELECT count(*) AS n FROM log_escrow_routing WHERE step IS NULL", "--format", "json", db=db)
    assert got["rows"] == [{"n": 4}]


def test_coverage_says_the_lines_point_to_the_hold_era_gateway(store):
    db, _ = store
    rep = run_json("epoch", "417", "--offline", "--format", "json", db=db)
    gl = rep["coverage"]["gateway_log"]
    assert gl["generation"] == "hold_era"
    assert gl["generation_shapes"]["hold_era"]["escrow_hold_started"] == 4
    assert "October 2026" in gl["generation_basis"]


def test_coverage_says_the_september_fixture_points_to_the_september_gateway(tmp_path):
    rem = FIXTURES / "remints"
    db = tmp_path / "s.duckdb"
    rep = run_json("epoch", "396", "--replay", str(rem / "chain"), "--replay", str(rem / "accounting"),
                   "--gateway-log", str(rem / "gateway.log.1"), "--gateway-log", str(rem / "gateway.log"),
                   "--format", "json", db=db)
    gl = rep["coverage"]["gateway_log"]
    assert gl["generation"] == "september"
    assert gl["generation_shapes"] == {"september": {"escrow_balance_low (text names no hold)": 1}}


def test_a_refused_request_logged_without_a_time_counts_in_no_epoch(tmp_path):
    """A gateway_all_escrows_refused_funding line with no time (a bare line) was listed in every
    epoch's unaffordable_requests, so each epoch's count held it; now no epoch does, and a note
    says how many were left out and why."""
    d = tmp_path / "oct"
    shutil.copytree(HERE, d)
    with (d / "gateway.log").open("a", encoding="utf-8") as f:
        f.write('request=req-untimed-1 stage=gateway_all_escrows_refused_funding model=MiniMaxAI/MiniMax-M2.7 '
                'escrows_refused=2 retry_after_seconds=10 error="no escrow can fund this request (2 refused)"\n')
    rep = remints(tmp_path / "a.duckdb", d)
    assert "req-untimed-1" not in {r["request"] for r in rep["unaffordable_requests"]}
    assert len(rep["unaffordable_requests"]) == len(remints(tmp_path / "b.duckdb")["unaffordable_requests"])
    assert any("1 request(s) no escrow could fund were logged without a time" in n for n in rep["notes"])
