"""One definition of a cPoC window's membership and phase boundaries (issue 32, "One
definition per rule"): closed ``[trigger, val_end]``, written once for SQL
(queries/views/in_cpoc_window.sql: ``in_cpoc_window``, ``overlaps_cpoc_window``) and said of
values in hand by auditor/heights.py's helpers, which are held to the macros here. Every
window consumer calls them and restates no comparison of its own."""

from __future__ import annotations

import ast
import inspect
import re
import textwrap
from datetime import datetime, timedelta, timezone
from itertools import product
from pathlib import Path

import duckdb
import pytest

from auditor import demand_bundle, heights
from auditor.analyses import cpoc, poc_overload, targets

ROOT = Path(__file__).resolve().parents[1]
QUERIES = ROOT / "queries"
MACROS = QUERIES / "views" / "in_cpoc_window.sql"

# the queries that run over a cPoC window (Python passes its bounds as $since / $until)
WINDOW_QUERIES = {"poc_overload_ghosts": "in_cpoc_window", "poc_overload_attempts": "overlaps_cpoc_window",
                  "targets_demand_attempts": "overlaps_cpoc_window"}
# the Python that tests values already read against a window or a phase, and the helper each calls
WINDOW_CODE = {
    cpoc.evidence_state: ("overlaps_cpoc_window", "covers_cpoc_window"),
    cpoc.gateway_demand: ("overlaps_cpoc_window",),
    cpoc.host_windows: ("in_cpoc_window",),
    poc_overload._event: ("in_cpoc_window", "overlaps_cpoc_window"),
    poc_overload._metrics_budget: ("in_cpoc_window",),
    poc_overload.replay_with_cap: ("in_cpoc_window",),
    targets._epoch_demand: ("covers_cpoc_window",),
    demand_bundle._windows: ("in_cpoc_window",),
}
# a window's and its phases' edges, as the rows of cpoc_windows / chain_windows name them
BOUND_KEYS = {"trigger_time", "gen_start_time", "gen_end_time", "val_start_time", "val_end_time",
              "start_time", "end_time", "start", "end"}
BOUND_NAMES = {"start", "end", "w_start", "w_end", "span_start", "span_end"}
# comparisons with a window's edge that are not membership, each with why
NOT_MEMBERSHIP = {
    # the attempts just before the window ([start - lookback, start)): the lookback, not the window
    ("_event", "lookback"),
}


def _t(s: int) -> datetime:
    return datetime(2026, 10, 23, 11, 35, tzinfo=timezone.utc) + timedelta(seconds=s)


def test_the_python_helpers_say_what_the_macros_say_at_every_edge():
    con = duckdb.connect()
    con.execute("SET TimeZone = 'UTC'")
    con.execute(MACROS.read_text(encoding="utf-8"))
    points = [_t(s) for s in range(0, 7)]
    cases = [(t, a, b) for t, a, b in product(points, repeat=3) if a <= b]
    for t, a, b in cases:
        sql = con.execute("SELECT in_cpoc_window($1::TIMESTAMPTZ, $2::TIMESTAMPTZ, $3::TIMESTAMPTZ)", [t, a, b]).fetchone()[0]
        assert heights.in_cpoc_window(t, a, b) is sql, (t, a, b)
    assert heights.in_cpoc_window(_t(0), _t(0), _t(0))                   # both ends in
    for (s, e), (a, b) in product([(x, y) for x, y in product(points, repeat=2) if x <= y], repeat=2):
        if a > b:
            continue
        sql = con.execute("SELECT overlaps_cpoc_window($1::TIMESTAMPTZ, $2::TIMESTAMPTZ, $3::TIMESTAMPTZ, "
                          "$4::TIMESTAMPTZ)", [s, e, a, b]).fetchone()[0]
        assert heights.overlaps_cpoc_window(s, e, a, b) is sql, (s, e, a, b)
        # the span covers the window when it starts at or before the window and ends at or after it
        assert heights.covers_cpoc_window(s, e, a, b) is (s <= a and b <= e), (s, e, a, b)
    # a bound not collected (NULL) holds nothing
    assert con.execute("SELECT in_cpoc_window(now(), NULL, now()) IS NOT TRUE").fetchone()[0]


