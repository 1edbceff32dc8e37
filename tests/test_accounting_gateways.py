"""Several `--accounting` URLs are several gateways (issues 33 and 36), through the CLI over loopback.

Two accounting recordings of epoch 403 of the poc-overload fixture are served on two loopback
replay servers: gateway A is fixtures/poc-overload/accounting as it is; gateway B is built from
it here (:func:`second_gateway`): the same traffic on its own escrows (ids 9xxxxx: each gateway
mints its own), except that it counts 40 protocol misses, not 975, for the #2107 host
(mtd2v4zr). Its counters are A's, so its confirmation_poc requests are A's: the network through
both is twice A's.

Before gateways were kept apart, several --accounting URLs were failover of one source: only A
was read, and nothing said which gateway counted which misses.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests.conftest import FIXTURES, one, q, run_cli, run_json

FIX = FIXTURES / "poc-overload"
CHAIN = FIX / "chain"
DS = "deepseek-ai/DeepSeek-V4-Flash-0731"
HOST = "mtd2v4zr"                      # the #2107 host: 975 misses at gateway A
B_MISSES = 40
CPOC_REQUESTS_A = 759 + 874 + 101       # test_demand_bundle: every disposition but ghost and protocol_only


def second_gateway(src: Path, dst: Path) -> Path:
    """Gateway B's recording from gateway A's: escrow ids 1xxxxx -> 9xxxxx, and the host's
    protocol_misses set to B_MISSES; every other field as A's."""
    dst.mkdir(parents=True, exist_ok=True)
    for f in sorted(src.glob("*.json")):
        entry = json.loads(f.read_text())
        body = json.loads(entry["body"])
        for rec in body.get("participants") or []:
            if rec.get("participant", "").endswith(HOST):
                rec["protocol_misses"] = B_MISSES
        entry["body"] = re.sub(r'"escrow_id": "1(\d{5})"', r'"escrow_id": "9\1"', json.dumps(body))
        (dst / f.name).write_text(json.dumps(entry))
    return dst


@pytest.fixture(scope="module")
def two_gateways(tmp_path_factory):
    """A store of epoch 403: the chain, and the accounting of gateways A and B (A given twice)."""
    from auditor.sources.replay import ReplayServer

    tmp = tmp_path_factory.mktemp("gateways")
    b_dir = second_gateway(FIX / "accounting", tmp / "gateway-b")
    with ReplayServer(FIX / "accounting") as a, ReplayServer(b_dir) as b:
        db = tmp / "two.duckdb"
        r = run_cli("collect", "--epoch", "403", "--replay", str(CHAIN), "--accounting", a.url,
                    "--accounting", b.url, "--accounting", a.url + "/", db=db)
        assert r.returncode == 0, r.stderr
        yield {"db": db, "a": a.url, "b": b.url, "tmp": tmp}


def test_each_accounting_url_is_its_own_gateway_stored_once(two_gateways):
    db, a, b = two_gateways["db"], two_gateways["a"], two_gateways["b"]
    assert one(db, "SELECT count(*) FROM acct_participants WHERE epoch = 403") == 14    # 7 records each
    assert q(db, "SELECT gateway, count(*) FROM acct_participants WHERE epoch = 403 GROUP BY 1 ORDER BY 1") == \
        sorted([(a, 7), (b, 7)])
    assert q(db, "SELECT gateway, count(*) FROM acct_epochs GROUP BY 1 ORDER BY 1") == sorted([(a, 1), (b, 1)])
    # each gateway's coverage rows stay beside the other's
    assert one(db, "SELECT count(DISTINCT gateway) FROM coverage WHERE source = 'accounting' AND epoch = 403") == 2
    before = q(db, "SELECT gateway, count(*) FROM acct_counters GROUP BY 1 ORDER BY 1")
    # collecting gateway A again (given twice: once) replaces A's rows only: no gateway counted twice
    r = run_cli("collect", "--epoch", "403", "--accounting", a, "--accounting", f"{a}/", db=db)
    assert r.returncode == 0, r.stderr
    assert q(db, "SELECT gateway, count(*) FROM acct_counters GROUP BY 1 ORDER BY 1") == before


