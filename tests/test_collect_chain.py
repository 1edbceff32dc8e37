"""End to end: `auditor collect --epoch N` against a loopback server replaying the
bundled epoch-403 recording, and the ways a source can fail."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import duckdb
import pytest

from conftest import FIXTURES, one as count, run_cli, write_recording

REC = FIXTURES / "chain" / "epoch-403"
STORY = json.loads((FIXTURES / "chain" / "epoch-403.story.json").read_text())
API = "/chain-api/productscience/inference/inference"


def counts(db: Path) -> dict[str, int]:
    tables = ["chain_epochs", "chain_params", "chain_validation_weights", "chain_ml_nodes", "chain_performance",
              "chain_excluded", "chain_cpoc_events", "chain_preserved_nodes", "chain_models",
              "chain_block_times", "coverage"]
    return {t: count(db, f"SELECT count(*) FROM {t}") for t in tables}


def copy_recording(tmp_path: Path) -> Path:
    d = tmp_path / "rec"
    shutil.copytree(REC, d)
    return d


def entry_for(rec: Path, path: str, height=None) -> Path:
    for f in sorted(rec.glob("*.json")):
        e = json.loads(f.read_text())
        if e["path"] == path and e["height"] == height:
            return f
    raise AssertionError(f"no recorded {path}")


def test_collect_replay_loads_every_table(db, record_server):
    server = record_server(REC)
    r = run_cli("collect", "--epoch", "403", "--node", server.url, "--rate", "0", db=db)
    assert r.returncode == 0, r.stderr
    c = counts(db)
    assert c["chain_epochs"] == 1 and c["chain_performance"] == 27 and c["chain_ml_nodes"] == 172
    assert c["chain_params"] == 2 and c["chain_cpoc_events"] == 1 and c["chain_block_times"] == 12
    assert count(db, "SELECT count(*) FROM coverage WHERE status <> 'ok'") == 0
    # golden values from the real snapshot (shared/data/README.md)
    assert count(db, "SELECT poc_weight_sum FROM chain_epoch_models WHERE model_id = 'MiniMaxAI/MiniMax-M2.7'") == 1_529_552
    # provenance on every row, pinned heights recorded
    assert count(db, "SELECT count(*) FROM chain_performance WHERE source_url IS NULL OR fetched_at IS NULL") == 0
    assert count(db, "SELECT height FROM chain_params WHERE purpose = 'settlement'") == 6_229_319 + 545 - 1
    assert count(db, "SELECT settled AND complete FROM chain_epochs") is True
    # every anchor-checked snapshot stored: poc_start, poc_next, cpoc:0
    assert count(db, "SELECT count(DISTINCT episode) FROM chain_preserved_nodes") == 3


def test_finished_epoch_is_not_fetched_twice_and_refresh_replaces(db, record_server):
    server = record_server(REC)
    assert run_cli("collect", "-e", "403", "--node", server.url, db=db).returncode == 0
    first = counts(db)
    served = len(server.log)
    r = run_cli("collect", "-e", "403", "--node", server.url, db=db)
    assert r.returncode == 0 and "skipped" in r.stderr
    assert len(server.log) == served  # cached: no request at all
    r = run_cli("collect", "-e", "403", "--node", server.url, "--refresh", db=db)
    assert r.returncode == 0
    assert counts(db) == first  # replaced, never duplicated


def test_429_then_200_is_retried(db, tmp_path, record_server):
    rec = copy_recording(tmp_path)
    write_recording(tmp_path / "x", [{"path": f"{API}/epoch_performance_summary/403", "status": 429,
                                      "body": {"code": 8, "message": "rate limited"}}])
    shutil.copy(tmp_path / "x" / "000001.json", rec / "000000-429.json")  # sorts first: served first
    server = record_server(rec)
    r = run_cli("collect", "-e", "403", "--node", server.url, db=db)
    assert r.returncode == 0, r.stderr
    statuses = [s for p, _, s in server.log if p.endswith("epoch_performance_summary/403")]
    assert statuses == [429, 200]
    assert count(db, "SELECT count(*) FROM chain_performance") == 27


def test_node_down_fails_over_to_the_next(db, record_server):
    server = record_server(REC)
    r = run_cli("collect", "-e", "403", "--node", "http://127.0.0.1:9", "--node", server.url, db=db)
    assert r.returncode == 0, r.stderr
    assert count(db, "SELECT count(*) FROM chain_performance") == 27
    assert count(db, "SELECT count(*) FROM chain_performance WHERE source_url NOT LIKE ?".replace("?", f"'{server.url}%'")) == 0


def test_malformed_json_is_one_clear_line_exit_3_and_the_rest_is_stored(db, tmp_path, record_server):
    rec = copy_recording(tmp_path)
    f = entry_for(rec, f"{API}/epoch_performance_summary/403")
    e = json.loads(f.read_text())
    e["body"] = e["body"][: len(e["body"]) // 2]  # truncated mid-object
    f.write_text(json.dumps(e))
    server = record_server(rec)
    r = run_cli("collect", "-e", "403", "--node", server.url, db=db)
    assert r.returncode == 3
    assert "Traceback" not in r.stderr
    assert "MISSING epoch_performance_summary" in r.stderr and "malformed JSON" in r.stderr
    assert count(db, "SELECT count(*) FROM chain_performance") == 0
    assert count(db, "SELECT count(*) FROM chain_ml_nodes") == 172
    assert count(db, "SELECT complete FROM chain_epochs") is False
    assert count(db, "SELECT status FROM coverage WHERE item = 'epoch_performance_summary'") == "missing"


def test_a_participant_listed_twice_loses_that_table_only(db, tmp_path, record_server):
    """A performance summary listing one participant twice failed the epoch's one write on the
    table's key: 'internal error', and nothing of the epoch stored."""
    rec = copy_recording(tmp_path)
    f = entry_for(rec, f"{API}/epoch_performance_summary/403")
    e = json.loads(f.read_text())
    body = json.loads(e["body"])
    body["epochPerformanceSummary"].append(dict(body["epochPerformanceSummary"][0]))
    e["body"] = json.dumps(body)
    f.write_text(json.dumps(e))
    r = run_cli("collect", "-e", "403", "--node", record_server(rec).url, db=db)
    assert r.returncode == 3 and "internal error" not in r.stderr, r.stderr
    assert "not stored: the answer lists" in r.stderr and "twice" in r.stderr
    assert count(db, "SELECT count(*) FROM chain_performance") == 0
    assert count(db, "SELECT count(*) FROM chain_ml_nodes") == 172 and count(db, "SELECT count(*) FROM chain_epochs") == 1


