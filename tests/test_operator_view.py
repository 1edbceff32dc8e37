"""The operator's morning (issue 20, items 1-3): the 100-column terminal keeps the columns
that matter (verdict, misses, waste) and drops constant ones first, saying their value;
findings print one block each on a narrow terminal, with their next step; severities and
failing rows coloured unless NO_COLOR; every finding has an ``action`` in json, md and html;
the abbreviations' legend; times to the millisecond in tables, in full in json."""

from __future__ import annotations

import re
from datetime import datetime, timezone

import io

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import run_cli, run_json
from test_reports import STORY, demo, on_a_terminal  # noqa: F401  (demo: the store of every bundled source)

from auditor.analyses.registry import codes
from auditor.report.render import render
from auditor.report.view import LEGEND, View, cell, legend
from auditor.report.table import _drawn, keep_order
from auditor.result import Finding, Result, Table

VICTIM = STORY["victim"]


def _headings(text: str, title: str) -> str:
    """The heading rows of the table titled ``title``: its words, one string."""
    block = text.split(f"\n{title}\n", 1)[1]
    head = block.split("┡", 1)[0]
    return " ".join(" ".join(c.strip() for c in line.split("┃")) for line in head.splitlines())


def _words(text: str) -> list[str]:
    return text.split()


# -- 1. column priority at 100 columns (a real pty) ---------------------------------------------
def test_misstest_at_100_columns_keeps_verdict_and_reason(demo):
    text = on_a_terminal(["--db", str(demo), "misstest", "403", "--offline"], 100)
    assert max(map(len, text.splitlines())) <= 100
    words = _words(_headings(text, "Miss test"))
    for w in ("participant", "missed", "critical", "verdict", "reason"):
        assert w in words, words
    assert "p0" not in words                                    # 0.1 in every row: dropped, and said
    assert "(the same in every row: p0 0.1)" in text
    victim_row = next(line for line in text.splitlines() if f"gonka1…{VICTIM[-8:]}" in line and "│" in line)
    assert "zeroed_by_miss_test" in victim_row and "345" in victim_row


def test_poc_overload_at_100_columns_keeps_verdict_misses_and_counterfactual(demo):
    text = on_a_terminal(["--db", str(demo), "poc-overload", "403", "--offline"], 100)
    assert max(map(len, text.splitlines())) <= 100
    words = _words(_headings(text, "Preserved hosts per CPoC window"))
    for w in ("participant", "requests", "misses", "verdict", "flips", "cf"):
        assert w in words, words
    victim_row = next(line for line in text.splitlines() if f"gonka1…{VICTIM[-8:]}" in line and "│" in line
                      and "zeroed_by_miss_test" in line)
    assert "1,015" in victim_row and "324" in victim_row        # a quantity: thousands separated (issue 33)
    assert "cf_* = counterfactual" in text                      # the legend under the table


def test_hedging_at_100_columns_keeps_the_waste(demo):
    text = on_a_terminal(["--db", str(demo), "hedging", "403", "--offline"], 100)
    assert max(map(len, text.splitlines())) <= 100
    hosts = _words(_headings(text, "Hosts: as primary and as secondary"))
    assert {"wasted", "seconds", "losses", "suppressed"} <= set(hosts), hosts      # wasted_seconds
    races = next(t for t in text.split("\n\n") if t.startswith("Hedged races, most waste first"))
    words = _words(_headings("\n" + races, races.splitlines()[0]))
    assert words.count("wasted") == 2 and "seconds" in words and "bytes" in words, words


def test_priority_then_narrowest_then_constant():
    t = Table("t", ["id", "long", "same", "verdict", "low"],
              [{"id": "a", "long": "x" * 30, "same": 1, "verdict": "fail", "low": 2},
               {"id": "b", "long": "y" * 30, "same": 1, "verdict": "pass", "low": 3}],
              narrow=["low"], priority=["id", "verdict"])
    texts = {c: [cell(r[c]) for r in t.rows] for c in t.columns}
    need = {c: max(len(c), *map(len, texts[c])) for c in t.columns}
    assert keep_order(t, texts, need) == ["id", "verdict", "long", "same"]       # never the narrow one
    out = render(Result("k", "k", {}, tables=[t]), "table")
    assert "low" not in out.split("\n\n")[-1].split("┡")[0]


