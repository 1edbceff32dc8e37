"""`auditor history ADDR` (issue 33): one participant over several settled epochs, each
epoch's whole miss test, collected from a recording over loopback as `collect --epoch E`
does; and what the real recorded summaries of one participant (mainnet epochs 51-56) allow."""

from __future__ import annotations

import json
import shutil
from datetime import datetime, timedelta

import pytest

from conftest import FIXTURES, run_cli, write_recording
from test_reports import STORY

VICTIM = STORY["victim"]
EPOCH_LENGTH = 15391
REC = FIXTURES / "chain" / "epoch-403"
# the victim's (requests, misses) in the epochs before 403 (403: the recording's 1765 / 345)
COUNTS = {400: (1500, 30), 401: (1600, 100), 402: (1700, 200)}


def _shift_body(v, epoch: int, k: int, dt: timedelta):
    if isinstance(v, dict):
        out = {}
        for key, x in v.items():
            if key.endswith("height") and isinstance(x, str) and x.isdigit() and int(x) > 1_000_000:
                out[key] = str(int(x) + k * EPOCH_LENGTH)
            elif key == "epoch_index" and x in ("403", "404"):
                out[key] = str(int(x) + k)
            elif key == "time" and isinstance(x, str):
                out[key] = (datetime.fromisoformat(x[:26]) + dt).isoformat() + x[26:]
            else:
                out[key] = _shift_body(x, epoch, k, dt)
        return out
    if isinstance(v, list):
        return [_shift_body(x, epoch, k, dt) for x in v]
    return v


def _epoch_entries(epoch: int) -> list[dict]:
    """The bundled recording of epoch 403 moved to ``epoch`` (heights, epoch indices, block
    times), with the victim's counts of ``COUNTS``; the root group of epoch+1 only for the last."""
    k = epoch - 403
    dt = k * (datetime(2026, 9, 23, 18, 9, 56, 652913) - datetime(2026, 9, 22, 17, 4, 11, 482913))
    out = []
    for f in sorted(REC.glob("*.json")):
        e = json.loads(f.read_text())
        if e["path"] == "/v1/epochs/latest" or (k and e["path"].endswith("/epoch_group_data/404")):
            continue                # the latest once; epoch+1's root group is its own recording's
        body = _shift_body(json.loads(e["body"]), epoch, k, dt)
        if e["path"].endswith("/epoch_performance_summary/403") and epoch in COUNTS:
            total, missed = COUNTS[epoch]
            for s in body["epochPerformanceSummary"]:
                if s["participant_id"] == VICTIM:
                    passed = missed <= total // 10
                    s.update(inference_count=str(total - missed), missed_requests=str(missed),
                             rewarded_coins="16000000000000" if passed else "0", claimed=passed)
        path = e["path"].replace("/403", f"/{epoch}").replace("/404", f"/{epoch + 1}")
        query = e["query"]
        if query.startswith("height="):
            query = f"height={int(query[7:]) + k * EPOCH_LENGTH}"
        height = None if e["height"] is None else int(e["height"]) + k * EPOCH_LENGTH
        out.append({**e, "path": path, "query": query, "height": height, "body": body})
    return out


@pytest.fixture(scope="module")
def recording(tmp_path_factory):
    """Epochs 400..403 on one stand-in node; its /v1/epochs/latest: 405 in Inference."""
    latest = json.loads((REC / "000006.json").read_text())
    entries = [latest] + [e for epoch in (400, 401, 402, 403) for e in _epoch_entries(epoch)]
    return write_recording(tmp_path_factory.mktemp("history") / "chain", entries)


def test_history_collects_each_epoch_and_gives_a_row_each(recording, tmp_path):
    db = tmp_path / "a.duckdb"
    r = run_cli("history", VICTIM, "--epochs", "400..403", "--replay", str(recording), "--format", "json", db=db)
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    rows = {row["epoch"]: row for row in out["epochs"]}
    assert list(rows) == [400, 401, 402, 403]
    assert {k: (v["total"], v["missed"], v["verdict"]) for k, v in rows.items()} == {
        400: (1500, 30, "passed"), 401: (1600, 100, "passed"), 402: (1700, 200, "zeroed_by_miss_test"),
        403: (1765, 345, "zeroed_by_miss_test")}
    for row in rows.values():       # the margin is what the whole epoch's test allowed, minus the misses
        assert row["margin"] == row["critical_misses"] - row["missed"]
        assert set(row) == {"epoch", "verdict", "total", "missed", "critical_misses", "margin", "p0",
                            "rewarded_coins", "preserved", "misses_in_cpoc_windows", "misses_in_cpoc_windows_is", "findings"}
    assert rows[403]["critical_misses"] == 176 and rows[403]["rewarded_coins"] == 0
    assert rows[400]["rewarded_coins"] == 16000000000000 and rows[400]["findings"] == []
    assert rows[402]["findings"] == ["reward_zeroed_miss_test"]
    assert rows[403]["preserved"] == 1
    assert rows[403]["misses_in_cpoc_windows"] is None          # no log, no accounting: unknown
    assert {f["evidence"]["row"]["epoch"] for f in out["findings"] if f["code"] == "reward_zeroed_miss_test"} \
        == {402, 403}
    assert out["coverage"]["missing"] == []
    # each epoch's whole chain data is in the store, as collect --epoch E leaves it
    again = run_cli("misstest", "401", "--offline", "--format", "json", db=db)
    assert len(json.loads(again.stdout)["participants"]) == 27


