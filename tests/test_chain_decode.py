"""Decoding of chain wire formats: real recorded responses, Decimals, big integers,
absent and null fields, unknown fields, the v0.2.15 dual shapes; height arithmetic."""

from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path

import pytest
from hypothesis import given, strategies as st

from auditor.heights import EpochParams, cpoc_windows, epoch_boundaries
from auditor.sources import chain
from auditor.sources.http import Response, TokenBucket

from conftest import FIXTURES

RECORDED = FIXTURES / "chain" / "recorded-mainnet-2025"


def resp(data) -> Response:
    return Response(data, "http://node/x", 200, None, None)


@pytest.mark.parametrize("path", sorted(RECORDED.glob("epoch_performance_summary_*.json")), ids=lambda p: p.name)
def test_real_performance_summaries_decode(path: Path):
    raw = json.loads(path.read_text())
    s = chain.decode(chain.PerformanceSummaryOne, resp(raw)).summary
    body = raw["epochPerformanceSummary"]
    assert s.participant_id == body["participant_id"]
    assert s.inference_count == int(body["inference_count"])
    assert s.rewarded_coins == int(body["rewarded_coins"])
    assert s.claimed is body["claimed"]


def test_epoch53_values_exact():
    raw = json.loads((RECORDED / "epoch_performance_summary_53_gonka14cu38x.json").read_text())
    s = chain.decode(chain.PerformanceSummaryOne, resp(raw)).summary
    assert (s.epoch_index, s.inference_count, s.missed_requests) == (53, 831, 24)
    assert s.rewarded_coins == 48552031736571


def test_absent_null_and_unknown_fields_default():
    raw = {"epochPerformanceSummary": [{"participant_id": "gonka1x", "inference_count": "5",
                                         "missed_requests": None, "brand_new_field": {"a": 1}}]}
    s = chain.decode(chain.PerformanceSummaryList, resp(raw)).summaries[0]
    assert (s.inference_count, s.missed_requests, s.claimed, s.rewarded_coins) == (5, 0, False, 0)


def test_uint64_max_stays_exact():
    raw = {"epoch_group_data": {"total_weight": "18446744073709551615", "validation_weights": None}}
    g = chain.decode(chain.EpochGroupDataResponse, resp(raw)).epoch_group_data
    assert g.total_weight == 2**64 - 1 and g.validation_weights == []


@given(value=st.integers(-(2**63), 2**63 - 1), exponent=st.integers(-18, 18))
def test_decimal_wire_form_is_exact(value, exponent):
    d = chain.to_decimal({"value": str(value), "exponent": exponent})
    assert d == Decimal(f"{value}E{exponent}")  # scientific notation: built independently of scaleb


def test_decimal_examples_from_the_spec():
    assert chain.to_decimal({"value": "1", "exponent": -1}) == Decimal("0.1")
    assert chain.to_decimal({"value": "-475", "exponent": -6}) == Decimal("-0.000475")
    assert chain.to_decimal(None) is None


def test_a_bad_shape_is_a_source_error_naming_the_field():
    from auditor.errors import SourceError

    with pytest.raises(SourceError, match="validation_weights"):
        chain.decode(chain.EpochGroupDataResponse, resp({"epoch_group_data": {"validation_weights": "nope"}}))


@pytest.mark.parametrize("shape", ["restored", "v0.2.15"])
def test_dapi_latest_both_shapes(shape):
    if shape == "restored":
        raw = {"block_height": 6300000, "latest_epoch": {"index": 405, "poc_start_block_height": 6244710},
               "epoch_params": {"epoch_length": 15391, "poc_stage_duration": 60},
               "active_confirmation_poc_event": None}
    else:
        raw = {"block_height": "6300000", "latest_epoch": {"index": "405", "poc_start_block_height": "6244710"},
               "epoch_params": {"epoch_params": {"epoch_length": "15391", "poc_stage_duration": "60"}}}
    d = chain.decode(chain.DapiLatestEpoch, resp(raw))
    assert d.block_height == 6300000 and d.latest_epoch.index == 405
    assert d.epoch_params.epoch_length == 15391 and d.epoch_params.poc_stage_duration == 60
    assert d.active_confirmation_poc_event is None


