"""The synthetic gateway log generator: determinism, size, line shapes, ground truth."""

from __future__ import annotations

import gzip
import json
import os
import re
import subprocess
import sys
from collections import Counter
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from tools.synth import (FORMATS, Scenario, generate_lines, go_quote, sanitize_value, write_excerpt,
                           write_logs)

ROOT = Path(__file__).resolve().parent.parent
UTC = timezone.utc

GO_TS = r"\d{4}/\d\d/\d\d \d\d:\d\d:\d\d"
BODY_START = r"(?:request=req-\d{19}-\d+ stage=[a-z_]+|stage=[a-z_]+|[a-z_]+ [a-z_]+=|chain phase gate: |gateway: all |devshard \d+ |http: )"
KV = re.compile(r'([A-Za-z_][A-Za-z0-9_]*)=("(?:[^"\\]|\\.)*"|\S*)')
RFC3339NANO = r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d{1,9})?Z"


@pytest.fixture(scope="module")
def compact_text():
    return generate_lines(seed=0, fmt="text", scenario=Scenario.compact())


def kv_of(body: str) -> dict[str, str]:
    """First occurrence of each key (escalation_skipped repeats ``stage``)."""
    d: dict[str, str] = {}
    for k, v in KV.findall(body):
        d.setdefault(k, v)
    return d


def unquote(v: str) -> str:
    return json.loads(v) if v.startswith('"') else v


def parse_rfc3339(s: str) -> datetime:
    """RFC 3339 with up to 9 fractional digits (truncated to microseconds)."""
    m = re.fullmatch(r"(.{19})(?:\.(\d{1,9}))?Z", s)
    frac = (m.group(2) or "").ljust(6, "0")[:6]
    return datetime.fromisoformat(m.group(1)).replace(microsecond=int(frac), tzinfo=UTC)


def text_body(line: str) -> tuple[datetime, str]:
    ts = datetime.strptime(line[:19], "%Y/%m/%d %H:%M:%S").replace(tzinfo=UTC)
    return ts, line[20:]


# ---- determinism ---------------------------------------------------------------------------

def test_same_seed_same_bytes_and_other_seed_differs():
    a, sa = generate_lines(seed=7)
    b, sb = generate_lines(seed=7)
    c, _ = generate_lines(seed=8)
    assert a == b and sa.stages == sb.stages
    assert a != c


def test_byte_identical_across_processes(tmp_path):
    """Same seed in another interpreter with another hash seed: the same file."""
    here = tmp_path / "a.log"
    write_excerpt(here, "json", seed=3)
    there = tmp_path / "b.log"
    code = f"from tools.synth import write_excerpt; write_excerpt({str(there)!r}, 'json', seed=3)"
    env = {**os.environ, "PYTHONHASHSEED": "12345"}
    subprocess.run([sys.executable, "-c", code], check=True, env=env, cwd=ROOT, timeout=60)
    assert here.read_bytes() == there.read_bytes()


def test_fixed_rate_mode_renders_the_same_events_in_every_format():
    """Without a byte target the event stream does not depend on the format."""
    base = None
    for fmt in FORMATS:
        lines, sm = generate_lines(seed=1, fmt=fmt)
        key = (sm.lines, sm.stages, sm.events, sm.suppressed_losers, sm.ghosts_by_reason)
        assert len(lines) == sm.lines
        if base is None:
            base = key
        assert key == base, fmt


# ---- size ----------------------------------------------------------------------------------

@pytest.mark.parametrize("fmt", FORMATS)
def test_size_close_to_target(tmp_path, fmt):
    target = 1_500_000
    p = tmp_path / f"x.{fmt}.log"
    sm = write_logs(p, target, seed=2, fmt=fmt)
    assert p.stat().st_size == sm.bytes == sm.file_bytes
    assert target <= sm.bytes <= target * 1.03
    # the planned six hours are roughly covered
    assert sm.last_time - sm.first_time > timedelta(hours=5)