# -- findings: one block each on a narrow terminal, coloured unless NO_COLOR ----------------------
def test_findings_print_one_block_each_at_100_columns(demo):
    text = on_a_terminal(["--db", str(demo), "epoch", "403", "--offline"], 100)
    block = text.split("\nFindings\n", 1)[1].split("\n\n", 1)[0]
    lines = block.splitlines()
    assert "┃" not in block and "│" not in block                    # not a squeezed table
    heads = [line for line in lines if not line.startswith(" ")]
    data = run_json("epoch", "403", "--offline", "--format", "json", db=demo)["findings"]
    assert len(heads) == len(data) and heads[0].startswith(f"{data[0]['severity']} {data[0]['code']} ")
    assert f"error reward_zeroed_miss_test participant gonka1…{VICTIM[-8:]}" in heads
    assert sum(line.strip().startswith("next:") for line in lines) == len(data)
    assert len(lines) < 6 * len(data)                           # not 60 lines for 9 findings of a squeeze


def test_severities_and_failing_rows_are_coloured_unless_no_color(demo):
    coloured = on_a_terminal(["--db", str(demo), "misstest", "403", "--offline"], 100, colour=True)
    red = re.compile(r"\x1b\[[0-9;]*31m")
    assert re.search(r"\x1b\[[0-9;]*31m" + "error", coloured)          # the severity
    victim_row = next(line for line in coloured.splitlines() if VICTIM[-8:] in line and "│" in line)
    passing = next(line for line in coloured.splitlines() if "│" in line and " passed " in line)
    assert red.search(victim_row) and not red.search(passing)
    plain_text = on_a_terminal(["--db", str(demo), "misstest", "403", "--offline"], 100)
    assert "\x1b" not in plain_text.replace("\x1b[?", "")       # NO_COLOR=1: no colour (cursor codes aside)


# -- 1b. a file's tables are drawn as rich draws them --------------------------------------------
def _rich_drawing(heads: list[list[str]], cells: list[list[str]], right: list[bool], min_width: list[int],
                  width: int) -> str:
    from rich.console import Console
    from rich.table import Table as RichTable
    from rich.text import Text

    out = io.StringIO()
    console = Console(file=out, width=width, highlight=False, soft_wrap=False, color_system=None)
    rt = RichTable()
    for h, r, m in zip(heads, right, min_width):
        rt.add_column(Text("\n".join(h)), justify="right" if r else "left", no_wrap=not m, overflow="fold",
                      min_width=m or None)
    for row in zip(*cells):
        rt.add_row(*map(Text, row))
    console.print(rt)
    return out.getvalue()


_CELL = st.text(st.sampled_from("ab Z09.,:-_/…é漢\u0301\u200b"), max_size=14)


@st.composite
def _tables(draw):
    n, rows = draw(st.integers(1, 5)), draw(st.integers(1, 6))
    heads = [draw(st.lists(st.text(st.sampled_from("abcdw"), min_size=1, max_size=9), min_size=1, max_size=3))
             for _ in range(n)]
    cells = [[draw(_CELL) for _ in range(rows)] for _ in range(n)]
    return (heads, cells, draw(st.lists(st.booleans(), min_size=n, max_size=n)),
            draw(st.lists(st.sampled_from([0, 20]), min_size=n, max_size=n)), draw(st.integers(10, 120)))


@settings(max_examples=300, deadline=None)
@given(_tables())
def test_a_table_that_fits_is_drawn_as_rich_draws_it(table):
    """Into a file or a pipe, a table whose columns all fit is drawn without rich's cell-by-cell
    layout (table._drawn): the same text, to the byte, as rich's own drawing of it; a table
    that does not fit is left to rich."""
    heads, cells, right, min_width, width = table
    drawn = _drawn(heads, cells, right, min_width, width)
    rich = _rich_drawing(heads, cells, right, min_width, width)
    if drawn is not None:
        assert drawn + "\n" == rich
    else:
        assert max(map(len, rich.splitlines())) >= width - 3      # rich had to share the width out


@pytest.mark.parametrize("args", [["epoch", "403"], ["hedging", "403"], ["misstest", "403", "--wide"],
                                  ["poc-overload", "403", "--wide"]])
def test_the_report_into_a_file_reads_as_on_a_coloured_terminal(demo, args):
    """The demo's tables drawn for a file (table._drawn, where they fit) and by rich with colour
    forced (every table through rich), the colour codes taken out: the same text."""
    plain_run = run_cli("--db", str(demo), *args, "--offline")
    forced = run_cli("--db", str(demo), *args, "--offline", env={"FORCE_COLOR": "1", "NO_COLOR": ""})
    assert plain_run.returncode == forced.returncode and "\x1b[" in forced.stdout
    assert "┏" in plain_run.stdout and "\x1b" not in plain_run.stdout
    assert re.sub(r"\x1b\[[0-9;]*m", "", forced.stdout) == plain_run.stdout


