"""The chain's binomial miss test, reimplemented exactly (chain-api.md sections 10 and 11).

When the chain settles epoch N it picks one network-wide p0 (``getDynamicP0``, section
10.2) and runs ``MissedStatTest(missed, total, p0)`` for every participant; a failure sets
the participant's epoch reward to 0. This module recomputes both from the epoch's
performance summary and says, per participant, whether the test zeroed the reward, the
reward was zero for another reason, or it was paid.

Pure functions (no database), in ``misstest_math.py`` with the fidelity notes and importable
from here: :func:`load_tables`, :func:`critical_misses`, :func:`missed_stat_test`,
:func:`chain_binomial_p_value`, :func:`dynamic_p0`. The analysis: :func:`run` (reads
``queries/misstest_inputs.sql`` through :func:`facts`, the miss test of every participant
worked out once per run, which ``poc_overload`` reads too), also the ``miss_test`` section of
``auditor epoch N``. Findings: ``reward_zeroed_miss_test`` (error) for every participant the
test zeroed, ``miss_test_discrepancy`` (warn) for one that fails the recomputed test and was
paid all the same.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from ..result import Finding, Result, Table
from . import capability, cpoc
from .context import Run, run_for
from .frame import Options, epoch_state, not_stored
from .misstest_math import (  # noqa: F401  (the chain mathematics, importable from here)
    ALPHA, DEFAULT_BINOM_TEST_P0, GRACE_UPGRADES, MARGIN_PERMILLE, MIN_PARTICIPANTS, MIN_TOTAL_REQUESTS,
    PATH_DYNAMIC, PATH_EXACT, PATH_GOVERNANCE, PRECISION, RATE_RULE_ABOVE, SUPPORTED_PERMILLE, TABLE_COLUMNS,
    TABLES_FILE, UINT64_MAX, GraceUpgrade, MissTestError, P0Result, TestOutcome, ceil_to_supported,
    chain_binomial_p_value, critical_misses, dynamic_p0, grace_upgrades_in, load_tables, miss_test_detail,
    missed_stat_test, parse_tables, permille_ceil, table_permille)


# -- the analysis ---------------------------------------------------------------------------
VERDICT_ORDER = {"zeroed_by_miss_test": 0, "zero_for_other_reason": 1, "no_requests": 2, "passed": 3}
TABLE_COLUMNS_OUT = ["participant", "total", "missed", "miss_share", "p0", "critical_misses", "passed",
                     "rewarded_coins", "verdict", "reason"]


def _governance_p0(ctx: Mapping[str, Any], epoch: int, notes: list[str]) -> tuple[Decimal, str]:
    if ctx.get("has_settlement_params"):
        v = ctx.get("settlement_binom_test_p0")
        if v is not None:
            h = ctx.get("settlement_params_height")
            return Decimal(v), "settlement params" + (f" at height {h}" if h is not None else "")
        notes.append(f"binom_test_p0 is NULL in the settlement params of epoch {epoch}: "
                     f"using the code default {DEFAULT_BINOM_TEST_P0}")
        return DEFAULT_BINOM_TEST_P0, "code default (binom_test_p0 NULL at settlement)"
    if ctx.get("has_epoch_params") and ctx.get("epoch_binom_test_p0") is not None:
        v = Decimal(ctx["epoch_binom_test_p0"])
        notes.append(f"no settlement params collected for epoch {epoch}: using binom_test_p0 {v:f} "
                     "from the params in force during the epoch (pinned at S(N+1)); "
                     "a change at settlement would not be seen")
        return v, "epoch params (settlement params not collected)"
    notes.append(f"no settlement params collected for epoch {epoch}: using the code default "
                 f"binom_test_p0 {DEFAULT_BINOM_TEST_P0}")
    return DEFAULT_BINOM_TEST_P0, "code default (params not collected)"


def _grace(ctx: Mapping[str, Any], epoch: int, notes: list[str]) -> GraceUpgrade | None:
    """The grace epoch is the epoch effective at the upgrade height: [SNV(N), SNV(N+1))."""
    if not ctx.get("has_epoch_row"):
        notes.append(f"epoch {epoch} has no chain_epochs row: punishment grace epochs cannot be checked")
        return None
    start, end = ctx.get("effective_height"), ctx.get("next_effective_height")
    if start is None:
        start, end = ctx.get("poc_start_height"), ctx.get("next_poc_start_height")
        if start is None:
            notes.append(f"epoch {epoch}'s heights are unknown: punishment grace epochs cannot be checked")
            return None
        notes.append("effective heights unknown: grace epochs checked against [S(N), S(N+1)) instead of "
                     "[SNV(N), SNV(N+1))")
    return grace_applied(start, end, notes)


def grace_applied(start: int, end: int | None, notes: list[str]) -> GraceUpgrade | None:
    """The punishment grace epoch of a known upgrade in heights [start, end), if any, said in
    ``notes`` (an upgrade whose p0 override is not documented is said, and not applied)."""
    applied = None
    for g in grace_upgrades_in(start, end):
        if g.binom_test_p0 is None:
            notes.append(f"the {g.name} upgrade at height {g.height:,} falls in this epoch and may have "
                         "installed a punishment grace epoch; its p0 override is not documented, none applied")
            continue
        applied = g
        notes.append(f"punishment grace epoch: the {g.name} upgrade at height {g.height:,} falls in this "
                     f"epoch, so the chain replaced binom_test_p0 with {g.binom_test_p0} (chain-api.md 10.5)")
    return applied


def _fmt_p0(p0: Decimal) -> str:
    """0.100 stays 0.100 (a table p0); 0.100000000000000000 from DECIMAL(38,18) shows as 0.1."""
    text = format(p0, "f")
    return text if len(text) <= 5 else format(p0.normalize(), "f")


def _exclusion_texts(exclusions: Any) -> list[str]:
    out = []
    for x in exclusions or []:
        reason = x.get("reason") or "no reason given"
        h = x.get("height")
        out.append(f"excluded: {reason}" + (f" at height {h}" if h is not None else ""))
    return out


def _assess(r: Mapping[str, Any], p0r: P0Result, excluded_known: bool, root_known: bool) -> dict[str, Any]:
    """One participant's row of the performance summary: the test, its verdict and why."""
    inference_count = int(r["inference_count"])
    missed = int(r["missed_requests"])
    total = inference_count + missed
    rewarded = int(r["rewarded_coins"])
    passed, crit, p_value, test_error, test_text = verdict_of(missed, total, p0r)
    causes = _zero_causes(r, root_known)
    verdict, reason, discrepancy = _verdict(total, passed, rewarded, test_text, causes, excluded_known, root_known)
    root_weight = r.get("root_weight")
    return {
        "participant": r["participant"],
        "total": total,
        "missed": missed,
        "inference_count": inference_count,
        "miss_share": Decimal(missed) / Decimal(total) if total else None,
        "p0": p0r.p0,
        "critical_misses": crit,
        "p_value": p_value,
        "passed": passed,
        "rewarded_coins": rewarded,
        "verdict": verdict,
        "reason": reason,
        "discrepancy": discrepancy,
        "test_error": test_error,
        "exclusions": [{"reason": x.get("reason"), "height": x.get("height")} for x in (r.get("exclusions") or [])],
        "root_weight": None if root_weight is None else int(root_weight),
    }


