"""Lines a new log shares with a stored one (auditor/sources/gatewaylog_overlap.py): an export
that overlaps an earlier one, through the CLI. Each was stored twice before: every count over
the shared lines doubled, exit 0 and nothing said."""

from __future__ import annotations

import gzip
from collections import Counter
from pathlib import Path

import pytest
from hypothesis import given, settings, strategies as st

from conftest import FIXTURES, q, run_cli

LINES = gzip.decompress((FIXTURES / "demo-epoch-403" / "gateway.log.gz").read_bytes()).splitlines(keepends=True)
ROW = "SELECT ts, kind, name, request, escrow, nonce, host, fields::VARCHAR FROM log_events"


def rows(db: Path) -> Counter:
    return Counter(q(db, ROW))


def collect_stdin(db: Path, data: bytes) -> str:
    r = run_cli("collect", "--gateway-log", "-", db=db, stdin=data)
    assert r.returncode == 0, r.stderr
    return r.stderr.decode()


@pytest.fixture(scope="module")
def whole(tmp_path_factory) -> Counter:
    db = tmp_path_factory.mktemp("whole") / "w.duckdb"
    collect_stdin(db, b"".join(LINES))
    return rows(db)


def test_a_re_export_that_overlaps_the_first_stores_each_line_once(whole, tmp_path):
    """`docker logs gw |` twice, the second after the oldest 5,000 lines were dropped: lines
    5,001-20,000 were stored twice (50,736 rows for 35,736 lines; a cPoC window's peak in flight
    doubled). The second stores only what follows, and says which lines it did not store."""
    db = tmp_path / "o.duckdb"
    collect_stdin(db, b"".join(LINES[:20_000]))
    err = collect_stdin(db, b"".join(LINES[5_000:]))
    assert "its lines 1–15,000 are lines 5,001–20,000 of stdin:" in err, err
    assert rows(db) == whole


@pytest.mark.parametrize("first, second", [("file", "stdin"), ("stdin", "gz"), ("file", "tail")])
def test_the_same_lines_under_another_name_are_stored_once(tmp_path, first, second):
    """A file, then the same content on stdin; stdin, then a .gz of it; a file, then a file of
    its last lines: each was stored again whole."""
    log = tmp_path / "x.log"
    log.write_bytes(b"".join(LINES[:2_000]))
    gz = tmp_path / "x.log.gz"
    gz.write_bytes(gzip.compress(log.read_bytes()))
    tail = tmp_path / "tail.log"
    tail.write_bytes(b"".join(LINES[1_500:2_000]))
    db = tmp_path / "a.duckdb"
    if first == "file":
        assert run_cli("collect", "--gateway-log", str(log), db=db).returncode == 0
    else:
        collect_stdin(db, log.read_bytes())
    if second == "stdin":
        collect_stdin(db, log.read_bytes())
    else:
        r = run_cli("collect", "--gateway-log", str(gz if second == "gz" else tail), db=db)
        assert r.returncode == 0 and "stored already" in r.stderr, r.stderr
    assert q(db, "SELECT count(*) FROM log_events") == [(2_000,)]


def test_logs_that_share_a_few_lines_by_chance_are_both_stored(tmp_path):
    """Two gateways log the same chain phase-gate line at the same second, then their own
    lines: a run of fewer than 20 alike lines is no overlap, and nothing is left out."""
    gate = b"2026/09/23 00:03:36 chain phase gate: phase active reason=confirmation_poc epoch=403\n"
    a, b = tmp_path / "a.log", tmp_path / "b.log"
    a.write_bytes(gate + b"".join(LINES[:300]))
    b.write_bytes(gate + b"".join(LINES[300:600]))
    db = tmp_path / "c.duckdb"
    for f in (a, b):
        r = run_cli("collect", "--gateway-log", str(f), db=db)
        assert r.returncode == 0 and "stored already" not in r.stderr, r.stderr
    assert q(db, "SELECT count(*) FROM log_events") == [(602,)]


@settings(max_examples=12, deadline=None)
@given(st.integers(0, 400), st.integers(1, 400), st.integers(0, 400), st.integers(1, 400))
def test_two_exports_store_their_union_when_the_second_begins_inside_the_first(tmp_path_factory, a, n, skip, m):
    """Lines [a, a+n) then [b, b+m), b = a + skip: when b falls inside the first and at least 20
    lines follow in both, the store holds the union of the two ranges, each line once;
    otherwise both whole (a shorter run is no proof of an overlap), unless the second starts
    with all of the first (stdin's own rule: read after where the first ended)."""
    b, first_end = a + skip, a + n
    db = tmp_path_factory.mktemp("prop") / "p.duckdb"
    collect_stdin(db, b"".join(LINES[a:first_end]))
    collect_stdin(db, b"".join(LINES[b:b + m]))
    shared = max(0, min(first_end, b + m) - b) if b < first_end else 0
    # the stdin rules before this one: the same stream again, or one that starts with all of it
    once = shared >= 20 or (b == a and m >= n)
    want = Counter()
    for lo, hi in ((a, first_end), (b + (shared if once else 0), b + m)):
        want += Counter(ROW_OF[i] for i in range(lo, hi))
    assert rows(db) == want


ROW_OF: list = []


@pytest.fixture(autouse=True, scope="module")
def _rows_of_lines(tmp_path_factory):
    """Each of the first 1,200 lines' row, as a store holds it (lines that repeat are kept apart)."""
    db = tmp_path_factory.mktemp("each") / "e.duckdb"
    collect_stdin(db, b"".join(LINES[:1_200]))
    ROW_OF[:] = q(db, ROW + " ORDER BY line_no")
    assert len(ROW_OF) == 1_200
