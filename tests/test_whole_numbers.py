"""Numbers are never cut (issue 33): in the terminal view a number, an id, an address label
or a time is shown whole, or its column is left out with a note naming it; a table of one
row (a participant's report) is ``key: value`` lines, every column kept."""

from __future__ import annotations

import io
import json
import re
from datetime import datetime, timedelta, timezone
from decimal import Decimal

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import FIXTURES, run_cli
from test_remints import fixture_store  # noqa: F401  (the #1799 store)
from test_reports import STORY, demo, on_a_terminal  # noqa: F401  (demo: the store of every bundled source)

from auditor.report.view import View, cell
from auditor.report.table import print_table, short_addresses
from auditor.result import Result, Table

BECH = "023456789acdefghjklmnpqrstuvwxyz"
POC = FIXTURES / "poc-overload"
POC_STORY = __import__("json").loads((POC / "story.json").read_text())


# -- the property: every shown cell of a number or id column is the value's whole text -----------
def _value(kind: str):
    if kind == "int":
        return st.integers(-10**15, 10**15)
    if kind == "decimal":
        return st.decimals(min_value=-10**9, max_value=10**9, places=4, allow_nan=False)
    if kind == "float":
        return st.floats(-1e9, 1e9, allow_nan=False)
    if kind == "address":
        return st.text(BECH, min_size=38, max_size=38).map(lambda s: "gonka1" + s)
    if kind == "id":
        return st.text("abcdef0123456789:/-.", min_size=1, max_size=30)
    if kind == "time":
        return st.integers(0, 10**9).map(
            lambda s: datetime(2026, 1, 1, tzinfo=timezone.utc) + timedelta(milliseconds=s))
    return st.lists(st.sampled_from(["the", "host", "missed", "requests", "because", "of", "load",
                                     "req-1789648596464179072-1533588", "2026-09-17T12:36:36.489000Z"]),
                    min_size=4, max_size=30).map(" ".join)        # prose, an id or a time among its words


KINDS = ["int", "decimal", "float", "address", "id", "time", "prose"]


@st.composite
def tables(draw):
    kinds = ["id"] + draw(st.lists(st.sampled_from(KINDS), min_size=0, max_size=9))
    n = draw(st.integers(1, 6))
    columns = [f"c{i}" for i in range(len(kinds))]
    rows = [{c: draw(_value(k)) for c, k in zip(columns, kinds)} for _ in range(n)]
    return Table("T", columns, rows), dict(zip(columns, kinds))


def _shown(v, column) -> str:
    return short_addresses(cell(v, column))


def _notes(text: str) -> tuple[dict[str, str], set[str]]:
    same = {}
    m = re.search(r"\(the same in every row: (.*?)\)", text)
    if m:
        for part in m.group(1).split("; "):
            name, value = part.split(" ", 1)
            same[name] = value
    m = re.search(r"\(not shown at this width: (.*?); --wide", text)
    return same, set(m.group(1).split(", ")) if m else set()


