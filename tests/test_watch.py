"""`auditor watch`: the running epoch's miss test projected to its end (issue 19), through the
CLI against loopback servers replaying epoch 500 at four heights (fixtures/watch/make_watch.py
writes them; story.json says what each host is meant to show)."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from hypothesis import given, strategies as st

from conftest import FIXTURES, ROOT, ctrl_c_able, q, run_cli

from auditor.sources.replay import ReplayServer

W = FIXTURES / "watch"
STORY = json.loads((W / "story.json").read_text())
HOST = STORY["hosts"]
CONTRACT = {"epoch", "height", "progress", "network", "participants", "findings", "coverage"}
ROW = {"participant", "requests_so_far", "missed_so_far", "missed_unsettled", "projected_requests",
       "projected_missed", "critical_misses", "margin", "projected_verdict", "verdict_now"}


@pytest.fixture(scope="module")
def servers():
    started = {h: ReplayServer(W / h).__enter__() for h in ("h1", "h2", "h3", "h4")}
    yield {h: s.url for h, s in started.items()}
    for s in started.values():
        s.__exit__(None, None, None)


def sources(url: str, *, accounting: bool = True, host: bool = True) -> list[str]:
    return ["--node", url, "--rate", "0", *(["--accounting", url] if accounting else []),
            *(["--host", url + "/devshard/v1"] if host else [])]


def once(url: str, db: Path, *extra: str, **kw) -> tuple[dict, subprocess.CompletedProcess]:
    r = run_cli("watch", "--once", "--format", "json", *sources(url, **kw), *extra, db=db)
    assert r.returncode in (0, 1), r.stderr
    return json.loads(r.stdout), r


def by_participant(out: dict) -> dict[str, dict]:
    return {p["participant"]: p for p in out["participants"]}


def severity(out: dict) -> dict[str, str]:
    return {f["subject"]["id"]: f["severity"] for f in out["findings"] if f["code"] == "miss_test_at_risk"}


@pytest.mark.parametrize("h", ["h1", "h2", "h3", "h4"])
def test_once_json_contract_and_the_story_at_each_height(servers, db, h):
    out, _ = once(servers[h], db)
    assert CONTRACT <= set(out)
    assert out["epoch"] == 500 and out["height"] == STORY["heights"][h]
    assert set(out["network"]) >= {"requests_so_far", "missed_so_far", "miss_share", "p0"}
    assert out["network"]["p0"] == 0.1
    assert all(ROW <= set(p) for p in out["participants"]) and len(out["participants"]) == len(HOST)
    assert {p["projected_verdict"] for p in out["participants"]} <= {"pass", "fail", "no_requests"}
    got = severity(out)
    for name, expected in STORY["expected"].items():
        assert got.get(HOST[name]) == expected[h], (name, h, got)
    assert "average rate so far" in out["assumption"]
    # every reading is stored, one row per participant
    assert q(db, "SELECT count(*), min(height) FROM watch_readings")[0] == (len(HOST), STORY["heights"][h])


def test_progress_is_the_fraction_of_the_epoch_elapsed(servers, db):
    out, _ = once(servers["h2"], db)
    start, end = STORY["start_height"], STORY["end_height"]
    assert out["progress"] == pytest.approx((STORY["heights"]["h2"] - start) / (end - start), abs=1e-6)
    assert out["end_height"] == end


def test_unsettled_misses_fail_a_host_that_passes_on_the_chain_counts(servers, tmp_path):
    chain_only, _ = once(servers["h2"], tmp_path / "a.duckdb", accounting=False, host=False)
    row = by_participant(chain_only)[HOST["unsettled"]]
    # without --accounting or --host the unsettled misses are unknown, not 0 (it said 0, and so did
    # the header, the table and the stored reading)
    assert row["verdict_now"] == "pass" and row["missed_unsettled"] is None
    assert row["missed_by_source"] == {"chain": 60, "accounting": None, "host": None}
    assert chain_only["missed_by_source"] == {"chain": sum(p["missed_by_source"]["chain"] for p in chain_only["participants"]),
                                              "accounting": None, "host": None}
    assert q(tmp_path / "a.duckdb", "SELECT count(*) FROM watch_readings WHERE missed_unsettled IS NOT NULL")[0][0] == 0
    assert HOST["unsettled"] not in severity(chain_only)
    full, _ = once(servers["h2"], tmp_path / "b.duckdb")
    row = by_participant(full)[HOST["unsettled"]]
    assert row["verdict_now"] == "fail" and row["missed_so_far"] == 120 and row["missed_unsettled"] == 60
    assert severity(full)[HOST["unsettled"]] == "error"


def test_no_miss_is_counted_twice_and_each_says_its_source(servers, db):
    out, _ = once(servers["h2"], db)
    rows = by_participant(out)
    # escrow 9002 of `unsettled`: reported by its host and by the accounting, counted once (the host's)
    assert rows[HOST["unsettled"]]["missed_by_source"] == {"chain": 60, "accounting": 0, "host": 60}
    # escrow 9004 of `double`: settled, so in the chain's counters; the accounting still lists it
    double = rows[HOST["double"]]
    assert double["missed_so_far"] == 80 and double["missed_by_source"] == {"chain": 75, "accounting": 5, "host": 0}
    assert double["requests_so_far"] == 1150 and double["projected_verdict"] == "pass"
    assert HOST["double"] not in severity(out)
    assert "9004" in out["settled_escrows_left_out"] and "9001" in out["settled_escrows_left_out"]
    assert out["missed_by_source"] == {"chain": 270, "accounting": 5, "host": 60}


def test_margin_running_out_is_warned_before_the_end(servers, db):
    out, _ = once(servers["h2"], db)
    row = by_participant(out)[HOST["runsout"]]
    assert (row["projected_requests"], row["projected_missed"], row["critical_misses"], row["margin"]) == \
        (2000, 170, 200, 30)
    assert row["projected_verdict"] == "pass" and row["verdict_now"] == "pass"
    assert row["exhaust_misses_per_hour"] > 0
    assert severity(out)[HOST["runsout"]] == "warn"
    # a wider --margin-share warns earlier; 0 only on a failing projection
    early, _ = once(servers["h1"], db, "--margin-share", "0.5")
    assert severity(early).get(HOST["runsout"]) == "warn"
    none, _ = once(servers["h2"], db, "--margin-share", "0")
    assert HOST["runsout"] not in severity(none)


def _settle(db: Path) -> None:
    """Store epoch 500's performance summary as the chain writes it at settlement."""
    from auditor.sources.chain import PerformanceSummaryList
    from auditor.store import Store

    summary = PerformanceSummaryList.model_validate(json.loads((W / "summary.json").read_text()))
    rows = [{"epoch": 500, "participant": s.participant_id, "inference_count": s.inference_count,
             "missed_requests": s.missed_requests, "earned_coins": s.earned_coins, "rewarded_coins": s.rewarded_coins,
             "burned_coins": 0, "validated_inferences": 0, "invalidated_inferences": 0, "claimed": False}
            for s in summary.summaries]
    with Store(db) as store, store.transaction():
        store.insert("chain_performance", rows)