def test_history_by_default_reads_the_last_7_settled_epochs_and_says_which_it_could_not_get(recording, tmp_path):
    db = tmp_path / "a.duckdb"
    r = run_cli("history", VICTIM, "--replay", str(recording), "--format", "json", db=db)
    assert r.returncode == 3
    out = json.loads(r.stdout)
    assert [row["epoch"] for row in out["epochs"]] == [400, 401, 402, 403]      # 397..403; 397..399 not there
    assert out["coverage"]["missing"][0].startswith("epochs not in the store: 397..399")
    assert "auditor: incomplete: History of" in r.stderr and "397..399" in r.stderr
    # offline, the store's own last settled epochs holding the participant, by its label
    r = run_cli("history", VICTIM[-8:], "--offline", "--format", "json", db=db)
    assert r.returncode == 0, r.stderr
    assert [row["epoch"] for row in json.loads(r.stdout)["epochs"]] == [400, 401, 402, 403]


def test_history_html_draws_missed_against_allowed(recording, tmp_path):
    db = tmp_path / "a.duckdb"
    assert run_cli("collect", "--epoch", "402", "--epoch", "403", "--replay", str(recording), db=db).returncode == 0
    r = run_cli("history", VICTIM, "--epochs", "402..403", "--offline", "--format", "html", db=db)
    assert r.returncode == 0, r.stderr
    assert "Missed against allowed per epoch" in r.stdout and r.stdout.count("<svg") >= 1


# -- the real recorded summaries of one participant (mainnet 2025, epochs 51-56) ----------------------
MAINNET = FIXTURES / "chain" / "recorded-mainnet-2025"
HOST = "gonka14cu38xpsd8pz5zdkkzwf0jwtpc0vv309ake364"


def test_history_on_the_real_recorded_summaries_says_what_they_allow(tmp_path):
    """Six real performance summaries of one participant, and nothing else of those epochs (no
    root group, no other participant): the node is asked for each epoch and has no root group,
    so nothing can be stored and every epoch is said to be missing: one participant's summary
    allows no verdict, the dynamic p0 reads every participant's counts."""
    entries = []
    for f in sorted(MAINNET.glob("epoch_performance_summary_*.json")):
        epoch = int(f.name.split("_")[3])
        entries.append({"path": f"/chain-api/productscience/inference/inference/epoch_performance_summary/{epoch}"
                                f"/{HOST}", "body": f.read_text()})
    rec = write_recording(tmp_path / "rec", entries)
    r = run_cli("history", HOST, "--epochs", "51..56", "--replay", str(rec), "--format", "json",
                db=tmp_path / "a.duckdb")
    assert r.returncode == 3
    out = json.loads(r.stdout)
    assert out["epochs"] == [] and out["coverage"]["missing"][0].startswith("epochs not in the store: 51..56")
    assert [line.split(":")[0] for line in r.stderr.splitlines() if "MISSING" in line] == [
        f"chain epoch {e}" for e in range(51, 57)]                 # each epoch it could not get, by number


def test_misses_in_cpoc_windows_that_the_logs_cover_in_part_say_they_are_a_lower_bound(tmp_path):
    """A host preserved in six windows, four of which no log covers: history printed its 0 misses
    in cPoC windows as a plain 0 with no caveat, where poc-overload calls it a lower bound."""
    poc = FIXTURES / "poc-overload"
    db = tmp_path / "a.duckdb"
    r = run_cli("collect", "--epoch", "403", "--replay", str(poc / "chain"), "--replay", str(poc / "accounting"),
                "--gateway-log", str(poc / "gateway.log.gz"), db=db)
    assert r.returncode == 0, r.stderr
    host = "gonka1kx9mca3xm8u8ypzfuhmxey66u0ufxhs7nm6wc5"
    out = json.loads(run_cli("history", host, "--epochs", "403..403", "--offline", "--format", "json", db=db).stdout)
    [row] = out["epochs"]
    assert row["misses_in_cpoc_windows"] == 0
    assert row["misses_in_cpoc_windows_is"].startswith("a lower bound: no evidence for cpoc:0 MiniMaxAI/MiniMax-M2.7")
    assert any(u.startswith("epoch 403: misses_in_cpoc_windows 0 is a lower bound") for u in out["coverage"]["unknown"])
    # said once: under the table, not again among the caveats at the end
    for fmt in ("table", "md", "html"):
        text = run_cli("history", host, "--epochs", "403..403", "--offline", "--format", fmt, db=db).stdout
        assert text.count("is a lower bound: no evidence for cpoc:0") == 1, fmt
