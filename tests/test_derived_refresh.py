"""Kept tables brought up to date (queries/refresh/, issue 21): when more log is collected, a
kept table (``Store.derived``) is refreshed, only the rows the new lines can change worked out
again. Whatever the pieces the log arrived in, and in whatever order, every kept table then
holds what its view gives over the whole store, row for row, and the reports are those of a
store that read the whole log at once."""

from __future__ import annotations

import gzip
import json
import random
import re
from pathlib import Path

import pytest

from auditor.progress import Progress
from auditor.sources.gatewaylog import ingest
from auditor.store import Store
from conftest import FIXTURES, run_cli, run_json

KEPT = ("log_host_lines", "log_participants", "attempts", "log_ghosts", "hedge_attempts", "hedge_races",
        "hedge_priors", "log_requests")
# what each fixture log holds for the refreshes to get wrong: races, hedges, escalations and
# priors (hedging), attempts and ghosts around a cPoC (poc-overload), every log format
LOGS = {
    "hedging": FIXTURES / "hedging" / "incident.log",
    "poc-overload": FIXTURES / "poc-overload" / "gateway.log.gz",
    "section12": FIXTURES / "gateway-logs" / "section12-docker.log",
}


def _lines(path: Path) -> list[bytes]:
    data = gzip.decompress(path.read_bytes()) if path.suffix == ".gz" else path.read_bytes()
    return data.splitlines(keepends=True)


def _kept(store: Store) -> dict[str, list[tuple]]:
    """Every kept table, brought up to date as an analysis would, its rows sorted."""
    with store.derived(*KEPT):
        return {v: _sorted(store.con.execute(f"SELECT * FROM main.derived_{v}").fetchall()) for v in KEPT}


def _views(store: Store) -> dict[str, list[tuple]]:
    """What each view gives over the whole store, worked out now (no kept table read)."""
    return {v: _sorted(store.con.execute(f"SELECT * FROM main.{v}").fetchall()) for v in KEPT}


def _sorted(rows: list[tuple]) -> list[tuple]:
    return sorted(rows, key=repr)