def test_block_time_keeps_nanoseconds_in_text_and_microseconds_in_value():
    raw = {"jsonrpc": "2.0", "id": -1, "result": {"block": {"header": {"height": "7", "time": "2026-09-30T11:02:17.482913577Z"}}}}
    b = chain.decode(chain.BlockResponse, resp(raw))
    t = chain.parse_block_time(b.header.time)
    assert (t.hour, t.minute, t.second, t.microsecond) == (11, 2, 17, 482913)
    assert chain.parse_block_time("2026-09-30T11:02:17Z").microsecond == 0


MAINNET = EpochParams(epoch_length=15391, poc_stage_duration=60, poc_validation_delay=5,
                      poc_validation_duration=480, set_new_validators_delay=120, inference_validation_cutoff=20)


def test_epoch_heights_match_the_spec_example():
    b = epoch_boundaries(5_552_115, 5_552_115 + 15391, MAINNET)
    assert b["V(N)"] == 5_552_660 and b["SNV(N)"] == 5_552_780 and b["S(N+1)"] == 5_567_506


def test_cpoc_windows():
    w = cpoc_windows(1000, MAINNET)
    assert (w.gen_start, w.gen_end, w.exchange_end, w.val_start, w.val_end) == (1020, 1079, 1079, 1084, 1563)
    zero_cutoff = cpoc_windows(1000, EpochParams(1, 10, 0, 5, 0, 0, 0))
    assert zero_cutoff.gen_start == 1001  # max(cutoff, 1)


class FakeClock:
    def __init__(self):
        self.t = 0.0

    def __call__(self):
        return self.t

    def sleep(self, s):
        self.t += s


def test_token_bucket_allows_the_burst_then_the_rate():
    clock = FakeClock()
    b = TokenBucket(20, burst=200, clock=clock, sleep=clock.sleep)
    for _ in range(200):
        b.take()
    assert clock.t == 0.0
    for _ in range(20):
        b.take()
    assert clock.t == pytest.approx(60.0)  # 20 more per minute after the burst


def test_token_bucket_rate_zero_is_unlimited():
    clock = FakeClock()
    b = TokenBucket(0, clock=clock, sleep=clock.sleep)
    for _ in range(1000):
        b.take()
    assert clock.t == 0.0


@pytest.mark.parametrize("value, seconds", [
    ("3", 3.0), ("0.5", 0.5), ("120", 60.0), ("0", 0.0),
    ("-5", None), ("nan", None), ("NaN", None), ("inf", None), ("-inf", None), ("1e999", None),
    ("soon", None), ("", None), (None, None),
    ("Tue, 01 Dec 2026 08:00:30 GMT", 30.0), ("Tue, 01 Dec 2026 07:59:00 GMT", 0.0),
])
def test_retry_after_values(value, seconds):
    from datetime import datetime, timezone

    from auditor.sources.http import retry_after

    now = datetime(2026, 12, 1, 8, 0, 0, tzinfo=timezone.utc)
    assert retry_after(value, now) == seconds


@given(st.one_of(st.text(max_size=45), st.from_regex(r"-?[0-9]{1,40}", fullmatch=True),
                 st.integers(), st.floats(allow_nan=False), st.booleans()))
def test_wire_int_reads_the_wire_decimal_form_only(v):
    """Every integer from outside goes through wire_int: a JSON integer, or ASCII digits with an
    optional minus sign; anything int() would also read ("7_5", "٧٥", " 7", "+7") is refused."""
    import re

    from auditor.sources.wire_int import wire_int

    expected = v if isinstance(v, int) and not isinstance(v, bool) else \
        int(v) if isinstance(v, str) and len(v) <= 40 and re.fullmatch(r"-?[0-9]+", v, re.ASCII) else None
    try:
        got = wire_int(v)
    except ValueError:
        assert expected is None, v
    else:
        assert got == expected and type(got) is int, v


@pytest.mark.parametrize("text", ["0_1", "\u0660.\u0661", " 0.1", "0.1 ", "+0.1", "1e", ".5", "NaN", "Infinity"])
def test_a_decimal_not_in_decimal_digits_is_refused(text):
    """Decimal() reads "0_1" and Arabic-Indic digits as numbers; the wire writes neither."""
    with pytest.raises(ValueError):
        chain.to_decimal(text)


@pytest.mark.parametrize("text, value", [("0.400000000000000000", Decimal("0.4")), ("-3", Decimal(-3)),
                                         ("1e-3", Decimal("0.001"))])
def test_a_decimal_in_decimal_digits_is_read(text, value):
    assert chain.to_decimal(text) == value
