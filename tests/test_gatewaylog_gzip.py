"""The .gz reader (auditor/sources/gatewaylog_gzip.py) against gzip itself: every member whole,
once, in order, whatever the members' sizes and the reader's step."""

from __future__ import annotations

import gzip
import io
import zlib

import pytest
from hypothesis import given, settings, strategies as st

from auditor.sources.gatewaylog_gzip import gunzip
from conftest import run_cli, q

# members of text (compressible: one of a few kB can decompress past any step), random bytes,
# and empty ones
MEMBER = st.one_of(st.binary(max_size=3000),
                   st.tuples(st.binary(min_size=1, max_size=40), st.integers(1, 5000)).map(lambda t: t[0] * t[1]),
                   st.just(b""))


@settings(max_examples=200, deadline=None)
@given(st.lists(MEMBER, min_size=1, max_size=6), st.sampled_from([1 << 6, 1 << 10, 1 << 14, 1 << 20]),
       st.integers(0, 3))
def test_every_member_is_decompressed_once_in_order(members, step, padding):
    """A member whose output the step cuts, ending in the same call: the bytes after it were fed
    twice (unused_data and unconsumed_tail hold the same ones then)."""
    data = b"".join(gzip.compress(m) + b"\0" * padding for m in members)
    chunks = list(gunzip(io.BytesIO(data), step))
    assert b"".join(c for c, _ in chunks) == b"".join(members) == gzip.decompress(data)
    assert sum(1 for _, done in chunks if done) == len(members)


def test_a_gz_of_two_members_the_first_past_a_mebibyte_stores_each_line_once(tmp_path):
    """`gzip` of the first part, `gzip` of the rest, concatenated (logrotate's and `cat a.gz b.gz`'s
    shape): 2,000 of 35,736 lines were stored twice, one such file decoded without end, and
    `cat x.gz x.gz` was called damaged."""
    lines = [f"2026/09/30 11:{i // 3600 % 60:02d}:{i // 60 % 60:02d} escrow_balance_low escrow={i} balance=5 "
             f"threshold=1000000 — deactivating\n".encode() for i in range(40_000)]
    first, rest = b"".join(lines[:38_000]), b"".join(lines[38_000:])
    assert len(first) > (1 << 20)
    log = tmp_path / "two.log.gz"
    log.write_bytes(gzip.compress(first) + gzip.compress(rest))
    r = run_cli("collect", "--gateway-log", str(log), db=tmp_path / "a.duckdb")
    assert r.returncode == 0 and "loaded log_events 40000" in r.stderr, r.stderr
    assert q(tmp_path / "a.duckdb", "SELECT count(*), count(DISTINCT line_no) FROM log_events") == [(40_000, 40_000)]
    twice = tmp_path / "twice.log.gz"
    twice.write_bytes(log.read_bytes() * 2)
    r = run_cli("collect", "--gateway-log", str(twice), db=tmp_path / "b.duckdb")
    assert r.returncode == 0 and "loaded log_events 80000" in r.stderr, r.stderr


@pytest.mark.parametrize("cut", [1, 20])
def test_a_truncated_member_is_still_an_error(cut):
    data = gzip.compress(b"x" * 100_000) + gzip.compress(b"y" * 10)
    with pytest.raises((EOFError, zlib.error)):
        list(gunzip(io.BytesIO(data[:-cut]), 1 << 10))