def test_gzip_output_readable_and_equal_to_plain(tmp_path):
    plain = tmp_path / "g.log"
    gz = tmp_path / "g.log.gz"
    s1 = write_logs(plain, 800_000, seed=4)
    s2 = write_logs(gz, 800_000, seed=4)
    with gzip.open(gz, "rb") as f:
        data = f.read()
    assert data == plain.read_bytes()
    assert s2.compressed and s2.bytes == len(data) and s2.file_bytes < s2.bytes
    assert s1.stages == s2.stages
    # deterministic gzip too (no mtime/filename in the header)
    gz2 = tmp_path / "other.log.gz"
    write_logs(gz2, 800_000, seed=4)
    assert gz2.read_bytes() == gz.read_bytes()


# ---- line shapes ---------------------------------------------------------------------------

def test_text_lines(compact_text):
    lines, sm = compact_text
    pat = re.compile(rf"^{GO_TS} {BODY_START}")
    for ln in lines:
        assert pat.match(ln), ln
    prev = None
    for ln in lines:
        ts, _ = text_body(ln)
        assert prev is None or ts >= prev
        prev = ts


def test_docker_lines():
    lines, _ = generate_lines(seed=0, fmt="docker")
    pat = re.compile(rf"^\d{{4}}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{{9}}Z {GO_TS} {BODY_START}")
    prev = ""
    for ln in lines:
        assert pat.match(ln), ln
        assert ln[:10].replace("-", "/") == ln[31:41] and ln[11:19] == ln[42:50]
        assert ln[:30] >= prev  # fixed-width nanosecond stamps sort as text
        prev = ln[:30]


def test_bare_lines():
    lines, _ = generate_lines(seed=0, fmt="bare")
    pat = re.compile(rf"^{BODY_START}")
    for ln in lines:
        assert pat.match(ln), ln
        assert not re.match(r"^\d{4}[/-]", ln)


def test_json_lines():
    lines, sm = generate_lines(seed=0, fmt="json")
    stages = Counter()
    for ln in lines:
        pairs = json.loads(ln, object_pairs_hook=list)
        keys = [k for k, _ in pairs]
        assert keys[:3] == ["time", "level", "msg"], ln
        rec = dict(pairs[:3])
        assert re.fullmatch(RFC3339NANO, rec["time"])
        assert "." not in rec["time"] or not rec["time"].endswith("0Z")  # Go trims trailing zeros
        assert rec["level"] in ("INFO", "WARN", "ERROR")
        if "stage" in keys:
            first_stage = pairs[keys.index("stage")][1]
            assert first_stage == rec["msg"]
            stages[first_stage] += 1
            d = dict(pairs)
            if "nonce" in d:
                assert isinstance(d["nonce"], int)
            if "escrow" in d:
                assert isinstance(d["escrow"], str) and d["escrow"].isdigit()
            if "request" in d:
                assert keys[3] == "request" and keys[4] == "stage"
        else:
            assert len(keys) == 3
    assert dict(stages) == sm.stages


def test_dockerjson_lines():
    lines, sm = generate_lines(seed=0, fmt="dockerjson")
    text, _ = generate_lines(seed=0, fmt="text")
    assert len(lines) == len(text)
    for ln, tl in zip(lines, text):
        rec = json.loads(ln)
        assert list(rec) == ["log", "stream", "time"]
        assert rec["stream"] == "stderr" and re.fullmatch(RFC3339NANO, rec["time"])
        assert rec["log"] == tl + "\n"


def test_em_dash_and_utf8(tmp_path):
    p = tmp_path / "e.log"
    sm = write_excerpt(p)
    raw = p.read_bytes()
    assert len(raw) == sm.bytes
    text = raw.decode("utf-8")
    low = [ln for ln in text.splitlines() if " escrow_balance_low " in ln]
    assert low and all("threshold=1000000 \u2014 deactivating before replacement" in ln for ln in low)
    high = [ln for ln in text.splitlines() if " escrow_nonce_high " in ln]
    assert high and all(re.search(r"nonce=\d+ limit=19800 \u2014 ", ln) for ln in high)


def test_go_quoting_rules():
    assert sanitize_value("") == '""'
    assert sanitize_value("http_503") == "http_503"
    assert sanitize_value("a=b/c:[d],e") == "a=b/c:[d],e"
    assert sanitize_value("host returned status 503") == '"host returned status 503"'
    assert sanitize_value('{"error":1}') == '"{\\"error\\":1}"'
    assert go_quote("a\tb\nc\\d\x01") == '"a\\tb\\nc\\\\d\\x01"'
    assert go_quote("\u2014") == '"\u2014"'