def verdict_of(missed: int, total: int, p0r: P0Result) -> tuple[bool, int | None, Decimal | None, str | None, str]:
    """The chain's test of ``missed`` of ``total`` at the network p0: passed, the critical
    misses (table path), the p-value (exact path), the chain's error if any, and the sentence."""
    p0 = p0r.p0
    if total == 0:
        return True, None, None, None, "no requests: the miss test never punishes it"
    if p0r.skip:
        return True, None, None, None, "outage breaker: the test was skipped for everyone this epoch"
    try:
        outcome = miss_test_detail(missed, total, p0)
    except MissTestError as exc:
        return True, None, None, str(exc), f"the chain's test errors ({exc}) and keeps the reward"
    passed, crit, p_value = outcome.passed, outcome.critical, outcome.p_value
    if not outcome.table:
        assert p_value is not None
        cmp_ = ">=" if passed else "<"
        shown = format(p_value.normalize(), "f")
        if p_value == 0:
            shown += " (p0^k or (1-p0)^(n-k) rounds to 0 at 16 places)"
        return passed, crit, p_value, None, f"exact binomial p-value {shown} {cmp_} 0.05 at p0 {_fmt_p0(p0)}"
    if crit is None:
        return passed, crit, p_value, None, f"{total} request(s): below the smallest table row, passes"
    rule = "rate rule above 990" if total > RATE_RULE_ABOVE else "table"
    word = "within" if passed else "more than"
    text = f"missed {missed} of {total}: {word} the {crit} allowed at p0 {_fmt_p0(p0)} ({rule})"
    return passed, crit, p_value, None, text