def test_targets_estimate_sums_every_gateway(two_gateways):
    """#36: the accounting-only estimate counts every gateway's confirmation_poc requests and says
    how many gateways it counted."""
    d = run_json("targets", "403", "--offline", "-f", "json", db=two_gateways["db"])
    est = d["network_estimate"]
    m = est["models"][DS]
    assert m["requests"] == 2 * CPOC_REQUESTS_A
    assert est["gateways_counted"] == 2
    assert est["gateways"] == sorted([two_gateways["a"], two_gateways["b"]])
    assert sorted(s["gateway"] for s in m["sources"]) == est["gateways"]
    assert "2 gateway(s)" in est["inputs"]
    out = run_cli("targets", "403", "--offline", "-f", "md", db=two_gateways["db"])
    assert out.returncode in (0, 1) and "2 gateway(s)" in out.stdout


def _host(participants):
    [p] = [p for p in participants if p.endswith(HOST)]
    return p


def test_poc_overload_misses_by_gateway(two_gateways):
    """#33: a participant's misses per gateway, and together above the chain's is a discrepancy."""
    a, b = two_gateways["a"], two_gateways["b"]
    d = run_json("poc-overload", "403", "--offline", "-f", "json", db=two_gateways["db"])
    host = _host(d["cpoc_misses"])
    assert d["cpoc_misses"][host]["misses_by_gateway"] == {a: 975, b: B_MISSES}
    [zeroed] = [f for f in d["findings"] if f["code"] == "reward_zeroed_miss_test" and f["subject"]["id"] == host]
    assert zeroed["evidence"]["misses_by_gateway"] == {a: 975, b: B_MISSES}
    together = [f for f in d["findings"] if f["code"] == "miss_count_discrepancy" and f["subject"]["id"] == host
                and "2 gateways together" in f["evidence"]["count_source"]]
    assert [f["evidence"]["count"] for f in together] == [975 + B_MISSES]
    t = run_cli("poc-overload", "403", "--offline", "-f", "md", db=two_gateways["db"])
    table = t.stdout[t.stdout.index("Misses per gateway"):]
    assert re.search(rf"{HOST}.*{re.escape(b)}.*\b{B_MISSES}\b", table), table[:2000]


def test_misstest_misses_by_gateway(two_gateways):
    a, b = two_gateways["a"], two_gateways["b"]
    d = run_json("misstest", "403", "--offline", "-f", "json", db=two_gateways["db"])
    [row] = [r for r in d["participants"] if r["participant"].endswith(HOST)]
    assert row["misses_by_gateway"] == {a: 975, b: B_MISSES}
    [zeroed] = [f for f in d["findings"] if f["code"] == "reward_zeroed_miss_test"
                and f["subject"]["id"] == row["participant"]]
    assert zeroed["evidence"]["misses_by_gateway"] == {a: 975, b: B_MISSES}
    t = run_cli("misstest", "403", "--offline", "-f", "csv", db=two_gateways["db"])
    assert "misses_by_gateway" in t.stdout.splitlines()[0] and f"{b}: {B_MISSES}" in t.stdout


def test_one_gateway_has_no_misses_by_gateway(tmp_path):
    """One gateway's store reads as before: no per-gateway key (its count is the accounting's)."""
    db = tmp_path / "one.duckdb"
    r = run_cli("collect", "--epoch", "403", "--replay", str(CHAIN), "--replay", str(FIX / "accounting"), db=db)
    assert r.returncode == 0, r.stderr
    d = run_json("misstest", "403", "--offline", "-f", "json", db=db)
    assert all("misses_by_gateway" not in p for p in d["participants"])
    est = run_json("targets", "403", "--offline", "-f", "json", db=db)["network_estimate"]
    assert est["gateways_counted"] == 1 and est["models"][DS]["requests"] == CPOC_REQUESTS_A


