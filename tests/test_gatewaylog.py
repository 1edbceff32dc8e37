"""Gateway log ingestion through the real CLI: every accepted format, the typed views,
rejected lines, missing files, and incremental reading (append, truncate, rotate, gz, stdin)."""

from __future__ import annotations

import gzip
import json
import os
import shutil
from datetime import datetime, timezone
from pathlib import Path

import duckdb
import pytest

from conftest import FIXTURES, q, run_cli

LOGS = FIXTURES / "gateway-logs"
FORMATS = {
    # file -> (ts_source, fmt)
    "section12.log": ("go", "text"),
    "section12-docker.log": ("docker", "text"),
    "section12-docker-only.log": ("docker", "text"),
    "section12-bare.log": (None, "text"),
    "section12-dockerjson.log": ("docker", "text"),
    "section12-slog-json.log": ("record", "json"),
    "section12-slog-text.log": ("record", "slog_text"),
    "section12.log.gz": ("go", "text"),
}
# the formats whose rows are section12.log's very rows (the same times): a store keeps them once
# (an export that overlaps another, gatewaylog_overlap), so each is in a store of its own
ALONE = ["section12.log.gz", "section12-docker-only.log", "section12-dockerjson.log", "section12-slog-json.log",
         "section12-slog-text.log"]
IN_FORMATS_DB = [f for f in FORMATS if f not in ALONE] + ["section12-7.log", "escapes.log"]
UTC = timezone.utc


def collect(db: Path, *paths, stdin=None):
    args = []
    for p in paths:
        args += ["--gateway-log", str(p)]
    r = run_cli("collect", *args, db=db, stdin=stdin)
    if isinstance(r.stderr, bytes):
        r.stdout, r.stderr = r.stdout.decode(), r.stderr.decode()
    return r


def _collected(tmp_path_factory, name: str, *paths: Path) -> Path:
    """A store of ``paths``, collected once through the CLI."""
    db = tmp_path_factory.mktemp("gwlog") / f"{name}.duckdb"
    r = collect(db, *paths)
    assert r.returncode == 0, r.stderr
    assert "gateway_log: loaded log_events " in r.stderr
    return db


@pytest.fixture(scope="module")
def formats_db(tmp_path_factory) -> Path:
    """One run of the CLI over the format variants, the 12.7 lines and the escapes; the variants
    whose rows are section12.log's (ALONE) each in a store of its own (``alone``)."""
    return _collected(tmp_path_factory, "formats", *(LOGS / f for f in IN_FORMATS_DB))


@pytest.fixture(scope="module")
def alone(tmp_path_factory) -> dict[str, Path]:
    return {name: _collected(tmp_path_factory, name.replace(".", "-"), LOGS / name) for name in ALONE}


def format_db(name: str, formats_db: Path, alone: dict[str, Path]) -> Path:
    """The store that holds the fixture ``name``."""
    return alone.get(name, formats_db)


@pytest.fixture(scope="module")
def s12_db(tmp_path_factory) -> Path:
    return _collected(tmp_path_factory, "s12", LOGS / "section12.log")


def file_id(db: Path, name: str) -> int:
    return q(db, "SELECT file_id FROM log_files WHERE path LIKE ?", ["%/" + name])[0][0]


def test_every_format_loads_all_81_lines(formats_db, alone):
    sql = "SELECT f.path, count(e.line_no) FROM log_files f LEFT JOIN log_events e USING (file_id) GROUP BY f.path"
    rows = dict(q(formats_db, sql))
    for db in alone.values():
        rows |= dict(q(db, sql))
    for name in FORMATS:
        assert rows[str(LOGS / name)] == 81, name
    assert q(formats_db, "SELECT count(*) FROM log_rejects")[0][0] == 0
    # fields reach DuckDB typed JSON without being parsed again (gatewaylog_store._as_json): check here
    assert q(formats_db, "SELECT count(*) FROM log_events WHERE NOT json_valid(fields)")[0][0] == 0
    assert q(formats_db, "SELECT DISTINCT typeof(fields) FROM log_events") == [("JSON",)]