def _zero_causes(r: Mapping[str, Any], root_known: bool) -> list[str]:
    """What else in the collected data zeroes the reward: exclusions, no root validation weight,
    a confirmation weight of 0."""
    causes = _exclusion_texts(r.get("exclusions"))
    root_weight = r.get("root_weight")
    has_root = bool(r.get("has_root_weight_row"))
    if root_known and (not has_root or root_weight is None or int(root_weight) <= 0):
        causes.append("no root validation weight")
    elif has_root and root_weight is not None and int(root_weight) > 0 \
            and r.get("root_confirmation_weight") is not None and int(r["root_confirmation_weight"]) == 0:
        causes.append("root confirmation_weight is 0 (confirmation PoC)")
    return causes


def _verdict(total: int, passed: bool, rewarded: int, test_text: str, causes: list[str], excluded_known: bool,
             root_known: bool) -> tuple[str, str, str | None]:
    """The verdict, its reason, and the discrepancy when the test fails and the chain paid."""
    if total == 0:
        reason = test_text
        if rewarded == 0:
            reason += "; rewarded 0: " + ("; ".join(causes) if causes else "cause not visible in collected data")
        return "no_requests", reason, None
    if not passed:
        discrepancy = None
        if rewarded > 0:
            discrepancy = (f"the recomputed test fails but the chain paid {rewarded} rewarded_coins: "
                           "the chain's p0 or inputs differ from these")
        return "zeroed_by_miss_test", test_text + ("; also " + "; ".join(causes) if causes else ""), discrepancy
    if rewarded != 0:
        return "passed", test_text, None
    if causes:
        return "zero_for_other_reason", "; ".join(causes), None
    unknown = [what for what, known in (("exclusions not collected", excluded_known),
                                        ("root weights not collected", root_known)) if not known]
    reason = "passed the miss test but rewarded 0: cause not visible in collected data"
    if unknown:
        reason += f" ({', '.join(unknown)})"
    return "zero_for_other_reason", reason, None


def _float(v: Decimal | None) -> float | None:
    return None if v is None else float(v)


def _p0_explanation(p0r: P0Result, gov_source: str) -> str:
    p0 = _fmt_p0(p0r.p0)
    gov = "unset" if p0r.governance_p0 is None else _fmt_p0(p0r.governance_p0)
    if p0r.path == PATH_EXACT:
        how = ("yet IntPart(p0 x 1000) = 500 selects the 500‰ table" if p0r.permille is not None
               else "exact binomial test")
        return f"{p0} (governance {gov} from {gov_source} is above 0.5: used as is; {how})"
    gov_part = f"governance {gov} from {gov_source} -> {p0r.governance_permille}‰"
    if p0r.path == PATH_GOVERNANCE:
        return (f"{p0} ({gov_part}; the network sample is too small for the dynamic p0: "
                f"T={p0r.T} < {MIN_TOTAL_REQUESTS} or n_used={p0r.n_used} < {MIN_PARTICIPANTS})")
    return (f"{p0} (dynamic: network baseline {p0r.baseline_permille}‰ + {MARGIN_PERMILLE}‰ margin = "
            f"{p0r.target_permille}‰ -> table {p0r.selected_permille}‰; {gov_part}; the larger is used)")


