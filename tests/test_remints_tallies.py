"""remints adds up an escrow's requests in SQL (queries/remints_request_tallies.sql) instead of
fetching a busy day's million of them: the tallies before a moment, and over a window, are
the sums the analysis made request by request (remints.Uses), ties, NULLs and requests without
a time included; and a run asks the tallies query once, fetching only the requests it shows."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from auditor.analyses import remints
from auditor.store import Store

from test_remints import fixture_store  # noqa: F401  (a fixture: the #1799 store)

T0 = datetime(2026, 9, 22, 12, 0, tzinfo=timezone.utc)
EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
PRICE = 7

# a few instants, so that requests share times and moments fall on them, just before or after
instants = st.sampled_from([T0 + timedelta(seconds=s, microseconds=u) for s in (0, 1, 31, 600) for u in (0, 1)])
request = st.fixed_dictionaries({
    "escrow": st.sampled_from([1, 2]),
    "ts": st.one_of(instants, st.none()),                      # None: logged without a time
    "insufficient_balance": st.sampled_from([False, True, None]),
    "input_bytes": st.one_of(st.none(), st.integers(0, 5000)),
    "max_tokens_logged": st.one_of(st.none(), st.just(0), st.integers(1, 9000)),
    "attempts": st.one_of(st.none(), st.integers(0, 3)),
    "outcome": st.sampled_from(["succeeded", "failed", None]),
})
moment = st.one_of(st.none(), instants, instants.map(lambda t: t - timedelta(microseconds=1)),
                   st.just(EPOCH + timedelta(milliseconds=3)))


def one_by_one(rows: list[dict], escrow: int, t: datetime | None, since: datetime | None, price: int | None) -> dict:
    """What the analysis computed when it held every request (before the tallies)."""
    sel = [r for r in rows if r["escrow"] == escrow and (t is None or r["ts"] < t)
           and (since is None or r["ts"] >= since)]
    served = [r for r in sel if not r["insufficient_balance"]]
    costs = [None if r["input_bytes"] is None or price is None else
             (r["input_bytes"] + (r["max_tokens_logged"] or 4096)) * price * max(r["attempts"] or 0, 1) for r in served]
    ok = [r for r in sel if r["outcome"] == "succeeded" and not r.get("untimed")]
    return {"requests": len(sel), "last": max((r["ts"] for r in sel), default=None),
            "served": len(served), "attempts": sum(max(r["attempts"] or 0, 1) for r in served),
            "cost": sum(costs) if None not in costs else None,
            "succeeded": len(ok), "last_succeeded": max((r["ts"] for r in ok), default=None)}


@pytest.fixture(scope="module")
def store():
    s = Store(":memory:")
    yield s
    s.close()


def _load(store: Store, generated: list[dict]) -> tuple[list[dict], list[dict]]:
    """The requests into the log tables (log_requests and the max_tokens lines: temporary tables
    in front of the views); back, every request as the analysis placed it (one without a time at
    the stand-in time of its line, as remints.Untimed does), and those it fetches one by one
    (refused, or without a time)."""
    con = store.con
    con.execute("CREATE OR REPLACE TEMP TABLE log_requests (request VARCHAR, escrow BIGINT, first_ts TIMESTAMPTZ, "
                "insufficient_balance BOOLEAN, input_bytes BIGINT, attempts BIGINT, outcome VARCHAR)")
    con.execute("CREATE OR REPLACE TEMP TABLE log_request_lines (request VARCHAR, pos BIGINT, max_tokens BIGINT, "
                "logs_max_tokens BOOLEAN)")
    rows, shown = [], []
    for i, g in enumerate(generated):
        rid = f"req-{i}"
        con.execute("INSERT INTO log_requests VALUES (?, ?, ?, ?, ?, ?, ?)",
                    [rid, g["escrow"], g["ts"], g["insufficient_balance"], g["input_bytes"], g["attempts"], g["outcome"]])
        if g["max_tokens_logged"] is not None:   # the first line that logs max_tokens gives it
            con.execute("INSERT INTO log_request_lines VALUES (?, 1, 99, false), (?, 2, ?, true), (?, 3, 5, true)",
                        [rid, rid, g["max_tokens_logged"], rid])
        r = {**g, "request": rid, "insufficient_balance": bool(g["insufficient_balance"]), "failed_at": None}
        if r["ts"] is None:
            r.update(ts=EPOCH + remints.LINE_STEP * (i + 1), untimed=True)
        rows.append(r)
        if r["insufficient_balance"] or r.get("untimed"):
            shown.append(dict(r))
    return rows, shown


def _req(escrow=1, ts=T0, refused=False, input_bytes=100, max_tokens=None, attempts=1, outcome="succeeded"):
    return {"escrow": escrow, "ts": ts, "insufficient_balance": refused, "input_bytes": input_bytes,
            "max_tokens_logged": max_tokens, "attempts": attempts, "outcome": outcome}


LATER = T0 + timedelta(seconds=31)


@settings(max_examples=60, deadline=None)
# max_tokens logged as 0 counts as the cap; two attempts reserve twice; a refused request reserved nothing
@example(generated=[_req(max_tokens=0), _req(ts=LATER, max_tokens=7, attempts=2), _req(refused=True, outcome=None)],
         asks=[(1, None, None), (1, LATER, None), (1, LATER + timedelta(microseconds=1), T0)])
# requests at the same time as the moment do not count before it; from it on they do
@example(generated=[_req(), _req(input_bytes=None), _req(ts=LATER, outcome="failed")],
         asks=[(1, T0, None), (1, LATER, T0), (1, None, LATER)])
# a request without a time counts before every real moment, and never as recent use
@example(generated=[_req(ts=None), _req(ts=None, refused=True)], asks=[(1, T0, None), (1, None, EPOCH)])
@given(generated=st.lists(request, max_size=14), asks=st.lists(st.tuples(st.sampled_from([1, 2, 3]), moment, moment),
                                                          min_size=1, max_size=6))
def test_tallies_are_the_sums_request_by_request(store, generated, asks):
    rows, shown = _load(store, generated)
    uses = remints.Uses(store, shown)
    for escrow, t, since in asks:
        if t is not None and since is not None and since > t:
            since, t = t, since
        tally = uses.before(escrow, t, since)
        got = {"requests": tally.requests, "last": tally.last, "served": tally.served,
               "attempts": tally.served_attempts, "cost": tally.cost(PRICE), "succeeded": tally.succeeded,
               "last_succeeded": tally.last_succeeded}
        assert got == one_by_one(rows, escrow, t, since, PRICE), (escrow, t, since)
        # an unknown price leaves any served request's cost unknown, and none costs nothing
        assert tally.cost(None) == (0 if not tally.served else None)


def test_a_run_asks_the_tallies_once_and_fetches_only_the_requests_it_shows(fixture_store):
    db, report = fixture_store
    with Store(db) as s:
        again = remints.run(s, 396)
        shown = s.query("remints_requests")
        every = s.one("SELECT count(*) FROM log_requests WHERE escrow IS NOT NULL")[0]
        assert s.executed["remints_request_tallies"] == 1     # every moment planned up front (_moments)
    assert again.data["classifications"] == report["classifications"]
    assert shown and all(r["insufficient_balance"] or r["ts"] is None for r in shown)
    assert len(shown) < every
    # the fixture's spurious remint weighs the other escrows of its model (counterfactual)
    assert any(d["counterfactual"] and d["counterfactual"]["candidates"] for d in again.data["deactivations"])