def test_unexpected_shape_is_missing_not_a_crash(db, tmp_path, record_server):
    rec = copy_recording(tmp_path)
    f = entry_for(rec, f"{API}/excluded_participants/403")
    e = json.loads(f.read_text())
    e["body"] = json.dumps({"items": "not a list"})
    f.write_text(json.dumps(e))
    server = record_server(rec)
    r = run_cli("collect", "-e", "403", "--node", server.url, db=db)
    assert r.returncode == 3 and "unexpected response shape" in r.stderr and "Traceback" not in r.stderr


def test_missing_epoch_is_an_error_and_nothing_is_written(db, record_server):
    server = record_server(REC)
    r = run_cli("collect", "-e", "999", "--node", server.url, db=db)
    assert r.returncode == 3
    assert "epoch 999 does not exist" in r.stderr and "Traceback" not in r.stderr
    assert count(db, "SELECT count(*) FROM chain_epochs") == 0
    assert count(db, "SELECT count(*) FROM coverage") == 0


def test_all_nodes_down_exit_3(db):
    r = run_cli("collect", "-e", "403", "--node", "http://127.0.0.1:9", "--timeout", "2", db=db)
    assert r.returncode == 3 and "no node answered" in r.stderr and "Traceback" not in r.stderr


def test_a_node_down_loses_no_log_given_beside_it(db):
    """One --epoch whose node does not answer was an error that ended the run before the log
    beside it was read: 0 lines stored. It is MISSING (exit 3) and the rest is collected."""
    log = FIXTURES / "gateway-logs" / "section12.log"
    r = run_cli("collect", "-e", "403", "--node", "http://127.0.0.1:9", "--timeout", "2", "--gateway-log", str(log),
                db=db)
    assert r.returncode == 3 and "Traceback" not in r.stderr
    assert "chain epoch 403: MISSING no node answered" in r.stderr, r.stderr
    assert count(db, "SELECT count(*) FROM log_events") == len(log.read_text().splitlines())


def test_record_then_replay_gives_the_same_store(tmp_path, record_server):
    server = record_server(REC)
    rec_dir = tmp_path / "recorded"
    db1, db2 = tmp_path / "a.duckdb", tmp_path / "b.duckdb"
    assert run_cli("collect", "-e", "403", "--node", server.url, "--record", str(rec_dir), db=db1).returncode == 0
    assert run_cli("collect", "-e", "403", "--replay", str(rec_dir / "chain"), db=db2).returncode == 0
    q = "SELECT participant, inference_count, missed_requests, rewarded_coins FROM chain_performance ORDER BY 1"
    with duckdb.connect(str(db1), read_only=True) as a, duckdb.connect(str(db2), read_only=True) as b:
        assert a.execute(q).fetchall() == b.execute(q).fetchall()


def test_locked_database_is_a_clear_message(db, record_server):
    import os

    server = record_server(REC)
    con = duckdb.connect(str(db))  # this process, a plain DuckDB client, holds the write lock
    try:
        r = run_cli("collect", "-e", "403", "--node", server.url, db=db, process=True)  # not the lock holder
    finally:
        con.close()
    assert r.returncode == 3 and "locked" in r.stderr and "Traceback" not in r.stderr
    # the holder is named as it is, not presumed to be an auditor
    assert "auditor process" not in r.stderr and f"PID {os.getpid()}" in r.stderr