KEY, TITLE = "miss_test", "Miss test"


def _no_summary_reason(store: Any, epoch: int) -> str:
    """Why there is no performance summary: not collected, not settled yet, or lost."""
    known = epoch_state(store, epoch)
    if known and not known[0]:
        return (f"epoch {epoch} is not settled yet: the chain writes its performance summary at "
                f"settlement (V(N+1)); collect it again after that: auditor collect --epoch {epoch} --node URL")
    if known:
        return (f"epoch {epoch} is in the store without its performance summary; collect it again: "
                f"auditor collect --epoch {epoch} --refresh --node URL")
    return not_stored(epoch)


def _findings(assessed: list[dict[str, Any]], epoch: int) -> list[Finding]:
    """The findings of the participants the test failed (their capability refusals are added
    by each analysis that reports them: ``capability.with_refusals``)."""
    out = []
    for a in assessed:
        if a["verdict"] != "zeroed_by_miss_test":
            continue
        evidence = {"total": a["total"], "missed": a["missed"], "miss_share": _float(a["miss_share"]),
                    "critical_misses": a["critical_misses"], "p0": float(a["p0"]), "p_value": _float(a["p_value"]),
                    "rewarded_coins": a["rewarded_coins"]}
        evidence["query"] = "queries/misstest_inputs.sql"
        evidence["row"] = {"epoch": epoch, "participant": a["participant"]}
        subject = {"kind": "participant", "id": a["participant"]}
        if a["discrepancy"]:
            out.append(Finding("miss_test_discrepancy", "warn", subject,
                               f"fails the recomputed miss test yet the chain paid {a['rewarded_coins']} "
                               "rewarded_coins: the chain's p0 or inputs differ", evidence))
        else:
            out.append(Finding("reward_zeroed_miss_test", "error", subject,
                               f"epoch reward zeroed by the miss test: {a['reason']}", evidence))
    return out


@dataclass(frozen=True)
class MissTestFacts:
    """The miss test of every participant of one epoch, worked out once per run (the network
    p0 needs them all; ``poc_overload`` reads the verdicts, p0 and findings too)."""

    unavailable: str | None                  # why there is no performance summary; None: the rest is known
    p0r: P0Result | None = None
    gov_source: str = ""
    settled: bool | None = None
    notes: tuple[str, ...] = ()              # before any participant filter
    unknown: tuple[str, ...] = ()            # inputs the verdicts use that the store does not hold
    assessed: tuple[dict[str, Any], ...] = ()   # every participant, in report order
    findings: tuple[Finding, ...] = ()       # every participant's

    @property
    def p0(self) -> Decimal | None:
        """The network p0 as the JSON states it (``data["p0"]``)."""
        return None if self.p0r is None else Decimal(str(float(self.p0r.p0)))

    def by_participant(self) -> dict[str, dict[str, Any]]:
        return {a["participant"]: a for a in self.assessed}


def facts(run: Run) -> MissTestFacts:
    """The miss test of ``run``'s epoch (queries/misstest_inputs.sql), computed once per run."""
    return run.shared("miss_test", lambda: _facts(run.store, run.epoch))