def test_two_urls_one_gateway_once_redacted_is_a_usage_error(tmp_path):
    db = tmp_path / "x.duckdb"
    r = run_cli("collect", "--accounting", "http://op:secret1@127.0.0.1:9/", "--accounting",
                "http://op:secret2@127.0.0.1:9", db=db)
    assert r.returncode == 2, r.stderr
    assert len(r.stderr.strip().splitlines()) == 1 and "secret" not in r.stderr and "Traceback" not in r.stderr
    assert not db.exists() or one(db, "SELECT count(*) FROM acct_participants") == 0


def test_a_store_collected_before_reads_as_one_gateway(tmp_path, monkeypatch):
    """A store collected before migration 016 is one gateway per epoch: its rows get the gateway
    their URL names, and collecting the epoch again (here from a replay, whose port and so URL is
    new) replaces them whole, as before: nothing counted twice."""
    import duckdb

    import auditor.store as st

    new = tmp_path / "new.duckdb"               # what the accounting tables held: as collected today
    r = run_cli("collect", "--epoch", "403", "--replay", str(FIX / "accounting"), db=new)
    assert r.returncode == 0, r.stderr
    every = st._migration_files
    monkeypatch.setattr(st, "_migration_files", lambda: [f for f in every() if int(f.name[:3]) < 16])
    db = tmp_path / "old.duckdb"
    with st.Store(db):                          # the schema before 016, and the rows as it held them
        pass
    monkeypatch.undo()
    con = duckdb.connect(str(db))
    con.execute(f"ATTACH '{new}' AS n (READ_ONLY)")
    for t in ("acct_epochs", "acct_participants", "acct_counters", "acct_slots", "acct_escrow_nonces",
              "acct_findings", "acct_capabilities", "coverage"):
        con.execute(f"INSERT INTO {t} SELECT * EXCLUDE (gateway) FROM n.{t}")
    con.close()
    tables = ("acct_epochs", "acct_participants", "acct_counters", "acct_slots", "acct_escrow_nonces")
    before = {t: one(db, f"SELECT count(*) FROM {t}") for t in tables}
    with st.Store(db):                                     # opened for writing: 016 applied
        pass
    assert one(db, "SELECT count(DISTINCT gateway) FROM acct_counters") == 1
    assert one(db, "SELECT min(gateway) FROM acct_participants").startswith("http://127.0.0.1:")
    assert q(db, "SELECT epoch FROM acct_legacy_epochs") == [(403,)]
    r = run_cli("collect", "--epoch", "403", "--replay", str(FIX / "accounting"), db=db)
    assert r.returncode == 0, r.stderr
    assert {t: one(db, f"SELECT count(*) FROM {t}") for t in tables} == before
    assert q(db, "SELECT DISTINCT gateway FROM acct_counters") == [("replay:accounting",)]
    assert q(db, "SELECT epoch FROM acct_legacy_epochs") == []
    assert one(db, "SELECT count(*) FROM coverage WHERE source = 'accounting' AND epoch = 403") == 2
    # the epoch list's row of before (a row of no epoch) is replaced too, not kept beside the new one
    assert one(db, "SELECT count(*) FROM coverage WHERE source = 'accounting' AND item = 'epoch_list'") == 1


