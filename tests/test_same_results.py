"""Every result is identical before and after a change in how it is computed (issue 21: "Every
result is identical before and after on the test fixtures and the demo. The tests prove it").

Each case of fixtures/golden/make_golden.py is run again here through the CLI, on a store
collected afresh from the same fixtures, and its exit code and JSON output must equal the
golden file written by that script from the code before the change, after the same
normalisation (make_golden.normalise: the store's directory, the repository's path, the
loopback port of a --replay server, the order of a list whose order varies by ties today).

A result that changes on purpose is not silenced by rewriting the golden file from code not
yet known to be right. What may differ is declared, and the rest stays compared, nested keys
included:
- a new analysis's own key at the top of ``auditor epoch N``'s JSON (any key of the registry's
  ANALYSES the golden lacks): adding an analysis needs no edit here;
- ADDED: keys an issue adds, per command and path: ``{"remints": {"": ["holds"],
  "escrows[]": ["unaffordable_requests"]}}`` (``""`` the top level, ``a.b`` a nested object,
  ``a[]`` every item of the list ``a``); each entry names its issue;
- CHANGED: a path whose value changes on purpose, left out of the comparison and held by the
  function named instead, e.g. the epoch report's races (issue 21, "Output sized for people");
- REWORDED: a finding's next step reworded on purpose, compared in its old words (and held to
  say only the new ones);
- a value made honest on purpose (a 0 that is unknown, a caveat that was missing) is patched into
  the golden file at its path alone by fixtures/golden/patch_golden.py, which refuses when
  anything else differs; the commit says which paths and why;
- EXTRA_FLAGS: flags added to the run of a command (not to the golden), e.g.
  {"hedging": ("--all-races",)} when a flag brings a list back: the list is then compared in full
  against the output of the code before the change.

The largest cases are marked slow (``-m "not slow"`` leaves them out for a quick look).
"""

from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path

import pytest

from tests.conftest import FIXTURES, run_cli

_spec = importlib.util.spec_from_file_location("make_golden", FIXTURES / "golden" / "make_golden.py")
golden = importlib.util.module_from_spec(_spec)
sys.modules["make_golden"] = golden      # dataclasses look their module up
_spec.loader.exec_module(golden)

EXTRA_FLAGS: dict[str, tuple[str, ...]] = {"hedging": ("--all-races",)}

# keys an issue adds: {command: {path: [keys]}} (the module docstring; "*": every command)
_BY_GATEWAY = ["misses_by_gateway", "misses_by_gateway_is"]
# the 2026-12-05 review: a remints finding's evidence names where its lines are (file:line)
_LOG_LINES = ["log_lines", "log_lines_more"]
# the 2026-12-05 review: a poc_overload finding's counterfactual says where the cap applies
_CF_SPAN = ["span", "span_start", "span_end"]
_GOVERNANCE = ["uncovered_models", "need_by_model", "driven_by", "covering_without_driver", "covers"]
ADDED: dict[str, dict[str, list[str]]] = {
    # issue 32: every command's JSON says the version of its contract (CHANGELOG.md)
    "*": {"": ["schema_version"]},
    "epoch": {
        # issue 21: races_listed says how many races the JSON lists
        # issue 34 (#1935): the basis of the attempt durations and how often attempt_ms disagrees
        "hedging": ["races_listed", "attempt_durations"], "hedging.totals": ["duration_basis"],
        "hedging.races_listed": ["with_hosts"],     # the 2026-12-05 review: whose races are listed
        # issue 34: a participant's capability refusals (accounting schema 6) next to its misses;
        # issues 33/36: its misses per gateway, when several gateways' accounting is stored
        "findings[].evidence": ["capability_refusals", *_BY_GATEWAY, *_LOG_LINES],
        "findings[].evidence.counterfactual": _CF_SPAN,
        "misstest.participants[]": ["misses_by_gateway"],
        # issue 34: today's gateway: holds, requests no escrow could fund, the gateway's generation
        "remints": ["holds", "unaffordable_requests"],
        "coverage.gateway_log": ["generation", "generation_basis", "generation_shapes"],
        # the escrows probed on chain that it holds a record of, and those it answered 404 for
        "coverage.chain_escrows.loaded": ["found", "not_found"],
        # where the logs cover each window from and to (a quiet minute after its start is no gap)
        "coverage.gateway_log.windows[]": ["covered_from", "covered_to", "stretches"],
        # issue 36: where the demand came from, the accounting-only estimate, the proposal, and
        # the honest covering fraction's companions
        "preserved_targets": ["demand_sources", "network_estimate", "proposal"],
        "preserved_targets.governance": _GOVERNANCE,
    },
    "hedging": {"": ["races_listed", "attempt_durations"], "totals": ["duration_basis"]},
    "misstest": {"findings[].evidence": ["capability_refusals", *_BY_GATEWAY],
                 "participants[]": ["misses_by_gateway"]},
    "poc-overload": {"findings[].evidence": ["capability_refusals", *_BY_GATEWAY],
                     "findings[].evidence.counterfactual": _CF_SPAN},
    "remints": {"": ["holds", "unaffordable_requests"], "findings[].evidence": _LOG_LINES},
    "targets": {"": ["demand_sources", "network_estimate", "proposal"], "governance": _GOVERNANCE},
}
# columns an issue adds to a view (`auditor sql` of it: in its columns and in every row's keys):
# issue 34 (#1935), the attempt's end-of-stream line and the durations measured from it
ADDED_COLUMNS: dict[str, list[str]] = {
    "attempts": ["end_stage_ts"],
    "hedge_attempts": ["stage_ms", "attempt_ms_disagrees", "duration_ms", "end_stage_ts", "end_from_stage_line",
                       "end_pos"],
    "hedge_races": ["duration_ms"],
}