def _facts(store: Any, epoch: int) -> MissTestFacts:
    rows = store.query("misstest_inputs", epoch=epoch)
    if not rows:
        return MissTestFacts(_no_summary_reason(store, epoch))
    ctx = rows[0]
    notes: list[str] = []
    settled = _settled(ctx, epoch, notes)
    gov, gov_source = _governance_p0(ctx, epoch, notes)
    grace = _grace(ctx, epoch, notes)
    if grace is not None:
        assert grace.binom_test_p0 is not None
        gov, gov_source = grace.binom_test_p0, f"punishment grace epoch of {grace.name}"
    p0r = dynamic_p0(gov, [(r["inference_count"], r["missed_requests"]) for r in rows])
    if p0r.skip:
        notes.append(f"outage breaker: the network baseline {p0r.baseline_permille}‰ selects the 500‰ table, "
                     "so the chain punished nobody this epoch")
    if p0r.path == PATH_EXACT and p0r.permille is None:
        notes.append("governance p0 above 0.5: the chain runs the exact binomial test with 16-place "
                      "rounding, where p0^k or (1-p0)^(n-k) can round to 0 and fail a participant")
    excluded_known = bool(ctx.get("excluded_rows")) or ctx.get("excluded_status") == "ok"
    root_known = bool(ctx.get("root_weight_rows")) or ctx.get("root_status") == "ok"
    unknown = []
    if not excluded_known:
        unknown.append("the exclusion list of this epoch was not collected: exclusions are unknown")
    if not root_known:
        unknown.append("root validation weights of this epoch were not collected: missing weights are unknown")
    notes.extend(unknown)
    assessed = sorted((_assess(r, p0r, excluded_known, root_known) for r in rows),
                      key=lambda a: (VERDICT_ORDER[a["verdict"]], a["participant"]))
    return MissTestFacts(None, p0r, gov_source, settled, tuple(notes), tuple(unknown), tuple(assessed),
                         tuple(_findings(assessed, epoch)))


def _settled(ctx: Mapping[str, Any], epoch: int, notes: list[str]) -> bool | None:
    """Whether the epoch is settled (None: no chain_epochs row)."""
    if not ctx.get("has_epoch_row"):
        return None
    if not ctx.get("settled"):
        notes.append(f"epoch {epoch} is not settled (chain_epochs.settled is false): "
                     "rewarded_coins may not be final")
    return bool(ctx.get("settled"))


def run(store: Any, epoch: int, options: Options | None = None, *, ctx: Run | None = None) -> Result:
    """Recompute epoch ``epoch``'s miss test from the store and classify every participant. In a
    run that includes ``poc_overload`` (an epoch report) each ``reward_zeroed_miss_test`` also
    says how many of the participant's misses fell in CPoC windows (:func:`cpoc.miss_evidence`)."""
    run_ = run_for(store, epoch, ctx)
    mt = facts(run_)
    if mt.unavailable is not None:
        return Result.missing_input(KEY, TITLE, mt.unavailable, ["chain"])
    assert mt.p0r is not None
    participant = (options or Options()).participant
    notes = list(mt.notes)
    assessed = _of_participant(mt, participant, epoch, notes)
    _outcome_notes(assessed, notes)
    findings = capability.with_refusals(run_, [f for f in mt.findings if participant is None
                                               or f.subject["id"] == participant])
    evidence = cpoc.miss_evidence(run_) if run_.includes(cpoc.ANALYSIS) else None
    if evidence is not None:
        findings = cpoc.with_cpoc_evidence(findings, *evidence)
    by_gateway = cpoc.gateway_misses(run_)              # several gateways' accounting: each one's misses
    findings = cpoc.with_gateway_misses(findings, by_gateway)
    if by_gateway:
        assessed = [{**a, "misses_by_gateway": by_gateway.get(a["participant"], {})} for a in assessed]
        notes.append(cpoc.GATEWAY_MISSES_BASIS)
    counts: dict[str, int] = {}
    for a in assessed:
        counts[a["verdict"]] = counts.get(a["verdict"], 0) + 1
    data = _data(mt, epoch, assessed, counts, notes)
    coverage = {"sources": ["chain"], "missing": [], "unknown": list(mt.unknown)}
    return Result(KEY, TITLE, data, [_table(assessed, notes)], findings, coverage,
                  header=_header(mt, epoch, assessed, counts, participant), legend=["T / M / n_used"])


