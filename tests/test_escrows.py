"""The escrow-record collector (auditor/sources/escrows.py) over real loopback HTTP:
found, not found, settled records cached and never probed again, a node error."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest

from auditor.progress import Progress
from auditor.sources import escrows
from auditor.sources.http import JsonClient
from auditor.sources.gatewaylog import ingest
from auditor.store import Store, utcnow
from conftest import write_recording
from test_faults_net import gateway  # noqa: F401  (fixtures)
from test_http_hostile import hostile, send  # noqa: F401

API = "/chain-api/productscience/inference/inference"
DS = "deepseek-ai/DeepSeek-V4-Flash-0731"


def escrow_body(eid: int, *, settled: bool, amount: int = 80_000_000, price: int = 100) -> dict:
    return {"escrow": {"id": str(eid), "creator": "gonka1gatewaykey", "amount": str(amount),
                       "slots": [f"gonka1host{i:02d}" for i in range(16)], "epoch_index": "396",
                       "app_hash": "q83vEjRWeJA=", "settled": settled, "token_price": str(price),
                       "model_id": DS, "fee_per_nonce": "0", "validation_rate": 0},
            "found": True}


def log_with(tmp_path: Path, ids: list[int]) -> Path:
    log = tmp_path / "gw.log"
    lines = [f"2026/09/17 08:00:{i:02d} escrow_balance_exhausted escrow={e}" for i, e in enumerate(ids)]
    log.write_text("\n".join(lines) + "\n")
    return log


@pytest.fixture
def store(tmp_path):
    with Store(tmp_path / "a.duckdb") as s:
        yield s


def probe(store: Store, url: str):
    with JsonClient([url], rate_per_min=0, retries=1, backoff=0.01) as c:
        return escrows.collect(store, c, Progress(quiet=True))


def served(server, eid: int) -> int:
    return sum(1 for p, _, _ in server.log if p.endswith(f"/devshard_escrow/{eid}"))


def test_found_not_found_and_settled_records_are_cached(tmp_path, store, record_server):
    ingest(store, [str(log_with(tmp_path, [80502, 80620, 99999]))], Progress(quiet=True))
    rec = write_recording(tmp_path / "rec", [
        {"path": f"{API}/devshard_escrow/80502", "body": escrow_body(80502, settled=True)},
        {"path": f"{API}/devshard_escrow/80620", "body": escrow_body(80620, settled=False, amount=1_000_000_000)},
        {"path": f"{API}/devshard_escrow/99999", "body": {"found": False}},
    ])
    server = record_server(rec)
    report = probe(store, server.url)
    assert report.complete and report.loaded == {"chain_escrows": 3}
    rows = {r["escrow_id"]: r for r in store.rows("SELECT * FROM chain_escrows")}
    assert rows[80502]["found"] and rows[80502]["settled"] and rows[80502]["amount"] == 80_000_000
    assert rows[80502]["token_price"] == 100 and rows[80502]["epoch_index"] == 396
    assert rows[80502]["model_id"] == DS and len(rows[80502]["slots"]) == 16
    assert rows[80502]["source_url"].endswith("/devshard_escrow/80502") and rows[80502]["fetched_at"]
    assert rows[99999]["found"] is False and rows[99999]["amount"] is None  # unknown, not zero
    cov = {r["item"]: r for r in store.rows("SELECT * FROM coverage WHERE source = 'chain_escrows'")}
    assert {c["status"] for c in cov.values()} == {"ok"} and len(cov) == 3
    assert cov["devshard_escrow/80502"]["epoch"] == 396

    # second run: the settled one is never asked again; the unsettled one is; the id above the
    # largest found one (may not exist yet) is, once its wait is over (issue 35: not every run)
    report = probe(store, server.url)
    assert served(server, 80502) == 1
    assert served(server, 80620) == 2 and served(server, 99999) == 1
    assert report.skipped == ["2 escrow record(s) final in the store, waiting, or of other epochs: "
                              "not probed this run"] and report.complete
    assert store.one("SELECT count(*) FROM chain_escrows")[0] == 3  # replaced, never duplicated
    store.con.execute("UPDATE escrow_probes SET next_at = next_at - INTERVAL 1 HOUR WHERE escrow_id = 99999")
    probe(store, server.url)
    assert served(server, 80502) == 1 and served(server, 99999) == 2
    assert store.one("SELECT probes, outcome FROM escrow_probes WHERE escrow_id = 99999") == (2, "not_found")


def test_not_found_below_a_found_id_was_pruned_and_is_not_probed_again(tmp_path, store, record_server):
    ingest(store, [str(log_with(tmp_path, [70001, 80502]))], Progress(quiet=True))
    server = record_server(write_recording(tmp_path / "rec", [
        {"path": f"{API}/devshard_escrow/70001", "body": {"found": False}},
        {"path": f"{API}/devshard_escrow/80502", "body": escrow_body(80502, settled=False)},
    ]))
    probe(store, server.url)
    probe(store, server.url)
    assert served(server, 70001) == 1  # existed (ids are sequential) and was pruned: gone for good
    assert served(server, 80502) == 2


def test_node_error_is_missing_coverage_and_keeps_the_others(tmp_path, store, record_server):
    ingest(store, [str(log_with(tmp_path, [80502, 80620]))], Progress(quiet=True))
    server = record_server(write_recording(tmp_path / "rec", [
        {"path": f"{API}/devshard_escrow/80502", "body": escrow_body(80502, settled=False)},
        {"path": f"{API}/devshard_escrow/80620", "status": 500, "body": {"code": 13, "message": "internal"}},
    ]))
    report = probe(store, server.url)
    assert not report.complete and len(report.missing) == 1 and "80620" in report.missing[0]
    assert [r[0] for r in store.con.execute("SELECT escrow_id FROM chain_escrows").fetchall()] == [80502]
    cov = store.rows("SELECT item, status, detail FROM coverage WHERE source = 'chain_escrows' ORDER BY item")
    assert cov[0]["status"] == "ok" and cov[1]["status"] == "missing" and "HTTP 500" in cov[1]["detail"]
    # the failed one is asked again next time, and its coverage row replaced, not duplicated
    probe(store, server.url)
    assert served(server, 80620) > 1
    assert store.one("SELECT count(*) FROM coverage WHERE item = 'devshard_escrow/80620'")[0] == 1


def test_404_is_not_found_as_the_chain_docs_say(tmp_path, store, record_server):
    ingest(store, [str(log_with(tmp_path, [80502, 80777]))], Progress(quiet=True))
    server = record_server(write_recording(tmp_path / "rec", [
        {"path": f"{API}/devshard_escrow/80502", "body": escrow_body(80502, settled=False)}]))
    report = probe(store, server.url)  # 80777 is not recorded: the replay answers 404
    assert report.complete
    assert store.one("SELECT found FROM chain_escrows WHERE escrow_id = 80777")[0] is False
    assert "404" in store.one("SELECT detail FROM coverage WHERE item = 'devshard_escrow/80777'")[0]


def test_ids_come_from_accounting_too(tmp_path, store, record_server):
    store.insert("acct_escrow_nonces", [{"epoch": 396, "participant": "gonka1p", "model": DS,
                                         "escrow_id": "80555", "latest_nonce": 40}])
    assert escrows.to_probe(store) == [{"escrow_id": 80555, "hint_epoch": 396, "pin_height": None,
                                        "tried_pinned": False, "asked_before": False}]
    assert escrows.to_probe(store, [396]) == escrows.to_probe(store) and escrows.to_probe(store, [397]) == []


def test_a_mismatched_answer_is_missing_not_stored(tmp_path, store, record_server):
    ingest(store, [str(log_with(tmp_path, [80502]))], Progress(quiet=True))
    server = record_server(write_recording(tmp_path / "rec", [
        {"path": f"{API}/devshard_escrow/80502", "body": escrow_body(80999, settled=True)}]))
    report = probe(store, server.url)
    assert not report.complete and "80999" in report.missing[0]
    assert store.one("SELECT count(*) FROM chain_escrows")[0] == 0


def pruned_setup(tmp_path: Path, store: Store, eid: int = 70001) -> None:
    """An escrow of epoch 394 the accounting API names, and epoch 394's settlement height."""
    store.insert("chain_epochs", [{"epoch": 394, "settlement_height": 6_090_000, "settled": True,
                                   "complete": True}])
    store.insert("acct_escrow_nonces", [{"epoch": 394, "participant": "gonka1p", "model": DS,
                                         "escrow_id": str(eid), "latest_nonce": 40}])
    ingest(store, [str(log_with(tmp_path, [80502]))], Progress(quiet=True))


