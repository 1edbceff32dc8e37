"""Every result is identical before and after a change in how it is computed (issue 21: "Every
result is identical before and after on the test fixtures and the demo. The tests prove it").

Each case of fixtures/golden/make_golden.py is run again here through the CLI, on a store
collected afresh from the same fixtures, and its exit code and JSON output must equal the
golden file written by that script from the code before the change, after the same
normalisation (make_golden.normalise: the store's directory, the repository's path, the
loopback port of a --replay server, the order of a list whose order varies by ties today).

A result that changes on purpose is not silenced by rewriting the golden file from code not
yet known to be right. Two knobs say what changed, and leave the rest compared:
- DROP_KEYS: (command, dotted path in its JSON output) left out of both sides, e.g.
  ("epoch", "hedging.races") once the epoch JSON stops listing every race by default
  (issue 21, "Output sized for people");
- EXTRA_FLAGS: flags added to the run of a command (not to the golden), e.g.
  {"hedging": ("--races",)} when a flag brings a list back: the list is then compared in full
  against the output of the code before the change.
Both are empty now: nothing is left out.

The largest cases are marked slow (``-m "not slow"`` leaves them out for a quick look).
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

from tests.conftest import FIXTURES, run_cli

_spec = importlib.util.spec_from_file_location("make_golden", FIXTURES / "golden" / "make_golden.py")
golden = importlib.util.module_from_spec(_spec)
sys.modules["make_golden"] = golden      # dataclasses look their module up
_spec.loader.exec_module(golden)

# issue 21: the epoch report lists the 100 hedged races with most waste, not every race (the
# hedging command with --all-races lists them all, and is held to the old full list below;
# the epoch's races are held to being those of the old list, as_listed_from_the_whole);
# races_listed, which says so, is new
DROP_KEYS: frozenset[tuple[str, str]] = frozenset({
    ("epoch", "hedging.races"), ("epoch", "hedging.races_listed"), ("hedging", "races_listed")})
# issue 36 (governance targets), accepted additions, new keys only (no existing value changes):
# where the demand came from (the store's logs and --bundle), the accounting-only estimate of
# the mean in flight, the proposal section, and the honest covering fraction's companions
ISSUE_36_ADDITIONS: frozenset[tuple[str, str]] = frozenset({
    ("targets", "demand_sources"), ("targets", "network_estimate"), ("targets", "proposal"),
    ("targets", "governance.uncovered_models"), ("targets", "governance.need_by_model"),
    ("targets", "governance.driven_by"), ("targets", "governance.covering_without_driver"),
    ("targets", "governance.covers")})
DROP_KEYS = DROP_KEYS | ISSUE_36_ADDITIONS | {("epoch", f"preserved_targets.{path}") for _, path in ISSUE_36_ADDITIONS}
# issue 34 (today's gateway): NEW keys only, declared additions (every September-era value
# they sit beside is still compared): remints' holds and unaffordable_requests, in the remints
# command and in the epoch report's remints section; the gateway generation in the epoch
# report's coverage.gateway_log
ISSUE_34_ADDITIONS: frozenset[tuple[str, str]] = frozenset({
    ("remints", "holds"), ("remints", "unaffordable_requests"),
    ("epoch", "remints.holds"), ("epoch", "remints.unaffordable_requests"),
    ("epoch", "coverage.gateway_log.generation"), ("epoch", "coverage.gateway_log.generation_basis"),
    ("epoch", "coverage.gateway_log.generation_shapes")})
DROP_KEYS = DROP_KEYS | ISSUE_34_ADDITIONS
EXTRA_FLAGS: dict[str, tuple[str, ...]] = {"hedging": ("--all-races",)}

# ---- issue 34 (branch i34-acct): declared additions, to port to the per-path declarations ------
# New JSON keys, (command, path): the path is dotted, `[]` stands for every item of a list. Each
# is absent from the golden files (checked) and left out of the output before comparing, so
# every value that was there before is still compared.
ADDED_KEYS: tuple[tuple[str, str], ...] = (
    # a participant's capability refusals (accounting schema 6) next to its misses
    ("misstest", "findings[].evidence.capability_refusals"),
    ("poc-overload", "findings[].evidence.capability_refusals"),
    ("epoch", "findings[].evidence.capability_refusals"),
    # #1935: the basis of the attempt durations the hedging figures use, and how often race_completed's
    # attempt_ms disagrees with the attempt's own stage lines
    ("hedging", "totals.duration_basis"), ("hedging", "attempt_durations"),
    ("epoch", "hedging.totals.duration_basis"), ("epoch", "hedging.attempt_durations"),
)
# New columns of views (`auditor sql` answers: out of `columns` and of every row), (view, column):
# the attempt's end-of-stream line and the durations of #1935
ADDED_COLUMNS: tuple[tuple[str, str], ...] = (
    ("attempts", "end_stage_ts"),
    *(("hedge_attempts", c) for c in ("stage_ms", "attempt_ms_disagrees", "duration_ms", "end_stage_ts",
                                      "end_from_stage_line")),
    ("hedge_races", "duration_ms"),
)
# ------------------------------------------------------------------------------------------------


def _strip(node, parts: list[str]):
    """``node`` (JSON) without the key at ``parts`` (``[]``: every item of a list); how many went."""
    if not parts:
        return node, 0
    head, rest = parts[0], parts[1:]
    if head.endswith("[]"):
        key = head[:-2]
        if not isinstance(node, dict) or not isinstance(node.get(key), list):
            return node, 0
        items = [_strip(x, rest) for x in node[key]]
        return {**node, key: [x for x, _ in items]}, sum(n for _, n in items)
    if not isinstance(node, dict) or head not in node:
        return node, 0
    if not rest:
        return {k: v for k, v in node.items() if k != head}, 1
    child, n = _strip(node[head], rest)
    return {**node, head: child}, n


def without_additions(result: dict, command: str) -> tuple[dict, int]:
    """``result`` without the ADDED_KEYS of ``command`` (and, for an `auditor sql` of a view, its
    ADDED_COLUMNS), and how many keys and columns were left out."""
    out, gone = result["output"], 0
    for cmd, path in ADDED_KEYS:
        if cmd == command:
            out, n = _strip(out, path.split("."))
            gone += n
    if command == "sql" and isinstance(out, dict) and isinstance(out.get("columns"), list):
        query = result["argv"][1]
        new = {c for view, c in ADDED_COLUMNS if f" FROM {view} " in f"{query} "}
        gone += sum(1 for c in out["columns"] if c in new)
        out = {**out, "columns": [c for c in out["columns"] if c not in new],
               "rows": [{k: v for k, v in r.items() if k not in new} if isinstance(r, dict) else r
                        for r in out.get("rows") or []]}
    return {**result, "output": out}, gone


def dropped(result: dict, command: str) -> dict:
    """``result`` without the DROP_KEYS paths of ``command`` (a copy where one is dropped)."""
    result = dict(result)
    for cmd, path in DROP_KEYS:
        if cmd != command:
            continue
        *parents, last = path.split(".")
        node = result["output"] = dict(result["output"])
        for key in parents:
            if not isinstance(node.get(key), dict):
                break
            node[key] = dict(node[key])
            node = node[key]
        else:
            node.pop(last, None)
    return result


_MISSING = "<missing>"


def first_difference(expected, actual, path: str = "$"):
    """The first place where two JSON values differ, as (path, expected, actual); None when
    they are equal. Exact: 1, 1.0 and True differ."""
    if type(expected) is not type(actual):
        return path, expected, actual
    if isinstance(expected, dict):
        for key in expected:
            if key not in actual:
                return f"{path}.{key}", expected[key], _MISSING
            found = first_difference(expected[key], actual[key], f"{path}.{key}")
            if found:
                return found
        for key in actual:
            if key not in expected:
                return f"{path}.{key}", _MISSING, actual[key]
        return None
    if isinstance(expected, list):
        for i, (e, a) in enumerate(zip(expected, actual)):
            found = first_difference(e, a, f"{path}[{i}]")
            if found:
                return found
        if len(expected) != len(actual):
            i = min(len(expected), len(actual))
            return (f"{path}[{i}] (lengths {len(expected)} expected, {len(actual)} actual)",
                    expected[i] if i < len(expected) else _MISSING, actual[i] if i < len(actual) else _MISSING)
        return None
    return None if expected == actual else (path, expected, actual)


def _short(value, limit: int = 400) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[:limit] + f"... ({len(text):,} characters)"


def test_first_difference_names_the_path_and_both_values():
    assert first_difference({"a": [1, {"b": 2}]}, {"a": [1, {"b": 2}]}) is None
    assert first_difference({"a": [1, {"b": 2}]}, {"a": [1, {"b": 3}]}) == ("$.a[1].b", 2, 3)
    assert first_difference({"a": 1}, {"a": 1.0}) == ("$.a", 1, 1.0)
    assert first_difference({"a": 1}, {"a": True}) == ("$.a", 1, True)
    assert first_difference({"a": 1}, {}) == ("$.a", 1, _MISSING)
    assert first_difference({}, {"z": 1}) == ("$.z", _MISSING, 1)
    assert first_difference([1, 2], [1]) == ("$[1] (lengths 2 expected, 1 actual)", 2, _MISSING)


def test_dropped_leaves_out_only_the_path_of_its_command(monkeypatch):
    monkeypatch.setattr(sys.modules[__name__], "DROP_KEYS", frozenset({("epoch", "hedging.races")}))
    res = {"output": {"hedging": {"races": [1], "hosts": [2]}, "races": [3]}}
    assert dropped(res, "epoch") == {"output": {"hedging": {"hosts": [2]}, "races": [3]}}
    assert res["output"]["hedging"]["races"] == [1]                      # the golden itself is untouched
    assert dropped(res, "hedging") == res


@pytest.fixture(scope="module")
def stores(tmp_path_factory):
    """store(dataset): its store, collected once per module through the CLI, and its directory."""
    built: dict[str, tuple[Path, Path]] = {}

    def store(dataset: str) -> tuple[Path, Path]:
        if dataset not in built:
            store_dir = tmp_path_factory.mktemp(f"golden-{dataset}")
            built[dataset] = golden.build_store(dataset, store_dir, run_cli), store_dir
        return built[dataset]

    return store


@pytest.mark.parametrize("case", [pytest.param(c, id=c.stem, marks=[pytest.mark.slow] if c.slow else [])
                                  for c in golden.CASES])
def test_same_result_as_before(case, stores):
    db, store_dir = stores(case.dataset)
    command = case.argv[0]
    proc = run_cli(*case.argv, *EXTRA_FLAGS.get(command, ()), db=db)
    whole = golden.result(case, proc, store_dir)                        # its argv: the case's, less EXTRA_FLAGS
    actual, _ = without_additions(dropped(whole, command), command)
    expected, already = without_additions(dropped(golden.load_golden(case), command), command)
    assert already == 0, f"{case.stem}: a key ADDED_KEYS declares new is in the golden file"
    if command == "epoch":
        as_listed_from_the_whole(golden.load_golden(case), whole)
    found = first_difference(expected, actual)
    if found:
        where, want, got = found
        pytest.fail(f"{case.stem} ({golden.golden_path(case).name}) differs at {where}:\n"
                    f"  before: {_short(want)}\n  now:    {_short(got)}", pytrace=False)


def as_listed_from_the_whole(before: dict, now: dict) -> None:
    """The epoch report's races (dropped from the comparison) are the old full list's: each
    race as it was, in the old order, the RACES_LISTED with the most wasted work (all of them
    when there are no more)."""
    from auditor.analyses.hedging import RACES_LISTED

    def races(result: dict) -> list:
        out = result["output"]
        return (out.get("hedging") or {}).get("races", []) if isinstance(out, dict) else []

    def waste(race: dict) -> int:
        return sum(a["wasted_ms"] or 0 for a in race["attempts"])

    old, new = races(before), races(now)
    assert len(new) == min(RACES_LISTED, len(old))
    assert [r for r in old if r in new] == new, "a listed race differs from the old list's, or is out of its order"
    if new:
        assert min(map(waste, new)) >= sorted(map(waste, old), reverse=True)[len(new) - 1]


def test_without_additions_leaves_out_only_the_declared_keys(monkeypatch):
    monkeypatch.setattr(sys.modules[__name__], "ADDED_KEYS", (("misstest", "findings[].evidence.new"),))
    res = {"output": {"findings": [{"evidence": {"new": 1, "old": 2}}, {"evidence": {"old": 3}}], "new": 4}}
    assert without_additions(res, "misstest") == (
        {"output": {"findings": [{"evidence": {"old": 2}}, {"evidence": {"old": 3}}], "new": 4}}, 1)
    assert without_additions(res, "epoch") == (res, 0)


def test_every_golden_file_has_its_case():
    """A golden file without a case would compare nothing; a case without one fails above."""
    stems = {c.stem for c in golden.CASES}
    assert len(stems) == len(golden.CASES)
    files = {p.name.removesuffix(".gz").removesuffix(".json") for p in golden.HERE.glob("*.json*")}
    assert files == stems
