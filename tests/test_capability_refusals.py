"""A participant's capability refusals (accounting schema 6) next to its misses in the evidence of
``misstest`` and ``poc-overload`` (issue 34: a refusal before any receipt is a miss, #2107), through
the CLI on the demo's chain and log with the schema-6 accounting fixture over loopback; and the
unknown (not zero) case of a schema-5 accounting."""

from __future__ import annotations

import json

import pytest

from auditor.analyses import capability

from conftest import FIXTURES, run_cli

B = "gonka16dgkvx7mh609ntkzknckwaskgq9lcdp86j0skk"     # zeroed by the miss test in the demo; refused 3
OTHER = "gonka1ajmhqgvkf76hss5xe35kcnntqqhs7r8jz8s939"  # zeroed too; no accounting record


def _collect(tmp_path_factory, accounting: str):
    db = tmp_path_factory.mktemp(f"cap-{accounting}") / "auditor.duckdb"
    r = run_cli("collect", "--epoch", "403", "--replay", str(FIXTURES / "chain" / "epoch-403"),
                "--replay", str(FIXTURES / "accounting" / accounting),
                "--gateway-log", str(FIXTURES / "demo-epoch-403" / "gateway.log.gz"), db=db)
    assert r.returncode == 0, r.stderr
    return db


@pytest.fixture(scope="module")
def v6(tmp_path_factory):
    return _collect(tmp_path_factory, "v6")


@pytest.fixture(scope="module")
def v5(tmp_path_factory):
    return _collect(tmp_path_factory, "v5")


def _findings(db, *argv) -> list[dict]:
    r = run_cli(*argv, "--offline", "--format", "json", db=db)
    assert r.returncode in (0, 1), r.stderr
    return json.loads(r.stdout)["findings"]


def _of(findings, code, participant) -> dict:
    hits = [f for f in findings if f["code"] == code and f["subject"]["id"] == participant]
    assert len(hits) == 1, [(f["code"], f["subject"]) for f in findings]
    return hits[0]["evidence"]


def test_misstest_shows_the_refusals_next_to_the_misses(v6):
    ev = _of(_findings(v6, "misstest", "403"), "reward_zeroed_miss_test", B)
    cap = ev["capability_refusals"]
    assert (ev["missed"], cap["refusals"], cap["version_refusals"], cap["tool_refusals"]) == (345, 3, 3, 0)
    assert cap["models"] == [{"model": "MiniMaxAI/MiniMax-M2.7", "protocol_version_unsupported": True,
                              "tool_choice_unsupported": False, "context_limit": None, "version_refusals": 3,
                              "tool_refusals": 0, "context_refusals": 0}]
    assert "schema 6" in cap["basis"] and "#2107" in cap["basis"]
    # a participant the accounting API served no record of: unknown, never 0
    other = _of(_findings(v6, "misstest", "403"), "reward_zeroed_miss_test", OTHER)["capability_refusals"]
    assert other["refusals"] is None and "no accounting record" in other["basis"]


def test_poc_overload_shows_them_in_each_finding_of_the_participant(v6):
    findings = _findings(v6, "poc-overload", "403")
    for code in ("poc_overload", "reward_zeroed_miss_test"):
        cap = _of(findings, code, B)["capability_refusals"]
        assert (cap["refusals"], cap["version_refusals"]) == (3, 3), code


def test_a_schema_5_accounting_leaves_the_refusals_unknown(v5):
    cap = _of(_findings(v5, "misstest", "403"), "reward_zeroed_miss_test", B)["capability_refusals"]
    assert cap["refusals"] is None and cap["models"] == []
    assert "schema 5" in cap["basis"]


def test_summarise_counts_omitted_fields_as_the_gateway_does():
    row = {"participant": "p", "schema_version": 6, "protocol_version_unsupported": None,
           "tool_choice_unsupported": True, "context_limit": None, "version_refusals": None,
           "tool_refusals": 4, "context_refusals": None}
    out = capability.summarise([{**row, "model": "m1", "block_sent": True},
                                {**row, "model": "m2", "block_sent": False},
                                {**row, "model": "m3", "schema_version": 5, "block_sent": False}], 403)["p"]
    assert (out["refusals"], out["tool_refusals"], out["version_refusals"]) == (4, 4, 0)
    assert [m["model"] for m in out["models"]] == ["m1"]           # m2: a schema-6 record without a block
    assert "not reported for m3" in out["basis"]