def test_without_the_compiled_tokenizer_same_rows_and_a_note(formats_db, alone, tmp_path):
    """AUDITOR_NO_COMPILED=1 parses without the compiled tokenizer: the same rows, and the run says so."""
    rows = ("SELECT regexp_extract(f.path, '[^/]+$'), e.line_no, e.byte_offset, e.ts, e.ts_source, e.fmt, e.level,"
            " e.kind, e.name, e.request, e.escrow, e.nonce, e.host, e.fields::VARCHAR"
            " FROM log_events e JOIN log_files f USING (file_id) ORDER BY ALL")
    for files, compiled in ((IN_FORMATS_DB, formats_db), *(([name], db) for name, db in alone.items())):
        db = tmp_path / f"pure-{len(list(tmp_path.iterdir()))}.duckdb"
        args = [a for f in files for a in ("--gateway-log", str(LOGS / f))]
        r = run_cli("collect", *args, db=db, env={"AUDITOR_NO_COMPILED": "1"})
        assert r.returncode == 0, r.stderr
        assert "without the compiled tokenizer (AUDITOR_NO_COMPILED is set)" in r.stderr
        pure = q(db, rows)
        assert len(pure) >= 81 * len(set(files) & set(FORMATS)) and pure == q(compiled, rows), files
    again = collect(tmp_path / "compiled.duckdb", LOGS / "section12.log")
    assert "compiled tokenizer" not in again.stderr


def test_go_prefix_fields(formats_db):
    fid = file_id(formats_db, "section12.log")
    # the suppressed loser of 12.1: nonce 4812, primary, finished, not the winner
    (ts, ts_source, kind, request, escrow, host, fields, level, fmt), = q(
        formats_db, "SELECT ts, ts_source, kind, request, escrow, host, fields, level, fmt FROM log_events "
                    "WHERE file_id = ? AND name = 'race_completed' AND nonce = 4812", [fid])
    assert ts == datetime(2026, 9, 30, 11, 2, 47, tzinfo=UTC)
    assert (ts_source, kind, fmt, level) == ("go", "stage", "text", None)
    assert request == "req-1790766137482913577-20417"
    assert (escrow, host) == (97311, "sjewn7j3")
    f = json.loads(fields)
    assert f["winner"] == "false" and f["finished"] == "true" and f["probe"] == "false"
    assert f["participant"] == "gonka1vp5ju6ay9rq0gjzxlx5zxgfneyckynsjewn7j3"
    assert f["content_source"] == "delta.content" and f["error_source"] == ""
    assert "request" not in f and "stage" not in f and f["escrow"] == "97311"
    names = dict(q(formats_db, "SELECT name, count(*) FROM log_events WHERE file_id = ? GROUP BY name", [fid]))
    assert names["race_completed"] == 5 and names["session_picker_ghost_probe"] == 5
    assert names["chain_phase_gate"] == 3 and names["nonce_disposition"] == 3
    assert q(formats_db, "SELECT count(*) FROM log_events WHERE file_id = ? AND kind = 'event'", [fid])[0][0] == 21


def test_quoted_values_and_free_text(formats_db):
    fid = file_id(formats_db, "section12.log")

    def field(name, key, extra=""):
        return q(formats_db, f"SELECT fields->>'{key}' FROM log_events WHERE file_id = ? AND name = ? {extra}",
                 [fid, name])[0][0]

    assert field("error_stream", "response_body_sample") == '{"error":{"message":"model backend unavailable"}}'
    assert field("error_stream", "error_message") == "model backend unavailable"
    assert field("picker_exhausted", "reason_err") == \
        "redundancy: no currently-available host outside the request's exclude set"
    assert field("send_failed", "error") == "host returned status 503"
    assert field("race_completed", "stalls", "AND nonce = 4892") == '[{"at_chunk":417,"gap_ms":33100}]'
    # escalation_skipped carries a second stage= key: the first is the line's stage
    assert field("escalation_skipped", "stage") == "receipt_timeout"
    # the em dash tail of the periodic checks is kept as free text
    assert field("escrow_balance_low", "_text") == "— deactivating before replacement"
    assert field("escrow_nonce_high", "_text") == "— deactivating before replacement"
    assert field("escrow_rotation_created", "model", "AND escrow = 97610") == "zai-org/GLM-5.3-Flash"
    # fixed-prefix free-text lines
    assert field("devshard_deactivated", "reason") == "escrow balance exhausted"
    assert field("gateway_zero_capacity", "weights") == "97311=0 97544=0"
    assert field("chain_phase_gate", "_event", "AND fields->>'count' = '1'") == "preserved participants loaded"
    assert field("chain_phase_gate", "excluded_participants", "AND fields->>'count' = '1'") == ""