def test_documented_key_order(compact_text):
    lines, _ = compact_text
    want = {
        "race_completed": ["request", "stage", "escrow", "nonce", "host", "host_idx", "participant", "model",
                           "input_tokens", "winner", "finished", "responsive", "has_receipt", "confirmed_at",
                           "attempt_ms", "output_chunks", "content_chunks", "output_bytes", "stream_bytes_read",
                           "usage_tokens", "max_gap_ms", "mean_gap_ms", "content_source", "error_source", "probe",
                           "suspicious"],
        "decision_made": ["request", "stage", "escrow", "nonce", "host", "decision", "delay_ms", "max_attempts",
                          "group_size"],
        "gateway_request_received": ["request", "stage", "model", "input_tokens", "api_key_suffix", "api_key_kind"],
        "stream_suppressed": ["request", "stage", "escrow", "nonce", "host", "winner_nonce"],
        "session_picker_ghost_probe": ["stage", "reason", "host_idx", "nonce", "queue_depth"],
        "nonce_disposition": ["stage", "escrow", "nonce", "disposition", "dispatch_phase",
                              "timeout_evaluation_phase", "quarantine_mode", "no_send_reason", "failure_origin",
                              "timeout_kind", "timeout_outcome", "timeout_reason", "detail_reason", "participant",
                              "model", "lag_ms", "trace_id", "span_id"],
    }
    seen = set()
    for ln in lines:
        _, body = text_body(ln)
        keys = [k for k, _ in KV.findall(body)]
        st = kv_of(body).get("stage")
        if st in want:
            w = want[st]
            if st == "race_completed":
                assert keys[:len(w)] == w and set(keys[len(w):]) <= {"failure_reason", "stall_count", "stalls"}
            elif st == "session_picker_ghost_probe":
                assert keys[:len(w)] == w
            else:
                assert keys == w, ln
            seen.add(st)
    assert seen == set(want)


# ---- ground truth --------------------------------------------------------------------------

def recount(lines: list[str]) -> dict:
    stages, events, ghosts, gate = Counter(), Counter(), Counter(), Counter()
    winners = suppressed = probes = failed = 0
    req_attempts: dict[str, int] = Counter()
    requests = 0
    for ln in lines:
        _, body = text_body(ln)
        kv = kv_of(body)
        st = kv.get("stage")
        if st:
            stages[st] += 1
            if st == "race_completed":
                if kv["probe"] == "true":
                    probes += 1
                else:
                    req_attempts[kv["request"]] += 1
                if kv["winner"] == "true":
                    winners += 1
                elif kv["finished"] == "true" and kv["probe"] == "false":
                    suppressed += 1
                if kv["finished"] == "false":
                    failed += 1
            elif st == "session_picker_ghost_probe":
                ghosts[kv["reason"]] += 1
            elif st == "gateway_request_received":
                requests += 1
        elif body.startswith("chain phase gate: "):
            events["chain_phase_gate"] += 1
            gate[body[len("chain phase gate: "):].split(" reason=")[0]] += 1
        elif body.startswith("gateway: all "):
            events["gateway_zero_capacity"] += 1
        elif body.startswith("devshard "):
            events["devshard_deactivated"] += 1
        elif body.startswith("http: "):
            events["<noise>"] += 1
        else:
            events[body.split(" ", 1)[0]] += 1
    return dict(stages=stages, events=events, gate=gate, ghosts=ghosts, winners=winners, suppressed=suppressed,
                probes=probes, failed=failed, requests=requests,
                multi=sum(1 for c in req_attempts.values() if c >= 2))


