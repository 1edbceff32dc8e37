"""A race's primary row, one definition (issue 32, "One definition per rule"): when a race has
two primary rows (its primary's race line logged twice), every reader picks the same one, the
first by line (queries/views/race_primary.sql). It used to be four ways: by end_pos in the views
of races, requests and attempts, by place in the prediction rule, and with no tie-break in the
per-race list (queries/hedging_race_attempts.sql), whose first row hedging.py takes."""

from __future__ import annotations

import re

from conftest import ROOT, run_cli, run_json

QUERIES_DIR = ROOT / "queries"

REQ = "req-1792748400000000000-0032"
PRIMARIES = ["aaaa1host", "zzzz2host"]      # the first line's host, then the copy's


def _race_completed(nonce: int, host: str, winner: bool) -> str:
    return (f"nonce={nonce} host={host} host_idx={nonce} participant=gonka1qqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqq{host} "
            f"model=Qwen/Qwen3-4B-Instruct-2507 input_tokens=900 winner={str(winner).lower()} finished=true "
            f"responsive=true has_receipt=true confirmed_at=0 attempt_ms=2000 output_chunks=10 content_chunks=10 "
            f"output_bytes=900 stream_bytes_read=900 usage_tokens=10 max_gap_ms=80 mean_gap_ms=20 "
            "content_source=delta.content error_source=\"\" probe=false suspicious=false")


def _log(primaries: list[str]) -> str:
    lines = [
        ("00.000000", "decision_made", "nonce=1 host=aaaa1host decision=pairwise_budgeted_speedup delay_ms=0 "
                                       "max_attempts=2 group_size=16"),
        ("00.010000", "started", "nonce=1 host=aaaa1host"),
        ("00.020000", "started", "nonce=2 host=s3cchost"),
        ("01.000000", "first_token", "nonce=2 host=s3cchost route=winner winner_nonce=2"),
        ("01.010000", "winner_selected", "nonce=2"),
        ("02.030000", "race_completed", _race_completed(2, "s3cchost", True)),
        *[("02.040000", "race_completed", _race_completed(1, h, False)) for h in primaries],
    ]
    return "\n".join(f"2026/10/23 10:00:{t} request={REQ} stage={s} escrow=900 {kv}" for t, s, kv in lines) + "\n"


RANGE = ["--since", "2026-10-23T09:59Z", "--until", "2026-10-23T11:01Z"]
HOSTS = ["aaaa1host", "zzzz2host", "mmmm3host"]


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
                     r"ORDER BY[^;\n]*role\s*<>\s*'primary'", re.I)
    for path in sorted(QUERIES_DIR.rglob("*.sql")):
        if path.name == "race_primary.sql":
            continue
        code = "\n".join(line.split("--")[0] for line in path.read_text(encoding="utf-8").splitlines())
        assert not own.search(code), f"{path.name} picks a race's primary by its own rule"
    for name in ("views/hedge_races.sql", "views/log_requests.sql", "views/hedge_attempts.sql",
                 "hedging_predictions.sql"):
        assert "race_primary(" in (QUERIES_DIR / name).read_text(encoding="utf-8"), name
    assert "race_place(" in (QUERIES_DIR / "hedging_race_attempts.sql").read_text(encoding="utf-8")