@pytest.mark.parametrize("name", list(FORMATS))
def test_formats_agree_with_go_prefix(formats_db, alone, name):
    db = format_db(name, formats_db, alone)
    base, fid = file_id(formats_db, "section12.log"), file_id(db, name)
    sql = ("SELECT line_no, kind, name, request, escrow, nonce, host, fields, ts FROM log_events "
           "WHERE file_id = ? ORDER BY line_no")

    def norm(rows):   # JSON records keep numbers and booleans typed; compare their text
        return [r[:7] + ({k: (json.dumps(v) if isinstance(v, bool) else str(v)) for k, v in json.loads(r[7]).items()},)
                for r in rows]

    got, want = q(db, sql, [fid]), q(formats_db, sql, [base])
    if name != "section12.log":  # the baseline itself: only its ts_source and fmt are checked
        assert norm(got) == norm(want)
    ts_source, fmt = FORMATS[name]
    kinds = q(db, "SELECT DISTINCT ts_source::VARCHAR, fmt::VARCHAR FROM log_events WHERE file_id = ?", [fid])
    assert kinds == [(ts_source, fmt)]
    # every timestamp is the Go one (the Docker/record ones add only a fraction of a second)
    diffs = [abs((a[8] - b[8]).total_seconds()) for a, b in zip(got, want) if a[8] is not None]
    if name != "section12.log":
        assert not diffs if ts_source is None else max(diffs) < 1
    if name == "section12-docker.log":
        assert got[0][0] == 1 and got[0][8] == datetime(2026, 9, 30, 11, 2, 17, 100000, tzinfo=UTC)


def test_section_12_7_lines(formats_db):
    fid = file_id(formats_db, "section12-7.log")
    rows = q(formats_db, "SELECT line_no, ts, ts_source::VARCHAR, fmt::VARCHAR, level, kind::VARCHAR, name, escrow, nonce "
                         "FROM log_events WHERE file_id = ? ORDER BY line_no", [fid])
    t1 = datetime(2026, 9, 30, 11, 2, 47, 118204, tzinfo=UTC)
    t2 = datetime(2026, 9, 30, 12, 15, 41, 204117, tzinfo=UTC)
    assert rows == [
        (1, t1, "docker", "text", None, "stage", "stream_suppressed", 97311, 4812),
        (2, None, None, "text", None, "stage", "stream_suppressed", 97311, 4812),
        (3, t2, "docker", "text", None, "event", "escrow_balance_exhausted", 97544, None),
        (4, t1, "record", "json", "INFO", "stage", "race_completed", 97311, 4812),
        (5, t2, "record", "json", "INFO", "event", "escrow_balance_exhausted", 97544, None),
        (6, datetime(2026, 9, 30, 12, 15, 41, 204000, tzinfo=UTC), "record", "slog_text", "INFO", "event",
         "escrow_balance_exhausted", 97544, None),
    ]
    # typed JSON values read as the strings the gateway writes (gateway-logs.md section 13)
    assert q(formats_db, "SELECT json_type(fields->'nonce'), json_type(fields->'winner') FROM log_events "
                         "WHERE file_id = ? AND line_no = 4", [fid])[0] == ("VARCHAR", "VARCHAR")


