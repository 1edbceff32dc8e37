"""One run: what several analyses need (the miss test, the CPoC windows, the log span, the
attempts around the windows) is worked out once per run and shared (auditor/analyses/context.py,
cpoc.py, misstest.facts), also when the epoch report runs two analyses at a time
(epoch_report._analyses). Counted on the demo store with Store.executed, in process."""

from __future__ import annotations

import threading
import time

import pytest

from auditor.analyses import cpoc, epoch_facts, epoch_report, hedging, misstest, poc_overload, targets
from auditor.analyses.context import Run, run_for
from auditor.analyses.registry import Analysis
from auditor.store import Store
from conftest import FIXTURES, run_cli

REC = FIXTURES / "chain" / "epoch-403"
DEMO_LOG = FIXTURES / "demo-epoch-403" / "gateway.log.gz"


@pytest.fixture(scope="module")
def demo_db(tmp_path_factory):
    """The README's demo store: epoch 403's chain recording, the v5 accounting API and the demo log."""
    db = tmp_path_factory.mktemp("demo") / "auditor.duckdb"
    r = run_cli("collect", "--epoch", "403", "--replay", str(REC), "--replay", str(FIXTURES / "accounting" / "v5"),
                "--gateway-log", str(DEMO_LOG), db=db)
    assert r.returncode == 0, r.stderr
    return db


def test_one_epoch_run_executes_each_query_once(demo_db):
    with Store(demo_db) as store:
        epoch_report.run(store, 403)
        counts = dict(store.executed)
    # the analyses that share facts did run their queries ...
    for name in ("misstest_inputs", "poc_overload_events", "poc_overload_attempts", "poc_overload_log_span",
                 "poc_overload_preserved_hosts", "epoch_windows", "targets_demand_attempts", "hedging_races"):
        assert counts.get(name) == 1, (name, counts.get(name))
    # ... and no named query, and no derived table, ran twice
    assert {name: n for name, n in counts.items() if n > 1} == {}


def test_analyses_of_one_run_share_its_facts(demo_db):
    """poc_overload reads the miss test of the run, and targets the windows poc_overload read."""
    with Store(demo_db) as store:
        ctx = Run(store, 403)
        misstest.run(store, 403, ctx=ctx)
        assert store.executed["misstest_inputs"] == 1
        poc_overload.run(store, 403, ctx=ctx)
        targets.run(store, 403, ctx=ctx)
        assert store.executed["misstest_inputs"] == 1
        for name in ("poc_overload_events", "poc_overload_attempts", "poc_overload_log_span"):
            assert store.executed[name] == 1, name
        # a run of its own (an analysis called alone) works everything out again
        poc_overload.run(store, 403)
        assert store.executed["misstest_inputs"] == 2 and store.executed["poc_overload_attempts"] == 2


@pytest.mark.parametrize("lookback", [5.0, 30.0])
def test_poc_overload_with_its_own_lookback_reads_the_attempts_once(demo_db, lookback):
    """--lookback 5 (or 30) and the window misses' default 10 share one query of the attempts,
    and each gets the attempts of its own span: the same report as each computed alone."""
    with Store(demo_db) as store:
        opt = poc_overload.PocOverloadOptions(lookback_minutes=lookback)
        shared = poc_overload.run(store, 403, opt)
        assert store.executed["poc_overload_attempts"] == 1
        rows, _ = cpoc.attempts(Run(store, 403), lookback)
        alone, _ = cpoc.attempts(Run(store, 403), cpoc.DEFAULT_LOOKBACK_MINUTES)
        assert len(rows) != len(alone)                       # the spans do differ on the demo log
        ctx = Run(store, 403)
        cpoc.attempts(ctx, cpoc.DEFAULT_LOOKBACK_MINUTES)
        assert cpoc.attempts(ctx, lookback)[0] == rows       # a cut or a wider fetch: the same rows
    assert shared.data["windows"] and all("before" in w for w in shared.data["windows"] if w.get("requests"))


