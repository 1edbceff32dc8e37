"""queries/hedging_predictions.sql against the walk over every race (test_hedging_walk.walk, what
hedging.py did in Python before) on generated races: ties of the hosts' prior medians, medians
of 0, equal latencies, hosts that meet twice in a race, several winners or none, races without
a primary, unknown times and sizes, and A/B histories that cross the thresholds. The query
runs on a real DuckDB file whose hedge_races, hedge_attempts and hedge_priors are tables
holding the generated rows."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from typing import Any

import duckdb
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from auditor.analyses import hedging as H
from auditor.store import queries_dir
from test_hedging_walk import walk

T0 = datetime(2026, 10, 23, 8, tzinfo=timezone.utc)
HOSTS = ("h1", "h2", "h3")
DECISIONS = (H.AB_DECISION, *H.SPEEDUP_DECISIONS, H.AB_DECISION, "receipt_timeout", H.AB_DECISION, None)
SCHEMA = """
CREATE OR REPLACE TABLE hedge_races (request VARCHAR, race_ts TIMESTAMPTZ, hedged BOOLEAN, rescue BOOLEAN, decision VARCHAR,
                          model VARCHAR);
CREATE OR REPLACE TABLE hedge_attempts (request VARCHAR, file_id INTEGER, line_no BIGINT, host VARCHAR, role VARCHAR,
                             nonce BIGINT, winner BOOLEAN, finished BOOLEAN, probe BOOLEAN, start_reason VARCHAR,
                             attempt_ms BIGINT, after_winner_ms BIGINT, output_bytes BIGINT, ttft_ms BIGINT,
                             started_ts TIMESTAMPTZ, race_ts TIMESTAMPTZ,
                             duration_ms BIGINT,   -- what the query sums (#1935); the walk's attempt_ms here
                             end_pos BIGINT GENERATED ALWAYS AS (file_id::BIGINT * 1000000000000 + line_no));
CREATE OR REPLACE TABLE hedge_priors (file_id INTEGER, line_no BIGINT, prior_samples BIGINT, ttft_q DOUBLE[],
                           receipt_q DOUBLE[]);
"""

# few values, so that medians, latencies and comparisons tie often; each host has its own
# speed (h2 fast, h3 slow, overlapping; not in the order of their names, as the pair is),
# so that predictions come out clear and A/B histories agree often enough to cross the thresholds
SPEED = {"h1": (1, 2), "h2": (0, 1), "h3": (2, 4)}
maybe_ms = st.sampled_from([None, 0, 100, 250, 1000])


def quartiles(host: str):
    values = st.lists(st.sampled_from(SPEED[host]), min_size=3, max_size=3)
    known = values.map(lambda q: [float(x) for x in sorted(q)])
    return st.one_of(known, known, st.none())


@st.composite
def attempt(draw, decision: str | None) -> dict[str, Any]:
    host = draw(st.sampled_from(["h1", "h2", "h1", "h2", "h3"]))
    ttft_q = draw(quartiles(host))
    samples = draw(st.sampled_from([4, 3, 4, 2, 0])) if ttft_q is not None else 0
    receipt_q = draw(quartiles(host)) if samples else None
    ttft = draw(st.sampled_from([0, 0, 300, 0, None]))
    return {"host": host, "winner": draw(st.booleans()), "finished": draw(st.booleans()),
            "start_reason": draw(st.sampled_from([decision, decision, H.AB_DECISION, "receipt_timeout", None])),
            "attempt_ms": draw(maybe_ms), "after_winner_ms": draw(maybe_ms), "output_bytes": draw(maybe_ms),
            "ttft_ms": None if ttft is None else ttft + 150 * SPEED[host][0],
            "start_ms": draw(st.sampled_from([0, 0, 100, 0, None])),
            "prior_samples": samples, "ttft_q": ttft_q, "receipt_q": receipt_q}


@st.composite
def race(draw, i: int) -> dict[str, Any]:
    decision = draw(st.sampled_from(DECISIONS))
    attempts = [draw(attempt(decision)) for _ in range(draw(st.sampled_from([2, 2, 3, 1])))]
    nonces = draw(st.lists(st.integers(0, 50), min_size=len(attempts), max_size=len(attempts), unique=True))
    has_primary = draw(st.integers(0, 9)) > 0
    for k, (a, n) in enumerate(zip(attempts, nonces)):
        a["nonce"], a["role"] = n, "primary" if k == 0 and has_primary else "secondary"
    return {"request": f"r{i:03d}", "decision": decision, "rescue": draw(st.booleans()),
            "model": draw(st.sampled_from(["m1", "m2", None])),
            "race_ts": T0 + timedelta(seconds=draw(st.integers(0, 5))), "attempts": attempts}


races_st = st.sampled_from(range(20, 41)).flatmap(lambda n: st.tuples(*[race(i) for i in range(n)]))


def _listed(r: dict[str, Any]) -> dict[str, Any]:
    """The race as --all-races lists it (hedging_race_attempts.sql's columns the walk reads)."""
    out = []
    for a in sorted(r["attempts"], key=lambda a: (a["role"] != "primary", a["nonce"])):
        tq, rq = a["ttft_q"] or [None] * 3, a["receipt_q"] or [None] * 3
        out.append({**a, "latency_ms": None if a["start_ms"] is None or a["ttft_ms"] is None
                    else a["start_ms"] + a["ttft_ms"],
                    "prior_ttft_p25_ms": tq[0], "prior_ttft_median_ms": tq[1], "prior_ttft_p75_ms": tq[2],
                    "prior_receipt_p25_ms": rq[0], "prior_receipt_median_ms": rq[1], "prior_receipt_p75_ms": rq[2]})
    return {**r, "attempts": out}


def _store(con: duckdb.DuckDBPyConnection, races) -> None:
    con.execute(SCHEMA)
    rows: dict[str, list[list[Any]]] = {"races": [], "attempts": [], "priors": []}
    line = 0
    for r in races:
        rows["races"].append([r["request"], r["race_ts"], r["rescue"], r["decision"], r["model"]])
        for a in r["attempts"]:
            line += 1
            started = None if a["start_ms"] is None else r["race_ts"] + timedelta(milliseconds=a["start_ms"])
            rows["attempts"].append([r["request"], line, a["host"], a["role"], a["nonce"], a["winner"], a["finished"],
                                     a["start_reason"], a["attempt_ms"], a["after_winner_ms"], a["output_bytes"],
                                     a["ttft_ms"], started, r["race_ts"], a["attempt_ms"]])
            rows["priors"].append([line, a["prior_samples"], a["ttft_q"], a["receipt_q"]])
    con.executemany("INSERT INTO hedge_races VALUES (?, ?, true, ?, ?, ?)", rows["races"])
    con.executemany("INSERT INTO hedge_attempts VALUES (?, 1, ?, ?, ?, ?, ?, ?, false, ?, ?, ?, ?, ?, ?, ?, ?)",
                    rows["attempts"])
    con.executemany("INSERT INTO hedge_priors VALUES (1, ?, ?, ?, ?)", rows["priors"])


@pytest.fixture(scope="module")
def con(tmp_path_factory):
    with duckdb.connect(str(tmp_path_factory.mktemp("predictions") / "h.duckdb")) as c:
        c.execute((queries_dir() / "views" / "in_range.sql").read_text())     # the range rule the query calls
        c.execute((queries_dir() / "views" / "race_primary.sql").read_text())  # and the race's primary row
        c.execute((queries_dir() / "views" / "hedge_prediction.sql").read_text())  # and the prediction rule
        yield c


@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(races=races_st)
def test_the_query_counts_what_the_walk_counts(con, races):
    _store(con, races)
    rel = con.execute((queries_dir() / "hedging_predictions.sql").read_text(),
                      {"since": None, "until": None, **H.prediction_args()})
    row = dict(zip([d[0] for d in rel.description], rel.fetchone()))
    listed = sorted((_listed(r) for r in races), key=lambda r: (r["race_ts"], r["request"]))
    want = walk(listed)
    pred = H.predictability(row)
    assert (pred["evaluable_races"], pred["prediction_right"]) == (want["evaluable_races"], want["prediction_right"])
    assert {h["label"]: {k: h[k] for k in ("losses", "with_prediction", "predictable", "predictable_requests")}
            for h in pred["hosts"]} == want["hosts"]
    for c in H.counterfactuals(row):
        assert {k: c[k] for k in want["counterfactuals"][c["remedy"]]} == want["counterfactuals"][c["remedy"]], \
            c["remedy"]
    assert (round(row["rescue_latency_saved_ms"] / 1000, 3) if row["rescues_timed"] else None) == \
        want["rescue_latency_saved_seconds"]
    assert row["rescues_primary_never_delivered"] == want["rescues_primary_never_delivered"]
    assert {m["host"]: m["model"] for m in row["host_models"]} == want["model_of"]