def test_go_escapes(formats_db):
    fid = file_id(formats_db, "escapes.log")
    got = [r[0] for r in q(formats_db, "SELECT fields->>'v' FROM log_events WHERE file_id = ? ORDER BY line_no", [fid])]
    assert got == ["tab\there", 'line\nbreak "quoted" back\\slash', "bytes — and A",
                   "rune é \U0001F600 bell\a", "octal AB and em dash — raw", ""]
    w, path = q(formats_db, "SELECT fields->>'w', fields->>'path' FROM log_events WHERE file_id = ? AND nonce = 6",
                [fid])[0]
    assert (w, path) == ("bare=with=equals", "/v1/x?a=b")


def test_views(s12_db):
    db = s12_db
    fid = file_id(db, "section12.log")
    att = q(db, "SELECT nonce, role, winner, finished, suppressed_loser, terminal_stage, stream_suppressed, "
                "disposition, host_idx, input_bytes FROM log_attempts WHERE file_id = ? AND escrow = 97311 "
                "AND request = 'req-1790766137482913577-20417' ORDER BY nonce", [fid])
    assert att[0] == (4812, "primary", False, True, True, "send_completed", True, "finished_unused", 12, 6142)
    assert att[1][:5] == (4813, "secondary", True, True, False)
    req, = q(db, "SELECT decision, primary_nonce, attempts, suppressed_losers, outcome, winner_nonce, input_bytes, "
                 "input_tokens_est, model FROM log_requests WHERE request = 'req-1790766137482913577-20417'")
    assert req == ("pairwise_budgeted_speedup", 4812, 2, 1, "succeeded", 4813, 6142, 1536, "zai-org/GLM-5.3-Flash")
    failed = q(db, "SELECT outcome, insufficient_balance FROM log_requests WHERE request = 'req-1790770541003318264-21702'")
    assert failed == [("failed", True)]
    hd = q(db, "SELECT decision, immediate, primary_no_winner, primary_quarantine_mode FROM log_hedge_decisions "
               "WHERE file_id = ? AND primary_nonce = 4841", [fid])
    assert hd == [("receipt_timeout", False, True, "probation")]
    ghosts = q(db, "SELECT nonce, reason, host_idx, escrow, escrow_candidates, participant FROM log_ghosts "
                   "WHERE file_id = ? ORDER BY line_no", [fid])
    assert len(ghosts) == 5
    assert ghosts[0] == (5203, "poc_unavailable_host", 3, 97311, 1, None)
    assert ghosts[4][1:4] == ("participant_throttled_no_send", 9, None)
    ee = q(db, "SELECT event, escrow, new_escrow, reason, balance, tx_hash IS NOT NULL FROM log_escrow_events "
               "WHERE file_id = ? ORDER BY line_no", [fid])
    events = [e[0] for e in ee]
    assert events.count("escrow_balance_exhausted") == 1 and events.count("escrow_rotation_created") == 2
    assert ("escrow_depletion_replacement_created", 97544, 97610, "balance_exhausted", None, True) in ee
    assert ("escrow_balance_low", 97311, None, None, 842000, False) in ee
    assert {"runner_prepare_failed", "escrow_hold_started", "escrow_hold_released", "devshard_deactivated",
            "runtime_retired", "auto_settle_confirmed", "escrow_nonce_high"} <= set(events)
    pg = q(db, "SELECT gate_event, reason, confirmation_poc_phase, epoch, block_height, requests_blocked, "
               "preserved_labels FROM log_phase_gate WHERE file_id = ? ORDER BY line_no", [fid])
    assert pg[0] == ("phase active", "confirmation_poc", "CONFIRMATION_POC_GRACE_PERIOD", 412, 6354003, False, None)
    assert pg[1][0] == "preserved participants loaded" and pg[1][6] == ["kymq6eh3"]
    assert pg[2][:2] == ("phase inactive", None)
    lim = q(db, "SELECT source, reason, in_flight, \"limit\", candidate_escrows FROM log_limiter_rejections "
                "WHERE file_id = ? ORDER BY line_no", [fid])
    assert lim == [("limiter", "max_concurrent_requests", 38, 38, None), ("zero_capacity", "zero_capacity", None, None, 2)]


