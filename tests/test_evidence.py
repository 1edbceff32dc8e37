"""Issue 17: answers from the evidence users actually hold.

A host operator of incident 2107 has the chain and a gateway's public accounting API, no
gateway log: ``poc-overload`` must flag its preserved host from the accounting counters of
dispatch phase ``confirmation_poc`` (its misses, the other slots' ghosts). Where sources
disagree on a participant's misses, ``miss_count_discrepancy`` says so. The recordings are
built here: the chain of ``fixtures/poc-overload/chain`` (epoch 403, three CPoC events, the
small preserved host S alone on escrow 134985's 16 slots) and an accounting API written with
``write_recording`` in the shape of #2107's tracker.gonka.pro numbers.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from tests.conftest import FIXTURES, run_cli, run_json, write_recording

FIX = FIXTURES / "poc-overload"
STORY = json.loads((FIX / "story.json").read_text())
S, B, M = STORY["small_host"], STORY["large_host"], STORY["idle_preserved_host"]
MODEL = STORY["model"]
E1, E2 = STORY["escrow_single_preserved"], STORY["escrow_large_host"]
OTHERS = ("gonka168rtjfkszuhcggg4dfyse4yh7xn9zwfglnkns2", "gonka1gvpv7vhk5gyxhmf9u8sc8pw5j8fr6lzalyrmkx",
          "gonka10thh6z0wvq9c05j4z3f9qtpxxedruqn5ae350k", "gonka1tlvg4kjx7ljd5thgd5fkgh39q6lu8cmxupktgg",
          "gonka1y2a9p56kv044327uycmqdexl7zs82fs5ryv5le")     # E1's 15 other slots, as the chain lists them
GHOSTS = 11_114                      # #2107: the other 15 slots' poc_unavailable_host ghosts
FAILED, REFUSED = 684, 53            # #2107: S's 737 misses in dispatch phase confirmation_poc
CHAIN_MISSED = {S: STORY["s_chain_missed"], B: 15, M: 9}     # the chain recording's missed_requests


def _counter(esc: int, slot: int, disp: str, phase: str, n: int, **key) -> dict:
    k = {"slot_id": slot, "disposition": disp, "dispatch_phase": phase, "quarantine_mode": "none", **key}
    return {"escrow_id": str(esc), "key": k, "count": n}


def _miss(esc: int, slot: int, disp: str, phase: str, n: int) -> dict:
    return _counter(esc, slot, disp, phase, n, timeout_kind="refused" if disp == "unfinished_refused" else "execution",
                    timeout_outcome="applied", failure_origin="host_response")


def _record(p: str, counters: list[dict]) -> dict:
    disp, slots = Counter(), {}
    for c in counters:
        disp[c["key"]["disposition"]] += c["count"]
        s = slots.setdefault((c["escrow_id"], c["key"]["slot_id"]), Counter())
        s[c["key"]["disposition"]] += c["count"]
    applied = sum(c["count"] for c in counters if c["key"].get("timeout_outcome") == "applied")
    return {"schema_version": 5, "updated_at": "2026-09-23T13:10:00Z", "epoch_index": 403, "participant": p,
            "model": MODEL, "latest_nonces": [{"escrow_id": e, "latest_nonce": 20_100, "phase": "settled"}
                                              for e in sorted({c["escrow_id"] for c in counters})],
            "assigned_nonces": sum(disp.values()), "dispositions": dict(disp), "timeout_outcomes": {"applied": applied},
            "protocol_misses": applied, "protocol_invalid": 0, "unresolved_challenges": 0, "in_flight": 0,
            "pending_classification": 0, "unclassified": 0, "overclassified": 0, "unknown_reason_total": 0,
            "cross_checks": {"timeout_applied": applied, "host_missed": applied, "recorded_invalid_transitions": 0,
                             "host_invalid": 0, "error_count": 0},
            "counters": counters,
            "slots": [{"escrow_id": e, "slot_id": sl, "assigned_nonces": sum(d.values()), "dispositions": dict(d),
                       "timeout_outcomes": {}, "protocol_misses": 0} for (e, sl), d in sorted(slots.items())]}


def accounting_2107(directory: Path, *, m_cpoc_misses: int = 0, s_normal_misses: int = 0) -> Path:
    """The accounting API a host operator reads on the tracker: S's slot 5 of escrow 134985 with
    its misses in dispatch phase confirmation_poc (and 2 ghosts), the other 15 slots with their
    poc_unavailable_host ghosts; B on escrow 134986 served its CPoC traffic (1 miss there);
    M, preserved, with ``m_cpoc_misses`` on an escrow of its own; ``s_normal_misses`` more
    misses of S outside the CPoC (dispatch phase normal)."""
    others: dict[str, list[dict]] = {p: [] for p in OTHERS}
    left = GHOSTS
    for i, slot in enumerate(s for s in range(16) if s != 5):
        n = GHOSTS // 15 + (1 if i < GHOSTS % 15 else 0)
        left -= n
        others[OTHERS[slot % 5]].append(_counter(E1, slot, "ghost", "confirmation_poc", n,
                                                 no_send_reason="poc_unavailable_host"))
        others[OTHERS[slot % 5]].append(_counter(E1, slot, "finished_used", "normal", 480))
    assert left == 0
    s = [_miss(E1, 5, "unfinished_execution", "confirmation_poc", FAILED),
         _miss(E1, 5, "unfinished_refused", "confirmation_poc", REFUSED),
         _counter(E1, 5, "ghost", "confirmation_poc", 2, no_send_reason="poc_unavailable_host"),
         _counter(E1, 5, "finished_used", "normal", 517)]
    if s_normal_misses:
        s.append(_miss(E1, 5, "unfinished_execution", "normal", s_normal_misses))
    b = [_counter(E2, sl, "finished_used", "confirmation_poc", 60) for sl in (2, 7, 11, 14)] + \
        [_miss(E2, 7, "unfinished_execution", "confirmation_poc", 1)]
    m = [_counter(134_990, 3, "finished_used", "normal", 200)] + \
        ([_miss(134_990, 3, "unfinished_execution", "confirmation_poc", m_cpoc_misses)] if m_cpoc_misses else [])
    records = [_record(p, c) for p, c in sorted({S: s, B: b, M: m, **others}.items())]
    return write_recording(directory, [
        {"path": "/api/v1/epochs", "body": {"schema_version": 5, "epochs": [
            {"schema_version": 5, "epoch_index": 403, "assigned_nonces": sum(r["assigned_nonces"] for r in records)}]}},
        {"path": "/api/v1/epochs/403/participants",
         "body": {"schema_version": 5, "epoch_index": 403, "participants": records}}])


def _report(tmp_path: Path, **kw) -> dict:
    acct = accounting_2107(tmp_path / "accounting", **kw)
    return run_json("poc-overload", "403", "--replay", str(FIX / "chain"), "--replay", str(acct), "-f", "json",
                    db=tmp_path / "a.duckdb")


@pytest.fixture(scope="module")
def operator_dir(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("operator")


@pytest.fixture(scope="module")
def operator(operator_dir) -> dict:
    return _report(operator_dir)


def _codes(rep: dict, code: str) -> list[tuple[str, str]]:
    return [(f["subject"]["id"], f["severity"]) for f in rep["findings"] if f["code"] == code]


def test_chain_and_accounting_without_a_log_flag_the_small_preserved_host(operator):
    assert operator["coverage"]["sources"] and all(w["requests"] is None for w in operator["windows"])
    assert _codes(operator, "poc_overload") == [(S, "error")]          # nobody else
    [f] = [f for f in operator["findings"] if f["code"] == "poc_overload"]
    ev = f["evidence"]
    assert ev["misses"] == FAILED + REFUSED
    assert ev["misses_by_kind"] == {"failed_after_receipt": FAILED, "refused_before_receipt": REFUSED}
    assert ev["other_slots_ghosts"] == {"poc_unavailable_host": GHOSTS}
    assert ev["misses_flip_verdict"] is True and ev["miss_test"]["verdict"] == "zeroed_by_miss_test"
    assert "no times" in ev["basis"] and "every CPoC of the epoch" in ev["basis"]
    assert {"peak in flight", "per-minute load"} <= set(ev["unknown_without_log"])
    assert any("capped replay" in u for u in ev["unknown_without_log"])
    assert f"{FAILED + REFUSED} misses" in f["summary"] and f"{GHOSTS:,} poc_unavailable_host" in f["summary"]
    assert not _codes(operator, "miss_count_discrepancy")           # every gateway count is below the chain's


def test_the_same_evidence_feeds_the_miss_test_finding(operator):
    [z] = [f for f in operator["findings"] if f["code"] == "reward_zeroed_miss_test" and f["subject"]["id"] == S]
    assert z["evidence"]["misses_in_cpoc_windows"] == FAILED + REFUSED
    assert z["evidence"]["misses_in_cpoc_windows_source"] == "accounting"
    assert operator["cpoc_misses"][S]["source"] == "accounting"


def test_the_table_prints_the_accounting_numbers(tmp_path):
    acct = accounting_2107(tmp_path / "accounting")
    r = run_cli("poc-overload", "403", "--replay", str(FIX / "chain"), "--replay", str(acct), "-f", "md", "--wide",
                "--participant", S, db=tmp_path / "a.duckdb")
    assert r.returncode == 0, r.stderr
    row = next(line for line in r.stdout.splitlines() if line.startswith("| cpoc:0") and MODEL in line)
    assert f"| {FAILED + REFUSED} |" in row and "accounting" in row
    assert f"poc_unavailable_host {GHOSTS:,}" in r.stdout                # the per-escrow accounting table


def test_a_large_share_that_does_not_flip_is_a_warning(tmp_path):
    rep = _report(tmp_path, m_cpoc_misses=6)                            # 6 of M's 9 chain misses; M was paid
    assert sorted(_codes(rep, "poc_overload")) == sorted([(S, "error"), (M, "warn")])
    [f] = [f for f in rep["findings"] if f["code"] == "poc_overload" and f["subject"]["id"] == M]
    assert f["evidence"]["misses_flip_verdict"] is False and f["evidence"]["share_of_chain_misses"] == 0.6667


def test_miss_count_discrepancy_both_ways(tmp_path):
    # a gateway count below the chain's is normal (operator fixture: no finding); above it is a discrepancy
    rep = _report(tmp_path, s_normal_misses=400)                       # S: 737 + 400 = 1137 > the chain's 980
    [f] = [f for f in rep["findings"] if f["code"] == "miss_count_discrepancy"]
    assert f["subject"]["id"] == S and f["severity"] == "warn"
    assert f["evidence"]["count"] == FAILED + REFUSED + 400
    assert f["evidence"]["chain_missed_requests"] == CHAIN_MISSED[S]
    assert "accounting API of http://127.0.0.1" in f["evidence"]["count_source"]
    assert "1137" in f["summary"] and "980" in f["summary"]


def test_targets_say_the_accounting_gives_no_demand(operator, operator_dir):
    d = run_json("targets", "403", "--offline", "-f", "json", db=operator_dir / "a.duckdb")
    [row] = [r for r in d["preserved_targets"] if r["model_id"] == MODEL]
    assert row["peak_inflight"] is None and row["demand_weight"] is None            # no demand: unknown
    assert row["cpoc_misses_accounting"] == FAILED + REFUSED + 1                   # S's and B's
    assert "no in-flight demand" in row["demand_evidence"]
    assert any(MODEL in u and "no in-flight demand" in u for u in d["coverage"]["unknown"])


def test_logs_placing_more_misses_in_a_window_than_the_chain_has(tmp_path):
    """The demo log with the chain's old count for its victim (95 for the epoch, where the log
    places 324 misses in cpoc:0): a discrepancy, and the headline does not quote 324 as settled.
    The bundled demo itself agrees with its chain (345 missed): no discrepancy there."""
    victim = json.loads((FIXTURES / "chain" / "epoch-403.story.json").read_text())["victim"]
    entries = []
    for f in sorted((FIXTURES / "chain" / "epoch-403").glob("*.json")):
        e = json.loads(f.read_text())
        if e["path"].endswith("/epoch_performance_summary/403"):
            body = json.loads(e["body"])
            for r in body["epochPerformanceSummary"]:
                if r["participant_id"] == victim:
                    r.update(inference_count="310", missed_requests="95")
            e["body"] = json.dumps(body)
        entries.append(e)
    chain = write_recording(tmp_path / "chain", entries)
    log = FIXTURES / "demo-epoch-403" / "gateway.log.gz"
    d = run_json("poc-overload", "403", "--replay", str(chain), "--gateway-log", str(log), "-f", "json",
                 db=tmp_path / "a.duckdb")
    [f] = [f for f in d["findings"] if f["code"] == "miss_count_discrepancy"]
    assert f["subject"]["id"] == victim and f["evidence"]["count"] == 324
    assert f["evidence"]["chain_missed_requests"] == 95 and "gateway logs" in f["evidence"]["count_source"]
    [po] = [f for f in d["findings"] if f["code"] == "poc_overload"]
    assert "took 324 misses" not in po["summary"] and "more than the chain's 95" in po["summary"]
    demo = run_json("poc-overload", "403", "--replay", str(FIXTURES / "chain" / "epoch-403"), "--gateway-log",
                    str(log), "-f", "json", db=tmp_path / "demo.duckdb")
    assert not [f for f in demo["findings"] if f["code"] == "miss_count_discrepancy"]
    assert any("took 324 misses in the window" in f["summary"] for f in demo["findings"] if f["code"] == "poc_overload")


# -- remints: a mint peak against the baseline the logs show (item 6) -------------------------
def _remints_build():
    import importlib.util
    import sys

    spec = importlib.util.spec_from_file_location("remints_build", FIXTURES / "remints" / "build.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules["remints_build"] = mod          # dataclasses look their module up
    spec.loader.exec_module(mod)
    return mod


RB = _remints_build()
RDS, RMM = "deepseek-ai/DeepSeek-V4-Flash-0731", "MiniMaxAI/MiniMax-M2.7"


def epoch_396_peak(directory: Path, *, start_models: tuple[str, ...] = (RDS, RMM), temp_retired: bool = True) -> Path:
    """#1799's epoch as the reporter's logs show it: no phase-gate line of the epoch's start; the
    rotator's epoch-start pass at 06:31 mints 3 regular escrows per model (and retires the temp
    bridge escrows of epoch 395, when ``temp_retired``); then 29 MiniMax regular escrows are
    minted between 08:45:09Z and 10:06:13Z (81 minutes) with no deactivation logged."""
    sc = RB.Scenario()
    f = "gateway.log"
    for e, model in ((80311, RDS), (80312, RMM)):
        sc.escrows[e] = RB.Escrow(e, model, 200_000_000, epoch=395, settled=True)
    t, eid = RB.at(6, 31, 10), 80401
    for model in start_models:
        for _ in range(3):
            sc.mint(f, t, RB.Escrow(eid, model, 500_000_000))
            t, eid = t + RB.timedelta(seconds=5), eid + 1
    if temp_retired:
        for i, old in enumerate((80311, 80312)):
            sc.add(f, RB.at(6, 31, 45 + 5 * i), f'escrow_rotation_settling escrow={old} reason="escrow rotation temp retired"')
    start, end = RB.at(8, 45, 9), RB.at(10, 6, 13)
    for k in range(29):
        sc.mint(f, start + (end - start) * k / 28, RB.Escrow(80591 + k, RMM, 500_000_000))
    RB.write(directory, sc)
    return directory


def _remints(d: Path, *extra: str) -> dict:
    """remints of epoch 396 on the scenario in ``d``: collected from it, or from the store alone
    when ``extra`` has --offline (which takes no source flags)."""
    sources = [] if "--offline" in extra else ["--replay", str(d / "chain"), "--replay", str(d / "accounting"),
                                               "--gateway-log", str(d / "gateway.log")]
    return run_json("remints", "396", *sources, "-f", "json", *extra, db=d / "r.duckdb")


def test_a_mint_peak_is_flagged_against_the_epoch_start_baseline(tmp_path):
    rep = _remints(epoch_396_peak(tmp_path / "fx"))
    mm = {m["model"]: m for m in rep["mints"]}[RMM]
    assert mm["rotation_target"] == 3 and mm["rotation_target_source"].startswith("inferred")
    assert "temp bridge" in mm["rotation_target_source"] and rep["peaks_not_assessed"] == []
    peaks = [f for f in rep["findings"] if f["code"] == "mint_peak"]
    assert peaks and all(f["subject"]["id"] == RMM for f in peaks)
    assert sum(f["evidence"]["rest"] for f in peaks) == 29                      # every mint of the 81 minutes
    assert all(f["evidence"]["rotation_baseline"] == 3 and "inferred" in f["evidence"]["baseline_basis"]
               for f in peaks)
    assert "baseline 3" in peaks[0]["summary"]
    # --rotation-target overrides the inferred baseline
    given = _remints(tmp_path / "fx", "--offline", "--rotation-target", "2")
    mm = {m["model"]: m for m in given["mints"]}[RMM]
    assert mm["rotation_target"] == 2 and mm["rotation_target_source"].startswith("given")


def test_a_pass_of_several_models_is_a_baseline_without_temp_retirements(tmp_path):
    rep = _remints(epoch_396_peak(tmp_path / "fx", temp_retired=False))
    mm = {m["model"]: m for m in rep["mints"]}[RMM]
    assert mm["rotation_target"] == 3 and "2 models together" in mm["rotation_target_source"]
    assert [f["subject"]["id"] for f in rep["findings"] if f["code"] == "mint_peak"]


def test_not_assessed_only_without_any_baseline(tmp_path):
    # one model's lone mints, no temp retirement, no epoch start: a reconciliation cannot be told
    # from the rotation; unknown, not none
    rep = _remints(epoch_396_peak(tmp_path / "fx", start_models=(RMM,), temp_retired=False))
    mm = {m["model"]: m for m in rep["mints"]}[RMM]
    assert mm["rotation_target"] is None and mm["rotation_target_source"].startswith("unknown")
    assert rep["peaks_not_assessed"] == [RMM] and not [f for f in rep["findings"] if f["code"] == "mint_peak"]


def test_the_epoch_report_carries_the_accounting_evidence(operator, operator_dir):
    d = run_json("epoch", "403", "--offline", "-f", "json", db=operator_dir / "a.duckdb")
    assert [(f["subject"]["id"], f["severity"]) for f in d["findings"] if f["code"] == "poc_overload"] == [(S, "error")]
    [z] = [f for f in d["findings"] if f["code"] == "reward_zeroed_miss_test" and f["subject"]["id"] == S]
    assert z["evidence"]["misses_in_cpoc_windows"] == FAILED + REFUSED
    assert z["evidence"]["misses_in_cpoc_windows_source"] == "accounting"
    assert "no times" in z["evidence"]["misses_in_cpoc_windows_is"]