def without_added_columns(result: dict, golden_result: dict) -> dict:
    """An `auditor sql` result of a view without the ADDED_COLUMNS of that view that its
    golden lacks (each is a list item of ``columns``, which a key's declaration cannot name)."""
    out = result["output"]
    if result["argv"][0] != "sql" or not isinstance(out, dict) or not isinstance(out.get("columns"), list):
        return result
    query, before = f"{result['argv'][1]} ", set(golden_result["output"].get("columns") or ())
    new = {c for view, cols in ADDED_COLUMNS.items() if f" FROM {view} " in query for c in cols} - before
    out = {**out, "columns": [c for c in out["columns"] if c not in new],
           "rows": [{k: v for k, v in r.items() if k not in new} if isinstance(r, dict) else r
                    for r in out.get("rows") or []]}
    return {**result, "output": out}


def as_listed_from_the_whole(before: dict, now: dict) -> None:
    """The epoch report's races (left out of the comparison) are the old full list's: each
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


def races_of_the_participant(before: dict, now: dict) -> None:
    """hedging --participant lists the participant's own races, every one with --all-races (the
    2026-12-05 review: the network's 100 most wasteful held 31 of a host's 51): the old full
    list's races with an attempt of its hosts, in the old order, and races_listed counts them and
    says where all of them are. Without --participant the list and its count are the old ones."""
    b, n = before["output"], now["output"]
    def listed_of(out: dict) -> dict:
        return {k: v for k, v in out["races_listed"].items() if k != "with_hosts"}

    listed = listed_of(n)
    old_listed = listed_of(b) if "races_listed" in b else listed     # a golden from before issue 21 has none
    if "--participant" not in before["argv"]:
        assert n["races"] == b["races"] and listed == old_listed and n["races_listed"]["with_hosts"] is None
        return
    hosts = set(n["races_listed"]["with_hosts"])
    theirs = [r for r in b["races"] if any(a["host"] in hosts for a in r["attempts"])]
    assert hosts and theirs and n["races"] == theirs and len(theirs) < len(b["races"])
    # where all of them are names the participant (the command) and its hosts (the SQL)
    who = before["argv"][before["argv"].index("--participant") + 1]
    assert re.search(rf"--participant \S*{who} --all-races", listed["all"]) and "host IN (" in listed["all"], listed["all"]
    assert listed == {**old_listed, "listed": len(theirs), "of": len(theirs), "all": listed["all"]}


def _val_starts() -> dict[str, str | None]:
    """Each cPoC event's validation start time, by its trigger time, as the goldens' epoch
    reports give it (cpoc_events: the chain's val_start height's block time)."""
    out: dict[str, str | None] = {}
    for case in golden.CASES:
        if case.argv[0] == "epoch":
            out.update({e["trigger_time"]: e["val_start_time"]
                        for e in golden.load_golden(case)["output"].get("cpoc_events") or []})
    return out


def validation_from_its_start(before: dict, now: dict) -> None:
    """Issue 32: poc-overload's events say when validation starts (``val_start_time``, the
    chain's), and the chart shades validation from there, not from the end of generation.
    Each event is the old one with that key alone added, and the chart's grace and
    generation are as the old chart drew them."""
    from auditor.analyses import poc_overload
    from auditor.analyses.frame import chart_time

    def events(result: dict) -> list:
        out = result["output"]
        if isinstance(out, dict) and "poc_overload" in out:
            out = out["poc_overload"] or {}
        return out.get("events", []) if isinstance(out, dict) else []

    old, new, val_starts = events(before), events(now), _val_starts()
    assert len(new) == len(old)
    for o, n in zip(old, new):
        assert {k: v for k, v in n.items() if k != "val_start_time"} == o
        assert n["val_start_time"] == val_starts[o["start"]]
        assert o["gen_end_time"] < n["val_start_time"] < o["end"]
        spans = poc_overload._phases(n)
        assert [s["label"] for s in spans] == ["grace", "generation", "validation"]
        assert spans[:2] == [{"from": chart_time(a), "to": chart_time(b), "label": label} for label, a, b in
                             (("grace", o["start"], o["gen_start_time"]),
                              ("generation", o["gen_start_time"], o["gen_end_time"]))]
        assert spans[2] == {"from": chart_time(n["val_start_time"]), "to": chart_time(o["end"]),
                            "label": "validation"}


# a next step's words as they were, from what they are now (a pattern of the new words, the old
# words, text only the old words hold): over --since/--until it names that range, where it said
# `auditor hedging N`, which did not run as printed; mint_peak's counts the mints not explained,
# where it called them all "unexplained" though some are replacements of unknown class, and
# says "legitimate" deactivations, as its summary does (a replacement of unknown class follows
# a deactivation too) (the 2026-12-05 reviews)
REWORDED = [(r"auditor hedging --since \S+ --until \S+ ", "auditor hedging N ", "auditor hedging N "),
            (r"the (\d+) mint\(s\) of (\S+) that rotation and (?:legitimate )?deactivations do not explain,",
             r"the \1 unexplained mint(s) of \2", "unexplained mint(s)")]


def in_old_words(result: dict, *, now: bool = False) -> dict:
    """``result`` with its findings' next steps in the words they had before REWORDED (a golden
    written since says the new words too); ``now``: a result of today's code, whose next steps
    say only the new words."""
    out = result["output"]
    if not isinstance(out, dict) or not isinstance(out.get("findings"), list):
        return result
    findings = []
    for f in out["findings"]:
        action = f.get("action")
        for new, old, only_old in REWORDED:
            assert not (now and action and only_old in action), action
            action = re.sub(new, old, action) if action else action
        findings.append({**f, "action": action})
    return {**result, "output": {**out, "findings": findings}}


CHANGED: dict[tuple[str, str], object] = {
    # issue 21: the epoch report lists the 100 hedged races with most waste, not every race (the
    # hedging command with --all-races lists them all, and is held to the old full list)
    ("epoch", "hedging.races"): as_listed_from_the_whole,
    # the 2026-12-05 review: hedging --participant lists the participant's races
    ("hedging", "races"): races_of_the_participant,
    ("hedging", "races_listed"): races_of_the_participant,
    # issue 32: the cPoC chart's validation starts at val_start (the events say when)
    ("poc-overload", "events"): validation_from_its_start,
    ("epoch", "poc_overload.events"): validation_from_its_start,
}


def new_analyses() -> set[str]:
    """The keys a new analysis may add at the top of the epoch report's JSON."""
    from auditor.analyses import registry

    return {a.key for a in registry.ANALYSES}