def test_requests_and_attempts_agree_on_suppressed_losers(tmp_path):
    """One rule (views/attempts.sql) for log_attempts, log_requests and hedge_attempts, odd
    values included: a loser needs a winner in its race, and its nonce finished (the gateway's
    visibility=suppressed_loser); suppressed and then failed is failed_after_suppression."""
    def rc(req, n, w, f, p="false"):
        return (f"2026/09/30 11:02:47 request={req} stage=race_completed escrow=7 nonce={n} host=abcd1234 "
                f"winner={w} finished={f} probe={p}\n")

    lines = [rc("req-1-1", n, w, f, p) for n, w, f, p in [
        (1, "true", "true", "false"), (2, "false", "true", "false"), (3, "false", "true", '""'),
        (4, "false", "true", "true"), (5, "false", "false", "false"), (6, "False", "true", "0")]]
    lines += [rc("req-1-2", 7, "false", "true"),                 # no winner in its race: not a loser
              rc("req-1-3", 8, "true", "true"),
              "2026/09/30 11:02:47 request=req-1-3 stage=stream_suppressed escrow=7 nonce=9 host=abcd1234\n",
              rc("req-1-3", 9, "false", "false"),                 # suppressed, then failed: counted apart
              "2026/09/30 11:02:47 request=req-1-3 stage=speculative_attempt_canceled escrow=7 nonce=10\n",
              rc("req-1-3", 10, "false", "true")]                 # cancelled, yet its nonce finished: a loser
    log = tmp_path / "gw.log"
    log.write_text("".join(lines))
    db = tmp_path / "a.duckdb"
    assert collect(db, log).returncode == 0
    losers = q(db, "SELECT nonce FROM log_attempts WHERE suppressed_loser ORDER BY nonce")
    assert losers == [(2,), (3,), (6,), (10,)]
    assert q(db, "SELECT nonce FROM hedge_attempts WHERE suppressed_loser ORDER BY nonce") == losers
    assert q(db, "SELECT nonce FROM hedge_attempts WHERE failed_after_suppression") == [(9,)]
    assert q(db, "SELECT request, attempts, suppressed_losers FROM log_requests ORDER BY request") == [
        ("req-1-1", 6, 3), ("req-1-2", 1, 0), ("req-1-3", 3, 1)]


def test_host_labels_against_chain(s12_db):
    db = s12_db      # runs after test_views: the chain rows added here change no other view
    con = duckdb.connect(str(db))
    rows = ["gonka1vp5ju6ay9rq0gjzxlx5zxgfneyckynsjewn7j3",    # sjewn7j3: one address (chain and logs)
            "gonka1k5g9s6mfh69ppyws3wxtttc9yfwnvrf3x8450k",    # f3x8450k: two addresses end with it
            "gonka1zzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzf3x8450k"]
    for p in rows:
        con.execute("INSERT INTO chain_validation_weights (epoch, model_id, participant) VALUES (412, '', ?)", [p])
    con.close()
    got = {r[0]: r[1:] for r in q(db, "SELECT label, status, address, len(candidates), resolved_from "
                                      "FROM log_host_labels")}
    assert got["sjewn7j3"] == ("resolved", "gonka1vp5ju6ay9rq0gjzxlx5zxgfneyckynsjewn7j3", 1, ["chain", "log"])
    assert got["f3x8450k"][:3] == ("ambiguous", None, 2)
    # only the logs' own race_completed / nonce_disposition lines know this one
    assert got["kymq6eh3"] == ("resolved", "gonka1q54dpg5e70cxsv6ms8up8ld5slnjxekymq6eh3", 1, ["log"])
    assert set(got) == {"sjewn7j3", "yl26dt8h", "f3x8450k", "kymq6eh3"}


