"""The shapes real devshardctl logs take beyond the spec's first sections (gateway-logs.md
section 13): slog JSON values as strings, stage events without ``stage=`` and ``request=``,
a raw event ending in an unquoted Go ``%v``, the newer stage and event names, and one file
given under two names. Each from a line of that exact shape, each generated (hypothesis),
every parse path compared (check_block)."""

from __future__ import annotations

import json
import shutil

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from auditor.sources.gatewaylog_parse import STAGE_NAMES, VECTOR_MIN_LINES, parse_block, parse_line
from conftest import q, run_cli
from test_gatewaylog_parse import check_block, rows

SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def block(lines: list[str], copies: int = 1) -> bytes:
    return ("\n".join(lines * copies) + "\n").encode("utf-8")


def same_rows(a: list[str], b: list[str], copies: int = 1) -> dict:
    """Both blocks parse alike on every path, and to the same rows; the rows of ``a``."""
    da, db = block(a, copies), block(b, copies)
    check_block(da)
    check_block(db)
    ra, rb = rows(parse_block(da)), rows(parse_block(db))
    # the same rows but for where each line starts in the file (the lines' lengths differ)
    assert ra and {n: r[:8] + r[9:] for n, r in ra.items()} == {n: r[:8] + r[9:] for n, r in rb.items()}
    return ra


# -- JSON values are strings -------------------------------------------------------------
RACE_STRINGS = ('{"time":"2026-09-30T11:02:47.5Z","level":"INFO","msg":"race_completed","request":"req-17-1",'
                '"stage":"race_completed","escrow":"97544","nonce":"54","winner":"false","finished":"true",'
                '"attempt_ms":"812","mean_gap_ms":"12.5"}')
RACE_TYPED = ('{"time":"2026-09-30T11:02:47.5Z","level":"INFO","msg":"race_completed","request":"req-17-1",'
              '"stage":"race_completed","escrow":97544,"nonce":54,"winner":false,"finished":true,'
              '"attempt_ms":812,"mean_gap_ms":12.5}')


def test_json_string_and_typed_values_give_identical_rows():
    # one line (the line-by-line path) and enough for the vectorised JSON path
    for copies in (1, VECTOR_MIN_LINES + 5):
        got = same_rows([RACE_STRINGS], [RACE_TYPED], copies)
    kind, name, request, fields, *_, escrow, nonce, host = got[1]
    assert (kind, name, request, escrow, nonce) == ("stage", "race_completed", "req-17-1", 97544, 54)
    assert dict(fields)["winner"] == "false" and dict(fields)["mean_gap_ms"] == "12.5"


SCALARS = st.one_of(st.booleans(), st.integers(-10**15, 10**15),
                    st.floats(allow_nan=False, allow_infinity=False, width=64).filter(lambda x: abs(x) < 1e300))
KEYS = st.from_regex(r"[a-z][a-z_]{0,10}", fullmatch=True).filter(lambda k: k not in ("time", "level", "msg",
                                                                                        "request", "stage"))


@SETTINGS
@given(st.lists(st.tuples(KEYS, SCALARS), min_size=1, max_size=8), st.booleans())
def test_generated_json_records_typed_or_strings_alike(pairs, many):
    head = '{"time":"2026-09-30T11:02:47Z","level":"INFO","msg":"race_completed","request":"req-1-2",' \
           '"stage":"race_completed"'
    typed = head + "".join(f",{json.dumps(k)}:{json.dumps(v)}" for k, v in pairs) + "}"
    text = head + "".join(f",{json.dumps(k)}:{json.dumps(json.dumps(v))}" for k, v in pairs) + "}"
    same_rows([typed], [text], VECTOR_MIN_LINES + 1 if many else 1)


# -- stage events without stage= and request= -----------------------------------------------
BARE_STAGE = ("2026/07/27 08:55:47 decision_made escrow=23 \u2026 decision=primary_suspicious "
              "primary_no_winner_reason=probation primary_failure_strikes=2")


def test_stage_name_without_stage_and_request_is_a_stage_row():
    check_block(block([BARE_STAGE]))
    (row,) = rows(parse_block(block([BARE_STAGE]))).values()
    kind, name, request, fields, *_, escrow, nonce, host = row
    assert (kind, name, request, escrow) == ("stage", "decision_made", None, 23)
    assert fields == [("escrow", "23"), ("decision", "primary_suspicious"),
                      ("primary_no_winner_reason", "probation"), ("primary_failure_strikes", "2")]
    # with enough lines for the compiled tokenizer, which takes the ones without the elision
    plain = BARE_STAGE.replace("\u2026 ", "")
    got = rows(parse_block(block([plain], VECTOR_MIN_LINES + 5)))
    assert {r[:3] for r in got.values()} == {("stage", "decision_made", None)}
    # a raw event that is no stage stays an event
    assert parse_line("escrow_balance_exhausted escrow=80502").kind == "event"


