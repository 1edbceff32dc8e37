"""The miss rule, one definition (issue 32, "One definition per rule"): what a miss is was said
three ways (cpoc.MISS_DISPOSITIONS with MISS_OUTCOMES for the logs, the same dispositions with
timeout_outcome == 'applied' for the accounting API, is_miss by a kind's prefix). It is now
queries/views/nonce_miss.sql, which the queries of the logged attempts and of the accounting
counters apply; Python reads their ``kind``/``miss`` columns. Here the real queries run over
hand-made rows of every combination, held to the rule as Python said it before."""

from __future__ import annotations

import ast
import re
from datetime import datetime, timedelta, timezone
from itertools import product

import duckdb
import pytest

from conftest import ROOT

QUERIES = ROOT / "queries"
UNFINISHED = {"unfinished_refused": "refused_before_receipt", "unfinished_execution": "failed_after_receipt"}
T0 = datetime(2026, 10, 23, 11, 35, tzinfo=timezone.utc)


def old_log_kind(disp, outcome, finished, has_receipt, have_dispositions):
    """cpoc.miss_kind before: the logs' rule (an outcome not logged counts as applied)."""
    if disp in UNFINISHED:
        return UNFINISHED[disp] if outcome in {None, "", "applied"} else "not_applied"
    if disp is not None:
        return None
    if finished:
        return None
    if not have_dispositions:
        return "failed_after_receipt_est" if has_receipt else "refused_before_receipt_est"
    return "left_unfinished"


def old_is_miss(kind) -> bool:
    return kind is not None and kind.startswith(("refused_before_receipt", "failed_after_receipt"))


@pytest.fixture()
def con():
    c = duckdb.connect()
    c.execute("SET TimeZone = 'UTC'")
    for view in ("in_cpoc_window", "nonce_miss"):
        c.execute((QUERIES / "views" / f"{view}.sql").read_text(encoding="utf-8"))
    yield c
    c.close()


DISPOSITIONS = [None, "unfinished_refused", "unfinished_execution", "ghost", "finished_used"]
OUTCOMES = [None, "applied", "skipped", "insufficient_votes"]
BOOLS = [None, True, False]


@pytest.mark.parametrize("have_dispositions", [True, False])
def test_the_attempts_query_classifies_as_the_logs_rule_said(con, have_dispositions):
    con.execute("CREATE TABLE attempts (file_id INTEGER, line_no BIGINT, request VARCHAR, escrow BIGINT, "
                "nonce BIGINT, participant VARCHAR, host VARCHAR, model VARCHAR, ts TIMESTAMPTZ, attempt_ms BIGINT, "
                "probe BOOLEAN, finished BOOLEAN, has_receipt BOOLEAN, failure_reason VARCHAR)")
    con.execute("CREATE TABLE log_nonce_dispositions (file_id INTEGER, line_no BIGINT, escrow BIGINT, nonce BIGINT, "
                "disposition VARCHAR, dispatch_phase VARCHAR, timeout_outcome VARCHAR, detail_reason VARCHAR)")
    con.execute("CREATE TABLE log_host_labels (label VARCHAR, address VARCHAR, status VARCHAR)")
    want = {}
    for n, (disp, outcome, finished, receipt) in enumerate(product(DISPOSITIONS, OUTCOMES, BOOLS, BOOLS)):
        con.execute("INSERT INTO attempts VALUES (1, ?, 'r', 7, ?, 'p', 'h', 'm', ?, 1000, false, ?, ?, NULL)",
                    [n + 1, n, T0 + timedelta(seconds=n), finished, receipt])
        if disp is not None:
            con.execute("INSERT INTO log_nonce_dispositions VALUES (2, ?, 7, ?, ?, 'confirmation_poc', ?, NULL)",
                        [n + 1, n, disp, outcome])
        want[n] = old_log_kind(disp, outcome, finished, receipt, have_dispositions)
    rows = con.execute((QUERIES / "poc_overload_attempts.sql").read_text(encoding="utf-8"),
                       {"since": T0 - timedelta(hours=1), "until": T0 + timedelta(hours=1),
                        "have_dispositions": have_dispositions}).fetchall()
    cols = [d[0] for d in con.description]
    got = {r["nonce"]: r for r in (dict(zip(cols, row)) for row in rows)}
    assert {n: r["kind"] for n, r in got.items()} == want
    assert {n: r["miss"] for n, r in got.items()} == {n: old_is_miss(k) for n, k in want.items()}
    assert set(want.values()) >= {"refused_before_receipt", "failed_after_receipt", "not_applied", None,
                                  "left_unfinished" if have_dispositions else "refused_before_receipt_est"}


def test_the_accounting_query_counts_only_applied_timeouts(con):
    """The API records a timeout's outcome when it is evaluated: a counter of an unfinished
    nonce without one ('' as stored) is pending, no miss (as _accounting said before)."""
    con.execute("CREATE TABLE acct_counters (epoch BIGINT, dispatch_phase VARCHAR, participant VARCHAR, "
                "model VARCHAR, escrow_id VARCHAR, slot_id INTEGER, disposition VARCHAR, no_send_reason VARCHAR, "
                "timeout_outcome VARCHAR, count UBIGINT)")
    want = {}
    for n, (disp, outcome) in enumerate(product(DISPOSITIONS[1:], ["", "applied", "skipped"])):
        con.execute("INSERT INTO acct_counters VALUES (403, 'confirmation_poc', 'p', 'm', ?, 1, ?, '', ?, 3)",
                    [str(n), disp, outcome])
        kind = UNFINISHED.get(disp)
        want[str(n)] = (kind if outcome == "applied" else "not_applied") if kind else None
    rows = con.execute((QUERIES / "poc_overload_accounting.sql").read_text(encoding="utf-8"), {"epoch": 403}).fetchall()
    cols = [d[0] for d in con.description]
    got = [dict(zip(cols, r)) for r in rows]
    assert {r["escrow_id"]: r["miss_kind"] for r in got} == want
    assert {r["escrow_id"]: r["miss"] for r in got} == {e: old_is_miss(k) for e, k in want.items()}


def _code_strings(path) -> list[str]:
    """The string constants of a module's code, its docstrings left out."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    docs = {id(n.body[0].value) for n in ast.walk(tree)
            if isinstance(n, (ast.Module, ast.FunctionDef, ast.ClassDef, ast.AsyncFunctionDef))
            and n.body and isinstance(n.body[0], ast.Expr) and isinstance(n.body[0].value, ast.Constant)}
    return [n.value for n in ast.walk(tree)
            if isinstance(n, ast.Constant) and isinstance(n.value, str) and id(n) not in docs]


def test_the_miss_rule_is_written_once():
    """No analysis or query but views/nonce_miss.sql names the unfinished dispositions or the
    miss kinds as a rule: they read its kind and miss."""
    words = re.compile(r"\b(unfinished_refused|unfinished_execution|refused_before_receipt|failed_after_receipt)\b")
    for path in sorted((ROOT / "auditor" / "analyses").glob("*.py")):
        found = [s for s in _code_strings(path) if words.search(s) and not s.count(" ") > 3]
        assert not found, f"{path.name} restates the miss rule: {found}"
    for path in sorted(QUERIES.glob("*.sql")):
        code = "\n".join(line.split("--")[0] for line in path.read_text(encoding="utf-8").splitlines())
        assert not words.search(code), f"queries/{path.name} restates the miss rule"
    for name in ("poc_overload_attempts.sql", "poc_overload_accounting.sql"):
        sql = (QUERIES / name).read_text(encoding="utf-8")
        assert "nonce_miss(" in sql and "is_miss(" in sql, name