def test_projection_at_the_end_equals_the_settled_verdict(servers, db):
    out, _ = once(servers["h4"], db)
    _settle(db)
    r = run_cli("misstest", "500", "--offline", "--format", "json", db=db)
    assert r.returncode == 0, r.stderr
    settled = {p["participant"]: p for p in json.loads(r.stdout)["participants"]}
    word = {"zeroed_by_miss_test": "fail", "passed": "pass", "no_requests": "no_requests"}
    for p in out["participants"]:
        s = settled[p["participant"]]
        assert p["projected_verdict"] == word[s["verdict"]], p["participant"]
        assert (p["projected_requests"], p["projected_missed"]) == (s["total"], s["missed"])
        assert p["critical_misses"] == s["critical_misses"]
    assert {p for p, s in settled.items() if s["verdict"] == "zeroed_by_miss_test"} == \
        {HOST[n] for n in STORY["zeroed"]}


def test_backtest_says_when_each_zeroed_host_was_first_warned(servers, db):
    for h in ("h1", "h2", "h3", "h4"):
        once(servers[h], db)
    unknown = run_cli("watch", "--backtest", "500", "--offline", "--format", "json", db=db)
    assert unknown.returncode == 3 and "settled verdicts unknown" in unknown.stdout     # not settled yet
    early = json.loads(unknown.stdout)          # unknown is not zero (it said 0 zeroed, 0 false warnings)
    assert (early["zeroed"], early["zeroed_warned"], early["false_warnings"]) == (None, None, None)
    assert "zeroed by the miss test: unknown: the settled verdicts are not stored" in run_cli(
        "watch", "--backtest", "500", "--offline", db=db).stdout
    none = run_cli("watch", "--backtest", "499", "--offline", db=db)
    assert none.returncode == 3 and "no watch readings of epoch 499" in none.stderr
    _settle(db)
    r = run_cli("watch", "--backtest", "500", "--offline", "--format", "json", db=db)
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    rows = by_participant(out)
    for name in STORY["zeroed"]:
        assert rows[HOST[name]]["first_warned_height"] == STORY["heights"]["h2"], name
        assert rows[HOST[name]]["outcome"] == "zeroed, warned before the end"
    assert (out["zeroed"], out["zeroed_warned"], out["false_warnings"]) == (2, 2, 0)
    assert rows[HOST["healthy"]]["outcome"] == "not zeroed, never warned"
    md = run_cli("watch", "--backtest", "500", "--offline", "--format", "md", db=db)
    assert md.returncode == 0 and "false warnings" in md.stdout
    # --participant narrows the backtest, as it does a reading (a label several addresses end
    # with is a usage error); the live watch's own flags are refused
    name = STORY["zeroed"][0]
    one = run_cli("watch", "--backtest", "500", "--offline", "--participant", HOST[name], "--format", "json", db=db)
    assert one.returncode == 0, one.stderr
    assert [p["participant"] for p in json.loads(one.stdout)["participants"]] == [HOST[name]]
    several = run_cli("watch", "--backtest", "500", "--offline", "--participant", HOST[name][-8:], db=db)
    assert several.returncode == 2 and "give the full" in several.stderr
    for flag in (["--once"], ["--host", "http://127.0.0.1:9/devshard/v1"], ["--prom-textfile", "w.prom"]):
        bad = run_cli("watch", "--backtest", "500", "--offline", *flag, db=db)
        assert bad.returncode == 2 and flag[0] in bad.stderr and len(bad.stderr.strip().splitlines()) == 1, flag


