"""The accounting collector: decoders per schema version (unit), and collection through
the real CLI against a loopback replay server (end to end)."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
from pydantic import ValidationError

from auditor.sources import accounting as acct
from auditor.sources.replay import ReplayServer

from conftest import FIXTURES, one, q, run_cli, write_recording

V5 = FIXTURES / "accounting" / "v5"
V6 = FIXTURES / "accounting" / "v6"
V2 = FIXTURES / "accounting" / "v2"
A = "gonka1kx9mca3xm8u8ypzfuhmxey66u0ufxhs7nm6wc5"
B = "gonka16dgkvx7mh609ntkzknckwaskgq9lcdp86j0skk"
GLM = "zai-org/GLM-5.3-Flash"
MM = "MiniMaxAI/MiniMax-M2.7"
TABLES = acct.TABLES


PROV = {"source_url": "http://x/api/v1/epochs/403/participants", "height": None, "fetched_at": None}


def body(folder: Path, path: str) -> dict:
    for f in sorted(folder.glob("*.json")):
        entry = json.loads(f.read_text())
        if entry["path"] == path:
            return json.loads(entry["body"])
    raise KeyError(path)


def counts(db: Path) -> dict[str, int]:
    return {t: one(db, f"SELECT count(*) FROM {t}") for t in TABLES}


def rows_of(data: dict, epoch: int = 403) -> dict[str, list[dict]]:
    return acct.participant_rows(epoch, acct.decode_participants(data), PROV)


def by(rows: list[dict], **match) -> dict:
    hits = [r for r in rows if all(r[k] == v for k, v in match.items())]
    assert len(hits) == 1, hits
    return hits[0]


# -- decoders, one per schema version -------------------------------------------------------
def test_decode_v5_record_from_the_spec_example():
    data = body(V5, "/api/v1/epochs/403/participants")
    resp = acct.decode_participants(data)
    a = resp.participants[0]
    assert (a.schema_version, a.participant, a.model, a.assigned_nonces) == (5, A, GLM, 700)
    assert a.updated_at is not None and a.updated_at.microsecond == 412337
    assert [f.code for f in a.findings] == ["execution_timeouts", "chain_recorded_misses", "slow_receipts",
                                            "failure_origins"]
    rows = rows_of(data)
    p = by(rows["acct_participants"], participant=A)
    assert (p["ghost"], p["finished_used"], p["unclassified"], p["timeout_applied"]) == (61, 517, 3, 12)
    assert p["timeout_diff_send_failed"] == 0          # key not sent, map sent: 0
    assert (p["required_validations"], p["timeout_pending"], p["n_findings"]) == (0, 0, 4)
    assert p["recording_errors"] is None and p["writer_errors"] is None   # gone since v4
    # omitted v5 flags are false, omitted strings are '', delivery_reason '' (v5)
    c = rows["acct_counters"][0]
    assert (c["slow_receipt"], c["clock_drifted"], c["delivery_reason"], c["failure_origin"]) == (False, False, "", "")
    assert rows["acct_counters"][1]["slow_receipt"] is True
    assert sum(c["count"] for c in rows["acct_counters"] if c["participant"] == A) == 700 - 3
    s9 = by(rows["acct_slots"], participant=A, slot_id=9)
    assert (s9["finished_usage_unknown"], s9["timeout_insufficient_votes"], s9["cross_check_error"]) == (0, 2, 0)
    assert json.loads(s9["delivery_reasons"]) == {}    # v5 omitempty map absent: empty, not unknown
    sb = by(rows["acct_slots"], participant=B)
    assert json.loads(sb["delivery_reasons"]) == {"client_gone_before_delivery": 1}
    f = by(rows["acct_findings"], participant=B, code="chain_recorded_misses")
    assert (f["severity"], f["part"], f["whole"]) == ("critical", 5, 100)


def test_decode_v2_record_leaves_unreported_fields_null():
    rows = rows_of(body(V2, "/api/v1/epochs/403/participants"))
    p = by(rows["acct_participants"], participant=A)
    assert p["dispositions"] and (p["ghost"], p["finished_used"], p["unfinished_refused"]) == (3, 31, 0)
    assert (p["timeout_applied"], p["recording_errors"], p["writer_errors"]) == (0, 0, 0)
    for absent in ("timeout_pending", "required_validations", "completed_validations", "n_findings"):
        assert p[absent] is None, absent
    assert by(rows["acct_escrow_nonces"], participant=A)["phase"] is None
    c = rows["acct_counters"][0]
    assert (c["slow_receipt"], c["logprobs_decoded"], c["delivery_reason"]) == (None, None, None)
    s = by(rows["acct_slots"], slot_id=11)
    assert (s["delivery_reasons"], s["cross_check_error"], s["timeout_pending"]) == (None, None, None)
    # B: Go nil maps and lists sent as null -> empty: zeros and no child rows
    b = by(rows["acct_participants"], participant=B)
    assert (b["ghost"], b["timeout_applied"], b["n_counters"], b["n_slots"], b["n_escrows"]) == (0, 0, 0, 0, 0)
    assert json.loads(b["dispositions"]) == {}


V3_RECORD = {
    "schema_version": 3, "updated_at": "2026-08-01T10:00:00.5Z", "epoch_index": 403, "participant": A, "model": GLM,
    "latest_nonces": [{"escrow_id": "70001", "latest_nonce": 64, "phase": "finalized"}], "assigned_nonces": 8,
    "dispositions": {"finished_used": 5, "unfinished_refused": 1}, "timeout_outcomes": {"skipped": 1},
    "protocol_misses": 0, "protocol_invalid": 0, "unresolved_challenges": 0, "in_flight": 0, "timeout_pending": 2,
    "pending_classification": 0, "unclassified": 0, "overclassified": 0, "unknown_reason_total": 1,
    "recording_errors": 0, "writer_errors": 2,
    "cross_checks": {"timeout_applied": 0, "host_missed": 0, "recorded_invalid_transitions": 0, "host_invalid": 0,
                     "error_count": 0},
    "counters": [{"escrow_id": "70001", "key": {"slot_id": 1, "disposition": "unfinished_refused",
                  "dispatch_phase": "poc", "timeout_evaluation_phase": "poc", "quarantine_mode": "none",
                  "failure_origin": "host_response", "detail_reason": "no_receipt", "timeout_kind": "refused",
                  "timeout_outcome": "skipped", "timeout_reason": "unknown"}, "count": 1}],
    "slots": [{"escrow_id": "70001", "slot_id": 1, "assigned_nonces": 8,
               "dispositions": {"finished_used": 5, "unfinished_refused": 1}, "timeout_outcomes": {"skipped": 1},
               "protocol_misses": 0, "protocol_invalid": 0, "unresolved_challenges": 0,
               "recorded_invalid_transitions": 0, "in_flight": 0, "timeout_pending": 2,
               "pending_classification": 0, "unclassified": 0, "overclassified": 0, "unknown_reason_total": 1}],
}


def v4_record() -> dict:
    r = copy.deepcopy(V3_RECORD)
    r["schema_version"] = 4
    del r["recording_errors"], r["writer_errors"]
    r["slots"][0]["cross_check_error"] = 1
    r["counters"][0]["key"].update(timeout_outcome="insufficient_votes", timeout_reason="unknown")
    r["timeout_outcomes"] = r["slots"][0]["timeout_outcomes"] = {"insufficient_votes": 1}
    return r


def test_decode_v3_record():
    rows = rows_of({"schema_version": 3, "epoch_index": 403, "participants": [V3_RECORD]})
    p = rows["acct_participants"][0]
    assert (p["schema_version"], p["timeout_pending"], p["writer_errors"], p["timeout_skipped"]) == (3, 2, 2, 1)
    assert p["required_validations"] is None and p["n_findings"] is None
    assert rows["acct_escrow_nonces"][0]["phase"] == "finalized"
    s = rows["acct_slots"][0]
    assert (s["timeout_pending"], s["cross_check_error"], s["delivery_reasons"]) == (2, None, None)
    c = rows["acct_counters"][0]
    assert (c["dispatch_phase"], c["timeout_reason"], c["slow_chunk"]) == ("poc", "unknown", None)


def test_decode_v4_record():
    rows = rows_of({"schema_version": 4, "epoch_index": 403, "participants": [v4_record()]})
    p = rows["acct_participants"][0]
    assert (p["schema_version"], p["recording_errors"], p["writer_errors"]) == (4, None, None)
    assert (p["timeout_insufficient_votes"], p["timeout_skipped"]) == (1, 0)
    assert rows["acct_slots"][0]["cross_check_error"] == 1
    c = rows["acct_counters"][0]
    assert (c["timeout_outcome"], c["timeout_reason"], c["clock_drifted"], c["delivery_reason"]) == \
        ("insufficient_votes", "unknown", None, None)


def test_decode_v6_record_capability_counts_and_new_reasons():
    rows = rows_of(body(V6, "/api/v1/epochs/403/participants"))
    caps = {(r["participant"], r["model"]): r for r in rows["acct_capabilities"]}
    assert set(caps) == {(A, GLM), (B, MM)}              # A on MiniMax sent no block: no row
    a = caps[(A, GLM)]
    assert (a["tool_choice_unsupported"], a["context_limit"], a["tool_refusals"], a["context_refusals"]) == \
        (True, 131072, 2, 1)
    # omitted from the block (omitempty: false / 0 to the gateway): kept NULL, as sent
    assert (a["protocol_version_unsupported"], a["version_refusals"], a["schema_version"]) == (None, None, 6)
    b = caps[(B, MM)]
    assert (b["protocol_version_unsupported"], b["version_refusals"], b["tool_choice_unsupported"],
            b["context_limit"]) == (True, 3, None, None)
    p = by(rows["acct_participants"], participant=A, model=GLM)
    assert (p["validations_performed"], p["timeouts_applied"], p["in_flight_requests"]) == (9, 12, 0)
    assert p["extra"] is None                              # nothing of schema 6 left raw
    assert by(rows["acct_participants"], participant=B)["in_flight_requests"] == 1
    s9 = by(rows["acct_slots"], participant=A, slot_id=9)
    assert (s9["validations_performed"], s9["timeouts_applied"], s9["in_flight_requests"]) == (4, 5, 0)
    ca = [c for c in rows["acct_counters"] if c["participant"] == A and c["model"] == GLM]
    assert sum(c["count"] for c in ca if c["slow_decode"]) == 18
    assert all(c["slow_decode"] is False for c in ca if c["slot_id"] == 3)   # omitted in v6: false
    assert all(c["key_extra"] is None for c in rows["acct_counters"])
    reasons = {c["timeout_reason"] for c in rows["acct_counters"]} | {c["no_send_reason"] for c in rows["acct_counters"]}
    assert {"verifier_version_unsupported", "vote_weight_short", "host_served_probe",
            "participant_state_diverged_no_send"} <= reasons
    listing = acct.decode_epochs(body(V6, "/api/v1/epochs"))
    r6 = acct.epoch_row(403, listing.epochs[0], listing.schema_version, PROV)
    # the summary sends in_flight_requests only: the other two are not reported, not 0
    assert (r6["in_flight_requests"], r6["validations_performed"], r6["timeouts_applied"]) == (1, None, None)
    assert r6["extra"] is None


def test_older_schemas_report_no_schema_6_field():
    for folder, version in ((V5, 5), (V2, 2)):
        rows = rows_of(body(folder, "/api/v1/epochs/403/participants"))
        assert rows["acct_capabilities"] == []                 # unknown, not "refused nothing"
        for r in rows["acct_participants"] + rows["acct_slots"]:
            assert (r["validations_performed"], r["timeouts_applied"], r["in_flight_requests"]) == \
                (None, None, None), version
        assert all(c["slow_decode"] is None for c in rows["acct_counters"]), version


def test_decode_epoch_summaries_v2_and_v5():
    s2 = acct.decode_epochs(body(V2, "/api/v1/epochs")).epochs[0]
    r2 = acct.epoch_row(403, s2, 2, PROV)
    assert (r2["writer_errors"], r2["timeout_pending"], r2["ghost"], r2["timeout_applied"]) == (1, None, 3, 0)
    listing = acct.decode_epochs(body(V5, "/api/v1/epochs"))
    r5 = acct.epoch_row(403, listing.epochs[1], listing.schema_version, PROV)
    assert (r5["assigned_nonces"], r5["unfinished_execution"], r5["timeout_diff_send_failed"]) == (31200, 540, 2)
    assert r5["writer_errors"] is None and r5["cross_check_errors"] == 0


def test_liberal_decoding_unknown_fields_open_enums_and_loose_types():
    rec = copy.deepcopy(V3_RECORD)
    rec.update(schema_version=6, brand_new_total=7, updated_at="yesterday", assigned_nonces="8")
    rec["dispositions"] = {"finished_used": 5, "unfinished_refused": None, "teleported": 2}
    rec["latest_nonces"][0]["escrow_id"] = 70001          # a number where a string belongs
    rec["counters"][0]["key"].update(disposition="teleported", warp_factor=9)
    rec["slots"][0]["new_slot_field"] = [1, 2]
    rec["findings"] = [{"code": "slow_decode", "severity": "warning", "part": 3}]
    rec.pop("timeout_pending")
    resp = acct.decode_participants({"participants": [rec]})      # no schema_version at the top
    rows = acct.participant_rows(403, resp, PROV)
    p = rows["acct_participants"][0]
    assert p["schema_version"] == 6 and p["updated_at"] is None and p["assigned_nonces"] == 8
    assert json.loads(p["extra"]) == {"brand_new_total": 7}
    assert json.loads(p["dispositions"]) == {"finished_used": 5, "teleported": 2}
    assert (p["unfinished_refused"], p["timeout_pending"]) == (0, None)   # key missing: 0; field missing: NULL
    assert rows["acct_escrow_nonces"][0]["escrow_id"] == "70001"
    c = rows["acct_counters"][0]
    assert c["disposition"] == "teleported" and json.loads(c["key_extra"]) == {"warp_factor": 9}
    assert c["slow_receipt"] is False                         # v6 keeps the v5 flags
    assert json.loads(rows["acct_slots"][0]["extra"]) == {"new_slot_field": [1, 2]}
    assert by(rows["acct_findings"], code="slow_decode")["whole"] is None
    assert acct.unknown_fields(resp) == {"participants.brand_new_total", "participants.counters.key.warp_factor",
                                         "participants.slots.new_slot_field"}


@pytest.mark.parametrize("data", [
    {"participants": {"a": 1}},
    {"participants": [{"assigned_nonces": -1}]},
    {"participants": [{"counters": [{"count": "many"}]}]},
    ["not", "an", "object"],
])
def test_wrong_shapes_are_rejected(data):
    with pytest.raises(ValidationError):
        acct.decode_participants(data)


# -- end to end through the CLI --------------------------------------------------------------
def test_collect_v5_by_replay_and_recollect_without_duplicates(db):
    r = run_cli("collect", "--replay", str(V5), db=db)
    assert r.returncode == 0, r.stderr
    assert "MISSING" not in r.stderr
    first = counts(db)
    assert first == {"acct_epochs": 2, "acct_participants": 3, "acct_escrow_nonces": 3, "acct_counters": 36,
                     "acct_slots": 4, "acct_findings": 7, "acct_capabilities": 0}
    assert one(db, "SELECT ghost, timeout_applied, protocol_misses, cc_host_missed, unclassified, schema_version "
                   "FROM acct_participants WHERE epoch = 403 AND participant = ? AND model = ?", [A, GLM]) \
        == (61, 12, 12, 12, 3, 5)
    # the counters add up to the record's dispositions, disposition by disposition
    assert q(db, """SELECT c.disposition, sum(c.count), any_value(p.dispositions->>c.disposition)::BIGINT
                    FROM acct_counters c JOIN acct_participants p USING (epoch, participant, model)
                    WHERE epoch = 403 GROUP BY c.participant, c.disposition
                    HAVING sum(c.count) IS DISTINCT FROM
                           coalesce(any_value(p.dispositions->>c.disposition)::BIGINT, 0)""") == []
    assert one(db, "SELECT count(*) FROM acct_counters WHERE epoch = 403 AND participant = ? AND disposition = 'ghost' "
                   "AND timeout_outcome = 'applied' AND no_send_reason = 'participant_throttled_no_send'", [B]) == 1
    assert one(db, "SELECT sum(count) FROM acct_counters WHERE participant = ? AND epoch = 403 AND slow_receipt", [A]) == 38
    assert one(db, "SELECT assigned_nonces, timeout_diff_send_failed, source_url LIKE 'http://127.0.0.1:%/api/v1/epochs' "
                   "FROM acct_epochs WHERE epoch = 403") == (31200, 2, True)
    assert one(db, "SELECT phase FROM acct_escrow_nonces WHERE escrow_id = '97402'") == "finalized"
    assert q(db, "SELECT map, key, sum(count) FROM acct_slot_map_counts WHERE epoch = 403 AND map <> 'disposition' "
                 "GROUP BY ALL ORDER BY ALL") == [("delivery_reason", "client_gone_before_delivery", 1),
                                                  ("timeout_outcome", "applied", 17),
                                                  ("timeout_outcome", "insufficient_votes", 2),
                                                  ("timeout_outcome", "skipped", 2),
                                                  ("timeout_outcome", "vote_collection_failed", 1)]
    assert q(db, "SELECT epoch, item, status FROM coverage WHERE source = 'accounting' ORDER BY epoch NULLS FIRST, item") == [
        (None, "epoch_list", "ok"), (402, "epoch_summary", "ok"), (402, "participants", "ok"),
        (403, "epoch_summary", "ok"), (403, "participants", "ok")]
    assert one(db, "SELECT count(*) FROM acct_counters WHERE source_url IS NULL OR fetched_at IS NULL") == 0
    before = one(db, "SELECT max(fetched_at) FROM acct_counters")

    r = run_cli("collect", "--replay", str(V5), db=db)
    assert r.returncode == 0, r.stderr
    assert counts(db) == first
    assert one(db, "SELECT count(*) FROM coverage WHERE source = 'accounting'") == 5
    assert one(db, "SELECT min(fetched_at) FROM acct_counters") > before


def test_collect_v6_and_sql_reads_acct_capabilities(db):
    r = run_cli("collect", "--replay", str(V6), db=db)
    assert r.returncode == 0, r.stderr
    assert "do not know" not in r.stderr                   # no schema-6 field left raw in `extra`
    assert one(db, "SELECT count(*) FROM acct_capabilities") == 2
    r = run_cli("sql", "SELECT participant, model, tool_refusals, version_refusals, context_limit, "
                "protocol_version_unsupported FROM acct_capabilities ORDER BY participant", "--format", "json", db=db)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["rows"] == [
        {"participant": B, "model": MM, "tool_refusals": None, "version_refusals": 3, "context_limit": None,
         "protocol_version_unsupported": True},
        {"participant": A, "model": GLM, "tool_refusals": 2, "version_refusals": None, "context_limit": 131072,
         "protocol_version_unsupported": None}]
    assert one(db, "SELECT validations_performed, timeouts_applied, in_flight_requests FROM acct_participants "
                   "WHERE participant = ? AND model = ?", [A, GLM]) == (9, 12, 0)
    assert one(db, "SELECT in_flight_requests, validations_performed FROM acct_epochs WHERE epoch = 403") == (1, None)
    assert one(db, "SELECT sum(count) FROM acct_counters WHERE slow_decode") == 18
    assert one(db, "SELECT sum(count) FROM acct_counters WHERE no_send_reason = 'participant_state_diverged_no_send'") == 2
    # collected again: replaced, not doubled
    assert run_cli("collect", "--replay", str(V6), db=db).returncode == 0
    assert one(db, "SELECT count(*) FROM acct_capabilities") == 2


def test_collect_v2_from_an_accounting_url(db, record_server):
    server = record_server(V2)
    r = run_cli("collect", "--accounting", server.url, "--rate", "0", db=db)
    assert r.returncode == 0, r.stderr
    assert one(db, "SELECT count(*) FROM acct_participants WHERE schema_version = 2") == 2
    assert one(db, "SELECT assigned_nonces, ghost, timeout_pending, required_validations, recording_errors, "
                   "n_findings FROM acct_participants WHERE participant = ?", [A]) == (40, 3, None, None, 0, None)
    assert one(db, "SELECT assigned_nonces, dispositions, ghost, n_counters FROM acct_participants "
                   "WHERE participant = ?", [B]) == (0, "{}", 0, 0)
    assert one(db, "SELECT writer_errors, timeout_pending FROM acct_epochs WHERE epoch = 403") == (1, None)
    assert one(db, "SELECT count(*), count(phase) FROM acct_escrow_nonces") == (1, 0)
    assert one(db, "SELECT count(*), count(slow_receipt), count(delivery_reason), sum(count) FROM acct_counters") \
        == (8, 0, 0, 40)
    assert one(db, "SELECT count(*), count(delivery_reasons), count(cross_check_error) FROM acct_slots") == (2, 0, 0)
    assert one(db, "SELECT count(*) FROM acct_findings") == 0


def test_malformed_json_and_unlisted_epoch_are_missing_and_the_rest_is_stored(db, tmp_path):
    rec = write_recording(tmp_path / "broken", [
        {"path": "/api/v1/epochs", "body": body(V5, "/api/v1/epochs")},
        {"path": "/api/v1/epochs/402/participants", "body": body(V5, "/api/v1/epochs/402/participants")},
        {"path": "/api/v1/epochs/403/participants", "body": '{"schema_version":5,"participants":[{"participant":'},
    ])
    r = run_cli("collect", "--replay", str(rec), "--epoch", "402", "--epoch", "403", "--epoch", "999", db=db)
    assert r.returncode == 3
    assert "Traceback" not in r.stderr
    missing = [line for line in r.stderr.splitlines() if "MISSING" in line]
    assert len(missing) == 2, r.stderr
    assert missing[0].startswith("accounting: MISSING epoch 403: participants not obtained:")
    assert "malformed JSON" in missing[0] and "/api/v1/epochs/403/participants" in missing[0]
    assert missing[1].startswith("accounting: MISSING epoch 999: not listed by the gateway at http://127.0.0.1:")
    assert missing[1].endswith("(it lists 402..403)")
    assert q(db, "SELECT epoch, count(*) FROM acct_participants GROUP BY epoch") == [(402, 1)]
    assert q(db, "SELECT epoch FROM acct_epochs ORDER BY epoch") == [(402,), (403,)]   # 403's summary was obtained
    assert q(db, "SELECT epoch, item, status FROM coverage WHERE epoch IS NOT NULL ORDER BY epoch, item") == [
        (402, "epoch_summary", "ok"), (402, "participants", "ok"),
        (403, "epoch_summary", "ok"), (403, "participants", "missing"),
        (999, "epoch_summary", "missing"), (999, "participants", "missing")]


def test_a_null_count_is_absent_not_an_internal_error(db, tmp_path):
    """JSON null for an integer (the epoch index, a count): pydantic raised a TypeError for a
    bound on an Optional, which no shape check caught: 'internal error', nothing stored, and the
    gateway log given in the same run never read."""
    answer = body(V5, "/api/v1/epochs/403/participants")
    answer["epoch_index"] = None
    answer["participants"][0]["assigned_nonces"] = None
    rec = write_recording(tmp_path / "nulls", [
        {"path": "/api/v1/epochs", "body": body(V5, "/api/v1/epochs")},
        {"path": "/api/v1/epochs/403/participants", "body": json.dumps(answer)},
    ])
    log = FIXTURES / "gateway-logs" / "section12.log"
    r = run_cli("collect", "--replay", str(rec), "--epoch", "403", "--gateway-log", str(log), db=db)
    assert r.returncode == 0 and "internal error" not in r.stderr, r.stderr
    assert one(db, "SELECT count(*) FROM acct_participants WHERE epoch = 403") == len(answer["participants"])
    assert one(db, "SELECT count(*) FROM log_events") == 81


def test_503_then_200_is_retried(db, tmp_path):
    listing = body(V5, "/api/v1/epochs")
    listing["epochs"] = listing["epochs"][1:]
    rec = write_recording(tmp_path / "flaky", [
        {"path": "/api/v1/epochs", "body": listing},
        {"path": "/api/v1/epochs/403/participants", "status": 503, "body": {"error": "accounting unavailable"}},
        {"path": "/api/v1/epochs/403/participants", "body": body(V5, "/api/v1/epochs/403/participants")},
    ])
    r = run_cli("collect", "--replay", str(rec), db=db)
    assert r.returncode == 0, r.stderr
    assert "MISSING" not in r.stderr
    assert one(db, "SELECT count(*) FROM acct_participants WHERE epoch = 403") == 2


# -- edge cases in process: real HTTP over loopback, one server for all of them --------------
# Each scenario has its own epoch in one recording:
#   403 good (v5) | 404 v3 record | 405 v4 record | 406 two records for one (participant, model)
#   407 answers for epoch 402 | 408 good the first time, then not the documented shape
def _with_epoch(data: dict, epoch: int) -> dict:
    data = copy.deepcopy(data)
    data["epoch_index"] = epoch
    for r in data["participants"]:
        r["epoch_index"] = epoch
    return data


@pytest.fixture(scope="module")
def edge_server(tmp_path_factory):
    good = body(V5, "/api/v1/epochs/403/participants")
    dup = copy.deepcopy(good)
    dup["participants"].append(dup["participants"][1])
    listing = body(V5, "/api/v1/epochs")
    listing["epochs"] = [{**listing["epochs"][1], "epoch_index": e} for e in range(403, 409)]
    listing["epochs"][1] = {"schema_version": 3, "epoch_index": 404, "assigned_nonces": 8, "recording_errors": 0}
    listing["epochs"][2] = {"schema_version": 4, "epoch_index": 405, "assigned_nonces": 8, "dispositions": None}
    rec = write_recording(tmp_path_factory.mktemp("edge"), [
        {"path": "/api/v1/epochs", "body": listing},
        {"path": "/api/v1/epochs/403/participants", "body": good},
        {"path": "/api/v1/epochs/404/participants",
         "body": {"schema_version": 3, "epoch_index": 404, "participants": [{**V3_RECORD, "epoch_index": 404}]}},
        {"path": "/api/v1/epochs/405/participants",
         "body": {"schema_version": 4, "epoch_index": 405, "participants": [{**v4_record(), "epoch_index": 405}]}},
        {"path": "/api/v1/epochs/406/participants", "body": _with_epoch(dup, 406)},
        {"path": "/api/v1/epochs/407/participants", "body": body(V5, "/api/v1/epochs/402/participants")},
        {"path": "/api/v1/epochs/408/participants", "body": _with_epoch(good, 408)},
        {"path": "/api/v1/epochs/408/participants", "body": {"participants": "x"}},
    ])
    with ReplayServer(rec) as server:
        yield server


def _collect(store, url: str, epochs):
    from auditor.progress import Progress
    from auditor.sources.http import JsonClient

    with JsonClient([url], rate_per_min=0, retries=0) as client:
        return acct.collect(store, client, epochs, Progress(quiet=True))


@pytest.fixture
def store(tmp_path):
    from auditor.store import Store

    with Store(tmp_path / "x.duckdb") as s:
        yield s


def test_v3_and_v4_gateways(store, edge_server):
    report = _collect(store, edge_server.url, [404, 405])
    assert report.complete, report.missing
    assert store.con.execute("SELECT epoch, schema_version, timeout_pending, writer_errors, cc_error_count "
                             "FROM acct_participants ORDER BY epoch").fetchall() == [(404, 3, 2, 2, 0),
                                                                                     (405, 4, 2, None, 0)]
    assert store.con.execute("SELECT epoch, cross_check_error FROM acct_slots ORDER BY epoch").fetchall() == [
        (404, None), (405, 1)]
    # no dispositions field: unknown (NULL); dispositions null: empty (0); v4 has no recording_errors
    assert store.con.execute("SELECT epoch, schema_version, ghost, recording_errors FROM acct_epochs "
                             "ORDER BY epoch").fetchall() == [(404, 3, None, 0), (405, 4, 0, None)]


def test_duplicate_records_reject_the_epoch_atomically(store, edge_server):
    report = _collect(store, edge_server.url, [403, 406])
    assert len(report.missing) == 1 and report.missing[0].startswith("epoch 406: participants not stored:")
    assert "breaks a key" in report.missing[0]
    for t in ("acct_participants", "acct_counters", "acct_slots", "acct_findings", "acct_escrow_nonces"):
        assert store.con.execute(f"SELECT DISTINCT epoch FROM {t}").fetchall() == [(403,)], t
    assert store.con.execute("SELECT epoch, item, status FROM coverage WHERE epoch = 406 ORDER BY item").fetchall() \
        == [(406, "epoch_summary", "ok"), (406, "participants", "missing")]


def test_answer_for_another_epoch_is_rejected(store, edge_server):
    report = _collect(store, edge_server.url, [407])
    assert len(report.missing) == 1 and report.missing[0].startswith("epoch 407: participants not obtained: ")
    assert report.missing[0].endswith("answered for epoch 402, not 407")
    assert store.con.execute("SELECT count(*) FROM acct_participants").fetchone() == (0,)


def test_failed_recollection_keeps_earlier_rows(store, edge_server):
    assert _collect(store, edge_server.url, [408]).complete
    before = {t: store.con.execute(f"SELECT count(*), max(fetched_at) FROM {t}").fetchone() for t in TABLES}
    coverage = store.con.execute("SELECT * FROM coverage WHERE epoch = 408 ORDER BY item").fetchall()
    report = _collect(store, edge_server.url, [408])           # now the gateway answers garbage
    assert len(report.missing) == 1
    assert "is not an accounting participants answer (participants: " in report.missing[0]
    assert "(kept the rows fetched at " in report.missing[0]
    assert {t: store.con.execute(f"SELECT count(*), max(fetched_at) FROM {t}").fetchone() for t in TABLES} == before
    assert store.con.execute("SELECT * FROM coverage WHERE epoch = 408 ORDER BY item").fetchall() == coverage


def test_epoch_list_failure_with_explicit_epochs(store, tmp_path, record_server):
    server = record_server(write_recording(tmp_path / "nolist", [
        {"path": "/api/v1/epochs", "status": 404, "body": {"error": "not found"}},
        {"path": "/api/v1/epochs/403/participants", "body": body(V5, "/api/v1/epochs/403/participants")},
    ]))
    report = _collect(store, server.url, [403])
    assert len(report.missing) == 1 and report.missing[0].startswith("epoch list: not found: ")
    assert store.con.execute("SELECT count(*) FROM acct_participants").fetchone() == (2,)
    assert store.con.execute("SELECT item, status FROM coverage ORDER BY epoch NULLS FIRST, item").fetchall() == [
        ("epoch_list", "missing"), ("epoch_summary", "missing"), ("participants", "ok")]
    assert _collect(store, server.url, None).missing == report.missing   # nothing to go on without a list


# -- property: every schema version decodes, schema 6's fields land in their columns -----------------
from hypothesis import given, settings, strategies as st  # noqa: E402

COUNT = st.integers(0, acct.UINT64_MAX)
SCHEMA6_COUNTS = ("validations_performed", "timeouts_applied", "in_flight_requests")
CAPABILITY_TYPES = {"protocol_version_unsupported": st.booleans(), "tool_choice_unsupported": st.booleans(),
                    "context_limit": COUNT, "version_refusals": COUNT, "tool_refusals": COUNT,
                    "context_refusals": COUNT}
TIMEOUT_REASONS = ("", "unknown", "host_served_probe", "escrow_gone_from_hosts", "verifier_version_unsupported",
                   "verifier_escrow_missing", "verifier_inference_missing", "verifier_unreachable",
                   "verifier_queue_expired", "verifier_rpc_timeout", "vote_weight_short", "a_later_reason")
NO_SEND_REASONS = ("", "poc_unavailable_host", "participant_state_diverged_no_send", "participant_capability_no_send")


def _some(fields: dict) -> st.SearchStrategy[dict]:
    """Dicts with any subset of ``fields`` (name: strategy of its value): omitempty on the wire."""
    return st.fixed_dictionaries({}, optional=fields)


@st.composite
def records(draw):
    """A participant record of any schema version 2..6 (or none said), with any of schema 6's
    fields present or omitted, whatever the version says (builds differ in details)."""
    version = draw(st.sampled_from([None, 2, 3, 4, 5, 6, 7]))
    rec = {"participant": draw(st.sampled_from([A, B])), "model": draw(st.sampled_from([GLM, MM])),
           **draw(_some({k: COUNT for k in SCHEMA6_COUNTS + ("assigned_nonces", "in_flight")}))}
    if version is not None:
        rec["schema_version"] = version
    rec["capability"] = draw(st.one_of(st.just("absent"), st.none(), _some(CAPABILITY_TYPES)))
    if rec["capability"] == "absent":
        del rec["capability"]
    key = draw(_some({"slow_decode": st.booleans(), "slow_receipt": st.booleans(),
                      "timeout_reason": st.sampled_from(TIMEOUT_REASONS),
                      "no_send_reason": st.sampled_from(NO_SEND_REASONS)}))
    rec["counters"] = [{"escrow_id": "97311", "key": {"slot_id": 3, "disposition": "ghost", **key},
                        "count": draw(COUNT)}]
    rec["slots"] = [{"escrow_id": "97311", "slot_id": 3, **draw(_some({k: COUNT for k in SCHEMA6_COUNTS}))}]
    return rec


@settings(max_examples=300, deadline=None)
@given(recs=st.lists(records(), max_size=4, unique_by=lambda r: (r["participant"], r["model"])),
       top_version=st.sampled_from([None, 5, 6]))
def test_property_schema_6_fields_land_in_their_columns_and_older_schemas_still_decode(recs, top_version):
    data = {"epoch_index": 403, "participants": recs}
    if top_version is not None:
        data["schema_version"] = top_version
    rows = rows_of(json.loads(json.dumps(data)))
    assert len(rows["acct_participants"]) == len(recs)
    assert all(r["extra"] is None for r in rows["acct_participants"])      # nothing known is left raw
    caps = {(r["participant"], r["model"]): r for r in rows["acct_capabilities"]}
    for rec, p, c, s in zip(recs, rows["acct_participants"], rows["acct_counters"], rows["acct_slots"]):
        version = rec.get("schema_version", top_version)
        assert p["schema_version"] == version
        for k in SCHEMA6_COUNTS:
            assert p[k] == rec.get(k), k                                    # absent: NULL, never 0
            assert s[k] == rec["slots"][0].get(k), k
        block = rec.get("capability")
        if isinstance(block, dict):
            row = caps.pop((rec["participant"], rec["model"]))
            assert {f: row[f] for f in acct.CAPABILITY_FIELDS} == {f: block.get(f) for f in acct.CAPABILITY_FIELDS}
            assert row["schema_version"] == version
        key = rec["counters"][0]["key"]
        omitted = False if version is not None and version >= 6 else None
        assert c["slow_decode"] == key.get("slow_decode", omitted)
        assert c["slow_receipt"] == key.get("slow_receipt", False if version is not None and version >= 5 else None)
        assert (c["timeout_reason"], c["no_send_reason"]) == (key.get("timeout_reason", ""),
                                                              key.get("no_send_reason", ""))
        assert c["key_extra"] is None
    assert caps == {}                                                       # a row only for a block sent


@settings(max_examples=100, deadline=None)
@given(recs=st.lists(records(), max_size=4, unique_by=lambda r: (r["participant"], r["model"])))
def test_property_the_streamed_rows_are_the_decoded_rows(recs):
    """What collect stores (the answer read as a stream) is what the whole-answer decoder gives."""
    data = {"schema_version": 6, "epoch_index": 403, "participants": recs}
    seen = {"versions": set(), "unknown": set()}
    streamed: dict[str, list] = {t: [] for t in TABLES if t != "acct_epochs"}
    text = acct.ParticipantsText(json.dumps(data))
    for batch in acct._streamed_rows(403, text, "http://x", PROV, seen):
        for t, rows in batch.items():
            streamed[t].extend(rows)
    assert streamed == rows_of(data)
    assert text.rows == sum(map(len, streamed.values()))        # what MAX_ROWS bounds: every row stored
    assert seen["unknown"] == set()


def test_collect_says_which_gateway_it_asks_before_waiting_for_it(tmp_path):
    """A gateway that does not answer is retried for up to a minute; nothing was printed until
    it had (the chain's collect says `reading from URL` first)."""
    r = run_cli("collect", "-e", "403", "--replay", str(FIXTURES / "accounting" / "v5"), db=tmp_path / "a.duckdb")
    assert r.returncode == 0, r.stderr
    lines = [x.split("auditor: ", 1)[-1] for x in r.stderr.splitlines()]
    asked = next(i for i, x in enumerate(lines) if x.startswith("accounting: reading the epoch list from http://127.0.0.1:"))
    assert asked < next(i for i, x in enumerate(lines) if x.startswith("accounting: epochs"))


def test_a_gateway_that_does_not_answer_is_called_a_gateway(tmp_path):
    """The line said "no node answered" of an accounting URL (a node is the chain's)."""
    r = run_cli("collect", "--accounting", "http://127.0.0.1:9", "--timeout", "1", db=tmp_path / "a.duckdb")
    assert r.returncode == 3, r.stderr
    assert "accounting: MISSING epoch list: no gateway answered /api/v1/epochs (http://127.0.0.1:9/" in r.stderr, r.stderr
