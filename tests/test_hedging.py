"""`auditor hedging` (issue 9): the incident fixture against its ground truth, every log
format giving the same hosts rows, the synthetic generator's ground truth, the
counterfactuals against a hand-computed case, and the command's contract."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from conftest import FIXTURES, q, run_cli, run_json

H = FIXTURES / "hedging"
TRUTH = json.loads((H / "incident.truth.json").read_text())
RANGE = ["--since", "2026-10-23T11:00:00", "--until", "2026-10-23T13:00:00"]
SMALL_RANGE = ["--since", "2026-10-23T08:00:00", "--until", "2026-10-23T10:00:00"]
COUNT_KEYS = ("primary_races", "primary_wins", "primary_losses", "suppressed_losers", "failed_after_suppression",
              "secondary_attempts", "secondary_wins", "secondary_suppressed_losers")
FORMATS = {
    "gz": ["incident.log.gz"],
    "docker": ["incident-docker.log"],
    "slog": ["incident-slog.json"],
    "dockerjson": ["incident-dockerjson.log"],
    "split": ["incident-part1.log", "incident-part2.log"],
}


def _store(tmp_path_factory, name: str, *files: str) -> Path:
    db = tmp_path_factory.mktemp(name) / "a.duckdb"
    args = []
    for f in files:
        args += ["--gateway-log", str(H / f)]
    r = run_cli("collect", *args, db=db)
    assert r.returncode == 0, r.stderr
    return db


@pytest.fixture(scope="module")
def incident(tmp_path_factory):
    db = _store(tmp_path_factory, "incident", "incident.log")
    return db, run_json("hedging", "--offline", *RANGE, "--format", "json", db=db)


@pytest.fixture(scope="module")
def small(tmp_path_factory):
    db = _store(tmp_path_factory, "small", "small.log")
    return run_json("hedging", "--offline", *SMALL_RANGE, "--format", "json", db=db)


def _by_label(report) -> dict:
    return {h["label"]: h for h in report["hosts"]}


# -- the incident's shape ---------------------------------------------------------------------
def test_hosts_match_the_ground_truth(incident):
    _, rep = incident
    got = _by_label(rep)
    assert set(got) == {h["label"] for h in TRUTH["hosts"]}
    for t in TRUTH["hosts"]:
        h = got[t["label"]]
        assert {k: h[k] for k in COUNT_KEYS} == {k: t[k] for k in COUNT_KEYS}, t["label"]
        assert h["host"] == t["host"]                                   # the full address, from the log
        assert h["wasted_seconds"] == pytest.approx(t["wasted_ms"] / 1000, abs=1e-6), t["label"]
        assert h["primary_rescued"] == t["rescued"]
    p = got["p232vrcn"]           # the testnet numbers
    assert (p["primary_races"], p["primary_wins"], p["primary_losses"], p["suppressed_losers"]) == (45, 15, 30, 29)
    assert (p["failed_after_suppression"], p["suppressed_losers_completed"], p["primary_rescued"]) == (1, 29, 0)
    assert (got["q9u4txhy"]["secondary_attempts"], got["q9u4txhy"]["secondary_wins"]) == (24, 24)
    assert (got["kepcgs0y"]["secondary_attempts"], got["kepcgs0y"]["secondary_suppressed_losers"]) == (26, 20)


def test_who_beat_the_remote_primary(incident):
    _, rep = incident
    beaten = {(b["decision"], b["winner_host"]): b["races"] for b in _by_label(rep)["p232vrcn"]["beaten_by"]}
    assert beaten == {("pairwise_ab_sample", "q9u4txhy"): 13, ("secondary_faster", "q9u4txhy"): 11,
                      ("pairwise_budgeted_speedup", "kepcgs0y"): 4, ("pairwise_ab_sample", "kepcgs0y"): 2}


def test_findings_flag_the_remote_primary_and_nothing_that_must_not_be(incident):
    _, rep = incident
    codes = {(f["code"], f["subject"]["id"][-8:]) for f in rep["findings"]}
    assert ("suppressed_loser_waste", "p232vrcn") in codes
    assert ("hedge_predictable_loss", "p232vrcn") in codes
    assert ("primary_unresponsive_false_positive", "m8lwq3ce") in codes
    # a local host that always wins, marginal hedges the primary wins, a stalled primary rescued
    for quiet in ("q9u4txhy", "h4rgnj2v", "s7xzdmew", "kepcgs0y"):
        assert not [c for c in codes if c[1] == quiet], quiet
    waste = next(f for f in rep["findings"] if f["code"] == "suppressed_loser_waste")
    ev = waste["evidence"]
    assert (ev["races"], ev["losses"], ev["suppressed_losers"]) == (45, 30, 29)
    assert ev["wasted_seconds"] > 0 and ev["wasted_bytes"] > 0 and ev["beaten_by"]
    assert waste["severity"] == "warn" and waste["subject"]["kind"] == "participant"
    assert waste["model"] == "Qwen/Qwen3-4B-Instruct-2507"
    fp = next(f for f in rep["findings"] if f["code"] == "primary_unresponsive_false_positive")
    assert fp["evidence"]["decisions"] == 4 and fp["evidence"]["false_positives"] == 3
    assert len(fp["evidence"]["examples"]) == 3
    assert rep["primary_unresponsive"]["false_positives"] == 3


def test_rescues_are_not_waste(incident):
    _, rep = incident
    s = _by_label(rep)["s7xzdmew"]        # 10 losses, every one rescued by a receipt-timeout hedge
    assert (s["primary_losses"], s["primary_rescued"], s["wasted_seconds"]) == (10, 10, 0)
    assert s["suppressed_losers"] == 6    # 6 stalled primaries did finish: suppressed, yet not waste
    assert rep["totals"]["rescues"] == 11 and rep["totals"]["rescue_latency_saved_seconds"] > 0


def test_totals_and_decisions(incident):
    _, rep = incident
    t = rep["totals"]
    assert (t["races"], t["attempts"], t["cache_hits"], t["user_requests"]) == (93, 165, 22, 115)
    assert not any(n.startswith("no cache line") for n in rep["notes"])          # this gateway logs its cache
    assert t["attempts_per_request"] == pytest.approx(165 / 93, abs=1e-4)
    assert t["wasted_seconds"] == pytest.approx(sum(h["wasted_ms"] for h in TRUTH["hosts"]) / 1000, abs=1e-3)
    assert 0.3 < t["wasted_seconds_share"] < 0.6 and t["time_resolution"] == "sub-second"
    assert sum(h["races"] for h in rep["per_hour"]) == t["races"]
    d = {x["decision"]: x for x in rep["decisions"]}
    assert d["secondary_faster"]["races_started"] == 11 and d["secondary_faster"]["extra_won"] == 11
    assert d["pairwise_ab_sample"]["extra_attempts"] == 35 and d["pairwise_ab_sample"]["extra_wasted"] == 20
    assert d["receipt_timeout"]["rescues"] == 10 and d["receipt_timeout"]["wasted_seconds"] == 0


def test_predictability(incident):
    _, rep = incident
    p = {h["label"]: h for h in rep["predictability"]["hosts"]}["p232vrcn"]
    assert (p["losses"], p["with_prediction"], p["predictable"], p["predictable_share"]) == (30, 28, 28, 1.0)
    assert (rep["predictability"]["evaluable_races"], rep["predictability"]["prediction_right"]) == (61, 51)
    # each predictable loss is a race of the per-race list that p232vrcn lost as primary
    races = {r["request"]: r for r in rep["races"]}
    assert len(set(p["predictable_requests"])) == 28
    for req in p["predictable_requests"]:
        primary = races[req]["attempts"][0]
        assert primary["host"] == "p232vrcn" and primary["role"] == "primary" and not primary["winner"]
        assert races[req]["loss_predictable"] is True
    (f,) = [f for f in rep["findings"] if f["code"] == "hedge_predictable_loss"]
    assert f["summary"].startswith("28 of p232vrcn's 30 losses as primary (28 with a prediction)")
    assert f["evidence"]["predictable_requests"] == p["predictable_requests"][:20]



def test_prior_window_is_the_gateways_by_hand(tmp_path):
    """views/hedge_priors.sql over hand-made attempts: the latest 256 samples of the hour before
    the race, the hour's edge included, the race's own instant and later samples excluded."""
    from datetime import datetime, timedelta, timezone

    from auditor.store import Store

    t0 = datetime(2026, 10, 23, 12, tzinfo=timezone.utc)
    rows = []

    def attempt(host, role, *, request, ft=None, ttft=None, receipt=None, race_ts=None, probe=False):
        rows.append((1, len(rows) + 1, request, len(rows) + 1, host, "m", role, probe, race_ts, ft, ttft, receipt))

    attempt("far", "secondary", request="r0", ft=t0 - timedelta(hours=2), ttft=9000, receipt=9000)  # too old
    attempt("far", "secondary", request="r0", ft=t0 - timedelta(hours=1), ttft=100, receipt=10)     # the edge
    attempt("far", "secondary", request="r0", ft=t0 - timedelta(minutes=30), ttft=200)              # no receipt
    attempt("far", "secondary", request="r0", ft=t0 - timedelta(minutes=10), ttft=300, receipt=30)
    attempt("far", "secondary", request="r0", ft=t0 - timedelta(minutes=5), ttft=400, receipt=40, probe=True)
    attempt("far", "secondary", request="r0", ft=t0, ttft=7000, receipt=7000)                       # not before
    for i in range(1, 301):                                                                          # 300 samples
        attempt("busy", "secondary", request="r0", ft=t0 - timedelta(seconds=1800 - i), ttft=i, receipt=2 * i)
    attempt("far", "primary", request="race", race_ts=t0)
    attempt("busy", "secondary", request="race", race_ts=t0)
    with Store(tmp_path / "a.duckdb") as st:
        st.con.execute("CREATE TEMP TABLE hedge_attempts (file_id INTEGER, line_no BIGINT, request VARCHAR, "
                       "nonce BIGINT, host VARCHAR, model VARCHAR, role VARCHAR, probe BOOLEAN, race_ts TIMESTAMPTZ, "
                       "first_token_ts TIMESTAMPTZ, ttft_ms BIGINT, receipt_ms BIGINT)")
        st.con.executemany("INSERT INTO hedge_attempts VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", rows)
        got = {r["host"]: r for r in st.rows("SELECT * FROM hedge_priors WHERE request = 'race'")}
    assert got["far"]["prior_samples"] == 3
    assert got["far"]["ttft_q"] == [150.0, 200.0, 250.0]     # 100, 200, 300
    assert got["far"]["receipt_q"] == [15.0, 20.0, 25.0]     # 10, 30: the sample without a receipt is skipped
    assert got["busy"]["prior_samples"] == 256               # samples 45 .. 300
    assert got["busy"]["ttft_q"] == [108.75, 172.5, 236.25]
    assert got["busy"]["receipt_q"] == [217.5, 345.0, 472.5]


def test_derived_tables_are_kept_and_rebuilt_when_logs_arrive(tmp_path, incident):
    """The first run keeps the attempts in the store; a second run reads them as they are;
    collecting more of the log makes the next run rebuild them, and the figures are those of
    a store that read the whole log at once."""
    from auditor.store import Store

    _, whole = incident
    db = tmp_path / "a.duckdb"

    def state():
        with Store(db) as st:
            return {r["name"]: (r["log_events"], r["built_at"]) for r in st.rows("SELECT * FROM derived_state")}

    assert run_cli("collect", "--gateway-log", str(H / "incident-part1.log"), db=db).returncode == 0
    part = run_json("hedging", "--offline", *RANGE, "--format", "json", db=db)
    built = state()
    assert set(built) == {"attempts", "hedge_attempts", "hedge_races", "hedge_priors", "log_host_lines",
                          "log_participants"}
    assert run_json("hedging", "--offline", *RANGE, "--format", "json", db=db) == part
    assert state() == built                                   # read as kept, not rebuilt
    assert run_cli("collect", "--gateway-log", str(H / "incident-part2.log"), db=db).returncode == 0
    rep = run_json("hedging", "--offline", *RANGE, "--format", "json", db=db)
    after = state()
    assert all(after[v][0] > built[v][0] and after[v][1] > built[v][1] for v in built)
    assert rep["hosts"] == whole["hosts"] != part["hosts"]
    assert rep["totals"] == whole["totals"]


def test_sql_reads_the_kept_tables_while_they_are_up_to_date(tmp_path):
    """`auditor sql` reads a view from its kept table while the table is up to date (a busy
    day's hedge_races in milliseconds, not worked out over the whole log), and from the view
    once more log is collected and the table is behind."""
    import duckdb

    db = tmp_path / "a.duckdb"
    query = "SELECT DISTINCT winner_host AS host FROM hedge_races"
    assert run_cli("collect", "--gateway-log", str(H / "incident-part1.log"), db=db).returncode == 0
    assert run_json("sql", query, "--format", "json", db=db)["rows"]        # nothing kept yet: the view
    run_json("hedging", "--offline", *RANGE, "--format", "json", db=db)      # keeps the tables
    with duckdb.connect(str(db)) as con:                 # mark the kept rows, to see which were read
        con.execute("UPDATE derived_hedge_races SET winner_host = 'kept'")
    assert run_json("sql", query, "--format", "json", db=db)["rows"] == [{"host": "kept"}]
    assert run_cli("collect", "--gateway-log", str(H / "incident-part2.log"), db=db).returncode == 0
    rows = run_json("sql", query, "--format", "json", db=db)["rows"]
    assert rows and {"host": "kept"} not in rows


def test_hours_are_utc_whatever_the_machines_zone(incident):
    """The per-hour buckets are UTC hours on a machine in a half-hour zone too."""
    db, plain = incident
    rep = run_json("hedging", "--offline", *RANGE, "--format", "json", db=db, env={"TZ": "Asia/Kolkata"})
    assert [h["hour"] for h in rep["per_hour"]] == [h["hour"] for h in plain["per_hour"]]
    assert all(h["hour"].endswith(":00:00.000000Z") for h in rep["per_hour"])


def test_one_primary_rule_in_every_view(tmp_path):
    """The second half of the incident log starts inside some requests: their decision_made
    lines were not read. One rule (views/attempts.sql) gives every view the same primaries:
    the decision_made nonce, else the request's lowest non-probe nonce, marked inferred.
    log_attempts used to leave those 7 NULL (45 primaries) while hedge_attempts inferred
    them (52)."""
    import duckdb

    db = tmp_path / "a.duckdb"
    assert run_cli("collect", "--gateway-log", str(H / "incident-part2.log"), db=db).returncode == 0
    con = duckdb.connect(str(db), read_only=True)
    try:
        def q(sql):
            return con.execute(sql).fetchall()

        primaries = "SELECT request, nonce, primary_inferred FROM {} WHERE role = 'primary' ORDER BY ALL"
        got = q(primaries.format("log_attempts"))
        assert got == q(primaries.format("hedge_attempts")) == q(primaries.format("attempts"))
        assert len(got) == 52 and sum(1 for *_, inferred in got if inferred) == 7
        assert q("SELECT count(*) FROM log_attempts WHERE role IS NULL") == [(0,)]
        per_request = {(r, n, i) for r, n, i in got}
        assert {tuple(r) for r in q("SELECT request, primary_nonce, primary_inferred FROM log_requests "
                                    "WHERE primary_nonce IS NOT NULL")} == per_request
        assert {tuple(r) for r in q("SELECT request, primary_nonce, primary_inferred FROM hedge_races")} == per_request
    finally:
        con.close()


@pytest.mark.parametrize("fmt", ["plain", *sorted(FORMATS)])
def test_one_suppressed_loser_rule_in_both_attempt_views(tmp_path_factory, incident, fmt):
    """log_attempts (and so log_requests) counts the suppressed losers this analysis counts, in
    every log format (both project the rule of views/attempts.sql)."""
    import duckdb

    db = incident[0] if fmt == "plain" else _store(tmp_path_factory, f"rule-{fmt}", *FORMATS[fmt])
    con = duckdb.connect(str(db), read_only=True)
    try:
        differ, losers, rows = con.execute(
            "SELECT count(*) FILTER (WHERE a.suppressed_loser IS DISTINCT FROM h.suppressed_loser), "
            "count(*) FILTER (WHERE h.suppressed_loser), count(*) "
            "FROM log_attempts a JOIN hedge_attempts h USING (file_id, line_no)").fetchone()
        attempts = con.execute("SELECT count(*) FROM log_attempts").fetchone()[0]
    finally:
        con.close()
    truth = sum(h["suppressed_losers"] + h["secondary_suppressed_losers"] for h in TRUTH["hosts"])
    assert differ == 0 and losers == truth and rows == attempts

def test_a_loser_that_stalls_after_suppression_is_no_suppressed_loser(incident):
    """The gateway's vocabulary (gateway-logs.md 13.3): visibility=suppressed_loser is a loser
    whose nonce finished. #2105's 30th lost primary race: the remote primary's stream was
    suppressed, then it stalled and ended sse_truncated (failed_not_finished to the gateway).
    It is counted apart, its race is no rescue, and its work up to its end is waste."""
    import duckdb

    con = duckdb.connect(str(incident[0]), read_only=True)
    try:
        rows = con.execute(
            "SELECT failure_reason, stream_suppressed, suppressed_loser, rescue, wasted, "
            "wasted_ms = epoch_ms(end_ts) - (SELECT epoch_ms(max(ts)) FROM log_events e WHERE e.name = "
            "'winner_selected' AND e.request = h.request) "
            "FROM hedge_attempts h WHERE failed_after_suppression").fetchall()
        by_role = con.execute("SELECT role, count(*) FILTER (WHERE suppressed_loser), "
                              "count(*) FILTER (WHERE failed_after_suppression) FROM hedge_attempts "
                              "WHERE host = 'p232vrcn' GROUP BY role").fetchall()
    finally:
        con.close()
    assert rows == [("sse_truncated", True, False, False, True, True)]
    assert by_role == [("primary", 29, 1)]
    assert _by_label(incident[1])["p232vrcn"]["failed_after_suppression"] == 1
    assert incident[1]["totals"]["failed_after_suppression"] == 1


# -- every format, the same rows ----------------------------------------------------------------
@pytest.mark.parametrize("fmt", sorted(FORMATS))
def test_every_format_gives_the_same_hosts_rows(tmp_path_factory, incident, fmt):
    _, plain = incident
    db = _store(tmp_path_factory, fmt, *FORMATS[fmt])
    rep = run_json("hedging", "--offline", *RANGE, "--format", "json", db=db)
    assert rep["hosts"] == plain["hosts"]
    assert rep["totals"] == plain["totals"]
    assert rep["counterfactuals"] == plain["counterfactuals"]


def test_whole_second_go_prefix_same_counts_and_says_so(tmp_path_factory, incident):
    _, plain = incident
    db = _store(tmp_path_factory, "seconds", "incident-seconds.log")
    rep = run_json("hedging", "--offline", *RANGE, "--format", "json", db=db)
    got, want = _by_label(rep), _by_label(plain)
    for label, h in want.items():
        assert {k: got[label][k] for k in COUNT_KEYS} == {k: h[k] for k in COUNT_KEYS}
        assert abs(got[label]["wasted_seconds"] - h["wasted_seconds"]) <= h["wasted_attempts"] + 1e-9
    assert rep["totals"]["time_resolution"] == "second"
    assert any("1 s resolution" in n for n in rep["notes"])


# -- the synthetic generator's ground truth -------------------------------------------------------
@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    db = tmp_path_factory.mktemp("demo") / "a.duckdb"
    r = run_cli("collect", "--epoch", "403", "--replay", str(FIXTURES / "chain" / "epoch-403"),
                "--gateway-log", str(FIXTURES / "demo-epoch-403" / "gateway.log.gz"), db=db)
    assert r.returncode == 0, r.stderr
    return db


def test_synthetic_ground_truth(demo):
    truth = json.loads((FIXTURES / "demo-epoch-403" / "gateway.summary.json").read_text())
    rep = run_json("hedging", "403", "--offline", "--format", "json", db=demo)
    hosts = rep["hosts"]
    assert sum(h["suppressed_losers"] + h["secondary_suppressed_losers"] for h in hosts) == truth["suppressed_losers"]
    assert sum(h["suppressed_losers"] for h in hosts) == truth["suppressed_primaries"]
    assert rep["totals"]["attempts"] == truth["attempts"] - truth["probes"]
    assert sum(h["primary_wins"] + h["secondary_wins"] for h in hosts) == truth["winners"]
    started = {d["decision"]: d["races_started"] for d in rep["decisions"] if d["races_started"]}
    assert started == truth["hedged_races_by_decision"]
    assert {d["decision"]: d["races"] for d in rep["decisions"]} == truth["decisions"]
    assert rep["totals"]["hedged_races"] == truth["multi_attempt_requests"]


def test_epoch_report_has_the_hedging_section(demo):
    rep = run_json("epoch", "403", "--offline", "--format", "json", db=demo)
    assert rep["hedging"]["available"] is True and rep["hedging"]["hosts"]
    own = run_json("hedging", "403", "--offline", "--format", "json", db=demo)
    codes = {(f["code"], f["subject"]["id"]) for f in rep["findings"]}
    assert own["findings"]
    # the demo log covers 1.5 hours of the day-long epoch: said, not hidden
    assert own["coverage"]["log_covers_range"] is False and own["coverage"]["unknown"]
    for f in own["findings"]:
        assert (f["code"], f["subject"]["id"]) in codes


# -- counterfactuals, by hand ---------------------------------------------------------------------
# small.log (fixtures/hedging/make_fixtures.py small()): S = sl0wh0st always receipts at 1 s,
# first token at 1.5 s, runs 60 s, 600,000 bytes; F = fa5th0st at 10 ms / 150 ms, 20 s,
# 500,000 bytes. Three warm-up races each alone, then R1-R4 pairwise_budgeted_speedup and
# R5-R6 secondary_faster (S primary, F started 200 ms later: F's first token at 350 ms, its
# winner_selected at 370 ms, S's race_completed at 60,015 ms), R7 pairwise_ab_sample (same),
# R8 pairwise_ab_sample with F primary and S sampled at 200 ms (F's winner_selected at
# 170 ms, S's race_completed at 60,215 ms), R9 receipt_timeout: S stalls (first token at
# 7.5 s), F started at 5,050 ms wins (winner_selected at 5,220 ms): a rescue.
def _cf(report, name):
    return next(c for c in report["counterfactuals"] if c["remedy"] == name)


def test_the_tables_say_where_their_sums_part(demo):
    """A reader adding the per-decision races_started (121) gets fewer than the hedged races (137),
    and cancel_losers saves more seconds (3,697) than were wasted (3,521): each table says why."""
    rep = run_json("hedging", "403", "--offline", "--format", "json", db=demo)
    started = sum(d["races_started"] for d in rep["decisions"])
    later = rep["totals"]["hedged_races"] - started
    assert later > 0
    text = " ".join(run_cli("hedging", "403", "--offline", "--format", "md", db=demo).stdout.split())
    assert (f"races_started: races whose decision started an extra attempt, {started:,} of the "
            f"{rep['totals']['hedged_races']:,} hedged; the other {later:,} have a secondary") in text
    assert f"rescues and wasted_seconds count the races_started only (the totals: {rep['totals']['rescues']:,} " in text
    # the predictability table's losses are those no rescue explains: fewer than the hosts table's
    assert "losses: a host's losses as primary that no rescue explains" in text
    pred = {h["label"]: h["losses"] for h in rep["predictability"]["hosts"]}
    assert all(pred[h["label"]] == h["primary_losses"] - h["primary_rescued"] for h in rep["hosts"] if h["label"] in pred)
    # with --participant the header's figures stay the network's, and say so
    victim = rep["hosts"][0]["host"]
    narrowed = " ".join(run_cli("hedging", "403", "--participant", victim, "--offline", "--format", "md",
                                db=demo).stdout.split())
    assert "the network's, every host's; --participant" in narrowed and "the network's" not in text
    # the demo's gateway logs no cache line: its 0 cache hits are none logged, not none served
    assert "no cache line logged)" in text and rep["totals"]["cache_hits"] == 0
    assert any(n.startswith("no cache line (gateway_cache_hit, _miss, _stored) in the logs read") for n in rep["notes"])
    # the demo's lines are timed to the whole second: a ttft of 0 ms beside a receipt of 453 ms
    assert rep["totals"]["time_resolution"] == "second"
    assert "ttft_ms: started -&gt; first_token from lines timed to the whole second: each within ±1,000 ms" in text
    [cancel] = [c for c in rep["counterfactuals"] if c["remedy"] == "cancel_losers"]
    assert cancel["attempt_seconds_saved"] > rep["totals"]["wasted_seconds"]
    assert any("in rescued races too" in a and "can exceed them" in a for a in cancel["assumptions"])


def test_speed_aware_primary_by_hand(small):
    c = _cf(small, "speed_aware_primary")
    # R1-R7 and R9: S is the primary and F was clearly faster (medians 1500 vs 150 ms): F alone
    assert (c["races"], c["attempts_saved"], c["attempt_seconds_saved"], c["output_bytes_saved"]) == \
        (8, 8, 8 * 60.0, 8 * 600_000)
    # F alone answers at 150 ms: 200 ms sooner in R1-R7, 5,050 ms sooner in R9
    assert (c["latency_better"], c["latency_worse"], c["would_fail"]) == (8, 0, 0)
    assert c["latency_saved_seconds"] == pytest.approx(7 * 0.2 + 5.05)


def test_replace_instead_of_add_by_hand(small):
    c = _cf(small, "replace_instead_of_add")
    # R1-R6 only (speed-up decisions), ratio 1500/150 = 10 >= 2: the primary S is not run
    assert (c["races"], c["attempts_saved"], c["attempt_seconds_saved"], c["output_bytes_saved"]) == \
        (6, 6, 360.0, 3_600_000)
    assert (c["latency_better"], c["latency_saved_seconds"], c["latency_worse"]) == (6, pytest.approx(1.2), 0)


def test_cancel_losers_by_hand(small):
    c = _cf(small, "cancel_losers")
    # R1-R7: 60,015 - 370 = 59,645 ms each; R8: 60,215 - 170 = 60,045; R9 (rescue too): 60,015 - 5,220
    assert c["races"] == 9 and c["attempts_saved"] == 0
    assert c["attempt_seconds_saved"] == pytest.approx((7 * 59_645 + 60_045 + 54_795) / 1000)
    assert c["output_bytes_saved"] == 9 * 600_000


def test_stop_ab_sampling_by_hand(small):
    c = _cf(small, "stop_ab_sampling")
    # R7: 6 earlier S/F comparisons (R1-R6), all won by F: the F sample is skipped, S serves at
    # 1,500 ms instead of F's 350: 1.15 s worse. R8: 7 comparisons: the S sample is skipped.
    assert (c["races"], c["attempts_saved"], c["attempt_seconds_saved"], c["output_bytes_saved"]) == \
        (2, 2, 80.0, 1_100_000)
    assert (c["latency_worse"], c["latency_added_seconds"]) == (1, pytest.approx(1.15))


def test_small_hosts_and_findings(small):
    got = _by_label(small)
    s, f = got["sl0wh0st"], got["fa5th0st"]
    assert (s["primary_races"], s["primary_wins"], s["primary_losses"], s["primary_rescued"]) == (11, 3, 8, 1)
    assert (f["secondary_attempts"], f["secondary_wins"], f["primary_races"], f["primary_wins"]) == (8, 8, 4, 4)
    # wasted as primary in R1-R7 (59.645 s each) and as the R8 sample (60.045 s); R9 is a rescue
    assert s["wasted_seconds"] == pytest.approx(7 * 59.645 + 60.045)
    assert small["predictability"]["prediction_right"] == small["predictability"]["evaluable_races"] == 9
    codes = {(x["code"], x["subject"]["id"][-8:]) for x in small["findings"]}
    assert codes == {("suppressed_loser_waste", "sl0wh0st"), ("hedge_predictable_loss", "sl0wh0st")}
    assert small["thresholds"]["replace_ratio"] == 2.0


# -- the command --------------------------------------------------------------------------------
def test_since_until_narrow_the_range(incident):
    db, rep = incident
    half = run_json("hedging", "--offline", "--since", "2026-10-23T11:35:00", "--until", "2026-10-23T11:40:00",
                    "--format", "json", db=db)
    assert 0 < half["totals"]["races"] < rep["totals"]["races"]
    assert half["range"]["from"] == "--since/--until"
    r = run_cli("hedging", "--offline", "--since", "2026-10-23T12:00", "--until", "2026-10-23T11:00", db=db)
    assert r.returncode == 2 and "not before" in r.stderr
    r = run_cli("hedging", "--offline", db=db)
    assert r.returncode == 2 and "epoch N or --since/--until" in r.stderr


def test_outside_the_logs_and_without_logs_exit_3(incident, tmp_path):
    db, _ = incident
    r = run_cli("hedging", "--offline", "--since", "2026-10-24", "--until", "2026-10-25", db=db)
    assert r.returncode == 3 and "no race" in r.stderr and "Traceback" not in r.stderr
    r = run_cli("hedging", "403", "--offline", db=db)          # no chain data: its span is unknown
    assert r.returncode == 3 and "--since/--until" in r.stderr


def test_epoch_without_logs_says_so_and_stays_complete(tmp_path):
    db = tmp_path / "a.duckdb"
    assert run_cli("collect", "--epoch", "403", "--replay", str(FIXTURES / "chain" / "epoch-403"), db=db).returncode == 0
    r = run_cli("epoch", "403", "--offline", "--format", "json", db=db)
    assert r.returncode == 0, r.stderr
    h = json.loads(r.stdout)["hedging"]
    assert h["available"] is False and "gateway" in h["reason"]
    r = run_cli("hedging", "403", "--offline", db=db)
    assert r.returncode == 3 and "gateway" in r.stderr


def test_formats_and_fail_on(incident):
    db, _ = incident
    r = run_cli("hedging", "--offline", *RANGE, "--format", "csv", db=db)
    assert r.returncode == 0 and r.stdout.splitlines()[0].startswith("host,label,primary_races")
    r = run_cli("hedging", "--offline", *RANGE, "--format", "md", db=db)
    assert r.returncode == 0 and "suppressed_loser_waste" in r.stdout and "Counterfactuals" in r.stdout
    r = run_cli("hedging", "--offline", *RANGE, db=db)
    assert r.returncode == 0 and "p232vrcn" in r.stdout
    assert run_cli("hedging", "--offline", *RANGE, "--fail-on", "warn", db=db).returncode == 1
    rep = run_json("hedging", "--offline", *RANGE, "--participant", "p232vrcn", "--format", "json", db=db)
    assert [h["label"] for h in rep["hosts"]] == ["p232vrcn"]
    assert {f["subject"]["id"][-8:] for f in rep["findings"]} == {"p232vrcn"}


def test_the_json_lists_the_races_with_most_waste_and_says_where_the_rest_are(incident, monkeypatch):
    """A day's races are too many to list: the JSON lists the RACES_LISTED with the most wasted
    work, in time order like the whole list; races_listed says how many of how many, and its
    query finds exactly the races of the range in the store; --all-races lists them all."""
    import shlex

    from auditor.analyses import hedging

    db, whole = incident
    monkeypatch.setattr(hedging, "RACES_LISTED", 5)
    rep = run_json("hedging", "--offline", *RANGE, "--format", "json", db=db)
    def waste(r):
        return sum(a["wasted_ms"] or 0 for a in r["attempts"])

    assert len(rep["races"]) == 5 and [r for r in whole["races"] if r in rep["races"]] == rep["races"]
    assert min(map(waste, rep["races"])) >= sorted(map(waste, whole["races"]), reverse=True)[4]
    listed = rep["races_listed"]
    assert (listed["listed"], listed["of"]) == (5, len(whole["races"])) and "most" in listed["which"]
    query = shlex.split(listed["all"].split("so does ", 1)[1].split(" (their")[0])
    assert query[:2] == ["auditor", "sql"]
    assert len(run_json("sql", query[2], "--format", "json", db=db)["rows"]) == listed["of"]
    command = shlex.split(listed["all"].split(" lists them all;")[0])     # the command it names runs
    assert command[:2] == ["auditor", "hedging"] and command[-1] == "--all-races"
    assert len(run_json(*command[1:], "--offline", "--format", "json", db=db)["races"]) == listed["of"]
    # --all-races writes the races a page at a time, as a busy day's: 2 a page here, the last
    # page short or empty as it falls
    assert len(whole["races"]) > 4
    for per_page in (2, len(whole["races"])):
        monkeypatch.setattr(hedging, "RACES_PER_PAGE", per_page)
        everything = run_json("hedging", "--offline", *RANGE, "--all-races", "--format", "json", db=db)
        assert everything["races"] == whole["races"] and everything["races_listed"]["which"] == "all"


# -- attempt durations (#1935) --------------------------------------------------------------------
# Gateway v5.1.0 (fixed in v4.1.3) measured an attempt's attempt_ms, and logged its race_completed
# line, when the whole request settled. Here the primary's stream failed 3 s after it started (its
# send_failed line), yet its race_completed line, at the settlement 20 s in, says attempt_ms=20020.
R1935 = "req-1792748400000000000-1935"


def _race_completed(nonce: int, host: str, winner: bool, attempt_ms: int, chunks: int, size: int) -> str:
    return (f"nonce={nonce} host={host} host_idx={nonce} participant=gonka1qqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqq{host} "
            f"model=Qwen/Qwen3-4B-Instruct-2507 input_tokens=900 winner={str(winner).lower()} "
            f"finished={str(winner).lower()} responsive=true has_receipt=true confirmed_at=0 attempt_ms={attempt_ms} "
            f"output_chunks={chunks} content_chunks={chunks} output_bytes={size} stream_bytes_read={size} "
            f"usage_tokens={chunks} max_gap_ms=80 mean_gap_ms=20 content_source=delta.content error_source=\"\" "
            "probe=false suspicious=false" + ("" if winner else " failure_reason=sse_truncated"))


LOG_1935 = "\n".join(f"2026/10/23 10:00:{t} request={R1935} stage={s} escrow=900 {kv}" for t, s, kv in [
    ("00.000000", "decision_made", "nonce=1 host=pr1mhost decision=pairwise_budgeted_speedup delay_ms=0 "
                                   "max_attempts=2 group_size=16"),
    ("00.010000", "started", "nonce=1 host=pr1mhost"),
    ("00.020000", "started", "nonce=2 host=s3cchost"),
    ("01.000000", "first_token", "nonce=2 host=s3cchost route=winner winner_nonce=2"),
    ("01.010000", "winner_selected", "nonce=2"),
    ("02.000000", "stream_suppressed", "nonce=1 host=pr1mhost winner_nonce=2"),
    ("03.010000", "send_failed", "nonce=1 host=pr1mhost output_chunks=40 content_chunks=38 output_bytes=9000 "
                                 "stream_bytes_read=9100 poc_reason=\"\" poc_generation=false failure_reason=sse_truncated"),
    ("20.020000", "send_completed", "nonce=2 host=s3cchost output_chunks=900 content_chunks=890 output_bytes=200000 "
                                    "stream_bytes_read=204000 max_gap_ms=80 max_gap_at_chunk=3 mean_gap_ms=20"),
    ("20.030000", "race_completed", _race_completed(2, "s3cchost", True, 20010, 900, 200000)),
    ("20.030000", "race_completed", _race_completed(1, "pr1mhost", False, 20020, 40, 9000)),
]) + "\n"
RANGE_1935 = ["--since", "2026-10-23T09:59:00", "--until", "2026-10-23T10:01:00"]


def test_attempt_durations_come_from_the_stage_lines_where_attempt_ms_disagrees(tmp_path):
    log = tmp_path / "v510.log"
    log.write_text(LOG_1935)
    db = tmp_path / "a.duckdb"
    assert run_cli("collect", "--gateway-log", str(log), db=db).returncode == 0
    out = run_json("hedging", *RANGE_1935, "--offline", "--format", "json", db=db)
    d = out["attempt_durations"]
    assert (d["attempts"], d["stage_timed"], d["disagreements"], d["loser_ends_from_stage_lines"]) == (2, 2, 1, 1)
    assert d["disagreement_share"] == 0.5 and d["basis"] == "stage_lines_where_attempt_ms_disagrees"
    assert d["examples"] == [{"request": R1935, "nonce": 1, "host": "pr1mhost", "role": "primary",
                              "attempt_ms": 20020, "stage_ms": 3000}]
    assert (d["attempt_seconds_logged"], d["attempt_seconds_used"]) == (40.03, 23.01)
    t = out["totals"]
    assert t["duration_basis"] == "stage_lines_where_attempt_ms_disagrees"
    # the primary ran 3 s, not 20; it threw away 2 s after the winner was selected, not 19
    assert (t["attempt_seconds"], t["wasted_seconds"]) == (23.01, 2.0)
    assert any("#1935" in n for n in out["notes"])
    host = next(h for h in out["hosts"] if h["label"] == "pr1mhost")
    assert (host["attempt_seconds"], host["wasted_seconds"]) == (3.0, 2.0)


def test_attempt_durations_agreeing_with_the_stage_lines_keep_attempt_ms(small):
    out = small
    d = out["attempt_durations"]
    assert d["disagreements"] == 0 and d["stage_timed"] > 0 and d["basis"] == out["totals"]["duration_basis"] == "attempt_ms"
    assert d["attempt_seconds_used"] == d["attempt_seconds_logged"] == out["totals"]["attempt_seconds"]


def test_a_range_in_iso_8601_with_a_zone_at_minute_precision(incident):
    """--since/--until take ISO 8601 with Z or an offset, at minute precision too (times.parse_time):
    the nine strptime patterns refused 2026-10-23T11:00Z."""
    db, plain = incident
    (since, until) = RANGE[1], RANGE[3]
    zoned = ("--since", since[:16] + "Z", "--until", until[:13] + ":30+00:30")       # the same instants
    assert run_json("hedging", "--offline", *zoned, "--format", "json", db=db) == plain


def test_one_first_decision_rule(tmp_path):
    """A request's decision is its first decision_made line, said once (views/request_decisions.sql):
    attempts (the primary's nonce, the decision, the delay) and log_requests (the decision, the
    most attempts) read it there, and no other SQL reads a decision_made line's decision. They
    said it twice (arg_min by position in attempts, first() in line order in log_requests)."""
    import duckdb

    from conftest import ROOT

    readers = {p.relative_to(ROOT / "queries").as_posix() for p in (ROOT / "queries").rglob("*.sql")
               if "log_hedge_decisions" in p.read_text(encoding="utf-8")}
    assert readers - {"lines/log_hedge_decisions.sql"} - {r for r in readers if r.startswith("refresh/")} == \
        {"views/request_decisions.sql", "poc_overload_escrow_slots.sql"}        # the latter: group sizes only
    for view in ("attempts", "log_requests"):
        assert "FROM request_decisions" in (ROOT / "queries" / "views" / f"{view}.sql").read_text(encoding="utf-8")
    db = tmp_path / "a.duckdb"
    assert run_cli("collect", "--gateway-log", str(H / "incident.log"), db=db).returncode == 0
    con = duckdb.connect(str(db), read_only=True)
    try:
        by_attempts = con.execute("SELECT DISTINCT request, decision FROM attempts WHERE request IS NOT NULL "
                                  "AND decision IS NOT NULL ORDER BY ALL").fetchall()
        by_requests = con.execute("SELECT request, decision FROM log_requests WHERE decision IS NOT NULL "
                                  "AND request IN (SELECT request FROM attempts) ORDER BY ALL").fetchall()
        assert by_attempts == by_requests and len(by_attempts) > 50
    finally:
        con.close()


def test_a_next_step_of_a_range_runs_as_printed(incident):
    """Over --since/--until the suppressed_loser_waste step said `auditor hedging N --format md`,
    which is a usage error as printed; it names the range now."""
    import shlex

    db, plain = incident
    (f,) = [f for f in plain["findings"] if f["code"] == "suppressed_loser_waste"][:1]
    command = f["action"].split("`")[1]
    assert " N " not in command and "--since " in command and "--until " in command, command
    args = shlex.split(command)
    assert args[:2] == ["auditor", "hedging"]
    r = run_cli(*args[1:], db=db)
    assert r.returncode == 0, r.stderr


def test_the_race_list_title_counts_what_there_is(incident):
    """"(top 50 of 72; the JSON lists 100 …)" over a range of 72 hedged races: it lists 72."""
    db, plain = incident
    n = plain["totals"]["hedged_races"]
    md = run_cli("hedging", "--offline", *RANGE, "--format", "md", db=db).stdout
    title = next(line for line in md.splitlines() if line.startswith("## Hedged races"))
    def lists(k: int) -> str:       # what the JSON lists, of k races: at most 100, all with --all-races
        return f"the JSON lists {min(100, k)}" + (", all with --all-races)" if k > 100 else ": all)")

    assert f"(top {min(50, n)} of {n}; {lists(n)}" in title, title
    # with --all-races the JSON lists every race: the title says so (it said 100 of 137)
    md = run_cli("hedging", "--offline", *RANGE, "--all-races", "--format", "md", db=db).stdout
    title = next(line for line in md.splitlines() if line.startswith("## Hedged races"))
    assert f"(top {min(50, n)} of {n}; the JSON lists {n}: all)" in title, title
    # narrowed to a host: its own races (the network's most wasteful held only some of them)
    label = plain["hosts"][0]["label"]
    md = run_cli("hedging", "--offline", *RANGE, "--participant", label, "--format", "md", db=db).stdout
    title = next(line for line in md.splitlines() if line.startswith("## Hedged races"))
    section = md.split(title, 1)[1].split("\n## ", 1)[0]
    shown = [x for x in section.splitlines() if x.startswith("| ") and not x.startswith("| ---")][1:]
    theirs = run_json("hedging", "--offline", *RANGE, "--participant", label, "--all-races", "-f", "json", db=db)
    m = theirs["races_listed"]["of"]
    assert m == len(theirs["races"]) < n and theirs["races_listed"]["with_hosts"] == [label]
    assert all(any(a["host"] == label for a in r["attempts"]) for r in theirs["races"])
    assert len(shown) == min(50, m)
    assert f"most waste first (top {len(shown)} of their {m}; {lists(m)}" in title, title
    assert re.search(r"--participant \S+ --all-races", theirs["races_listed"]["all"]), theirs["races_listed"]["all"]
    hinted = q(db, theirs["races_listed"]["all"].split('auditor sql "')[1].split('"')[0])
    assert len(hinted) == m                         # the SQL it gives finds the participant's races, all of them