BARE = st.from_regex(r"[A-Za-z0-9_./:-]{1,12}", fullmatch=True)


@SETTINGS
@given(st.sampled_from(sorted(STAGE_NAMES)), st.lists(st.tuples(KEYS, BARE), max_size=6), st.booleans())
def test_generated_bare_stage_lines_read_as_their_stage_lines(name, pairs, prefix):
    kv = "".join(f" {k}={v}" for k, v in pairs)
    pre = "2026/09/30 11:02:47 " if prefix else ""
    got = same_rows([f"{pre}{name}{kv}"], [f"{pre}stage={name}{kv}"], VECTOR_MIN_LINES + 1)
    assert {r[:3] for r in got.values()} == {("stage", name, None)}


# -- a trailing unquoted %v ---------------------------------------------------------------------
FALLBACK = ('escrow_rotation_protocol_version_fallback route_prefix="/devshard/v4" version="v4" '
            'reason=unparseable_protocol error=unknown protocol version "v4"')


def test_trailing_unquoted_go_value_runs_to_the_end_of_the_line():
    check_block(block([FALLBACK]))
    (row,) = rows(parse_block(block([FALLBACK]))).values()
    assert row[:2] == ("event", "escrow_rotation_protocol_version_fallback")
    assert row[3] == [("route_prefix", "/devshard/v4"), ("version", "v4"), ("reason", "unparseable_protocol"),
                      ("error", 'unknown protocol version "v4"')]
    # the em-dash tail of escrow_balance_low stays free text, its threshold a number
    low = parse_line("escrow_balance_low escrow=97311 balance=842000 threshold=1000000 \u2014 deactivating before "
                     "replacement")
    assert json.loads(low.fields)["threshold"] == "1000000"


WORD = st.from_regex(r'[a-zA-Z0-9:"().,/-]{1,10}', fullmatch=True).filter(lambda w: w not in ("...",))


@SETTINGS
@given(st.lists(st.tuples(KEYS, BARE), max_size=4), KEYS, BARE, st.lists(WORD, min_size=1, max_size=6))
def test_generated_trailing_values(pairs, key, first, words):
    value = " ".join([first, *words])
    line = "escrow_rotation_protocol_version_fallback" + "".join(f" {k}={v}" for k, v in pairs) + f" {key}={value}"
    check_block(block([line]))
    ev = parse_line(line)
    assert ev.kind == "event"
    assert json.loads(ev.fields, object_pairs_hook=list)[-1] == (key, value)


# -- the newer names ---------------------------------------------------------------------------
NEW_STAGES = ["request_fully_settled winner_nonce=4 decision=primary outcome=success",
              "winner_failed_after_content escrow=1 nonce=4 error=eof", "timeout_started reason=refused",
              "request_failed escrow=1 error=x", "process_response_failed escrow=1 nonce=4 host=h error=x",
              "send_failed escrow=1 nonce=4 host=h error=x", "suspicious_winner_deferred escrow=1 nonce=4 host=h",
              "picker_exhausted escrow=1", "reconnect_started escrow=1 nonce=4",
              "reconnect_failed escrow=1 nonce=4 reconnect_try=2",
              "reconnect_completed escrow=1 nonce=4 reconnect_try=2 delivered_events=9 delivered_partial=false",
              "ghost_probe_skipped host=h kind=2 reason=x", "winner_write_ctx_cancelled escrow=1 nonce=4 host=h"]
NEW_EVENTS = ["participant_quarantine_cleared participant=gonka1x",
              "participant_limit_activated participant=gonka1x status=429 path_kind=chat",
              FALLBACK, "escrow_rotation_persist_failed escrow=5 error=disk", "devshard_settle_start escrow=5",
              "devshard_settle_blocked escrow=5 reason=x", "participant_throttle_persist_failed error=x"]