def test_malformed_lines_are_counted_not_fatal(tmp_path):
    db = tmp_path / "a.duckdb"
    log = tmp_path / "m.log"
    shutil.copy(LOGS / "malformed.log", log)
    r = collect(db, log)
    assert r.returncode == 0, r.stderr
    assert "rejected 4 (not_gateway)" in r.stderr and "rejected 1 (invalid_utf8)" in r.stderr
    assert "last line incomplete" in r.stderr
    counts = dict(q(db, "SELECT reason, lines FROM log_rejects"))
    assert counts == {"blank": 2, "not_gateway": 4, "bad_quote": 1, "invalid_utf8": 1, "bad_json": 1}
    samples = q(db, "SELECT reason, line_no, line FROM log_reject_samples ORDER BY line_no")
    assert ("not_gateway", 3, "panic: runtime error: invalid memory address or nil pointer dereference") in samples
    assert any(s[0] == "invalid_utf8" and "\\xff\\xfe" in s[2] for s in samples)
    # the last line had no newline: not read yet
    assert q(db, "SELECT lines, events, rejected FROM log_files")[0] == (12, 3, 9)
    assert q(db, "SELECT count(*) FROM log_events WHERE name = 'gateway_request_received'")[0][0] == 0
    with open(log, "ab") as f:
        f.write(b"\n")
    r = collect(db, log)
    assert r.returncode == 0 and "loaded log_events 1" in r.stderr
    assert q(db, "SELECT lines, events, rejected FROM log_files")[0] == (13, 4, 9)
    assert q(db, "SELECT line_no FROM log_events WHERE name = 'gateway_request_received'") == [(13,)]


def test_missing_file_exit_3_and_others_loaded(tmp_path):
    db = tmp_path / "a.duckdb"
    (tmp_path / "empty.log").write_bytes(b"")
    r = collect(db, tmp_path / "nope.log", LOGS / "section12-7.log", tmp_path / "empty.log")
    # a path that names nothing (no glob): a usage error before anything is read (issue 33)
    assert r.returncode == 2 and "nope.log: no such file" in r.stderr and not db.exists(), r.stderr
    r = collect(db, LOGS / "section12-7.log", tmp_path / "none-*.log", tmp_path, tmp_path / "empty.log")
    assert r.returncode == 3
    assert "MISSING" in r.stderr and "no file matches" in r.stderr
    assert "is a directory" in r.stderr
    assert "Traceback" not in r.stderr
    assert q(db, "SELECT count(*) FROM log_events")[0][0] == 6
    assert q(db, "SELECT count(*) FROM log_files WHERE path LIKE '%empty.log' AND lines = 0")[0][0] == 1
    assert ("missing",) in q(db, "SELECT status FROM coverage WHERE source = 'gateway_log'")


def _lines(path: Path) -> list[bytes]:
    return path.read_bytes().splitlines(keepends=True)


def test_append_reads_only_new_lines(tmp_path):
    db = tmp_path / "a.duckdb"
    log = tmp_path / "gw.log"
    lines = _lines(LOGS / "section12.log")
    log.write_bytes(b"".join(lines[:30]) + lines[30][:25])          # a partial 31st line
    assert collect(db, log).returncode == 0
    assert q(db, "SELECT count(*), max(line_no) FROM log_events")[0] == (30, 30)
    with open(log, "ab") as f:
        f.write(lines[30][25:] + b"".join(lines[31:]))
    r = collect(db, log)
    assert r.returncode == 0 and "loaded log_events 51" in r.stderr
    assert q(db, "SELECT count(*), count(DISTINCT line_no), max(line_no) FROM log_events")[0] == (81, 81, 81)
    # byte offsets point at the lines
    data = log.read_bytes()
    for line_no, off, name in q(db, "SELECT line_no, byte_offset, name FROM log_events"):
        assert data[off:].split(b"\n", 1)[0] == lines[line_no - 1].rstrip(b"\n")
        assert name.encode() in lines[line_no - 1] or name in ("chain_phase_gate", "gateway_zero_capacity",
                                                               "devshard_deactivated")
    r = collect(db, log)
    assert "skipped" in r.stderr and "(unchanged)" in r.stderr
    assert q(db, "SELECT count(*) FROM log_events")[0][0] == 81


