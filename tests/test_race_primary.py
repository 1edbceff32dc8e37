"""A race's primary row, one definition (issue 32, "One definition per rule"): when a race has
two primary rows (its primary's race line logged twice), every reader picks the same one, the
first by line (queries/views/race_primary.sql). It used to be four ways: by end_pos in the views
of races, requests and attempts, by place in the prediction rule, and with no tie-break in the
per-race list (queries/hedging_race_attempts.sql), whose first row hedging.py takes."""

from __future__ import annotations

import re

from conftest import ROOT, run_cli, run_json
from test_hedging import LOG_1935, R1935, _race_completed as race_completed

QUERIES_DIR = ROOT / "queries"

REQ = "req-1792748400000000000-0032"


def _race_completed(nonce: int, host: str, winner: bool) -> str:
    """test_hedging's race line, the loser's finished (a primary that lost, not one the hedge rescued)."""
    line = race_completed(nonce, host, winner, 2000, 10, 900)
    return line if winner else line.replace("finished=false", "finished=true").replace(" failure_reason=sse_truncated", "")


def _log(primaries: list[str]) -> str:
    """test_hedging's #1935 race up to the winner's selection, then the winner's race line and one
    primary race line per host of ``primaries``, in that order."""
    head = "".join(LOG_1935.splitlines(keepends=True)[:5]).replace(R1935, REQ)      # decision_made .. winner_selected
    lines = [("02.030000", "race_completed", _race_completed(2, "s3cchost", True)),
             *[("02.040000", "race_completed", _race_completed(1, h, False)) for h in primaries]]
    return head + "".join(f"2026/10/23 10:00:{t} request={REQ} stage={s} escrow=900 {kv}\n" for t, s, kv in lines)


RANGE = ["--since", "2026-10-23T09:59Z", "--until", "2026-10-23T11:01Z"]
HOSTS = ["pr1mhost", "zzzz2host", "mmmm3host"]


def test_every_reader_picks_the_same_primary_row(tmp_path):
    """60 races, each with two or three primary rows that differ in their host, in varying
    orders: every reader names the first line's host (on the code before, the per-race list
    took another in about half of them)."""
    expected, text = {}, []
    for i in range(60):
        hosts = HOSTS[: 2 + i % 2]
        hosts = hosts[::-1] if i % 3 == 1 else hosts
        req = REQ.replace("0000000000-", f"00000000{i:02d}-")
        expected[req] = hosts[0]
        text.append(_log(hosts).replace(REQ, req).replace("10:00:", f"10:{i:02d}:"))
    log = tmp_path / "races.log"
    log.write_text("".join(text))
    db = tmp_path / "a.duckdb"
    assert run_cli("collect", "--gateway-log", str(log), db=db).returncode == 0

    def sql(query: str) -> dict[str, str]:
        return {r["request"]: r["primary_host"] for r in run_json("sql", query, "--format", "json", db=db)["rows"]}

    assert sql("SELECT request, primary_host FROM hedge_races") == expected
    assert sql("SELECT request, primary_host FROM log_requests") == expected
    rep = run_json("hedging", "--offline", *RANGE, "--all-races", "--format", "json", db=db)
    assert {r["request"]: r["attempts"][0]["host"] for r in rep["races"]} == expected     # hedging.py's primary
    assert {r["request"]: r["attempts"][0]["role"] for r in rep["races"]} == dict.fromkeys(expected, "primary")
    losses = {h["label"]: h["losses"] for h in rep["predictability"]["hosts"] if h["losses"]}
    assert losses == {h: list(expected.values()).count(h) for h in HOSTS}                # the prediction rule's


def test_no_reader_restates_the_primary_pick():
    """The primary row is picked by race_primary (and the list ordered by race_place) only:
    no query or view picks a primary with its own arg_min or orders by role itself."""
    own = re.compile(r"arg_min\w*\([^()]*\)\s*FILTER\s*\(\s*WHERE\s+role\s*=\s*'primary'|"
                     r"ORDER BY[^;\n]*role\s*<>\s*'primary'|bool_or\(\s*role\s*=\s*'primary'", re.I)
    for path in sorted(QUERIES_DIR.rglob("*.sql")):
        if path.name == "race_primary.sql":
            continue
        code = "\n".join(line.split("--")[0] for line in path.read_text(encoding="utf-8").splitlines())
        assert not own.search(code), f"{path.name} picks a race's primary by its own rule"
    for name in ("views/hedge_races.sql", "views/log_requests.sql", "views/hedge_attempts.sql",
                 "hedging_predictions.sql", "hedging_decisions.sql"):
        assert "race_primary(" in (QUERIES_DIR / name).read_text(encoding="utf-8"), name
    assert "race_place(" in (QUERIES_DIR / "hedging_race_attempts.sql").read_text(encoding="utf-8")
