"""The .gz reader (auditor/sources/gatewaylog_gzip.py) against gzip itself: every member whole,
once, in order, whatever the members' sizes and the reader's step."""

from __future__ import annotations

import gzip
import io
import zlib

import pytest
from hypothesis import given, settings, strategies as st

from auditor.sources.gatewaylog_gzip import GZIP_MAGIC, MaybeGzip, gunzip
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


# -- a gzip stream on stdin (`cat app.log.gz | auditor collect --gateway-log -`) -------------------
@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=3000).filter(lambda b: not b.startswith(GZIP_MAGIC)), st.sampled_from([1, 2, 7, 1 << 10]))
def test_a_plain_stream_passes_as_it_is(data, step):
    """Bytes that do not start as gzip does (a leading 0x1f alone included) pass unchanged."""
    chunks = list(MaybeGzip(io.BytesIO(data), step).chunks())
    assert b"".join(c for c, _ in chunks) == data and all(done for _, done in chunks)


@settings(max_examples=200, deadline=None)
@given(st.lists(MEMBER, min_size=1, max_size=4), st.sampled_from([1, 2, 7, 1 << 10]), st.integers(0, 3))
def test_a_gzip_stream_is_its_members_uncompressed(members, step, cut):
    """Whole members: every byte, each member's last ones verified; a stream cut inside its last
    member: what the verified members hold, and the damage said."""
    data = b"".join(gzip.compress(m) for m in members)
    data = data[:len(data) - cut]
    source = MaybeGzip(io.BytesIO(data), step)
    chunks = list(source.chunks())
    assert source.gzip
    verified, n = 0, 0
    for c, done in chunks:
        n += len(c)
        verified = n if done else verified
    whole = members if not cut else members[:-1]
    assert verified == sum(map(len, whole)) and b"".join(c for c, _ in chunks)[:verified] == b"".join(whole)
    assert (source.damage is None) == (cut == 0)


def test_gzip_on_stdin_is_read_as_its_lines_and_a_damaged_member_is_not_stored(tmp_path):
    """`cat section12.log.gz | auditor collect --gateway-log -`: every line was rejected as
    invalid UTF-8 (exit 0, nothing stored). Now its 81 lines are stored, as from the .gz; the
    plain file on stdin after it is the same content, skipped; a stream whose second member is
    cut stores the first member's lines alone and says so (exit 3)."""
    from conftest import FIXTURES

    logs = FIXTURES / "gateway-logs"
    db = tmp_path / "a.duckdb"
    r = run_cli("collect", "--gateway-log", "-", db=db, stdin=(logs / "section12.log.gz").read_bytes())
    err = r.stderr.decode()
    assert r.returncode == 0 and "loaded log_events 81" in err and "rejected" not in err, err
    ref = tmp_path / "ref.duckdb"
    assert run_cli("collect", "--gateway-log", str(logs / "section12.log.gz"), db=ref).returncode == 0
    rows = "SELECT line_no, kind, name, request, escrow, nonce, host, fields::VARCHAR FROM log_events ORDER BY ALL"
    assert q(db, rows) == q(ref, rows)
    r = run_cli("collect", "--gateway-log", "-", db=db, stdin=(logs / "section12.log").read_bytes())
    assert r.returncode == 0 and "same content as read before" in r.stderr.decode(), r.stderr
    first, second = b"2026/09/30 11:00:00 escrow_balance_exhausted escrow=1\n", b"".join(
        f"2026/09/30 11:00:{i % 60:02d} escrow_balance_exhausted escrow={i}\n".encode() for i in range(2, 500))
    cut = gzip.compress(first) + gzip.compress(second)[:-30]
    r = run_cli("collect", "--gateway-log", "-", db=tmp_path / "b.duckdb", stdin=cut)
    assert r.returncode == 3 and "MISSING stdin (gzip): damaged gzip (gzip member 2:" in r.stderr.decode(), r.stderr
    assert q(tmp_path / "b.duckdb", "SELECT escrow FROM log_events") == [(1,)]


def test_a_plain_log_named_gz_is_read_and_a_damaged_gz_is_still_said(tmp_path):
    """A plain log named .gz was taken for gzip by its name: 'damaged gzip', nothing stored,
    exit 3. It is read as the text it is; a .gz whose bytes are neither gzip nor text is still
    a damaged gzip."""
    from conftest import FIXTURES

    plain = tmp_path / "p.gz"
    plain.write_bytes((FIXTURES / "gateway-logs" / "section12.log").read_bytes())
    r = run_cli("collect", "--gateway-log", str(plain), db=tmp_path / "a.duckdb")
    assert r.returncode == 0 and "loaded log_events 81" in r.stderr, r.stderr
    cut = tmp_path / "d.gz"
    cut.write_bytes((FIXTURES / "gateway-logs" / "section12.log.gz").read_bytes()[20:])
    r = run_cli("collect", "--gateway-log", str(cut), db=tmp_path / "b.duckdb")
    assert r.returncode == 3 and "damaged gzip" in r.stderr, r.stderr


def test_an_empty_stdin_is_missing_not_a_log_of_no_lines(tmp_path):
    """`docker logs gw | auditor collect --gateway-log -` whose docker call failed: an empty
    stdin was stored as a log of 0 lines, exit 0 (and the next empty one 'same content as read
    before'). It is said MISSING, exit 3, and nothing is stored."""
    db = tmp_path / "a.duckdb"
    for _ in range(2):
        r = run_cli("collect", "--gateway-log", "-", db=db, stdin=b"")
        assert r.returncode == 3 and "MISSING stdin: empty" in r.stderr.decode(), r.stderr
    assert q(db, "SELECT count(*) FROM log_files") == [(0,)]