def test_a_pruned_escrow_is_read_at_its_epochs_settlement_height(tmp_path, store, record_server):
    pruned_setup(tmp_path, store)
    body = escrow_body(70001, settled=True)
    body["escrow"]["epoch_index"] = "394"
    server = record_server(write_recording(tmp_path / "rec", [
        {"path": f"{API}/devshard_escrow/70001", "body": {"found": False}},
        {"path": f"{API}/devshard_escrow/70001", "height": 6_090_000, "body": body},
        {"path": f"{API}/devshard_escrow/80502", "body": escrow_body(80502, settled=False)},
    ]))
    report = probe(store, server.url)
    assert report.complete
    row = store.rows("SELECT found, settled, height, epoch_index FROM chain_escrows WHERE escrow_id = 70001")[0]
    assert row == {"found": True, "settled": True, "height": 6_090_000, "epoch_index": 394}
    assert [h for p, h, _ in server.log if p.endswith("/70001")] == [None, "6090000"]
    assert "pruned" in store.one("SELECT detail FROM coverage WHERE item = 'devshard_escrow/70001'")[0]
    probe(store, server.url)
    assert len([p for p, _, _ in server.log if p.endswith("/70001")]) == 2  # settled: cached


def test_a_pruned_escrow_on_a_node_without_history_is_missing(tmp_path, store, record_server):
    pruned_setup(tmp_path, store)
    server = record_server(write_recording(tmp_path / "rec", [
        {"path": f"{API}/devshard_escrow/70001", "body": {"found": False}},
        {"path": f"{API}/devshard_escrow/70001", "height": 6_090_000, "status": 500,
         "body": {"code": 2, "message": "version does not exist"}},
        {"path": f"{API}/devshard_escrow/80502", "body": escrow_body(80502, settled=False)},
    ]))
    report = probe(store, server.url)
    assert not report.complete and "pinned read at height 6090000 failed" in report.missing[0]
    assert store.one("SELECT found, height FROM chain_escrows WHERE escrow_id = 70001") == (False, None)
    cov = store.one("SELECT status, detail FROM coverage WHERE item = 'devshard_escrow/70001'")
    assert cov[0] == "missing" and "archive node" in cov[1]
    probe(store, server.url)   # asked again: an archive node may be given next time
    assert len([p for p, h, _ in server.log if p.endswith("/70001") and h]) > 1