def test_usage_errors_exit_2(db):
    assert run_cli("collect", "--epoch", "x", db=db).returncode == 2
    assert run_cli("collect", db=db).returncode == 2
    assert run_cli("collect", "--node", "http://127.0.0.1:9", db=db).returncode == 2
    assert run_cli("misstest", db=db).returncode == 2


@pytest.fixture
def hanging_server():
    """A TCP server that accepts connections and never answers."""
    import socket
    import threading

    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(64)
    conns = []
    stop = threading.Event()

    def accept():
        sock.settimeout(0.2)
        while not stop.is_set():
            try:
                conns.append(sock.accept()[0])
            except OSError:
                pass

    t = threading.Thread(target=accept, daemon=True)
    t.start()
    yield f"http://127.0.0.1:{sock.getsockname()[1]}"
    stop.set()
    t.join()
    for c in conns:
        c.close()
    sock.close()


def test_a_node_that_times_out_is_failed_over_and_then_asked_last(db, hanging_server, record_server):
    server = record_server(REC)
    r = run_cli("collect", "-e", "403", "--node", hanging_server, "--node", server.url, "--timeout", "0.5", db=db)
    assert r.returncode == 0, r.stderr
    assert count(db, "SELECT count(*) FROM chain_performance") == 27


def test_only_node_times_out_exit_3(db, hanging_server):
    r = run_cli("collect", "-e", "403", "--node", hanging_server, "--timeout", "0.3", db=db)
    assert r.returncode == 3 and "timed out" in r.stderr and "Traceback" not in r.stderr
    assert count(db, "SELECT count(*) FROM chain_epochs") == 0


@pytest.mark.parametrize("answer, why", [
    ({"found": True, "snapshot": {"episode_anchor_height": "6213928", "model_preserved_nodes": []}},
     "anchor 6213928 at height 6218235, expected 6218215"),
    ({"found": False}, "no snapshot at height 6218235"),
])
def test_preserved_snapshot_of_another_episode_is_not_stored(db, tmp_path, record_server, answer, why):
    rec = copy_recording(tmp_path)
    f = entry_for(rec, f"{API}/preserved_nodes_snapshot", height=6218235)  # G of cpoc:0
    e = json.loads(f.read_text())
    e["body"] = json.dumps(answer)
    f.write_text(json.dumps(e))
    server = record_server(rec)
    r = run_cli("collect", "-e", "403", "--node", server.url, db=db)
    assert r.returncode == 3 and why in r.stderr
    assert count(db, "SELECT count(*) FROM chain_preserved_nodes WHERE episode = 'cpoc:0'") == 0
    assert count(db, "SELECT count(DISTINCT episode) FROM chain_preserved_nodes") == 2
    assert count(db, "SELECT detail FROM coverage WHERE item = 'preserved_nodes_snapshot cpoc:0'") == why


def test_an_unexpected_error_keeps_what_was_fetched(tmp_path, record_server):
    """A step that fails in a way nothing anticipated is recorded as missing (with the
    error, credentials redacted); what the other steps fetched is stored."""
    from auditor.progress import Progress
    from auditor.sources import chain
    from auditor.sources.http import JsonClient
    from auditor.store import Store

    class Flaky(JsonClient):
        def get(self, path, params=None, *, height=None):
            if path.endswith("/confirmation_poc_events/403"):
                raise RuntimeError("boom at http://user:hunter2@node.example/x")
            return super().get(path, params, height=height)

    server = record_server(REC)
    db = tmp_path / "s.duckdb"
    with Store(db) as store, Flaky([server.url], rate_per_min=0) as client:
        report = chain.collect_epoch(store, client, 403, Progress(quiet=True))
    assert not report.complete
    assert count(db, "SELECT count(*) FROM chain_performance") == 27
    assert count(db, "SELECT count(*) FROM chain_ml_nodes") == 172
    assert count(db, "SELECT complete FROM chain_epochs") is False
    status, detail = count(db, "SELECT status, detail FROM coverage WHERE item = 'confirmation_poc_events'")
    assert status == "missing" and detail.startswith("internal error RuntimeError: boom")
    assert "hunter2" not in detail


def test_a_recording_of_a_node_without_an_epoch_names_what_was_given(db):
    """`collect --replay DIR` (a node's recording, no --epoch) said `--node needs --epoch N`, a
    flag the user had not typed."""
    r = run_cli("collect", "--replay", str(REC), db=db)
    assert r.returncode == 2
    assert r.stderr.strip().splitlines()[-1].startswith(
        "auditor: error: --node (or a --replay recording of a node) needs --epoch N"), r.stderr