def test_every_window_query_calls_the_macro_and_compares_no_bound_itself():
    for name, macro in WINDOW_QUERIES.items():
        sql = (QUERIES / f"{name}.sql").read_text(encoding="utf-8")
        body = "\n".join(line.split("--")[0] for line in sql.splitlines())
        assert f"{macro}(" in body, f"queries/{name}.sql does not call {macro}"
        assert not re.search(r"[<>]=?\s*\$(since|until)|\$(since|until)\s*[<>]|BETWEEN\s+\$since", body), \
            f"queries/{name}.sql restates the window's boundary rule instead of calling {macro}"


def test_no_query_compares_a_cpoc_edge_itself():
    """No SQL of queries/ compares a cPoC window's or phase's edge (trigger ... val_end) but
    the macros' own file."""
    edge = r"\b(trigger|gen_start|gen_end|val_start|val_end)(_time|_height)?\b"
    for path in QUERIES.rglob("*.sql"):
        if path == MACROS:
            continue
        for line in path.read_text(encoding="utf-8").splitlines():
            code = line.split("--")[0]
            assert not (re.search(edge, code) and re.search(r"[<>]|BETWEEN", code, re.I)), \
                f"{path.relative_to(ROOT)} compares a cPoC edge: {line.strip()}"


def _bound(node: ast.AST, names: set[str]) -> bool:
    """Whether ``node`` is a window edge: a name of ``names`` or a row's edge key."""
    if isinstance(node, ast.Name):
        return node.id in names
    if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant):
        return node.slice.value in BOUND_KEYS
    if isinstance(node, ast.BoolOp):
        return any(_bound(v, names) for v in node.values)
    return False


def _restated(fn, names: set[str] = BOUND_NAMES) -> list[str]:
    """The comparisons of ``fn``'s source with a window edge (but the NOT_MEMBERSHIP ones)."""
    tree = ast.parse(textwrap.dedent(inspect.getsource(fn)))
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare) and not all(isinstance(op, (ast.Eq, ast.NotEq, ast.Is, ast.IsNot,
                                                                      ast.In, ast.NotIn)) for op in node.ops):
            text = ast.unparse(node)
            if any(_bound(x, names) for x in [node.left, *node.comparators]) and \
                    not any(fn.__name__ == f and word in text for f, word in NOT_MEMBERSHIP):
                out.append(text)
    return out


@pytest.mark.parametrize("fn", list(WINDOW_CODE), ids=lambda f: f"{f.__module__}.{f.__name__}")
def test_every_window_consumer_calls_the_rule_and_restates_none(fn):
    src = inspect.getsource(fn)
    for helper in WINDOW_CODE[fn]:
        assert f"{helper}(" in src, f"{fn.__name__} does not call {helper}"
    assert not _restated(fn), f"{fn.__module__}.{fn.__name__} restates the window rule: {_restated(fn)}"


def test_no_code_compares_a_cpoc_edge_key_itself():
    """Across auditor/, no function compares a row's cPoC edge (``ev["trigger_time"]`` ...
    ``["val_end_time"]``) itself: they call the helpers of auditor/heights.py."""
    edge_keys = {"trigger_time", "gen_start_time", "gen_end_time", "val_start_time", "val_end_time"}
    for path in (ROOT / "auditor").rglob("*.py"):
        if path.name == "heights.py":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.Compare) or all(
                    isinstance(op, (ast.Is, ast.IsNot, ast.In, ast.NotIn, ast.Eq, ast.NotEq)) for op in node.ops):
                continue
            for x in ast.walk(node):
                assert not (isinstance(x, ast.Subscript) and isinstance(x.slice, ast.Constant)
                            and x.slice.value in edge_keys), \
                    f"{path.relative_to(ROOT)}:{node.lineno} compares a cPoC edge: {ast.unparse(node)}"


def test_the_restatement_check_finds_the_old_forms():
    """The check above is not vacuous: the forms the consumers had before fail it."""
    def old_host_windows(ev, a):
        return ev["trigger_time"] <= a["start_ts"] <= ev["val_end_time"]

    def old_event(a, start, end):
        return [start <= a["start_ts"] <= end, a["start_ts"] <= end and a["end_ts"] >= start]

    def old_budget(x, t):
        return x["trigger_time"] <= t <= (x["gen_end_time"] or x["val_end_time"])

    assert all(_restated(f) for f in (old_host_windows, old_event, old_budget))


def test_in_range_says_which_queries_are_half_open_and_which_closed():
    text = (QUERIES / "views" / "in_range.sql").read_text(encoding="utf-8")
    assert "in_cpoc_window" in text and "the rule of every query" not in text