def accepted(command: str) -> dict[str, set[str]]:
    """The keys ``command``'s JSON may hold that its golden lacks, by path."""
    out: dict[str, set[str]] = {}
    for declared in (ADDED.get("*", {}), ADDED.get(command, {})):
        for path, keys in declared.items():
            out.setdefault(path, set()).update(keys)
    if command == "epoch":
        out.setdefault("", set()).update(new_analyses())
    return out


def without_changed(result: dict, command: str) -> dict:
    """``result`` without the CHANGED paths of ``command`` (a copy where one is left out)."""
    result = dict(result)
    for cmd, path in CHANGED:
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


def _declared(path: str, root: str) -> str:
    """A path of first_difference (``$.escrows[3].x``) as ADDED writes it (``escrows[].x``):
    from ``root``, the command's JSON."""
    return re.sub(r"\[\d+\]", "[]", path.removeprefix(root)).removeprefix(".")


def first_difference(expected, actual, path: str = "$", added: dict[str, set[str]] | None = None,
                     root: str = "$"):
    """The first place where two JSON values differ, as (path, expected, actual); None when
    they are equal. Exact: 1, 1.0 and True differ. A key only ``actual`` holds is no
    difference where ``added`` declares it at that path from ``root`` (``accepted``)."""
    added = added or {}
    if type(expected) is not type(actual):
        return path, expected, actual
    if isinstance(expected, dict):
        for key in expected:
            if key not in actual:
                return f"{path}.{key}", expected[key], _MISSING
            found = first_difference(expected[key], actual[key], f"{path}.{key}", added, root)
            if found:
                return found
        for key in actual:
            if key not in expected and key not in added.get(_declared(path, root), ()):
                return f"{path}.{key}", _MISSING, actual[key]
        return None
    if isinstance(expected, list):
        for i, (e, a) in enumerate(zip(expected, actual)):
            found = first_difference(e, a, f"{path}[{i}]", added, root)
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