def test_summary_equals_recount(compact_text):
    lines, sm = compact_text
    rc = recount(lines)
    assert sm.lines == len(lines)
    assert rc["stages"] == Counter(sm.stages)
    noise = rc["events"].pop("<noise>", 0)
    assert noise == sm.noise_lines
    assert rc["events"] == Counter(sm.events)
    assert rc["gate"] == Counter(sm.phase_gate_events)
    assert rc["ghosts"] == Counter(sm.ghosts_by_reason) and sum(rc["ghosts"].values()) == sm.ghost_nonces
    assert rc["winners"] == sm.winners == sm.requests_succeeded
    assert rc["suppressed"] == sm.suppressed_losers
    assert rc["probes"] == sm.probes
    assert rc["failed"] == sm.failed_attempts
    assert rc["requests"] == sm.requests
    assert rc["multi"] == sm.multi_attempt_requests >= sm.hedged_races > 0
    assert sm.stages["race_completed"] == sm.attempts == sm.winners + sm.suppressed_losers + sm.failed_attempts + sm.probes
    assert sm.escrow_rotations == sm.events["escrow_rotation_created"] == len(sm.replacements)
    assert sm.escrow_exhaustions == sm.events["escrow_balance_exhausted"]
    assert sum(sm.replacements_by_reason.values()) == len(sm.replacements)


def test_compact_scenario_covers_the_families(compact_text):
    _, sm = compact_text
    for st in ("gateway_request_received", "decision_made", "secondary_immediate_start", "pairwise_winner_hold_candidate",
               "first_token", "winner_selected", "stream_suppressed", "send_completed", "send_failed", "empty_stream",
               "race_completed", "request_succeeded", "request_fully_settled", "runner_prepare_failed",
               "proxy_stream_failed", "session_picker_ghost_probe", "poc_probe_prepared", "nonce_disposition",
               "attempt_failed", "gateway_limiter_bypassed_during_poc"):
        assert sm.stages.get(st, 0) > 0, st
    for ev in ("escrow_balance_exhausted", "gateway_replacing_exhausted_escrow", "escrow_depletion_deactivated",
               "escrow_rotation_created", "escrow_depletion_replacement_created", "escrow_balance_low",
               "escrow_nonce_high", "settlement_queued_waiting_for_drain", "auto_settle_confirmed",
               "chain_phase_gate"):
        assert sm.events.get(ev, 0) > 0, ev
    assert sm.phase_gate_events == {"phase active": 1, "phase updated": 2, "phase inactive": 1,
                                    "preserved participants loaded": 1}
    assert set(sm.ghosts_by_reason) >= {"poc_unavailable_host", "participant_throttled_no_send"}
    assert {"balance_exhausted", "low_balance", "high_nonce"} <= set(sm.replacements_by_reason)
    assert sm.spurious_exhaustions >= 1 and sm.suppressed_primaries >= 1 and sm.noise_lines >= 1
    assert len(sm.cpoc_windows) == 1 and sm.cpoc_windows[0].complete


def test_ghosts_inside_cpoc_window_and_preserved_hosts_serve():
    lines, sm = generate_lines(seed=0, fmt="json")
    (w,) = sm.cpoc_windows
    pres_addr = {sm.hosts[h] for h in sm.preserved}
    n_ghost = n_in = 0
    for ln in lines:
        rec = json.loads(ln)
        t = parse_rfc3339(rec["time"])
        st = rec.get("stage")
        if st == "session_picker_ghost_probe" and rec["reason"] == "poc_unavailable_host":
            n_ghost += 1
            assert w.start <= t <= w.end, ln
        if st == "nonce_disposition" and rec["no_send_reason"] == "poc_unavailable_host":
            assert rec["participant"] not in pres_addr
            assert rec["dispatch_phase"] == "confirmation_poc"
        # real sends well inside the window go to preserved hosts only
        if st == "prepared" and w.start + timedelta(seconds=1) < t < w.end - timedelta(seconds=1):
            n_in += 1
            assert rec["host"] in sm.preserved, ln
    assert n_ghost == sm.ghosts_by_reason["poc_unavailable_host"] > 0 and n_in > 0