def _rows_by_file(db: Path) -> dict[tuple[str, bool], int]:
    """(path, gone) -> rows stored, over every log_files row."""
    out: dict[tuple[str, bool], int] = {}
    for path, gone, n in q(db, "SELECT f.path, f.gone_at IS NOT NULL, count(e.line_no) FROM log_files f "
                               "LEFT JOIN log_events e USING (file_id) GROUP BY f.file_id, f.path, f.gone_at"):
        out[(path, gone)] = out.get((path, gone), 0) + n
    return out


def test_truncated_and_replaced_files_keep_their_rows(tmp_path):
    """A store is evidence: a file truncated or replaced at its path is read again from its
    start as a new file, and the rows of what was there before stay, marked gone."""
    db = tmp_path / "a.duckdb"
    log = tmp_path / "gw.log"
    lines = _lines(LOGS / "section12.log")
    log.write_bytes(b"".join(lines[:40]))
    assert collect(db, log).returncode == 0
    # truncated in place (copytruncate) and rewritten shorter
    with open(log, "r+b") as f:
        f.truncate(0)
        f.write(b"".join(lines[40:50]))
    r = collect(db, log)
    assert r.returncode == 0 and "gone" in r.stderr
    assert _rows_by_file(db) == {(str(log), False): 10, (str(log), True): 40}
    assert q(db, "SELECT count(*) FROM coverage WHERE item LIKE ? AND detail LIKE 'gone:%'", [f"{log} (gone, file %"])[0][0] == 1
    # replaced by a new file (another inode)
    new = tmp_path / "new.log"
    new.write_bytes(b"".join(lines[50:81]))
    os.replace(new, log)
    assert collect(db, log).returncode == 0
    assert _rows_by_file(db) == {(str(log), False): 31, (str(log), True): 50}
    # rotation by rename, both files given: the old one is continued under its new name
    os.rename(log, tmp_path / "gw.log.1")
    with open(tmp_path / "gw.log.1", "ab") as f:
        f.write(lines[0])                                  # written before the gateway reopened
    log.write_bytes(b"".join(lines[:5]))
    r = collect(db, tmp_path / "gw.log*")
    assert r.returncode == 0, r.stderr
    assert "rotated to" in r.stderr
    assert _rows_by_file(db) == {(str(tmp_path / "gw.log.1"), False): 32, (str(log), False): 5,
                                 (str(log), True): 50}


def test_gz_read_whole_once_damaged_gz_stores_nothing_unverified(tmp_path):
    db = tmp_path / "a.duckdb"
    gz = tmp_path / "gw.log.gz"
    shutil.copy(LOGS / "section12.log.gz", gz)
    assert "loaded log_events 81" in collect(db, gz).stderr
    r = collect(db, gz)
    assert "skipped" in r.stderr and q(db, "SELECT count(*) FROM log_events")[0][0] == 81
    # replaced by another .gz: read as a new file (the old rows stay, marked gone); a last line
    # without newline is taken at the end of a .gz. A truncated .gz given with it is reported
    # missing (exit 3), and nothing of its unverified member is stored.
    with gzip.open(gz, "wb") as f:
        f.write(b"".join(_lines(LOGS / "section12.log")[:10]) + b"2026/09/30 16:00:00 escrow_balance_exhausted escrow=5")
    bad = tmp_path / "bad.log.gz"
    bad.write_bytes(gzip.compress(b"".join(_lines(LOGS / "section12.log")[20:]))[:-20])
    r = collect(db, gz, bad)
    assert r.returncode == 3 and "damaged gzip" in r.stderr and "truncated" in r.stderr
    fid = q(db, "SELECT file_id FROM log_files WHERE path = ? AND gone_at IS NULL", [str(gz)])[0][0]
    assert q(db, "SELECT count(*), max(escrow) FILTER (WHERE line_no = 11) FROM log_events WHERE file_id = ?",
             [fid])[0] == (11, 5)
    assert _rows_by_file(db) == {(str(gz), False): 11, (str(gz), True): 81}
    assert ("partial",) in q(db, "SELECT status FROM coverage WHERE item = ?", [str(bad)])