def test_without_changed_leaves_out_only_the_path_of_its_command():
    res = {"output": {"hedging": {"races": [1], "hosts": [2]}, "races": [3]}}
    assert without_changed(res, "epoch") == {"output": {"hedging": {"hosts": [2]}, "races": [3]}}
    assert res["output"]["hedging"]["races"] == [1]                      # the golden itself is untouched
    assert without_changed(res, "misstest") == res


def test_a_declared_addition_is_accepted_and_any_other_fails(monkeypatch):
    """Added keys pass only where declared: at the top, nested, in every item of a list; an
    undeclared one fails at any depth, and so does a declared name at another path."""
    monkeypatch.setitem(ADDED, "remints", {"": ["holds"], "escrows[]": ["unaffordable_requests"],
                                           "costs.total": ["per_model"]})
    before = {"epoch": 1, "escrows": [{"id": "a"}, {"id": "b"}], "costs": {"total": {"units": 5}}}
    now = {"epoch": 1, "holds": 3, "escrows": [{"id": "a", "unaffordable_requests": 1},
                                              {"id": "b", "unaffordable_requests": 0}],
           "costs": {"total": {"units": 5, "per_model": {}}}}
    assert first_difference(before, now, added=accepted("remints")) is None
    assert first_difference(before, {**now, "extra": 1}, added=accepted("remints")) == ("$.extra", _MISSING, 1)
    nested = {**now, "costs": {"total": {"units": 5, "per_model": {}, "other": 2}}}
    assert first_difference(before, nested, added=accepted("remints")) == ("$.costs.total.other", _MISSING, 2)
    elsewhere = {**now, "escrows": [{"id": "a", "unaffordable_requests": 1, "holds": 1}, {"id": "b"}]}
    assert first_difference(before, elsewhere, added=accepted("remints"))[0] == "$.escrows[0].holds"
    assert first_difference({"epoch": 1}, {"epoch": 1, "holds": 3}, added=accepted("misstest")) == \
        ("$.holds", _MISSING, 3)                                          # another command's declaration
    changed = {**now, "escrows": [{"id": "z", "unaffordable_requests": 1}, now["escrows"][1]]}
    assert first_difference(before, changed, added=accepted("remints")) == ("$.escrows[0].id", "a", "z")


def test_a_new_analysis_key_is_accepted_at_the_top_of_the_epoch_report_only(monkeypatch):
    from auditor.analyses import registry
    from auditor.analyses.registry import Analysis

    monkeypatch.setattr(registry, "ANALYSES", [*registry.ANALYSES, Analysis("slot_balance", "S", "nowhere")])
    before = {"epoch": 1, "hedging": {"x": 1}}
    assert first_difference(before, {**before, "slot_balance": {}}, added=accepted("epoch")) is None
    assert first_difference(before, {**before, "other": {}}, added=accepted("epoch"))[0] == "$.other"
    inner = {"epoch": 1, "hedging": {"x": 1, "slot_balance": 2}}
    assert first_difference(before, inner, added=accepted("epoch"))[0] == "$.hedging.slot_balance"


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
    expected = in_old_words(without_changed(golden.load_golden(case), command))
    actual = in_old_words(without_added_columns(without_changed(whole, command), expected), now=True)
    for (cmd, _path), check in CHANGED.items():
        if cmd == command:
            check(golden.load_golden(case), whole)
    found = first_difference({**expected, "output": None}, {**actual, "output": None}) or \
        first_difference(expected["output"], actual["output"], "$.output", accepted(command), root="$.output")
    if found:
        where, want, got = found
        pytest.fail(f"{case.stem} ({golden.golden_path(case).name}) differs at {where}:\n"
                    f"  before: {_short(want)}\n  now:    {_short(got)}", pytrace=False)


def test_every_analysis_reads_only_the_sources_its_record_names(stores):
    """The registry's ``sources`` (what the epoch header's "no X: ... unknown" lines are made
    from) hold every source each result of the demo's epoch report says it relied on."""
    from auditor.analyses import epoch_report, registry
    from auditor.store import Store

    db, _ = stores("demo")
    with Store(db) as store:
        report = epoch_report.run(store, 403)
    for part in report.parts:
        a = registry.by_key(part.key)
        read = (part.coverage or {}).get("sources", [])
        assert read and all(a.reads(s) for s in read), f"{a.key} read {read}; its record names {a.sources}"


def test_every_golden_file_has_its_case():
    """A golden file without a case would compare nothing; a case without one fails above."""
    stems = {c.stem for c in golden.CASES}
    assert len(stems) == len(golden.CASES)
    files = {p.name.removesuffix(".gz").removesuffix(".json") for p in golden.HERE.glob("*.json*")}
    assert files == stems
