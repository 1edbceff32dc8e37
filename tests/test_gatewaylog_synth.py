"""The typed log views against the synthetic generator's ground truth (tools.synth):
the same compact scenario written as Go-prefixed text and as slog JSON, read through the
CLI, must give exactly the counts the generator says it wrote."""

from __future__ import annotations


import duckdb
import pytest

from tools.synth import write_excerpt
from conftest import run_cli


@pytest.fixture(scope="module")
def synth(tmp_path_factory):
    d = tmp_path_factory.mktemp("synth")
    sums = {fmt: write_excerpt(d / f"{fmt}.log", fmt, seed=11) for fmt in ("text", "json")}
    db = d / "a.duckdb"
    r = run_cli("collect", "--gateway-log", str(d / "text.log"), "--gateway-log", str(d / "json.log"), db=db)
    assert r.returncode == 0, r.stderr
    con = duckdb.connect(str(db), read_only=True)
    ids = dict(con.execute("SELECT regexp_extract(path, '(\\w+)\\.log$', 1), file_id FROM log_files").fetchall())
    yield con, ids, sums
    con.close()


@pytest.mark.parametrize("fmt", ["text", "json"])
def test_views_match_ground_truth(synth, fmt):
    con, ids, sums = synth
    sm, fid = sums[fmt], ids[fmt]

    def one(sql):
        return con.execute(sql, [fid]).fetchone()

    def counts(sql):
        return dict(con.execute(sql, [fid]).fetchall())

    assert one("SELECT lines FROM log_files WHERE file_id = ?")[0] == sm.lines
    assert counts("SELECT name, count(*) FROM log_events WHERE file_id = ? AND kind = 'stage' GROUP BY 1") == sm.stages
    assert counts("SELECT name, count(*) FROM log_events WHERE file_id = ? AND kind = 'event' GROUP BY 1") == sm.events
    assert counts("SELECT reason, lines FROM log_rejects WHERE file_id = ?") == {"not_gateway": sm.noise_lines}
    att = one("SELECT count(*), count(*) FILTER (winner), count(*) FILTER (suppressed_loser), "
              "count(*) FILTER (suppressed_loser AND role = 'primary'), count(*) FILTER (probe), "
              "count(*) FILTER (NOT finished), sum(usage_tokens) FILTER (suppressed_loser) "
              "FROM log_attempts WHERE file_id = ?")
    assert att == (sm.attempts, sm.winners, sm.suppressed_losers, sm.suppressed_primaries, sm.probes,
                   sm.failed_attempts, sm.suppressed_loser_tokens)
    assert counts("SELECT decision, count(*) FROM log_hedge_decisions WHERE file_id = ? GROUP BY 1") == sm.decisions
    assert counts("SELECT reason, count(*) FROM log_ghosts WHERE file_id = ? GROUP BY 1") == sm.ghosts_by_reason
    assert counts("SELECT gate_event, count(*) FROM log_phase_gate WHERE file_id = ? GROUP BY 1") == sm.phase_gate_events
    assert counts("SELECT reason, count(*) FROM log_escrow_events WHERE file_id = ? "
                  "AND event = 'escrow_depletion_replacement_created' GROUP BY 1") == sm.replacements_by_reason
    assert one("SELECT count(*) FILTER (event = 'escrow_rotation_created'), "
               "count(*) FILTER (event = 'escrow_balance_exhausted') FROM log_escrow_events WHERE file_id = ?") == \
        (sm.escrow_rotations, sm.escrow_exhaustions)
    lim = counts("SELECT source, count(*) FROM log_limiter_rejections WHERE file_id = ? GROUP BY 1")
    assert (lim.get("limiter", 0), lim.get("zero_capacity", 0)) == (sm.limiter_rejected, sm.zero_capacity_429)
    req = con.execute("SELECT count(*) FILTER (input_tokens_est IS NOT NULL), count(*) FILTER (outcome = 'succeeded'), "
                      "count(*) FILTER (outcome = 'failed') FROM log_requests").fetchone()
    assert req == (sm.requests, sm.requests_succeeded, sm.requests_failed)
    labels = dict(con.execute("SELECT label, address FROM log_host_labels WHERE status = 'resolved'").fetchall())
    assert labels and all(sm.hosts[k] == v for k, v in labels.items())


def test_formats_store_the_same_events(synth):
    con, ids, _ = synth
    q = ("SELECT line_no, kind, name, request, escrow, nonce, host, epoch_us(ts) // 1000000 FROM log_events "
         "WHERE file_id = ? ORDER BY line_no")
    assert con.execute(q, [ids["text"]]).fetchall() == con.execute(q, [ids["json"]]).fetchall()