def test_the_miss_test_carries_cpoc_evidence_only_beside_poc_overload(demo_db):
    """In the epoch report the miss test's reward_zeroed_miss_test says how many misses fell in
    CPoC windows, the same count as poc_overload's data; ``auditor misstest`` alone does not."""
    with Store(demo_db) as store:
        alone = misstest.run(store, 403)
        report = epoch_report.run(store, 403)
    zeroed = [f for f in alone.findings if f.code == "reward_zeroed_miss_test"]
    assert zeroed and all("misses_in_cpoc_windows" not in f.evidence for f in zeroed)
    part = {p.key: p for p in report.parts}
    cpoc_misses = part[poc_overload.KEY].data["cpoc_misses"]
    in_report = {f.subject["id"]: f.evidence for f in part[misstest.KEY].findings
                 if f.code == "reward_zeroed_miss_test"}
    assert set(in_report) == {f.subject["id"] for f in zeroed}
    seen = {p: ev["misses_in_cpoc_windows"] for p, ev in in_report.items() if ev["misses_in_cpoc_windows"] is not None}
    assert seen and all(n == cpoc_misses[p]["misses_in_cpoc_windows"] > 0 for p, n in seen.items())
    unseen = [ev for ev in in_report.values() if ev["misses_in_cpoc_windows"] is None]
    assert unseen and all(ev["cpoc_evidence"] for ev in unseen)      # unknown is said, not zero


def test_window_misses_agree_with_the_participant_misses(demo_db):
    with Store(demo_db, read_only=True) as store:
        ctx = Run(store, 403)
        per_window = cpoc.window_misses(ctx)
        per_participant = cpoc.participant_misses(ctx)
    assert sum(per_window.values()) == sum(c["misses_in_cpoc_windows"] or 0 for c in per_participant.values()) > 0


def test_a_run_caches_and_belongs_to_one_store_and_epoch(demo_db):
    with Store(demo_db, read_only=True) as store:
        ctx = Run(store, 403, analyses=["miss_test"])
        calls = []
        assert ctx.shared("x", lambda: calls.append(1) or len(calls)) == 1
        assert ctx.shared("x", lambda: calls.append(1) or len(calls)) == 1 and calls == [1]
        assert ctx.includes("miss_test") and not ctx.includes("poc_overload")
        assert run_for(store, 403, ctx) is ctx and run_for(store, 403, None) is not ctx
        with pytest.raises(ValueError):
            run_for(store, 402, ctx)