def _drawn_at(table: Table, width: int, colour: bool = False, view: View = View()) -> str:
    """``table`` as the terminal view draws it ``width`` columns wide, its colours taken out."""
    from rich.console import Console

    out = io.StringIO()
    console = Console(file=out, width=width, highlight=False, soft_wrap=False,
                      color_system="standard" if colour else None, force_terminal=colour)
    print_table(Result("k", "k", {}, tables=[table]), view=view, console=console)
    return re.sub(r"\x1b\[[0-9;]*m", "", out.getvalue())


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tables(), st.integers(40, 250), st.booleans(), st.sampled_from(["plain", "wide", "whole"]))
def test_every_shown_number_or_id_cell_is_the_whole_value(drawn, width, colour, mode):
    table, kinds = drawn
    text = _drawn_at(table, width, colour, View(wide=mode == "wide", whole=mode == "whole"))
    full = mode == "wide" or (mode == "whole" and "┏" not in text)     # addresses whole, else their label
    whole = {c: [cell(r[c], c) if full else _shown(r[c], c) for r in table.rows] for c in table.columns}
    if "┏" not in text:
        # key: value lines, a block a row: each column once a row, its value whole
        values = [m.groups() for m in re.finditer(r"^  (c\d+): (.*)$", text, re.M)]
        assert len(values) == len(table.rows) * len(table.columns), text
        for i, (name, shown) in enumerate(values):
            if kinds[name] != "prose":
                assert shown == whole[name][i // len(table.columns)], (name, text)
        return
    same, dropped = _notes(" ".join(x.strip() for x in text.split("┘", 1)[1].splitlines()))  # notes unwrapped
    shown = [c for c in table.columns if c not in same and c not in dropped]
    for c, value in same.items():
        assert value == whole[c][0]
    assert shown[0] == "c0"
    if mode != "plain":
        assert shown == table.columns
    body = text.split("┩\n", 1)[1].split("└", 1)[0]
    rows = []               # each row's lines, as their cells
    for line in body.splitlines():
        cells = [x.strip() for x in line.split("│")[1:-1]]
        assert len(cells) == len(shown), (line, shown)
        if cells[0]:
            rows.append([cells])
        else:               # a prose cell's next line: every other cell empty
            assert all(not x for c, x in zip(shown, cells) if kinds[c] != "prose"), line
            rows[-1].append(cells)
    assert len(rows) == len(table.rows), text
    for i, lines in enumerate(rows):
        for j, c in enumerate(shown):
            if kinds[c] != "prose":
                assert lines[0][j] == whole[c][i], (c, lines[0][j], whole[c][i], text)
            else:           # wrapped between its words, never inside one
                assert " ".join(x[j] for x in lines).split() == whole[c][i].split(), (c, text)


# -- through the CLI in a real terminal ------------------------------------------------------------
def _pairs(text: str, title: str) -> list[dict[str, str]]:
    """The ``key: value`` blocks under the section titled ``title``."""
    block = text.split(f"\n{title}\n", 1)[1]
    rows, row = [], {}
    for line in block.splitlines():
        m = re.fullmatch(r"  (\w+): (.*)", line)
        if m:
            if m.group(1) in row:
                rows.append(row)
                row = {}
            row[m.group(1)] = m.group(2)
        elif not line.strip() and row:
            continue
        elif not line.startswith(" "):
            break
    return rows + [row]


@pytest.mark.parametrize("columns", [100, 200])
def test_a_participants_misstest_shows_its_numbers_whole(demo, columns):
    victim = STORY["victim"]
    text = on_a_terminal(["--db", str(demo), "misstest", "403", "--offline", "--participant", victim[-8:]], columns)
    (row,) = _pairs(text, "Miss test")
    assert row["participant"] == victim
    assert (row["total"], row["missed"], row["critical_misses"]) == ("1,765", "345", "176")
    assert row["verdict"] == "zeroed_by_miss_test"


@pytest.mark.parametrize("columns", [100, 200])
def test_a_participants_poc_overload_shows_its_numbers_whole(demo, columns):
    victim = STORY["victim"]
    text = on_a_terminal(["--db", str(demo), "poc-overload", "403", "--offline", "--participant", victim], columns)
    (row,) = _pairs(text, "Preserved hosts per CPoC window")
    assert (row["requests"], row["misses"], row["peak_inflight"], row["weight"]) == ("1,015", "324", "20", "8,233")
    section = text.split("\nPer escrow in the window\n", 1)[1]
    if section.startswith("┏"):     # two rows that fit: a table, each cell whole
        rows = [{x.strip() for x in line.split("│")} for line in section.split("└")[0].splitlines() if "│" in line]
        assert [{"97342", "425", "141"} <= rows[0], {"97388", "590", "183"} <= rows[1]] == [True, True], section
    else:                           # else a block of lines a row
        escrows = _pairs(text, "Per escrow in the window")
        assert [(r["escrow"], r["requests"], r["misses"]) for r in escrows] == [("97342", "425", "141"),
                                                                                  ("97388", "590", "183")]


@pytest.fixture(scope="module")
def poc_store(tmp_path_factory):
    db = tmp_path_factory.mktemp("poc") / "auditor.duckdb"
    r = run_cli("collect", "--epoch", "403", "--replay", str(POC / "chain"), "--replay", str(POC / "accounting"),
                db=db)
    assert r.returncode == 0, r.stderr
    return db


@pytest.mark.parametrize("columns", [100, 200])
def test_the_readme_host_operator_example_shows_escrow_misses_and_ghosts_whole(poc_store, columns):
    host = POC_STORY["small_host"]
    text = on_a_terminal(["--db", str(poc_store), "poc-overload", "403", "--offline", "--participant", host],
                         columns)
    rows = _pairs(text, "Preserved hosts per CPoC window")
    assert rows[0]["misses"] == "975" and rows[0]["participant"] == host
    (escrow,) = _pairs(text, "Per escrow, accounting API (dispatch phase confirmation_poc)")
    assert escrow["escrow"] == str(POC_STORY["escrow_single_preserved"]) == "134985"
    assert escrow["misses"] == "975" and escrow["other_slots_ghosts"].endswith(" 19,856")


# -- quantities with thousands separators, identifiers never (issue 33) ------------------------------
def test_quantities_have_separators_and_identifiers_none(demo):
    from auditor.report.view import identifier

    assert [identifier(c) for c in ("escrow", "epoch", "first_warned_height", "primary_nonce", "slot", "request",
                                    "requests", "preserved_slots", "rewarded_coins", "weight")] == \
        [True, True, True, True, True, True, False, False, False, False]
    # a cPoC's phase heights: gen_start printed 6,218,235 beside trigger_height 6218215
    assert all(identifier(c) for c in ("gen_start", "gen_end", "val_start", "val_end", "span_start"))
    events = run_cli("epoch", "403", "--offline", "--format", "md", db=demo).stdout.split("Confirmation PoC events")[1]
    assert re.search(r"\| \d{7} \| \d{7} \| \d{7} \| \d{7} \| \d{7} \|", events), events[:600]
    args = ["poc-overload", "403", "--offline", "--participant", STORY["victim"]]
    md = run_cli(*args, "--format", "md", db=demo).stdout
    assert "| 97342 |" in md and "| 1,015 |" in md and "| 8,233 |" in md
    html = run_cli(*args, "--format", "html", db=demo).stdout
    assert ">97342</td>" in html and ">1,015</td>" in html and 'data-sort="1015"' in html
    raw = run_cli(*args, "--format", "json", db=demo).stdout
    assert '"requests": 1015' in raw and "1,015" not in raw
    csv = run_cli(*args, "--format", "csv", db=demo).stdout
    assert "1015" in csv and "1,015" not in csv


def test_fractional_quantities_have_separators_too(demo):
    """A float or Decimal quantity (wasted seconds) is grouped as a whole one is, and every digit
    stays; an identifier column never is. On the old code the demo's hedging showed 1746 beside
    1,383 in the same row."""
    from decimal import Decimal

    from auditor.report.view import cell

    assert cell(64042.861, "wasted_seconds") == "64,042.861" and cell(-1234.5, "margin") == "-1,234.5"
    assert cell(Decimal("25000.50"), "weight") == "25,000.5" and cell(1746.5, "escrow") == "1746.5"
    host = next(h for h in json.loads(run_cli("hedging", "403", "--offline", "--format", "json", db=demo).stdout)["hosts"]
                if h["label"] == STORY["victim"][-8:])
    assert host["wasted_seconds"] == 1746.0                     # the stored value, raw in json
    md = run_cli("hedging", "403", "--offline", "--format", "md", db=demo).stdout
    row = next(x for x in md.splitlines() if x.startswith(f"| {STORY['victim']} |"))
    assert "| 1,746 |" in row and "| 1746 |" not in row


def test_an_empty_list_shows_as_none_and_an_unknown_as_a_dash(demo):
    """A list known to be empty is "none" in every human format, never a blank cell (the demo's
    remints cost table showed `replacement_escrows` empty); an unknown stays an em dash, and
    json keeps the list."""
    assert cell([]) == "none" and cell(None) == "—" and cell([97342, 97360], "escrows") == "97342, 97360"
    args = ["remints", "403", "--offline"]
    assert json.loads(run_cli(*args, "--format", "json", db=demo).stdout)["costs"]["replacement_escrows"] == []
    table = run_cli(*args, "--format", "table", db=demo).stdout
    assert re.search(r"│ replacement_escrows\s+│ none\s+│", table), table
    assert "| replacement_escrows | none |" in run_cli(*args, "--format", "md", db=demo).stdout
    assert re.search(r"<td[^>]*>none</td>", run_cli(*args, "--format", "html", db=demo).stdout.split(
        "replacement_escrows", 1)[1].split("</tr>", 1)[0])


@pytest.mark.parametrize("colour", [False, True])
def test_a_sentence_wraps_between_words_and_never_cuts_one(colour):
    """A prose column is as wide as its longest word at least: a request id, a time or a path
    in a reason is shown whole. On the old code, at 160 columns, remints' `why` showed
    `req-1789648596464179072-1` / `533588` and a path cut in two."""
    why = ("the request req-1789648596464179072-1533588 could not be reserved at 2026-09-17T12:36:36.489000Z "
           "(the log /var/log/gateway/gateway-2026-09-17.log.1 ends)")
    t = Table("t", ["escrow", "model", "balance", "why"],
              [{"escrow": 80502 + i, "model": "deepseek-ai/DeepSeek-V4-Flash-0731", "balance": 51_084_800,
                "why": f"{why}, row {i}"} for i in range(2)])
    text = _drawn_at(t, 100, colour)
    assert "┃ why" in text and "not shown" not in text, text
    for word in ("req-1789648596464179072-1533588", "2026-09-17T12:36:36.489000Z",
                 "/var/log/gateway/gateway-2026-09-17.log.1"):
        assert word in text, text


def test_the_columns_that_tell_rows_apart_come_right_after_the_id():
    """A host with a row per window and model: at 80 columns its rows keep the window and the
    model, not only the measures, and read apart. On the old code they kept the measures and
    three rows read `gonka1…mtd2v4zr │ 53 │ 0`."""
    rows = [{"participant": "gonka1…mtd2v4zr", "verdict": "passed", "misses": 0, "requests": 53,
             "peak_inflight": 4, "cap": 2, "episode": f"cpoc:{e}", "model": m, "weight": 2841}
            for e in range(3) for m in ("deepseek-ai/DeepSeek-V4-Flash-0731", "Qwen/Qwen3-235B")]
    t = Table("Preserved hosts", list(rows[0]), rows, priority=["participant", "verdict", "misses", "requests"])
    lines = [x for x in _drawn_at(t, 80).splitlines() if x.startswith("│")]
    assert len(lines) == 6 and len(set(lines)) == 6, lines
    assert all("cpoc:" in x and ("DeepSeek" in x or "Qwen" in x) for x in lines), lines
    # rows the id tells apart keep the table's priority as before
    one_each = [{**r, "participant": f"gonka1…{i:08d}"} for i, r in enumerate(rows)]
    head = _drawn_at(Table("t", list(rows[0]), one_each, priority=["participant", "verdict", "misses"]), 60)
    assert "verdict" in head and "misses" in head, head


def test_a_replacement_escrow_is_an_id_and_no_count_is_a_blank(fixture_store, poc_store):
    """The escrow that replaced a deactivated one is an id: no thousands separators (the
    deactivations showed `80,620` beside `80620`). The accounting's per-escrow table names its
    slot ids so (`slots` was the count in the log's table) and has no blank cell."""
    md = run_cli("remints", "396", "--offline", "--format", "md", db=fixture_store[0]).stdout
    deactivations = md.split("| replacement_escrow |", 1)[1].split("\n\n")[0]
    assert "| 80620 |" in deactivations and "80,620" not in md
    acct = run_cli("poc-overload", "403", "--offline", "--format", "md", db=poc_store).stdout
    table = acct.split("Per escrow, accounting API", 1)[1].split("\n\n")[1]
    assert "| slot_ids |" in table.splitlines()[0] and "|  |" not in table and " | |" not in table, table
