"""Demand bundles (issue 36): `auditor export demand` writes one gateway's PoC-time demand,
`auditor targets N --bundle PATH_OR_URL` sums it with the store's own logs.

The done-when test splits the cPoC recording's gateway log (fixtures/poc-overload) into two
gateways by escrow, collects each into its own store with the chain, exports a bundle of each,
and merges both into a third store that holds the chain only: the per-model demand and D_m are
those of one store holding both logs."""

from __future__ import annotations

import functools
import gzip
import http.server
import json
import re
import threading
from datetime import datetime, timedelta, timezone

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from auditor import demand_bundle as db_
from auditor.analyses import cpoc
from auditor.errors import UsageError
from tests.conftest import FIXTURES, run_cli, run_json

FIX = FIXTURES / "poc-overload"
CHAIN = FIX / "chain"
DS = "deepseek-ai/DeepSeek-V4-Flash-0731"
T0 = datetime(2026, 9, 23, tzinfo=timezone.utc)


# -- the steps: additive, and the same profile as the intervals ---------------------------------
def _brute(intervals, lo, hi):
    """Per-second maxima by brute force: the level at each millisecond of each second."""
    out = []
    n = max(1, -(-((hi - lo) // timedelta(milliseconds=1)) // 1000))     # exact: no float's 1000.9999
    for k in range(n):
        top = 0
        for ms in range(1000):
            t = lo + timedelta(seconds=k, milliseconds=ms)
            if t > hi and ms:
                break
            top = max(top, sum(1 for s, e in intervals if s <= t < e and not (e <= lo or s > hi)))
        out.append(top)
    return out


interval = st.tuples(st.integers(-3000, 9000), st.integers(1, 6000)).map(
    lambda p: (T0 + timedelta(milliseconds=p[0]), T0 + timedelta(milliseconds=p[0] + p[1])))


@settings(max_examples=60, deadline=None)
@given(a=st.lists(interval, max_size=12), b=st.lists(interval, max_size=12),
       cut=st.tuples(st.integers(0, 3000), st.integers(0, 3000)))
def test_steps_add_up_and_clip_like_the_intervals(a, b, cut):
    start, end = T0, T0 + timedelta(seconds=6)
    lo, hi = start + timedelta(milliseconds=cut[0]), end - timedelta(milliseconds=cut[1])
    whole = cpoc.inflight_profile(a + b, lo, hi)
    ia, sa = cpoc.inflight_steps(a, start, end)
    ib, sb = cpoc.inflight_steps(b, start, end)
    merged = cpoc.steps_profile(ia + ib, sa + sb, start, end, lo, hi)
    assert merged["per_second"] == whole["per_second"]
    assert merged["peak"] == whole["peak"]
    assert whole["per_second"] == _brute(a + b, lo, hi)


# -- reading: anything but a bundle is one UsageError ------------------------------------------
@settings(max_examples=80, deadline=None)
@given(st.binary(max_size=400))
def test_garbage_is_refused_in_one_line(data):
    with pytest.raises(UsageError) as e:
        db_.parse(b"PAR1" + data + b"PAR1" if data[:1] == b"\x00" else data, "x.parquet")
    assert "\n" not in str(e.value)


@pytest.fixture(scope="module")
def split(tmp_path_factory):
    """The recording's log split by escrow (lines without one in both), each gateway in its
    own store with the chain, and a bundle of each; a store of both logs; a chain-only store."""
    d = tmp_path_factory.mktemp("bundles")
    lines = gzip.open(FIX / "gateway.log.gz", "rt", encoding="utf-8").read().splitlines(keepends=True)
    escrows = sorted({m.group(1) for ln in lines if (m := re.search(r"\bescrow=(\d+)", ln))})
    assert len(escrows) == 2
    out = {}
    for i, esc in enumerate(escrows):
        mine = [ln for ln in lines if (m := re.search(r"\bescrow=(\d+)", ln)) is None or m.group(1) == esc]
        log = d / f"gw{i}.log"
        log.write_text("".join(mine), encoding="utf-8")
        store = d / f"gw{i}.duckdb"
        r = run_cli("collect", "--epoch", "403", "--replay", str(CHAIN), "--gateway-log", str(log), db=store)
        assert r.returncode == 0, r.stderr
        bundle = d / f"gw{i}.parquet"
        r = run_cli("export", "demand", "--epochs", "403..403", "--out", str(bundle), "--name", f"gw-{esc}",
                    db=store)
        assert r.returncode == 0, r.stderr
        out[f"bundle{i}"], out[f"store{i}"] = bundle, store
    both = d / "both.duckdb"
    assert run_cli("collect", "--epoch", "403", "--replay", str(CHAIN), "--gateway-log", str(FIX / "gateway.log.gz"),
                   db=both).returncode == 0
    third = d / "chain.duckdb"
    assert run_cli("collect", "--epoch", "403", "--replay", str(CHAIN), db=third).returncode == 0
    out.update(both=both, third=third, dir=d, lines=lines)
    return out


def _one_error(stderr: str) -> bool:
    """One error line (progress lines aside), no traceback."""
    return len([ln for ln in stderr.splitlines() if ln.startswith("auditor: error")]) == 1 \
        and "Traceback" not in stderr


def _demand(d):
    return {r["model_id"]: (r["peak_inflight"], r["peak_by_window"], r["demand_weight"], r["suggested_target"])
            for r in d["preserved_targets"]}


@pytest.mark.parametrize("stat", ["max", "p50"])
def test_two_bundles_give_the_demand_of_one_store_of_both_logs(split, stat):
    one = run_json("targets", "403", "--offline", "-f", "json", "--statistic", stat, db=split["both"])
    merged = run_json("targets", "403", "--offline", "-f", "json", "--statistic", stat,
                      "--bundle", str(split["bundle0"]), "--bundle", str(split["bundle1"]), db=split["third"])
    assert _demand(merged) == _demand(one)
    assert _demand(merged)[DS][2] is not None                       # a demand, not two unknowns
    assert merged["governance"]["covering_poc_slot_allocation"] == one["governance"]["covering_poc_slot_allocation"]
    # each alone is less: the sum is what the network's demand is made of
    alone = run_json("targets", "403", "--offline", "-f", "json", "--statistic", stat,
                     "--bundle", str(split["bundle0"]), db=split["third"])
    assert _model(alone)["peak_inflight"] <= _model(one)["peak_inflight"]
    gws = merged["demand_sources"]["gateways"]
    assert sorted(g["gateway"] for g in gws) == sorted(f"gw-{e}" for e in ("134985", "134986"))
    for g in gws:
        assert {w["window"] for w in g["windows_counted"]} == {"cpoc:0", "cpoc:1"}
        assert all(0 < w["covered_share"] <= 1 for w in g["windows_counted"])
    assert "bundle" in merged["coverage"]["sources"]


def _model(d, mid=DS):
    [r] = [r for r in d["preserved_targets"] if r["model_id"] == mid]
    return r


def test_the_notes_say_where_the_demand_came_from(split):
    """A chain-only store given two bundles: the notes said 'demand is what the gateway logs in
    the store saw' and 'the store's own logs and 2 bundle(s)', though the store holds no log."""
    merged = run_json("targets", "403", "--offline", "-f", "json",
                      "--bundle", str(split["bundle0"]), "--bundle", str(split["bundle1"]), db=split["third"])
    notes = " ".join(merged["notes"])
    assert "no log in the store: 2 bundle(s)" in notes and "the store's own logs" not in notes, notes
    assert "gateway logs in the store and the bundles given saw" in notes, notes
    short = [f for f in merged["findings"] if f["code"] == "preserved_capacity_short"]
    assert short and all("and the bundles given saw" in f["evidence"]["lower_bound"] for f in short)
    own = run_json("targets", "403", "--offline", "-f", "json", "--bundle", str(split["bundle0"]), db=split["both"])
    assert "the store's own logs and 1 bundle(s)" in " ".join(own["notes"])


def test_the_same_gateways_windows_count_once(split, tmp_path):
    """Given twice, or in two bundles of overlapping epoch ranges: the newer bundle's window counts."""
    once = run_json("targets", "403", "--offline", "-f", "json", "--bundle", str(split["bundle0"]), db=split["third"])
    twice = run_json("targets", "403", "--offline", "-f", "json", "--bundle", str(split["bundle0"]),
                     "--bundle", str(split["bundle0"]), db=split["third"])
    wider = tmp_path / "wider.parquet"
    r = run_cli("export", "demand", "--epochs", "402..403", "--out", str(wider), "--name", "gw-134985",
                db=split["store0"])
    assert r.returncode == 0, r.stderr
    overlap = run_json("targets", "403", "--offline", "-f", "json", "--bundle", str(split["bundle0"]),
                       "--bundle", str(wider), db=split["third"])
    assert _demand(twice) == _demand(once) == _demand(overlap)
    old, new = overlap["demand_sources"]["gateways"]
    assert not old["windows_counted"] and len(old["windows_superseded"]) == 2       # the newer one wins
    assert len(new["windows_counted"]) == 2


def test_one_gateways_data_under_two_names_counts_once(split, tmp_path):
    """The same log exported again under another --name (or a bundle of the store's own logs):
    its windows hold the very same per-second demand, which two gateways never give; it was
    summed twice, doubling the demand a governance proposal is sized from."""
    renamed = tmp_path / "renamed.parquet"
    r = run_cli("export", "demand", "--epochs", "403..403", "--out", str(renamed), "--name", "another-name",
                db=split["store0"])
    assert r.returncode == 0, r.stderr
    once = run_json("targets", "403", "--offline", "-f", "json", "--bundle", str(split["bundle0"]), db=split["third"])
    both = run_json("targets", "403", "--offline", "-f", "json", "--bundle", str(split["bundle0"]),
                    "--bundle", str(renamed), db=split["third"])
    assert _demand(both) == _demand(once)
    counted, same = sorted(both["demand_sources"]["gateways"], key=lambda g: g["gateway"] != "another-name")
    assert len(counted["windows_counted"]) == 2 and not counted["windows_same_as_another"]
    assert not same["windows_counted"] and {w["same_as"] for w in same["windows_same_as_another"]} == {"another-name"}
    assert any("under two names, counted once" in n for n in both["notes"])
    # the store's own logs and a bundle of them: the store's count
    own = run_json("targets", "403", "--offline", "-f", "json", "--bundle", str(split["bundle0"]), db=split["store0"])
    alone = run_json("targets", "403", "--offline", "-f", "json", db=split["store0"])
    assert _demand(own) == _demand(alone)
    # two gateways' different data still add up
    two = run_json("targets", "403", "--offline", "-f", "json", "--bundle", str(split["bundle0"]),
                   "--bundle", str(split["bundle1"]), db=split["third"])
    assert all(g["windows_counted"] and not g["windows_same_as_another"] for g in two["demand_sources"]["gateways"])


def test_a_bundle_the_chain_does_not_know_is_refused(split, tmp_path):
    c = db_.load(str(split["bundle0"]))
    rows = pq.read_table(split["bundle0"]).to_pylist()
    meta = json.loads(pq.read_schema(split["bundle0"]).metadata[db_.META_KEY])
    for r in rows:
        r["start_height"] += 1
    moved = tmp_path / "moved.parquet"
    db_.write(moved, rows, meta)
    r = run_cli("targets", "403", "--offline", "--bundle", str(moved), db=split["third"])
    assert r.returncode == 2 and _one_error(r.stderr) and "not a window the chain knows" in r.stderr, r.stderr
    for r_ in rows:
        r_["start_height"] -= 1
        r_["epoch"] = 404
    other = tmp_path / "other.parquet"
    db_.write(other, rows, meta)
    r = run_cli("targets", "--epochs", "403..404", "--offline", "--bundle", str(other), db=split["third"])
    assert r.returncode == 2 and "epoch 404 is not in the store" in r.stderr and _one_error(r.stderr)
    d = run_json("targets", "403", "--offline", "-f", "json", "--bundle", str(other), db=split["third"])
    assert any("covers no cPoC window of the epochs asked" in n for n in d["notes"])       # said, not refused
    assert _model(d)["peak_inflight"] is None
    # altered after it was written (a step's change, the metadata kept): its hash says so
    table = pq.read_table(split["bundle0"])
    rows2 = table.to_pylist()
    [i] = [k for k, r_ in enumerate(rows2) if r_["kind"] == "step" and r_["delta"] > 0][:1]
    rows2[i]["delta"] += 5
    tampered = tmp_path / "tampered.parquet"
    pq.write_table(pa.Table.from_pylist(rows2, schema=table.schema), tampered)
    r = run_cli("targets", "403", "--offline", "--bundle", str(tampered), db=split["third"])
    assert r.returncode == 2 and "content_sha256" in r.stderr and _one_error(r.stderr)
    raw = split["bundle0"].read_bytes()
    junk = tmp_path / "junk.parquet"
    junk.write_bytes(bytes(raw[:100]))
    r = run_cli("targets", "403", "--offline", "--bundle", str(junk), db=split["third"])
    assert r.returncode == 2 and "not a demand bundle" in r.stderr and "Traceback" not in r.stderr
    assert c.gateway == "gw-134985"


def test_a_bundle_holds_no_request_id_key_or_log_line(split):
    t = pq.read_table(split["bundle0"])
    assert tuple(t.column_names) == db_.COLUMNS
    meta = json.loads(t.schema.metadata[db_.META_KEY])
    text = json.dumps([meta, t.to_pylist()], default=str)
    requests = {m.group(1) for ln in split["lines"] if (m := re.search(r"request=(\S+)", ln))}
    hosts = {m.group(1) for ln in split["lines"] if (m := re.search(r"\bhost=(\S+)", ln))}
    assert requests and hosts
    assert not [x for x in requests if x in text]
    assert not [h for h in hosts if re.search(rf"\b{re.escape(h)}\b", text)]
    for banned in ("req-", "stage=", "escrow=", "api_key", "key_suffix", "gonka1", "2026/09/2"):
        assert banned not in text, banned
    assert {r["kind"] for r in t.to_pylist()} == {"window", "model", "step"}
    assert meta["gateway"] == "gw-134985" and meta["content_sha256"] == db_.content_hash(t.to_pylist(), meta)
    assert meta["tool_version"] and meta["logs_first_ts"] and meta["epochs"] == [403, 403]
    assert split["bundle0"].stat().st_size < 200_000
    # no name given: the identity is the escrows' creator, public on chain
    out = split["dir"] / "named-by-chain.parquet"
    both = run_cli("collect", "--epoch", "403", "--replay", str(CHAIN), "--gateway-log", str(FIX / "gateway.log.gz"),
                   db=split["dir"] / "x.duckdb")
    assert both.returncode == 0
    r = run_cli("export", "demand", "--epochs", "403..403", "--out", str(out), db=split["dir"] / "x.duckdb")
    assert r.returncode == 0
    meta = json.loads(pq.read_schema(out).metadata[db_.META_KEY])
    assert meta["gateway"] == "gonka1gatewaycreator"
    # the line names the bundle's hash whole, as stored (a proposer checks it against the operator's)
    assert r.stderr.strip().endswith(f"sha256 {meta['content_sha256']}"), r.stderr


def test_export_demand_help_says_what_is_in_it():
    r = run_cli("export", "demand", "--help")
    assert r.returncode == 0
    for word in ("window", "step", "per_10000", "identity", "SHA-256", "No request id"):
        assert word in r.stdout, word


def test_a_bundle_by_url(split):
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(split["dir"]))
    handler.log_message = lambda *a: None
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{srv.server_address[1]}"
        by_url = run_json("targets", "403", "--offline", "-f", "json", "--bundle", f"{url}/gw0.parquet",
                          "--bundle", str(split["bundle1"]), db=split["third"])
        by_path = run_json("targets", "403", "--offline", "-f", "json", "--bundle", str(split["bundle0"]),
                           "--bundle", str(split["bundle1"]), db=split["third"])
        assert _demand(by_url) == _demand(by_path)
        r = run_cli("targets", "403", "--offline", "--bundle", f"{url}/missing.parquet", db=split["third"])
        assert r.returncode != 0 and _one_error(r.stderr) and "Traceback" not in r.stderr
    finally:
        srv.shutdown()
        srv.server_close()
    # a server that does not answer: said of the bundle (it read "no node answered the request")
    r = run_cli("targets", "403", "--offline", "--bundle", f"{url}/gw0.parquet", db=split["third"])
    assert r.returncode == 3 and _one_error(r.stderr), r.stderr
    assert f"auditor: error: --bundle {url}/gw0.parquet: no server answered the request (" in r.stderr, r.stderr


def test_accounting_only_estimate_is_labelled_in_every_format(tmp_path):
    """No log: the accounting API's confirmation_poc requests over the windows' seconds, times an
    assumed latency: an estimate of the mean in flight, labelled so, with its inputs."""
    db = tmp_path / "acct.duckdb"
    r = run_cli("collect", "--epoch", "403", "--replay", str(CHAIN), "--replay", str(FIX / "accounting"), db=db)
    assert r.returncode == 0, r.stderr
    d = run_json("targets", "403", "--offline", "-f", "json", db=db)
    est = d["network_estimate"]
    assert "MEAN" in est["label"] and "not a peak" in est["label"] and est["inputs"]
    m = est["models"][DS]
    assert m["requests"] == 759 + 874 + 101                        # dispatched: every disposition but ghost
    assert m["latency_basis"].startswith("assumed 10 s") and m["latency_seconds"] == 10
    assert m["mean_inflight"] == pytest.approx(m["requests"] / est["window_seconds"] * 10, abs=1e-3)
    assert _model(d)["peak_inflight"] is None and _model(d)["demand_weight"] is None    # never mixed in
    [p] = [p for p in d["proposal"]["models"] if p["model_id"] == DS]
    assert p["demand_basis"].startswith("estimated from accounting") and p["demand_weight"] == m["estimated_demand_weight"]
    # its caveat says the measured D_m is unknown and the proposal's is this estimate (it said
    # "D_m ... unknown" beside the estimated D_m), and that the API counts 2 of the 3 preserved
    # hosts' misses (one has no record): the 975 a lower bound
    [caveat] = [u for u in d["coverage"]["unknown"] if u.startswith(f"{DS}: ")]
    assert "the measured D_m and a suggested target from it are unknown" in caveat, caveat
    assert (f"the proposal's D_m {m['estimated_demand_weight']:,}, and its suggested target, are estimated from the "
            "accounting API") in caveat, caveat
    assert "took 975 misses" in caveat and "at least: the API has 2 of its 3 preserved hosts" in caveat, caveat
    assert d["coverage"]["sources"] == ["chain", "gateway_log", "accounting"]
    d2 = run_json("targets", "403", "--offline", "-f", "json", "--assume-latency", "20", db=db)
    assert d2["network_estimate"]["models"][DS]["mean_inflight"] == pytest.approx(2 * m["mean_inflight"], abs=1e-3)
    assert "--assume-latency" in d2["network_estimate"]["models"][DS]["latency_basis"]
    for fmt in ("table", "md", "csv", "html"):
        out = run_cli("targets", "403", "--offline", "-f", fmt, db=db)
        assert out.returncode == 0, out.stderr
        assert "est_mean_inflight" in out.stdout, fmt
        if fmt != "csv":
            assert "ESTIMATED" in out.stdout and "not a peak" in out.stdout, fmt
        # the candidates' implied weights are per model, in each model's units: never summed in a table
        assert "implied_preserved_weight" not in out.stdout and "implied preserved" not in out.stdout, fmt
    # at 80 columns the proposal's demand_basis column is left out; its estimated D_m still says so
    from test_reports import on_a_terminal

    narrow = on_a_terminal(["--db", str(db), "targets", "403", "--offline"], 80)
    proposal = narrow.split("Proposal for governance", 1)[1].split("\n\n", 1)[0]
    assert "demand_basis" in proposal.split("not shown at this width", 1)[1]
    assert " ".join(f"D_m of {DS}: estimated from accounting".split()) in " ".join(proposal.split()), proposal


def test_export_needs_a_log_and_the_chain(split, tmp_path):
    out = tmp_path / "x.parquet"
    r = run_cli("export", "demand", "--epochs", "403..403", "--out", str(out), db=split["third"])
    assert r.returncode == 3 and "no gateway log" in r.stderr and _one_error(r.stderr) and not out.exists()
    r = run_cli("export", "demand", "--epochs", "500..501", "--out", str(out), db=split["store0"])
    assert r.returncode == 3 and "no epoch of 500..501" in r.stderr and not out.exists()
    r = run_cli("export", "demand", "--epochs", "403..401", "--out", str(out), db=split["store0"])
    assert r.returncode == 2
    r = run_cli("export", "demand", "--epochs", "403..403", "--out", str(tmp_path), db=split["store0"])
    assert r.returncode == 2 and "directory" in r.stderr


def test_export_never_writes_over_the_store(split):
    """`export demand --out` naming the store it reads (its own atomic Parquet write skipped
    the rule every other output keeps): one line, exit 2, the store as it was."""
    store = split["store0"]
    before = store.read_bytes()
    r = run_cli("export", "demand", "--epochs", "403..403", "--out", str(store), db=store)
    assert r.returncode == 2 and "is the store" in r.stderr and _one_error(r.stderr), r.stderr
    assert store.read_bytes() == before


def test_a_window_one_gateway_covers_in_part_is_partial(split, tmp_path):
    """Two gateways' demand is summed over the span any of them covers; a window is whole only
    where every gateway's logs span it. One bundle cut to the window's first half made the
    window "full" (the other's span covered it), its second half summed with that gateway at 0."""
    rows = pq.read_table(split["bundle1"]).to_pylist()
    meta = json.loads(pq.read_schema(split["bundle1"]).metadata[db_.META_KEY])
    for r in rows:
        if r["kind"] == "window" and r["covered_from"] is not None:
            r["covered_to"] = r["covered_from"] + (r["end_time"] - r["start_time"]) / 2
    half = tmp_path / "half.parquet"
    db_.write(half, rows, meta)
    args = ("targets", "403", "--offline", "-f", "json", "--bundle", str(split["bundle0"]))
    both = run_json(*args, "--bundle", str(split["bundle1"]), db=split["third"])
    cut = run_json(*args, "--bundle", str(half), db=split["third"])
    cpoc_ = [w for w in both["windows"] if w["window"].startswith("cpoc:") and w["evidence"] != "none"]
    assert cpoc_ and all(w["evidence"] == "full" for w in cpoc_)
    cut_w = [w for w in cut["windows"] if w["window"] in {x["window"] for x in cpoc_}]
    assert cut_w and all(w["evidence"] == "partial" and "not every gateway's logs span the window" in w["detail"]
                         for w in cut_w), cut_w