def test_backtest_counts_false_warnings(servers, db):
    for h in ("h1", "h2", "h3", "h4"):
        once(servers[h], db, "--margin-share", "0.5")     # warns `double` at 50 %: 70 of 230 left
    _settle(db)
    out = json.loads(run_cli("watch", "--backtest", "500", "--offline", "--format", "json", db=db).stdout)
    rows = by_participant(out)
    assert rows[HOST["double"]]["outcome"] == "false warning"
    assert out["false_warnings"] >= 1 and out["false_warning_readings"] >= 1


def test_fail_on_and_exit_codes(servers, db):
    _, quiet = once(servers["h1"], db, "--fail-on", "warn")
    assert quiet.returncode == 0
    _, warned = once(servers["h2"], db, "--fail-on", "warn")
    assert warned.returncode == 1
    _, plain = once(servers["h2"], db)
    assert plain.returncode == 0


def test_participant_filter_keeps_the_network_figures(servers, db):
    full, _ = once(servers["h2"], db)
    one, _ = once(servers["h2"], db, "--participant", HOST["healthy"])
    assert [p["participant"] for p in one["participants"]] == [HOST["healthy"]]
    assert one["findings"] == [] and one["network"] == full["network"]
    # every participant's reading is stored all the same
    assert q(db, "SELECT count(DISTINCT participant) FROM watch_readings")[0][0] == len(HOST)


def test_table_and_md_views(servers, db):
    r = run_cli("watch", "--once", *sources(servers["h2"]), "--wide", db=db)
    assert r.returncode == 0, r.stderr
    assert "miss_test_at_risk" in r.stdout and HOST["runsout"] in r.stdout and "average rate so far" in r.stdout
    md = run_cli("watch", "--once", "--format", "md", *sources(servers["h2"]), db=db)
    assert md.returncode == 0 and "| participant |" in md.stdout


def test_prom_textfile_has_the_three_metrics(servers, db, tmp_path):
    from prometheus_client.parser import text_string_to_metric_families

    path = tmp_path / "tf" / "watch.prom"
    once(servers["h2"], db, "--prom-textfile", str(path))
    samples = {(s.name, s.labels["participant"]): s.value
               for fam in text_string_to_metric_families(path.read_text()) for s in fam.samples}
    assert samples[("auditor_miss_test_margin", HOST["runsout"])] == 30
    assert samples[("auditor_miss_test_projected_pass", HOST["runsout"])] == 1
    assert samples[("auditor_miss_test_projected_pass", HOST["unsettled"])] == 0
    assert samples[("auditor_miss_test_requests", HOST["double"])] == 1150
    assert ("auditor_miss_test_margin", HOST["idle"]) not in samples     # no requests: no margin