# -- 2. a next step per finding ------------------------------------------------------------------
def test_every_finding_of_the_demo_epoch_has_an_action(demo):
    findings = run_json("epoch", "403", "--offline", "--format", "json", db=demo)["findings"]
    assert findings and all(isinstance(f["action"], str) and f["action"] for f in findings), findings
    victim = next(f for f in findings if f["code"] == "reward_zeroed_miss_test" and f["subject"]["id"] == VICTIM)
    assert f"`auditor epoch 403 --participant {VICTIM} --format md`" in victim["action"]
    assert "#2107" in victim["action"] and str(victim["evidence"]["misses_in_cpoc_windows"]) in victim["action"]
    other = next(f for f in findings if f["code"] == "reward_zeroed_miss_test" and f["subject"]["id"] != VICTIM)
    assert "#2107" not in other["action"]              # no misses the evidence places in cPoC: no such clause
    md = run_cli("epoch", "403", "--offline", "--format", "md", db=demo).stdout
    assert md.count("   next: ") == len(findings)
    html = run_cli("epoch", "403", "--offline", "--format", "html", db=demo).stdout
    assert html.count('<span class="action">next: ') == len(findings)


def test_action_is_the_registry_text_filled_from_the_finding():
    code = codes()["reward_zeroed_miss_test"]
    assert code.action and "{epoch}" in code.action
    f = Finding("reward_zeroed_miss_test", "error", {"kind": "participant", "id": "gonka1abc"}, "zeroed",
                {"missed": 9, "row": {"epoch": 7, "participant": "gonka1abc"}, "misses_in_cpoc_windows": 5})
    assert f.action.startswith("attach `auditor epoch 7 --participant gonka1abc --format md`")
    assert "places 5 misses" in f.action and "#2107" in f.action
    assert f.to_dict()["action"] == f.action
    bare = Finding("reward_zeroed_miss_test", "error", {"kind": "participant", "id": "p"}, "zeroed", {})
    assert "auditor epoch N --participant p" in bare.action and "#2107" not in bare.action   # epoch unknown: N
    given = Finding("mint_peak", "warn", {"kind": "model", "id": "m"}, "s", {}, action="do this")
    assert given.action == "do this"
    with pytest.raises(ValueError, match="finding code 'not_a_code' is not declared"):
        Finding("not_a_code", "info", {"kind": "model", "id": "m"}, "s")       # nor made, so no action to lack
    assert all(c.action for c in codes().values())                 # every declared code has one


# -- 3 (the text part): legends and times ---------------------------------------------------------
def test_legend_lines_are_declared_and_known():
    assert legend(["cf_*", "W_m"]) == [LEGEND["W_m"], LEGEND["cf_*"]]
    with pytest.raises(KeyError):
        legend(["Z_q"])
    t = Table("t", ["a"], [{"a": "W_m (table)"}], legend=["(table)"])
    r = Result("k", "k", {}, tables=[t], header=[("T / M / n_used", "1 / 2 / 3")], legend=["T / M / n_used"])
    for fmt in ("table", "md", "html"):
        out = render(r, fmt, View())
        assert "(table) = the allowance" in out and "T / M / n_used = the epoch" in out, fmt
        assert "W_m =" not in out                                 # a cell's text does not make a legend


def test_times_to_the_millisecond_in_tables_in_full_in_json():
    t = datetime(2026, 9, 23, 0, 3, 36, 172913, tzinfo=timezone.utc)
    r = Result("k", "k", {"at": t}, tables=[Table("t", ["at"], [{"at": t}])])
    assert "2026-09-23T00:03:36.172Z" in render(r, "table") and "36.172913" not in render(r, "table")
    assert "2026-09-23T00:03:36.172Z" in render(r, "md")
    assert "2026-09-23T00:03:36.172913Z" in render(r, "json")


@pytest.mark.parametrize("host", ["a`b", "`<script>x</script>`", "x|y\n`z", "[l](http://e) *b*", "<b>x</b>"])
def test_an_action_holding_outside_text_is_data(host):
    """An action fills in outside text (a host, a model): its quoted commands become code,
    the rest is escaped as any outside text, in md and html."""
    from markdown_it import MarkdownIt

    f = Finding("reward_zeroed_miss_test", "error", {"kind": "participant", "id": host}, "zeroed",
                {"row": {"epoch": 3}})
    assert "\n" not in f.action
    r = Result("x", "x", {}, findings=[f], parts=[Result("y", "y", {}, findings=[f])])
    line = next(x for x in render(r, "md").splitlines() if x.startswith("   next: "))
    shown = MarkdownIt("commonmark").render(line.strip())
    assert not re.search(r"<(?!/?(p|code)>)", shown), shown          # no tag but paragraphs and code
    html = render(r, "html")
    assert "<script>x" not in html and "<b>x</b>" not in html
    assert html.count('<span class="action">next: attach <code>auditor epoch 3 --participant ') == (
        0 if host.count("`") % 2 else 1)             # an odd backtick in a host unpairs the quotes: plain text