@pytest.mark.parametrize("order", ["plain first", ".gz first"])
def test_a_log_and_its_gz_copy_new_in_one_collect_are_stored_once(tmp_path, order):
    """`gzip -k app.log`, then both given to the first collect: the .gz holds the same lines,
    which were stored twice (162 rows for 81 lines, every count in every report doubled).
    The file given first is read; the other only from where its content ends."""
    db = tmp_path / "a.duckdb"
    plain, gz = tmp_path / "app.log", tmp_path / "app.log.gz"
    shutil.copy(LOGS / "section12.log", plain)
    shutil.copy(LOGS / "section12.log.gz", gz)
    r = collect(db, *((plain, gz) if order == "plain first" else (gz, plain)))
    assert r.returncode == 0 and "loaded log_events 81" in r.stderr, r.stderr
    assert "(the same first bytes)" in r.stderr
    assert q(db, "SELECT count(*), count(DISTINCT line_no) FROM log_events") == [(81, 81)]
    # the plain file grows: only the new line is read, once
    with open(plain, "ab") as f:
        f.write(b"2026/09/30 16:00:00 escrow_balance_exhausted escrow=5\n")
    r = collect(db, plain, gz)
    assert r.returncode == 0 and q(db, "SELECT count(*) FROM log_events")[0][0] == 82, r.stderr


def test_stdin_same_content_stored_once(tmp_path):
    db = tmp_path / "a.duckdb"
    data = (LOGS / "section12-7.log").read_bytes() + b"2026/09/30 16:00:00 escrow_balance_exhausted escrow=9"
    r = collect(db, "-", stdin=data)
    assert r.returncode == 0 and "loaded log_events 7" in r.stderr
    r = collect(db, "-", stdin=data)
    assert "skipped stdin" in r.stderr
    assert q(db, "SELECT count(*) FROM log_events")[0][0] == 7
    assert q(db, "SELECT kind, path LIKE 'stdin:%', complete FROM log_files") == [("stdin", True, True)]


def test_stdin_that_has_grown_stores_only_what_was_added(tmp_path):
    """`docker logs gw | auditor collect --gateway-log -` again later: the stream starts with all
    of the one read before, whose lines were stored a second time (121 rows for 81 lines)."""
    db = tmp_path / "a.duckdb"
    lines = (LOGS / "section12.log").read_bytes().splitlines(keepends=True)
    assert collect(db, "-", stdin=b"".join(lines[:40])).returncode == 0
    r = collect(db, "-", stdin=b"".join(lines))
    assert r.returncode == 0 and "loaded log_events 41" in r.stderr, r.stderr
    assert "starts with all of stdin:" in r.stderr
    whole = tmp_path / "whole.duckdb"
    assert collect(whole, "-", stdin=b"".join(lines)).returncode == 0
    rows = "SELECT ts, name, request, escrow, nonce, fields::VARCHAR FROM log_events ORDER BY ALL"
    assert q(db, rows) == q(whole, rows) and len(q(db, rows)) == 81
    # line numbers go on where the earlier stream ended: evidence names the stream's own line
    assert q(db, "SELECT min(line_no), max(line_no) FROM log_events WHERE file_id = 2")[0] == (41, 81)
    # a stream that starts otherwise, with lines stored already: those are not stored again
    r = collect(db, "-", stdin=b"".join(lines[1:]))
    assert "loaded log_events 0" in r.stderr and "starts with all of" not in r.stderr, r.stderr
    assert "its lines 1–80 are lines 2–40 of stdin:" in r.stderr and "; lines 41–81 of stdin:" in r.stderr, r.stderr