def test_bad_input_is_one_line_and_its_exit_code(tmp_path):
    db = tmp_path / "x.duckdb"
    r = run_cli("watch", "--once", "--node", "http://127.0.0.1:9", "--gateway-log", "x.log", db=db)
    assert r.returncode == 2 and "--gateway-log" in r.stderr
    r = run_cli("watch", "--once", "--node", "http://127.0.0.1:9", "--interval", "soon", db=db)
    assert r.returncode == 2 and "--interval" in r.stderr and len(r.stderr.strip().splitlines()) == 1
    r = run_cli("watch", "--once", "--node", "http://127.0.0.1:9", "--host", "http://127.0.0.1:9", db=db)
    assert r.returncode == 2 and "devshard" in r.stderr
    r = run_cli("watch", "--once", "--node", "http://127.0.0.1:9", "--rate", "0", "--timeout", "0.5", db=db)
    assert r.returncode == 3 and "Traceback" not in r.stderr and len(r.stderr.strip().splitlines()) == 1


def test_loop_prints_only_what_changed_and_ctrl_c_exits_130(db):
    """The four heights served in order, the last repeating: the first reading printed whole,
    then one line per change, nothing once the answers stop changing; Ctrl-C exits 130."""
    with ReplayServer(W / "loop") as server:
        p = subprocess.Popen([sys.executable, "-m", "auditor", "--db", str(db), "watch", "--interval", "300ms",
                              *sources(server.url)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             cwd=ROOT, env={"COLUMNS": "200", "NO_COLOR": "1", "PATH": "/usr/bin:/bin"},
                             preexec_fn=ctrl_c_able)
        seen: list[str] = []
        reader = threading.Thread(target=lambda: seen.extend(p.stdout), daemon=True)
        reader.start()
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not any("finding warn -> error" in line for line in seen):
            time.sleep(0.1)
        time.sleep(2)                 # several more readings of the last height, which change nothing
        p.send_signal(signal.SIGINT)
        err = p.stderr.read()
        p.wait(timeout=30)
        reader.join(timeout=10)
        out = "".join(seen)
    assert p.returncode == 130, err
    assert err.strip().splitlines()[-1] == "auditor: interrupted" and "Traceback" not in err
    lines = [line for line in out.splitlines() if " epoch 500 height " in line]
    assert lines, out
    runsout = [line for line in lines if HOST["runsout"] in line]
    assert any("finding none -> warn" in line for line in runsout)
    assert any("finding warn -> error" in line for line in runsout)
    assert not any(HOST["healthy"] in line and "finding" in line for line in lines)
    heights = {int(line.split(" height ")[1].split()[0].replace(",", "")) for line in lines}
    assert heights <= {STORY["heights"][h] for h in ("h2", "h3", "h4")}    # no line after h4 repeats
    assert len(lines) == len(set(lines))
    assert q(db, "SELECT count(DISTINCT height) FROM watch_readings")[0][0] == 4     # every reading stored


def test_the_loop_ends_when_its_reader_is_gone(db):
    """`auditor watch | head`: once nobody reads what it prints, the watch ends (exit 0), rather
    than reading the chain every interval for no one."""
    with ReplayServer(W / "loop") as server:
        r, w = os.pipe()
        os.close(r)
        try:
            p = subprocess.run([sys.executable, "-m", "auditor", "--db", str(db), "watch", "--interval", "300ms",
                                *sources(server.url)], stdout=w, stderr=subprocess.PIPE, text=True, cwd=ROOT,
                               timeout=60)
        finally:
            os.close(w)
    assert p.returncode == 0 and "Traceback" not in p.stderr, p.stderr
    assert q(db, "SELECT count(DISTINCT taken_at) FROM watch_readings")[0][0] == 1     # it stopped after the first reading


class FakeClock:
    def __init__(self) -> None:
        self.t = 0.0

    def __call__(self) -> float:
        return self.t

    def sleep(self, s: float) -> None:
        self.t += max(0.0, s)


class TimedLog(list):
    def __init__(self, clock: FakeClock) -> None:
        super().__init__()
        self.clock = clock

    def append(self, item) -> None:
        super().append((self.clock.t, *item))


def _long_run(tmp_path: Path, rate: float, readings: int) -> tuple[list[float], float]:
    from auditor import watch
    from auditor.analyses.watch import call as watch_call
    from auditor.cli import Output
    from auditor.collect import Sources

    clock = FakeClock()
    with ReplayServer(W / "loop") as server:
        server.log = TimedLog(clock)
        call = watch_call([], False, "1s", 0.2, [server.url + "/devshard/v1"], None, None)
        src = Sources(nodes=[server.url], accounting=[server.url], rate=rate, timeout=5)
        watch.live(tmp_path / f"r{rate}.duckdb", call, src, Output("json", None, None, False), "t",
                   clock=clock, sleep=clock.sleep, readings=readings)
        node = [t for t, path, *_ in server.log if path.startswith(("/v1/", "/chain-"))]
    return node, clock.t


def test_rate_limit_holds_over_a_long_run(tmp_path, capsys):
    """A reading every second (fake clock) for 300 readings: the node's requests never exceed
    a bucket of 20 a minute with a burst of 20, so no minute sees more than 40 and the long-run
    average is 20 a minute."""
    times, elapsed = _long_run(tmp_path, 20, 300)
    assert len(times) > 300                   # every reading asks the node at least twice
    # --format json in the loop: JSON lines, the first reading whole, then one change a line
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert CONTRACT <= set(lines[0]) and all("changed" in x and x["epoch"] == 500 for x in lines[1:])
    assert any(x["participant"] == HOST["runsout"] and x["changed"].get("finding") == ["warn", "error"]
               for x in lines[1:])

    def worst(ts: list[float]) -> float:
        return max(j - i + 1 - (ts[j] - ts[i]) / 3.0 for i in range(len(ts)) for j in range(i, min(len(ts), i + 200)))

    assert worst(times) <= 20 + 1e-6
    assert max(sum(1 for t in times if s <= t < s + 60) for s in times) <= 40
    assert len(times) <= 20 + 20 * elapsed / 60 + 1e-6
    # the same run unlimited breaks the bound: the check can fail
    fast, _ = _long_run(tmp_path, 0, 100)
    assert worst(fast) > 20


# -- property tests of the pure parts ------------------------------------------------------------
@given(st.integers(0, 15), st.integers(0, 5000))
def test_assigned_nonces_match_counting_them(slot, nonce):
    from auditor.sources.live import assigned

    assert assigned(slot, nonce, 16) == sum(1 for n in range(1, nonce + 1) if n % 16 == slot)


@given(st.integers(0, 10**6), st.integers(1, 20000), st.integers(1, 20000))
def test_projection_scales_at_the_rate_so_far(x, elapsed, span):
    from auditor.analyses.watch import _scale

    got = _scale(x, elapsed, span)
    if elapsed >= span:
        assert got == x
    else:
        assert abs(got - x * span / elapsed) <= 0.5 + 1e-9 and got >= x


@given(st.integers(0, 2**40), st.booleans())
def test_latest_epoch_accepts_numbers_and_strings(height, as_str):
    from auditor.sources.chain import DapiLatestEpoch as DapiLatest

    v = str(height) if as_str else height
    d = DapiLatest.model_validate({"block_height": v, "epoch_stages": {"poc_validation_end": v, "extra": 1},
                                   "epoch_params": {"epoch_params": {"epoch_length": "1"}}})
    assert d.block_height == height and d.epoch_stages.poc_validation_end == height


@given(st.sampled_from(["ms", "s", "m", "h", ""]), st.integers(1, 10**6))
def test_interval_durations(unit, n):
    from auditor.errors import UsageError
    from auditor.times import MAX_SECONDS
    from auditor.analyses.watch import seconds

    value = n * {"ms": 0.001, "s": 1, "m": 60, "h": 3600, "": 1}[unit]
    if value > MAX_SECONDS:            # a year at most (issue 35)
        with pytest.raises(UsageError, match="at most 8,784h"):
            seconds(f"{n}{unit}")
    else:
        assert seconds(f"{n}{unit}") == pytest.approx(value)


@pytest.mark.skipif(shutil.which("promtool") is None, reason="promtool not installed")
def test_shipped_alert_rules_fire_on_the_textfile(servers, db, tmp_path):
    """contrib/prometheus/auditor-watch.rules.yml: promtool checks it, and evaluates its alert
    expressions on the series the watch writes at 75 %: the host projected to fail and the one
    with no margin left alert, the healthy ones do not."""
    from prometheus_client.parser import text_string_to_metric_families

    rules = ROOT / "contrib" / "prometheus" / "auditor-watch.rules.yml"
    assert subprocess.run(["promtool", "check", "rules", str(rules)], capture_output=True).returncode == 0
    prom = tmp_path / "watch.prom"
    once(servers["h3"], db, "--prom-textfile", str(prom))
    series = [{"series": "%s{%s}" % (s.name, ",".join(f'{k}="{v}"' for k, v in sorted(s.labels.items()))),
               "values": f"{s.value:g}x60"}
              for fam in text_string_to_metric_families(prom.read_text()) for s in fam.samples]

    def sample(name: str, host: str) -> dict:
        return {"labels": f'{{epoch="500", participant="{HOST[host]}"}}', "value": exprs[name][1]}

    exprs = {"GonkaMissTestProjectedFail": (_rule_expr(rules, "GonkaMissTestProjectedFail"), 0),
             "GonkaMissTestMarginLow": (_rule_expr(rules, "GonkaMissTestMarginLow"), 0)}
    test = {"evaluation_interval": "1m", "tests": [{
        "interval": "1m", "input_series": series,
        "promql_expr_test": [
            {"expr": exprs["GonkaMissTestProjectedFail"][0], "eval_time": "40m",
             "exp_samples": [{"labels": f'auditor_miss_test_projected_pass{{epoch="500", '
                                        f'participant="{HOST["unsettled"]}"}}', "value": 0}]},
            {"expr": exprs["GonkaMissTestMarginLow"][0], "eval_time": "40m",
             "exp_samples": [sample("GonkaMissTestMarginLow", "runsout")]},
        ]}]}
    (tmp_path / "t.yml").write_text(json.dumps(test))        # JSON is YAML
    r = subprocess.run(["promtool", "test", "rules", str(tmp_path / "t.yml")], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr


def _rule_expr(rules: Path, alert: str) -> str:
    """The ``expr`` of one alert of a rule file (one line, or a ``>-`` block folded)."""
    lines = rules.read_text().splitlines()
    i = next(n for n, line in enumerate(lines) if line.strip() == f"- alert: {alert}")
    j = next(n for n in range(i, len(lines)) if lines[n].strip().startswith("expr:"))
    value = lines[j].split("expr:", 1)[1].strip()
    if value != ">-":
        return value
    indent = len(lines[j + 1]) - len(lines[j + 1].lstrip())
    block = []
    for line in lines[j + 1:]:
        if len(line) - len(line.lstrip()) < indent or not line.strip():
            break
        block.append(line.strip())
    return " ".join(block)


def test_an_accounting_api_that_fails_leaves_the_reading_incomplete(servers, db):
    """Exit 3 with the report printed: the misses it would have added are missing, not zero."""
    r = run_cli("watch", "--once", "--format", "json", "--node", servers["h2"], "--rate", "0", "--timeout", "0.5",
                "--accounting", "http://127.0.0.1:9", db=db)
    assert r.returncode == 3, r.stderr
    out = json.loads(r.stdout)
    assert out["coverage"]["sources"] == ["chain", "accounting"]
    assert len(out["coverage"]["missing"]) == 1 and "accounting" in out["coverage"]["missing"][0]
    chain_only, _ = once(servers["h2"], db, accounting=False, host=False)
    assert "not yet settled on chain are unknown" in chain_only["coverage"]["unknown"][0]


def test_the_participant_list_decodes_a_real_mainnet_answer():
    """The recorded mainnet `participant` list (heights near 887,711): 64-bit counters as
    strings, int32 weights as numbers, every participant kept."""
    from auditor.sources.live import ParticipantList

    raw = json.loads((W / "mainnet" / "all_participants_height_887711.json").read_text())
    page = ParticipantList.model_validate(raw)
    assert len(page.participant) == len(raw["participant"]) > 10 and page.block_height == int(raw["block_height"])
    assert sum(p.current_epoch_stats.inference_count for p in page.participant) == \
        sum(int(p["current_epoch_stats"]["inference_count"]) for p in raw["participant"])
    assert all(p.address.startswith("gonka1") for p in page.participant)


def test_a_participant_list_that_repeats_its_next_key_ends_the_reading_with_a_line(tmp_path, db):
    """A node that answers the same next_key for every page was asked 1,000 pages a reading (at
    the default 20 a minute, 50 minutes). The walk stops at the first key asked again: the
    counters are unknown, exit 3 with the line (issue 35)."""
    rec = tmp_path / "h2"
    shutil.copytree(W / "h2", rec)
    page = rec / "000003.json"
    entry = json.loads(page.read_text())
    body = json.loads(entry["body"])
    body["pagination"]["next_key"] = "AAAA"
    entry["body"] = json.dumps(body)
    page.write_text(json.dumps(entry))
    (rec / "900000.json").write_text(json.dumps({**entry, "query": "pagination.key=AAAA&pagination.limit=10000"}))
    with ReplayServer(rec) as server:
        r = run_cli("watch", "--once", "--format", "json", *sources(server.url), db=db, timeout=60)
    assert r.returncode == 3, r.stderr
    assert "participant list: the node answered next_key 'AAAA' again after 2 page(s)" in r.stderr, r.stderr
    assert "Traceback" not in r.stderr and "internal error" not in r.stderr


HOLD = """import duckdb, time
while True:              # the watch holds the store while it stores a reading: take it between two
    try:
        con = duckdb.connect({db!r})
        break
    except duckdb.IOException:
        time.sleep(0.01)
print("held", flush=True)
time.sleep(3)
"""


def test_the_loop_outlives_a_busy_store_and_an_unusable_textfile_folder(tmp_path, db):
    """`watch --interval 1s` ended (exit 3) when another process held the store for 3 s, and
    (exit 2) when the textfile's folder was briefly unusable. Now each is tried again with
    backoff and said on stderr; the readings taken meanwhile are stored once the store is free,
    the textfile is written again, and Ctrl-C still ends it with 130 (issue 35)."""
    prom_dir = tmp_path / "prom"
    prom = prom_dir / "auditor.prom"
    with ReplayServer(W / "loop") as server:
        p = subprocess.Popen([sys.executable, "-m", "auditor", "--db", str(db), "watch", "--interval", "1s",
                              "--prom-textfile", str(prom), *sources(server.url)], stdout=subprocess.DEVNULL,
                             stderr=subprocess.PIPE, text=True, cwd=ROOT,
                             env={"COLUMNS": "200", "NO_COLOR": "1", "PATH": "/usr/bin:/bin"}, preexec_fn=ctrl_c_able)
        try:
            deadline = time.monotonic() + 60
            while not prom.exists() and time.monotonic() < deadline and p.poll() is None:
                time.sleep(0.1)
            assert prom.exists(), p.stderr.read() if p.poll() is not None else "no textfile"
            # another process holds the store, and the textfile's folder is a file, for 3 s
            holder = subprocess.Popen([sys.executable, "-c", HOLD.format(db=str(db))], stdout=subprocess.PIPE, text=True)
            assert holder.stdout.readline().strip() == "held"
            held_at = time.time()
            prom_dir.rename(tmp_path / "prom.away")
            prom_dir.write_text("not a folder")
            time.sleep(3)
            prom_dir.unlink()
            (tmp_path / "prom.away").rename(prom_dir)
            holder.wait(timeout=10)
            before = prom.stat().st_mtime
            deadline = time.monotonic() + 30
            while prom.stat().st_mtime == before and time.monotonic() < deadline and p.poll() is None:
                time.sleep(0.1)
            time.sleep(1.5)
            assert p.poll() is None, p.stderr.read()         # still watching
            p.send_signal(signal.SIGINT)
            err = p.stderr.read()
            p.wait(timeout=30)
        finally:
            if p.poll() is None:
                p.kill()
    assert p.returncode == 130, err
    assert "Traceback" not in err and err.strip().splitlines()[-1] == "auditor: interrupted", err
    assert "auditor: watch: the store could not be written: the database" in err and "is locked by another" in err
    assert "auditor: watch: the textfile could not be written: cannot write --prom-textfile" in err, err
    assert "held reading(s) stored" in err and "the textfile is written again" in err, err
    assert prom.stat().st_mtime > before
    taken = [t.timestamp() for (t,) in q(db, "SELECT DISTINCT taken_at FROM watch_readings ORDER BY 1")]
    assert any(held_at <= t <= held_at + 3 for t in taken), (held_at, taken)    # taken while held, stored after


# -- issue 33: a terminal redraws one table; a log says only what changed a verdict or a finding ----
def _watched_on_a_terminal(db: Path, recording: str, rows: int, *extra: str, countdowns: int = 8) -> tuple[str, int]:
    """`auditor watch --interval 2s` on a pty of ``rows`` x 130 against ``recording``, stopped
    with Ctrl-C after ``countdowns`` countdown lines: what it drew, and its exit code."""
    import fcntl
    import pty
    import select
    import struct
    import termios

    with ReplayServer(W / recording) as server:
        master, slave = pty.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", rows, 130, 0, 0))
        p = subprocess.Popen([sys.executable, "-m", "auditor", "--db", str(db), "watch", "--interval", "2s",
                              *sources(server.url), *extra], stdout=slave, stderr=subprocess.PIPE,
                             stdin=subprocess.DEVNULL, cwd=ROOT,
                             env={"NO_COLOR": "1", "TERM": "xterm", "PATH": "/usr/bin:/bin"}, preexec_fn=ctrl_c_able)
        os.close(slave)
        out, end = b"", time.monotonic() + 60
        while time.monotonic() < end and out.count(b"next reading in") < countdowns:
            if select.select([master], [], [], 0.2)[0]:
                out += os.read(master, 1 << 16)
        p.send_signal(signal.SIGINT)
        p.wait(timeout=30)
        while select.select([master], [], [], 0.2)[0]:      # what it wrote before it ended: whole characters
            try:
                chunk = os.read(master, 1 << 16)
            except OSError:         # EIO: the pty's other end is closed and drained
                break
            if not chunk:
                break
            out += chunk
        os.close(master)
    return out.decode(errors="replace"), p.returncode


def test_on_a_terminal_the_watch_redraws_one_table_with_a_countdown(db):
    import re

    text, code = _watched_on_a_terminal(db, "loop", 60)
    assert code == 130
    assert "\x1b[1A" in text and "\x1b[2K" in text                 # drawn again in place, not appended
    screens = re.sub(r"\x1b\[[0-9;?]*[a-zA-Z]", "", text)
    assert re.search(r"next reading in [0-2] s \(Ctrl-C to stop\)", screens)
    assert " epoch 500 height " not in screens                      # no change lines: the table is the news


def test_on_a_terminal_of_24_rows_the_table_and_the_countdown_stay_in_sight(db):
    """The terminal's height cuts the redrawn view from the bottom: the table (mine first) and
    the countdown come before the findings. On the old code, at 24 rows, the two findings of
    the h3 reading filled the screen and no row of the table was ever drawn."""
    import re

    text, code = _watched_on_a_terminal(db, "h3", 24, "--mine", HOST["idle"], countdowns=3)
    assert code == 130
    # a whole frame: the one before the last countdown line read (the read stops at that line,
    # so what follows it may be cut short on a loaded machine)
    frame = re.sub(r"\x1b\[[0-9;?]*[a-zA-Z]", "", text).split("next reading in")[-2]
    assert re.match(r" [0-2] s \(Ctrl-C to stop\)", frame), frame
    rows = [x for x in frame.splitlines() if x.startswith("│ gonka1")]
    assert rows and HOST["idle"] in rows[0]                    # mine first, in sight


def test_in_a_log_a_margin_that_moves_alone_is_no_line():
    from datetime import datetime, timezone

    from auditor.analyses.watch import changes, state_of
    from auditor.result import Result

    def reading(margin: int, verdict: str = "pass") -> Result:
        return Result("watch", "w", {"taken_at": datetime(2026, 1, 1, tzinfo=timezone.utc), "epoch": 500,
                                     "height": 10, "progress": 0.5,
                                     "participants": [{"participant": "gonka1x", "projected_verdict": verdict,
                                                       "verdict_now": "pass", "margin": margin}]})

    before = state_of(reading(50))
    assert changes(before, reading(49)) == []                          # the margin alone moved
    (line,) = changes(before, reading(-1, "fail"))
    assert line.endswith("gonka1x projected pass -> fail (margin -1)")