def test_escrow_exhaustion_chain(compact_text):
    lines, sm = compact_text
    bodies = [text_body(ln)[1] for ln in lines]
    failed_prepare = {kv_of(b)["escrow"] for b in bodies if "stage=runner_prepare_failed" in b}
    exhausted = [kv_of(b)["escrow"] for b in bodies if b.startswith("escrow_balance_exhausted ")]
    assert exhausted and set(exhausted) <= failed_prepare and len(exhausted) == len(set(exhausted))
    deact = {kv_of(b)["escrow"]: unquote(kv_of(b)["reason"]) for b in bodies if b.startswith("escrow_depletion_deactivated ")}
    for e in exhausted:
        assert deact[e] == "balance_exhausted"
    created = {kv_of(b)["tx_hash"]: kv_of(b)["escrow"] for b in bodies if b.startswith("escrow_rotation_created ")}
    repl = [kv_of(b) for b in bodies if b.startswith("escrow_depletion_replacement_created ")]
    assert len(repl) == len(created) == sm.escrow_rotations
    for r in repl:
        assert created[r["tx_hash"]] == r["new_escrow"] and re.fullmatch(r"[0-9A-F]{64}", r["tx_hash"])
        assert r["model"].startswith('"') and deact[r["old_escrow"]] == unquote(r["reason"])


def test_nonces_consumed_once_and_slot_is_host_idx(compact_text):
    lines, sm = compact_text
    seen = Counter()
    for ln in lines:
        kv = kv_of(text_body(ln)[1])
        if kv.get("stage") == "nonce_disposition":
            seen[(kv["escrow"], kv["nonce"])] += 1
        if kv.get("stage") == "race_completed":
            assert int(kv["nonce"]) % 16 == int(kv["host_idx"])
            assert sm.hosts[kv["host"]] == kv["participant"] and kv["participant"].endswith(kv["host"])
    assert seen and max(seen.values()) == 1


def test_start_and_custom_scenario(tmp_path):
    start = datetime(2026, 10, 2, 9, 0, tzinfo=UTC)
    sc = Scenario(duration=timedelta(minutes=3), requests_per_second=0.5, cpoc_windows=(),
                  preserved=("gukagan4",), rotation_enabled=False, go_microseconds=True)
    lines, sm = generate_lines(seed=5, fmt="text", start=start, scenario=sc)
    assert lines[0].startswith("2026/10/02 09:0") and re.match(rf"^{GO_TS}\.\d{{6}} ", lines[0])
    assert sm.cpoc_windows == [] and sm.ghosts_by_reason.get("poc_unavailable_host", 0) == 0
    assert sm.preserved == ("gukagan4",)
    assert "escrow_rotation_created" not in sm.events


def test_make_logs_script(tmp_path, capsys):
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        import make_logs
    finally:
        sys.path.pop(0)
    out = tmp_path / "b.log.gz"
    summ = tmp_path / "s.json"
    assert make_logs.parse_size("1GB") == 10**9 and make_logs.parse_size("64MiB") == 64 * 2**20
    assert make_logs.main([str(out), "--size", "300KB", "--seed", "1", "--format", "docker",
                           "--summary", str(summ)]) == 0
    d = json.loads(summ.read_text())
    assert d["fmt"] == "docker" and d["compressed"] and d["bytes"] >= 300_000
    assert "MB/s" in capsys.readouterr().err


def test_rotation_disabled_and_zero_capacity():
    """Rotation off: the exhaustion chain ends in ``devshard … deactivated`` + ``runtime_retired``.
    No preserved host at all: every escrow is at zero capacity during the window."""
    sc = Scenario(duration=timedelta(minutes=3), requests_per_second=0.5, escrows=2, rotation_enabled=False,
                  initial_balances=(2_000_000, 2_000_000), large_request_bytes=(400_000, 500_000),
                  large_request_at=(timedelta(seconds=5), timedelta(seconds=6)),
                  preserved=(),
                  cpoc_windows=((timedelta(seconds=60), timedelta(seconds=120)),))
    lines, sm = generate_lines(seed=1, fmt="text", scenario=sc)
    assert sm.events["devshard_deactivated"] == sm.events["runtime_retired"] == sm.escrow_exhaustions >= 1
    assert "escrow_rotation_created" not in sm.events and sm.spurious_exhaustions == sm.escrow_exhaustions
    assert sm.events["gateway_zero_capacity"] == sm.zero_capacity_429 > 0
    assert not any("stage=session_picker_ghost_probe reason=poc_unavailable_host" in ln for ln in lines)
    zc = [ln for ln in lines if " gateway: all " in ln]
    assert all(re.search(r"gateway: all \d+ candidate escrow\(s\) at zero capacity, returning 429; "
                         r"per-escrow weights: \d+=0( \d+=0)*$", ln) for ln in zc)
