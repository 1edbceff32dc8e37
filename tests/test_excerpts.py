"""Pasted excerpts without times (issue 17 item 3, gateway-logs.md 13.1): the nine lines of
the #1799 report exactly as pasted (no Go prefix, no Docker prefix) through `auditor remints`,
with a chain recording that knows escrow 80502 (built here from fixtures/remints/chain)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from auditor.sources.gatewaylog_parse import parse_line
from conftest import FIXTURES, SHARED, run_cli
from tools.recording import write_recording

INCIDENT = SHARED / "incidents" / "1799-spurious-escrow-remint.md"
_REPORT = FIXTURES / "remints" / "chain"


# the nine lines of the #1799 report, verbatim as pasted (no Go prefix, no Docker prefix);
# test_the_nine_lines_are_the_reports_own holds them to the incident file where shared/ is
NINE = [
    "request=req-1789648596464179072-1533588 stage=proxy_request_started escrow=80502 "
    "model=deepseek-ai/DeepSeek-V4-Flash-0731 stream=true input_tokens=926912",
    "request=req-1789648596464179072-1533588 stage=runner_started escrow=80502 input_tokens=926912 "
    "model=deepseek-ai/DeepSeek-V4-Flash-0731",
    'request=req-1789648596464179072-1533588 stage=runner_prepare_failed escrow=80502 error="prepare: local apply: '
    'mandatory start inference: insufficient escrow balance"',
    "escrow_balance_exhausted escrow=80502",
    "gateway_replacing_exhausted_escrow escrow=80502",
    'request=req-1789648596464179072-1533588 stage=proxy_stream_failed escrow=80502 error="prepare: local apply: '
    'mandatory start inference: insufficient escrow balance"',
    'escrow_depletion_deactivated escrow=80502 reason="balance_exhausted" deactivated_in_store=true '
    "settlement_due=false",
    'escrow_rotation_created role=regular epoch=396 model="deepseek-ai/DeepSeek-V4-Flash-0731" escrow=80620 '
    "tx_hash=0232DAC22C5AC7C545BEAEDFFF36120234D3AD4C104976618B523A66F14EF7E1",
    "escrow_depletion_replacement_created old_escrow=80502 new_escrow=80620 "
    'model="deepseek-ai/DeepSeek-V4-Flash-0731" reason="balance_exhausted" '
    "tx_hash=0232DAC22C5AC7C545BEAEDFFF36120234D3AD4C104976618B523A66F14EF7E1",
]


def chain(d: Path, *, knows: tuple[int, ...]) -> Path:
    """The #1799 fixture's chain recording with only the devshard_escrow records of ``knows``."""
    entries = []
    for f in sorted(_REPORT.glob("*.json")):
        e = json.loads(f.read_text())
        m = re.search(r"/devshard_escrow/(\d+)$", e["path"])
        if m and int(m.group(1)) not in knows:
            continue
        entries.append(e)
    return write_recording(d / "chain", entries)


def remints(tmp_path: Path, lines: list[str], knows: tuple[int, ...] = (80502,)):
    log = tmp_path / "excerpt.log"
    log.write_text("\n".join(lines) + "\n", encoding="utf-8")
    rec = chain(tmp_path, knows=knows)
    return run_cli("remints", "396", "--replay", str(rec), "--gateway-log", str(log), "--format", "json",
                   db=tmp_path / "a.duckdb")


def only_deactivation(r) -> dict:
    assert r.returncode == 0, r.stderr
    (d,) = json.loads(r.stdout)["data"]["deactivations"] if "data" in json.loads(r.stdout) \
        else json.loads(r.stdout)["deactivations"]
    return d


def test_the_nine_lines_are_the_reports_own():
    if not INCIDENT.exists():
        pytest.skip(f"{INCIDENT} is not here")
    text = INCIDENT.read_text(encoding="utf-8").splitlines()
    i = next(i for i, line in enumerate(text) if line.startswith("request=req-1789648596464179072-1533588"))
    assert text[i:i + 9] == NINE


def test_the_1799_excerpt_as_pasted_gives_the_deactivation(tmp_path):
    d = only_deactivation(remints(tmp_path, list(NINE)))
    assert (d["escrow"], d["replacement_escrow"], d["trigger"]) == (80502, 80620, "request")
    assert d["request"]["reservation"] == 92_998_400 and d["request"]["input_bytes"] == 926_912
    assert "times unknown" in d["basis"]
    assert d["at"] is None and d["timing_ms"] is None            # no stand-in time is reported
    # the balance is not known (no mint, no periodic check): unknown, never a guess
    assert d["classification"] == "unknown" and d["evidence"]["balance"]["upper_bound"] == 80_000_000
    assert any("carry no times" in m for m in d["missing"])      # recent use is unknown, not "none"


def test_order_alone_decides_then(tmp_path):
    """The failure logged after the exhaustion did not trigger it."""
    lines = list(NINE)
    swapped = [lines[0], lines[1], lines[3], lines[4], lines[2], *lines[5:]]
    d = only_deactivation(remints(tmp_path, swapped))
    assert d["request"] is None and any("runner_prepare_failed" in m for m in d["missing"])


def test_epoch_from_the_rotation_line_when_the_chain_knows_neither(tmp_path):
    """Without 80502's chain record, the replacement's epoch= places the deactivation."""
    d = only_deactivation(remints(tmp_path, list(NINE), knows=()))
    assert (d["escrow"], d["replacement_escrow"]) == (80502, 80620)
    assert d["request"]["reservation"] is None                    # no token price without the chain


def test_lines_no_epoch_places_are_missing_coverage_exit_3(tmp_path):
    lines = list(NINE)[:7]                # no rotation line, and a chain that does not know 80502
    r = remints(tmp_path, lines, knows=())
    assert r.returncode == 3, (r.returncode, r.stderr)
    out = json.loads(r.stdout)
    missing = " ".join(out["coverage"]["missing"])
    assert "excerpt.log:7 escrow_depletion_deactivated escrow=80502" in missing
    assert "excerpt.log:4 escrow_balance_exhausted escrow=80502" in missing


def test_elided_fields_cost_only_those_fields(tmp_path):
    lines = list(NINE)
    lines[6] = 'escrow_depletion_deactivated escrow=80502 reason="balance_exhausted" \u2026 settlement_due=false'
    lines[0] = lines[0].replace(" stream=true", " ...")
    d = only_deactivation(remints(tmp_path, lines))
    assert (d["escrow"], d["replacement_escrow"], d["request"]["reservation"]) == (80502, 80620, 92_998_400)
    assert d["reason"] == "balance_exhausted" and d["settlement_due"] is False


KEYS = st.from_regex(r"[a-z][a-z_]{0,8}", fullmatch=True)
VALS = st.from_regex(r"[A-Za-z0-9_./:-]{1,10}", fullmatch=True)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(KEYS, VALS), min_size=1, max_size=6), st.data())
def test_generated_elisions_drop_nothing_else(pairs, data):
    words = [f"{k}={v}" for k, v in pairs]
    cut = list(words)
    for i in sorted(data.draw(st.sets(st.integers(1, len(words)))), reverse=True):
        cut.insert(i, data.draw(st.sampled_from(["\u2026", "..."])))
    for prefix in ("escrow_depletion_deactivated ", "request=req-1 stage=race_completed "):
        assert parse_line(prefix + " ".join(cut)) == parse_line(prefix + " ".join(words))