def _of_participant(mt: MissTestFacts, participant: str | None, epoch: int, notes: list[str]) -> list[dict]:
    """The participants the result shows: all, or the one asked for (the p0 is still the network's)."""
    if participant is None:
        return list(mt.assessed)
    assessed = [a for a in mt.assessed if a["participant"] == participant]
    if not assessed:
        notes.append(f"participant {participant} has no performance summary in epoch {epoch} "
                     f"(not active in that epoch, or a typo); the network p0 is still computed from all "
                     f"{len(mt.assessed)} participants")
    return assessed


def _outcome_notes(assessed: list[dict], notes: list[str]) -> None:
    discrepancies = [a for a in assessed if a["discrepancy"]]
    if discrepancies:
        notes.append(f"{len(discrepancies)} participant(s) fail the recomputed test but were paid: the chain "
                     "used another p0 or other inputs (e.g. a grace epoch this tool cannot detect: the "
                     "v0.2.10 upgrade height is not documented)")
    errors = [a for a in assessed if a["test_error"]]
    if errors:
        notes.append(f"{len(errors)} participant(s): the chain's test returns an error, so it keeps the reward")


def _data(mt: MissTestFacts, epoch: int, assessed: list[dict], counts: dict[str, int], notes: list[str]) -> dict:
    p0r = mt.p0r
    assert p0r is not None
    participants_json = [{**{k: v for k, v in a.items() if k not in ("miss_share", "p0", "p_value")},
                          "miss_share": _float(a["miss_share"]), "p0": float(a["p0"]), "p_value": _float(a["p_value"])}
                         for a in assessed]
    p0_detail = p0r.to_dict()
    p0_detail["governance_source"] = mt.gov_source
    return {
        "epoch": epoch,
        "available": True,
        "p0": float(p0r.p0),
        "network_miss_share": (p0r.M / p0r.T) if p0r.T else None,
        "skip": p0r.skip,
        "settled": mt.settled,
        "p0_detail": p0_detail,
        "verdicts": counts,
        "notes": notes,
        "participants": participants_json,
    }


def _table(assessed: list[dict], notes: list[str]) -> Table:
    table_rows = [{**{c: a[c] for c in TABLE_COLUMNS_OUT}, "miss_share": _float(a["miss_share"])}
                  for a in assessed]
    for tr, a in zip(table_rows, assessed):
        if a["discrepancy"]:
            tr["reason"] = f"{a['reason']}; DISCREPANCY: {a['discrepancy']}"
    columns = list(TABLE_COLUMNS_OUT)
    if any("misses_by_gateway" in a for a in assessed):     # several gateways' accounting stored
        columns.append("misses_by_gateway")
        for tr, a in zip(table_rows, assessed):
            tr["misses_by_gateway"] = "; ".join(f"{g}: {'unknown' if n is None else n}"
                                                for g, n in a["misses_by_gateway"].items())
    return Table(title=TITLE, columns=columns, rows=table_rows, notes=list(notes),
                 priority=["participant", "verdict", "missed", "critical_misses", "total", "reason"], legend=["(table)"],
                 failing=lambda r: r["passed"] is False)