def test_a_replayed_gateway_is_named_by_its_own_recording(tmp_path):
    """A --replay recording's gateway is the folder that holds its accounting answers, not every
    folder replayed beside it: the same accounting recording replayed with the chain's and then
    alone was stored as two gateways ('replay:chain+accounting', 'replay:accounting') and its
    requests counted twice in the network estimate."""
    db = tmp_path / "r.duckdb"
    for replay in ([CHAIN, FIX / "accounting"], [FIX / "accounting"], [FIX / "accounting", CHAIN]):
        r = run_cli("collect", "--epoch", "403", *(x for d in replay for x in ("--replay", str(d))), db=db)
        assert r.returncode == 0, r.stderr
    assert q(db, "SELECT gateway, count(*) FROM acct_participants GROUP BY 1") == [("replay:accounting", 7)]
    est = run_json("targets", "403", "--offline", "-f", "json", db=db)["network_estimate"]
    assert est["gateways_counted"] == 1 and est["models"][DS]["requests"] == CPOC_REQUESTS_A


def test_the_progress_names_each_gateway(two_gateways, tmp_path):
    """Each gateway's progress line names it: two alike 'accounting: epochs' lines said nothing
    of which gateway was being read (or was slow)."""
    a, b = two_gateways["a"], two_gateways["b"]
    r = run_cli("collect", "--epoch", "403", "--accounting", a, "--accounting", b, db=tmp_path / "p.duckdb")
    assert r.returncode == 0, r.stderr
    assert f"accounting {a}: epochs" in r.stderr and f"accounting {b}: epochs" in r.stderr, r.stderr


def test_a_recording_of_two_gateways_replays_as_two(two_gateways, tmp_path):
    """`--record DIR` keeps the second gateway's answers under DIR/accounting-2; `--replay DIR`
    merged both into one server, so one gateway's answers were stored as 'replay:DIR' and the
    other's silently dropped. Each recorded gateway is its own again, as collected."""
    a, b = two_gateways["a"], two_gateways["b"]
    rec, live = tmp_path / "rec", tmp_path / "live.duckdb"
    r = run_cli("collect", "--epoch", "403", "--replay", str(CHAIN), "--accounting", a, "--accounting", b,
                "--record", str(rec), db=live)
    assert r.returncode == 0, r.stderr
    assert sorted(p.name for p in rec.iterdir()) == ["accounting", "accounting-2", "chain"]
    db = tmp_path / "replayed.duckdb"
    r = run_cli("collect", "--epoch", "403", "--replay", str(rec), db=db)
    assert r.returncode == 0, r.stderr
    assert q(db, "SELECT gateway, count(*) FROM acct_participants GROUP BY 1 ORDER BY 1") == \
        [("replay:rec/accounting", 7), ("replay:rec/accounting-2", 7)]
    d = run_json("misstest", "403", "--offline", "-f", "json", db=db)
    [row] = [r for r in d["participants"] if r["participant"].endswith(HOST)]
    assert row["misses_by_gateway"] == {"replay:rec/accounting": 975, "replay:rec/accounting-2": B_MISSES}


def test_two_gateways_on_one_host_are_two_accounting_sources(two_gateways, tmp_path):
    """Gateways behind one host (https://host/a, https://host/b) are two: targets' note counted
    its accounting sources by the host of the answering URL, one here, beside an estimate of two."""
    from urllib.parse import urlsplit

    import httpx

    from tests.conftest import loopback

    upstream = {"/a": two_gateways["a"], "/b": two_gateways["b"]}

    def answer(path: str, headers: dict[str, str]) -> tuple[int, bytes, str]:
        parts = urlsplit(path)
        r = httpx.get(upstream[parts.path[:2]] + path[2:])
        return r.status_code, r.content, "application/json"

    db = tmp_path / "host.duckdb"
    with loopback(answer) as base:
        r = run_cli("collect", "--epoch", "403", "--replay", str(CHAIN), "--accounting", f"{base}/a",
                    "--accounting", f"{base}/b", db=db)
    assert r.returncode == 0, r.stderr
    assert one(db, "SELECT count(DISTINCT gateway) FROM acct_participants") == 2
    out = run_cli("targets", "403", "--offline", db=db, env={"COLUMNS": "200"})
    assert out.returncode in (0, 1) and "2 accounting source(s)" in out.stdout, out.stdout