# -- bounded probes (issue 35: 7) -----------------------------------------------------------------
def test_escrow_probes_are_capped_remembered_and_of_the_epoch(db, hostile, gateway):
    """An accounting API naming 400 invented escrow ids for epoch 403 (and 50 for 402) cost 450
    probes on every collect of 403 (250,000 would take 208 h at the public node's rate). Now:
    the ids of 403 only, at most MAX_PROBES a run (the rest said, exit 3, and asked by the next
    run), and an id the node did not find waits before it is asked again."""
    import json

    from conftest import one, run_cli
    from test_faults_net import LISTING  # noqa: F401  (the gateway fixture's default listing)

    assert escrows.MAX_PROBES == 250

    def participant(epoch: int, ids: range) -> dict:
        return {"participant": f"gonka1p{epoch}", "model": DS, "assigned_nonces": 1,
                "latest_nonces": [{"escrow_id": str(i), "latest_nonce": 1} for i in ids]}

    answers = {403: range(90_000_001, 90_000_401), 402: range(80_000_001, 80_000_051)}
    listing = json.dumps({"schema_version": 5, "epochs": [{"epoch_index": e} for e in answers]}).encode()
    url = gateway(json.dumps({"schema_version": 5, "epoch_index": 403,
                              "participants": [participant(403, answers[403])]}).encode(), listing,
                  {402: json.dumps({"schema_version": 5, "epoch_index": 402,
                                    "participants": [participant(402, answers[402])]}).encode()})
    r = run_cli("collect", "--accounting", url, "--rate", "0", db=db)
    assert r.returncode == 0, r.stderr
    assert one(db, "SELECT count(DISTINCT escrow_id) FROM acct_escrow_nonces") == 450

    node = hostile({f"{API}/devshard_escrow/*": lambda h, entry: send(h, 200, b'{"found": false}')})

    def asked() -> set[int]:
        return {int(p.rsplit("/", 1)[1]) for p in node.hits if "/devshard_escrow/" in p}

    r = run_cli("collect", "-e", "403", "--node", node.url, "--rate", "0", db=db)
    assert r.returncode == 3, r.stderr
    assert "150 escrow id(s) not probed: at most 250 a run" in r.stderr
    first = asked()
    assert len(first) == 250 and first <= set(answers[403])
    r = run_cli("collect", "-e", "403", "--node", node.url, "--rate", "0", "--refresh", db=db)
    assert r.returncode == 0, r.stderr
    assert asked() == set(answers[403]), (len(asked()), sorted(asked() - set(answers[403]))[:5])
    assert sum(node.hits[p] for p in node.hits if "/devshard_escrow/" in p) == 800     # unpinned, then at V(404)
    r = run_cli("collect", "-e", "403", "--node", node.url, "--rate", "0", "--refresh", db=db)
    assert r.returncode == 0, r.stderr
    assert sum(node.hits[p] for p in node.hits if "/devshard_escrow/" in p) == 800     # remembered: none again
    assert one(db, "SELECT count(*), min(probes), max(probes) FROM escrow_probes WHERE outcome = 'not_found'") \
        == (400, 1, 1)
    # once its wait is over, an id not found is asked again (it may exist by then)
    with Store(db) as s:
        due = escrows.to_probe(s, [403], now=utcnow() + escrows.FIRST_WAIT + timedelta(minutes=1))
    assert len(due) == 400