def _pieces(lines: list[bytes], rng: random.Random, n: int) -> list[list[bytes]]:
    """``lines`` cut in ``n`` pieces: the first a half to two thirds of them, the rest at random
    places (a refresh runs when the new lines are fewer than those already read)."""
    first = rng.randint(len(lines) // 2, 2 * len(lines) // 3)
    cuts = sorted(rng.sample(range(first + 1, len(lines)), n - 2)) if n > 2 else []
    bounds = [0, first, *cuts, len(lines)]
    return [lines[a:b] for a, b in zip(bounds, bounds[1:])]


# a line's times (a Docker prefix, then the Go one), as a reporter's paste leaves them out
TIMES = re.compile(rb"^(\S+Z )?\d{4}/\d{2}/\d{2} \d{2}:\d{2}:\d{2}(\.\d+)? ")


@pytest.mark.parametrize("arrival", ["growing", "backwards", "untimed"])
@pytest.mark.parametrize("name", list(LOGS))
def test_kept_tables_refreshed_piece_by_piece_are_the_views_over_the_whole_store(tmp_path, name, arrival):
    """The log arrives in 4 pieces cut at random places, as a growing file (a request cut
    between two collects) or as files collected latest first after the first (earlier lines
    after later ones: a sample then changes the priors of races already read, in the hour
    after it), those files with half their lines' times taken out (untimed: lines pasted
    without them, which a request's span of times does not hold). After each collect every
    kept table is brought up to date, and at the end each is its view over the whole store."""
    rng = random.Random(f"{name} {arrival}")
    pieces = _pieces(_lines(LOGS[name]), rng, 4)
    if arrival == "untimed":
        pieces[1:] = [[TIMES.sub(b"", x) if rng.random() < 0.5 else x for x in p] for p in pieces[1:]]
    growing = arrival == "growing"
    with Store(tmp_path / "pieces.duckdb") as st:
        for k, i in enumerate([0, 1, 2, 3] if growing else [0, 3, 2, 1]):
            path = tmp_path / ("growing.log" if growing else f"piece-{i}.log")
            with open(path, "ab") as f:
                f.writelines(pieces[i])
            ingest(st, [str(path)], Progress(quiet=True))
            _kept(st)
            if k:    # every later collect refreshed the tables that have a refresh
                assert [v for v in KEPT if st.executed[f"refreshed:{v}"] != k] == []
        got, want = _kept(st), _views(st)
    assert got == want
    assert all(want[v] for v in ("attempts", "hedge_attempts", "hedge_races", "log_requests"))


def test_a_refresh_changes_only_what_the_new_lines_touch(tmp_path):
    """The refresh is not a rebuild in disguise: the kept rows of requests the new lines do
    not name stay as they were stored (their rowids do not move)."""
    lines = _lines(LOGS["hedging"])
    cut = len(lines) * 3 // 4
    log = tmp_path / "g.log"
    log.write_bytes(b"".join(lines[:cut]))
    with Store(tmp_path / "a.duckdb") as st:
        ingest(st, [str(log)], Progress(quiet=True))
        _kept(st)
        before = dict(st.con.execute("SELECT request, rowid FROM derived_log_requests").fetchall())
        with open(log, "ab") as f:
            f.writelines(lines[cut:])
        ingest(st, [str(log)], Progress(quiet=True))
        _kept(st)
        after = dict(st.con.execute("SELECT request, rowid FROM derived_log_requests").fetchall())
        new = {r for (r,) in st.con.execute("SELECT DISTINCT request FROM refresh_requests").fetchall()}
    kept = {r for r in before if r not in new}
    assert kept and new - set(before)
    assert {r: after[r] for r in kept} == {r: before[r] for r in kept}
    assert st.executed["refreshed:log_requests"] == 1


HEDGING = _lines(LOGS["hedging"])
CUT = len(HEDGING) * 3 // 4        # the incident log's first collect: three quarters of it
RACE = next(x for x in HEDGING if b"stage=race_completed" in x and b"winner=true" in x)


def _refreshed(tmp_path: Path, first: list[bytes], last: list[bytes]) -> Store:
    """A store that collected the first three quarters of the incident log, its kept tables made,
    then the rest of the log between the lines ``first`` and ``last``, its kept tables brought up
    to date: open, for the caller to close."""
    log = tmp_path / "g.log"
    log.write_bytes(b"".join(HEDGING[:CUT]))
    st = Store(tmp_path / "refreshed.duckdb")
    ingest(st, [str(log)], Progress(quiet=True))
    _kept(st)
    with open(log, "ab") as f:
        f.writelines([*first, *HEDGING[CUT:], *last])
    ingest(st, [str(log)], Progress(quiet=True))
    return st


def _unnamed(line: bytes) -> bytes:
    """A race line without request=, escrow= and nonce=."""
    return re.sub(rb" (request|escrow|nonce)=\S+", b"", line)


def test_a_new_race_line_without_request_or_nonce_is_refreshed_in(tmp_path):
    """A race line with neither ``request=`` nor escrow and nonce is its own attempt, which only
    "it is a new line" ties to a refresh: appended first after a collect (the first new line, as
    refresh_new_line bounds them), and again later, its attempt is in the kept table."""
    bare = [_unnamed(x) for x in HEDGING if b"stage=race_completed" in x][:2]
    with _refreshed(tmp_path, bare[:1], bare[1:]) as st:
        got, want = _kept(st), _views(st)
        assert st.executed["refreshed:attempts"] == 1
        bare_rows = st.con.execute("SELECT count(*) FROM derived_attempts WHERE request IS NULL AND nonce IS NULL "
                                   "AND line_no > ?", [CUT]).fetchone()[0]
    assert got == want
    assert bare_rows == 2


def test_a_participant_first_seen_in_a_new_race_line_is_refreshed_in(tmp_path):
    """log_participants gains the address of a participant that only a new race line names (no
    nonce disposition does): its refresh reads the new race lines, not only the dispositions."""
    new = "gonka1" + "q" * 30 + "newhost1"
    extra = _unnamed(re.sub(rb"participant=\S+", f"participant={new}".encode(), RACE))
    with _refreshed(tmp_path, [], [extra]) as st:
        got, want = _kept(st), _views(st)
        assert st.executed["refreshed:log_participants"] == 1
    assert got == want
    assert (new, "newhost1") in got["log_participants"]


def test_an_attempt_logged_twice_has_the_same_rows_however_they_are_worked_out(tmp_path):
    """An attempt's race line stored twice (a copy of the line beside the log it came from, here
    naming another host): its race's winner and primary are those of its first line, in the
    kept tables as in the views, worked out whole or brought up to date. Picked by the line's
    place, not by the order a plan happens to read the rows in."""
    twin = re.sub(rb"participant=gonka1\S+", b"participant=gonka1" + b"q" * 30 + b"twinhost",
                  RACE).replace(b" host=", b" host=twinhost x=")
    whole = tmp_path / "whole.log"
    whole.write_bytes(b"".join([*HEDGING, twin]))
    request = re.search(rb"request=(\S+)", RACE)[1].decode()
    with Store(tmp_path / "whole.duckdb") as st:
        ingest(st, [str(whole)], Progress(quiet=True))
        once, views = _kept(st), _views(st)
        winner = st.con.execute("SELECT winner_host FROM hedge_races WHERE request = ?", [request]).fetchall()
    with _refreshed(tmp_path, [], [twin]) as st:
        refreshed = _kept(st)
        assert st.executed["refreshed:hedge_races"] == 1
    assert once == views
    assert refreshed == views
    assert winner == [(re.search(rb" host=(\S+)", RACE)[1].decode(),)]     # the first line's


def test_reports_after_a_refresh_are_those_of_one_collect(tmp_path):
    """Through the CLI: the hedging report of a store that collected the incident log in two
    runs, with a report between them, is the one of a store that read it at once."""
    args = ("hedging", "--offline", "--since", "2026-10-23T11:00:00", "--until", "2026-10-23T13:00:00",
            "--format", "json")
    whole = tmp_path / "whole.duckdb"
    assert run_cli("collect", "--gateway-log", str(LOGS["hedging"]), db=whole).returncode == 0
    lines = _lines(LOGS["hedging"])
    log, db = tmp_path / "g.log", tmp_path / "two.duckdb"
    log.write_bytes(b"".join(lines[:len(lines) * 2 // 3]))
    assert run_cli("collect", "--gateway-log", str(log), db=db).returncode == 0
    run_json(*args, db=db)
    with open(log, "ab") as f:
        f.writelines(lines[len(lines) * 2 // 3:])
    assert run_cli("collect", "--gateway-log", str(log), db=db).returncode == 0
    r = run_cli(*args, db=db)
    assert "bringing the logs' hedged attempts up to date with" in r.stderr      # in words (issue 33)
    once = run_json(*args, db=whole)
    assert json.loads(r.stdout) == once          # the run that brought them up to date
    assert run_json(*args, db=db) == once        # and the next, reading them as kept


def test_a_sample_that_moves_earlier_leaves_the_priors_of_a_later_race(tmp_path):
    """A host's sample moves when a line collected later says it came earlier (a second
    first_token line of its attempt): the races of the hour after where it was lose it, and
    their kept priors are worked out again from the rows as they were (refresh_<view>_before),
    not only from where it is now."""
    small = (FIXTURES / "hedging" / "small.log").read_text().splitlines(keepends=True)
    req = next(ln for ln in small if "stage=secondary_immediate_start" in ln).split("request=")[1].split()[0]
    race = [ln for ln in small if f"request={req} " in ln]
    assert race[0].startswith("2026/10/23 09:08:") and race[-1].startswith("2026/10/23 09:09:")
    slow_first_token = next(ln for ln in race if "stage=first_token" in ln and "route=loser" in ln)
    # the same race 1 h 10 min later on another escrow: its primary's window is 09:18:10 .. 10:18:10
    later = [ln.replace("2026/10/23 09:0", "2026/10/23 10:1").replace(req, req + "-later")
             .replace("escrow=758", "escrow=759") for ln in race]
    moved = slow_first_token.replace("09:08:11.540000", "09:30:00.000000")   # inside that window
    first = tmp_path / "first.log"
    first.write_text("".join([ln for ln in race if ln != slow_first_token] + [moved] + later))
    second = tmp_path / "second.log"
    second.write_text(slow_first_token)          # the earlier first token: the sample is at 09:08:11
    with Store(tmp_path / "moved.duckdb") as st:
        ingest(st, [str(first)], Progress(quiet=True))
        before = _kept(st)["hedge_priors"]
        ingest(st, [str(second)], Progress(quiet=True))
        got = _kept(st)["hedge_priors"]
        want = _views(st)["hedge_priors"]
        assert st.executed["refreshed:hedge_priors"] == 1
    assert got == want != before
    samples = {(r[2], r[6]) for r in want}           # (request, prior_samples)
    assert (req + "-later", 0) in samples and (req + "-later", 1) in {(r[2], r[6]) for r in before}


def test_a_changed_refresh_rule_builds_the_kept_tables_whole(tmp_path, monkeypatch):
    """A kept table follows the rule that refreshed it: after an upgrade that changes a
    queries/refresh/ file, the next run works every kept table out whole, so none keeps rows a
    mended rule would not have made."""
    import auditor.store as store_mod

    lines = _lines(LOGS["hedging"])
    log = tmp_path / "g.log"
    log.write_bytes(b"".join(lines[:len(lines) * 3 // 4]))
    db = tmp_path / "a.duckdb"
    with Store(db) as st:
        ingest(st, [str(log)], Progress(quiet=True))
        _kept(st)
    with open(log, "ab") as f:
        f.writelines(lines[len(lines) * 3 // 4:])
    scripts = dict(store_mod._refresh_scripts())
    monkeypatch.setitem(store_mod._REFRESH, "attempts", scripts["attempts"] + "\n-- mended\n")
    with Store(db) as st:
        ingest(st, [str(log)], Progress(quiet=True))
        got = _kept(st)
        assert [v for v in KEPT if st.executed[f"derived:{v}"] != 1 or st.executed[f"refreshed:{v}"]] == []
        assert got == _views(st)