def test_a_fact_two_threads_ask_for_at_once_is_computed_once(demo_db):
    """The epoch report runs two analyses at a time: the second to ask for a fact waits for
    the first's, and both get the same object."""
    with Store(demo_db, read_only=True) as store:
        ctx = Run(store, 403)
        calls, got, both = [], [], threading.Barrier(2)

        def compute() -> object:
            calls.append(1)
            time.sleep(0.05)             # long enough for the other thread to ask meanwhile
            return object()

        def ask() -> None:
            both.wait()
            got.append(ctx.shared("x", compute))

        threads = [threading.Thread(target=ask) for _ in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    assert len(calls) == 1 and len(got) == 2 and got[0] is got[1]


def _threads_of_analyses(monkeypatch) -> dict[str, str]:
    """Analysis key -> the name of the thread that ran it, from now on."""
    seen: dict[str, str] = {}
    run = Analysis.run

    def recorded(self, *args, **kwargs):
        seen[self.key] = threading.current_thread().name
        return run(self, *args, **kwargs)

    monkeypatch.setattr(Analysis, "run", recorded)
    return seen


def test_the_epoch_report_runs_two_analyses_at_a_time_each_query_once(demo_db, monkeypatch):
    monkeypatch.setenv("AUDITOR_THREADS", "2")
    seen = _threads_of_analyses(monkeypatch)
    with Store(demo_db) as store:
        report = epoch_report.run(store, 403)
        counts = dict(store.executed)
    assert len(set(seen.values())) == 2 and set(seen) == {p.key for p in report.parts}
    assert [p.key for p in report.parts] == [a.key for a in epoch_report.ANALYSES]
    assert counts.get("hedging_races") == 1 and {name: n for name, n in counts.items() if n > 1} == {}


def test_two_analyses_at_a_time_give_the_report_of_one_at_a_time(demo_db):
    """AUDITOR_THREADS=1: one analysis at a time, on one connection; the same report. Also on
    a machine in another zone: the helper's connection is in UTC as well (a cursor starts
    from the machine's zone, and the report's times would move)."""
    runs = [run_cli("epoch", "403", "--offline", "--format", "json", db=demo_db, env=env)
            for env in ({"AUDITOR_THREADS": "1"}, {"AUDITOR_THREADS": "2"},
                        {"AUDITOR_THREADS": "2", "TZ": "Asia/Kolkata"})]
    assert [r.returncode for r in runs] == [0, 0, 0], [r.stderr for r in runs]
    assert runs[0].stdout == runs[1].stdout == runs[2].stdout


@pytest.mark.parametrize("failing, raised", [(["hedging"], "hedging"), (["heights", "hedging"], "heights")])
def test_the_first_failure_in_report_order_is_raised(demo_db, monkeypatch, failing, raised):
    """Two at a time, the helper takes hedging (near the end) while this thread takes heights
    (the first): the error raised is the first analysis's in report order that failed, as one
    at a time would raise it, though heights fails after hedging."""
    monkeypatch.setenv("AUDITOR_THREADS", "2")
    seen = _threads_of_analyses(monkeypatch)
    hedging_failed = threading.Event()

    def fail_hedging(*args, **kwargs):
        hedging_failed.set()
        raise RuntimeError("hedging failed")

    def fail_heights(*args, **kwargs):
        assert hedging_failed.wait(30)
        raise RuntimeError("heights failed")

    monkeypatch.setattr(hedging, "run", fail_hedging)
    if "heights" in failing:
        monkeypatch.setattr(epoch_facts, "heights", fail_heights)
    with Store(demo_db) as store, pytest.raises(RuntimeError, match=f"^{raised} failed$"):
        epoch_report.run(store, 403)
    assert seen["hedging"] != seen["heights"]


def test_a_helper_without_a_connection_stops_the_report_with_its_error(demo_db, monkeypatch):
    """The helper's connection cannot be made: the report stops with that error (after the
    analysis this thread is running), rather than running every analysis and then failing."""
    monkeypatch.setenv("AUDITOR_THREADS", "2")
    seen = _threads_of_analyses(monkeypatch)

    def no_connection(self):
        raise RuntimeError("no connection for the helper")

    monkeypatch.setattr(Store, "worker", no_connection)
    with Store(demo_db) as store, pytest.raises(RuntimeError, match="^no connection for the helper$"):
        epoch_report.run(store, 403)
    assert len(seen) < len(epoch_report.ANALYSES) and set(seen.values()) <= {"MainThread"}


def test_ctrl_c_stops_the_helpers_query_and_leaves_the_store_usable(demo_db, monkeypatch):
    """Ctrl-C while the helper runs a long query (here hedging's, made endless): the report
    stops at once with KeyboardInterrupt, the helper's query is interrupted and its thread
    gone, and the store answers and closes as usual (not 'connection is busy')."""
    monkeypatch.setenv("AUDITOR_THREADS", "2")
    querying = threading.Event()

    def endless(store, *args, **kwargs):
        querying.set()
        store.one("SELECT count(*) FROM range(1000000000000)")

    def ctrl_c(*args, **kwargs):
        assert querying.wait(30)
        time.sleep(0.2)                  # the query under way
        raise KeyboardInterrupt

    monkeypatch.setattr(hedging, "run", endless)
    monkeypatch.setattr(epoch_facts, "heights", ctrl_c)
    with Store(demo_db) as store:
        started = time.monotonic()
        with pytest.raises(KeyboardInterrupt):
            epoch_report.run(store, 403)
        assert time.monotonic() - started < 20
        assert not [t for t in threading.enumerate() if t.name == "auditor-analysis"]
        assert store.one("SELECT count(*) FROM chain_epoch_heights WHERE epoch = 403")[0] > 0