def test_newer_names_are_stored_not_rejected(tmp_path):
    log = tmp_path / "gw.log"
    lines = [f"2026/09/30 11:02:{i:02d} request=req-9-{i} stage={s}" for i, s in enumerate(NEW_STAGES)]
    lines += [f"2026/09/30 11:03:{i:02d} {s}" for i, s in enumerate(NEW_STAGES)]      # without stage=
    lines += [f"2026/09/30 11:04:{i:02d} {e}" for i, e in enumerate(NEW_EVENTS)]
    log.write_text("\n".join(lines) + "\n", encoding="utf-8")
    db = tmp_path / "a.duckdb"
    r = run_cli("collect", "--gateway-log", str(log), db=db)
    assert r.returncode == 0, r.stderr
    assert q(db, "SELECT count(*) FROM log_rejects")[0][0] == 0
    got = sorted(q(db, "SELECT kind::VARCHAR, name, count(*) FROM log_events GROUP BY ALL"))
    want = sorted([("stage", s.split()[0], 2) for s in NEW_STAGES] + [("event", e.split()[0], 1) for e in NEW_EVENTS])
    assert got == want


# -- one file under two names ---------------------------------------------------------------------
def test_a_file_given_twice_under_two_names_is_stored_once(tmp_path):
    """Not a rotation: the same content in two places (a copy someone made), given in one
    collect and again in the next."""
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    one, two = tmp_path / "a" / "gateway.log", tmp_path / "b" / "excerpt-copy.txt"
    one.write_text("".join(f"2026/09/30 11:02:47 request=req-1-{i} stage=race_completed escrow=5 nonce={i}\n"
                           for i in range(1, 301)), encoding="utf-8")
    shutil.copyfile(one, two)
    db = tmp_path / "a.duckdb"
    for _ in range(2):
        r = run_cli("collect", "--gateway-log", str(one), "--gateway-log", str(two), db=db)
        assert r.returncode == 0, r.stderr
        assert q(db, "SELECT count(*), count(DISTINCT nonce) FROM log_events")[0] == (300, 300)


# -- a byte order mark ---------------------------------------------------------------------------
BOM_FORMATS = ["section12.log", "section12-docker.log", "section12-dockerjson.log", "section12-slog-json.log",
               "section12-slog-text.log", "section12-bare.log"]


def test_a_byte_order_mark_does_not_cost_the_first_line(tmp_path):
    """Issue 35, 24: a log that starts with a UTF-8 BOM (as some Windows tools write) lost its
    first line (rejected) in every format, .gz too. Now the line is stored as without the
    BOM, 3 bytes further on; every parse path alike."""
    import gzip

    from conftest import FIXTURES

    BOM = b"\xef\xbb\xbf"
    rows_of, rejects_of = {}, {}
    for bom in (b"", BOM):
        d = tmp_path / ("bom" if bom else "plain")
        d.mkdir()
        paths = []
        for name in BOM_FORMATS:
            data = bom + (FIXTURES / "gateway-logs" / name).read_bytes()
            lines = data[len(bom):].splitlines(keepends=True)
            for n in (1, VECTOR_MIN_LINES // len(lines) + 1):     # and enough lines for the vectorised path
                check_block(bom + b"".join(lines * n))
            (d / name).write_bytes(data)
            paths.append(d / name)
        (d / "gz.log.gz").write_bytes(gzip.compress(bom + b"2026/09/30 11:02:47 stage=x escrow=1\n"
                                                    + b"2026/09/30 11:02:48 stage=y escrow=2\n"))
        paths.append(d / "gz.log.gz")
        rejects_of[bom], rows_of[bom] = [], []
        for p in paths:         # a store each: formats of the same lines are stored once in one store
            db = tmp_path / f"{d.name}-{p.name}.duckdb"
            r = run_cli("collect", "--gateway-log", str(p), db=db)
            assert r.returncode == 0, r.stderr
            rejects_of[bom] += q(db, "SELECT regexp_extract(f.path, '[^/]*$'), reason, r.lines "
                                     "FROM log_rejects r JOIN log_files f USING (file_id) ORDER BY ALL")
            rows_of[bom] += q(db, "SELECT regexp_extract(f.path, '[^/]*$'), e.line_no, e.byte_offset, e.name, e.ts "
                                  "FROM log_events e JOIN log_files f USING (file_id) ORDER BY ALL")
    plain, marked = rows_of[b""], rows_of[BOM]
    assert rejects_of[BOM] == rejects_of[b""]
    assert len(marked) == len(plain) and {r[0] for r in marked if r[1] == 1} == set(BOM_FORMATS) | {"gz.log.gz"}
    assert [r[:2] + r[3:] for r in marked] == [r[:2] + r[3:] for r in plain]
    assert all(m[2] == p[2] + 3 for m, p in zip(marked, plain))