def _header(mt: MissTestFacts, epoch: int, assessed: list[dict], counts: dict[str, int],
            participant: str | None = None) -> list[tuple[str, str]]:
    """The epoch's network figures, and the verdicts of the participants shown (with
    --participant, its own: the header says so, beside the network's counts)."""
    p0r, settled = mt.p0r, mt.settled
    assert p0r is not None
    network_share = (p0r.M / p0r.T) if p0r.T else None
    header = [
        ("epoch", str(epoch)),
        ("settled", "unknown" if settled is None else "yes" if settled else "no"),
        ("p0 used", _p0_explanation(p0r, mt.gov_source)),
        ("network miss share",
         "unknown (no requests)" if network_share is None else f"{p0r.M} / {p0r.T} = {network_share:.4%}"),
        ("T / M / n_used", f"{p0r.T} / {p0r.M} / {p0r.n_used}"),
        ("skip (outage breaker)", "yes: nobody punished" if p0r.skip else "no"),
        ("verdicts" if participant is None else f"verdict of {participant} (--participant)",
         ", ".join(f"{counts[v]} {v}" for v in VERDICT_ORDER if v in counts) or "none"),
    ]
    discrepancies = sum(1 for a in assessed if a["discrepancy"])
    if discrepancies:
        header.append(("discrepancies", str(discrepancies)))
    return header


# -- what the registry reads of a result (analyses/registry.py): its facts, charts and metrics -----
@dataclass(frozen=True)
class Tested:
    """One participant's miss test, as the chart and the textfile read it."""

    participant: str
    total: int
    missed: int
    critical_misses: int | None     # None: the rate rule or the exact test applied, no table bound
    passed: bool                    # the recomputed test passed (an excluded host's too)
    verdict: str                    # VERDICT_ORDER: what the participant was paid, and why
    rewarded: int                   # rewarded_coins the chain paid


@dataclass(frozen=True)
class MissTestResult:
    """The typed facts of a miss-test result: built from what ``run`` wrote (a renamed key
    is a KeyError here, next to the code that wrote it, not an empty chart elsewhere)."""

    participants: tuple[Tested, ...]

    @classmethod
    def of(cls, result: Result) -> "MissTestResult":
        return cls(tuple(Tested(p["participant"], p["total"], p["missed"], p["critical_misses"], p["passed"],
                                p["verdict"], p["rewarded_coins"]) for p in result.data["participants"]))


def charts(result: Result) -> list:
    """Each participant's misses as a share of the most the test allowed it (table path),
    one labelled row each, highest first: above 1 it failed (red)."""
    from ..result import FAIL_COLOUR, PASS_COLOUR, Chart
    from .frame import chart_label as _label

    tested = sorted((p for p in MissTestResult.of(result).participants if p.total and p.critical_misses),
                    key=lambda p: -p.missed / p.critical_misses)
    if not tested:
        return []
    failed = [p for p in tested if p.missed > p.critical_misses]
    passed = [p for p in tested if p.missed <= p.critical_misses]
    return [Chart("Misses / most allowed, per participant (above 1: the test failed)", "hbar",
                  "participant (last 8 characters)", "missed / most allowed",
                  [{"name": "failed", "colour": FAIL_COLOUR,
                    "points": [[_label(p.participant), p.missed / p.critical_misses] for p in failed]},
                   {"name": "within the allowance", "colour": PASS_COLOUR,
                    "points": [[_label(p.participant), p.missed / p.critical_misses] for p in passed]}],
                  marks=[{"name": "allowed", "y": 1}])]


def metrics(result: Result) -> Iterable[tuple[str, tuple[str, ...], float]]:
    """Per participant: passed (1 when the test passed and the chain paid: an excluded host
    paid 0 is not a pass), its verdict as one 0/1 series per verdict, requests, misses, the bound."""
    for p in MissTestResult.of(result).participants:
        yield "auditor_miss_test_passed", (p.participant,), 1 if p.passed and p.rewarded > 0 else 0
        for verdict in VERDICT_ORDER:
            yield "auditor_miss_test_verdict", (p.participant, verdict), 1 if p.verdict == verdict else 0
        yield "auditor_miss_test_requests", (p.participant,), p.total
        yield "auditor_miss_test_missed_requests", (p.participant,), p.missed
        if p.critical_misses is not None:
            yield "auditor_miss_test_critical_misses", (p.participant,), p.critical_misses
