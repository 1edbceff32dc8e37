"""Preserved-weight targets per model from measured PoC-time demand (issue 8, incident 2107):
``auditor targets N`` and ``auditor targets --epochs A..B``.

Today the chain preserves, per model, ``trunc(poc_slot_allocation x W_m)``, filled with
each eligible participant's smallest node in address order (chain-api.md 7.2). The
proposal preserves ``max(poc_slot_allocation x W_m, D_m)``, filled with nodes that can
carry load, where D_m is the weight needed to serve model m's in-flight demand during a
PoC window at the gateway's per-10,000-weight ratio. Per model this reports W_m, the
fraction and the chain's target, the weight each episode actually preserved, the peak
in-flight demand seen in the CPoC windows (statistic and headroom printed), D_m, the
suggested target and the gap, a largest-first fill plan, and the chain's smallest-first
selection simulated on the epoch's real node weights. For governance: the single global
``poc_slot_allocation`` that would cover every model's demand, and a table of candidates.

Pure functions: :func:`parse_epoch_range`, :func:`smallest_first`, :func:`largest_first`,
:func:`demand_weight`, :func:`demand_statistic`, :func:`covering_fraction`. The analysis:
:func:`run` (one epoch) and :func:`run_range`. Finding: ``preserved_capacity_short``
(warn where a preserved host of the model took misses in that CPoC window, else info).

Demand comes from the gateway logs (per-second in flight needs attempt start and end
times; the accounting API has counters without times), summed over every log file in the
store, and over the demand bundles of other gateways given with ``--bundle``
(:mod:`auditor.demand_bundle`: in-flight steps per model and window, summed before the
statistic; a gateway's window counted once). One gateway's demand is a lower bound on the
network's. Without a log, the accounting API's misses of the model's preserved hosts in
dispatch phase ``confirmation_poc`` (``cpoc.model_accounting_misses``) are shown beside, and
said to be no demand; and its confirmation_poc requests over the windows' seconds, times a
latency, give Little's law's mean in flight (``network_estimate``): an estimate of the mean,
labelled so, never mixed with the measured peaks.

Governance (issue 36): the covering fraction is never above 1 (a model whose D_m exceeds
its whole W_m is named: only a per-model target covers it); the model that drives it is
named, with what the others need; ``proposal`` gives per model W_m, today's target, D_m and
its basis, the suggested per-model target and the one fraction for the rest.
"""

from __future__ import annotations

import math
import re
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from ..errors import SourceError, UsageError
from ..heights import covers_cpoc_window
from ..result import Finding, Result, Table, utc_text
from .. import demand_bundle
from . import cpoc
from .context import Run, run_for
from .frame import Arg, Call, Options, not_stored, option, require_epoch, stored_epochs

if TYPE_CHECKING:      # annotations only: importing the analysis (its --help) needs no DuckDB
    from ..store import Store

KEY, TITLE = "preserved_targets", "Preserved-weight targets from PoC demand"
DEFAULT_FRACTION = Decimal("0.5")          # the chain's fallback when poc_slot_allocation is unset
CANDIDATES = (Decimal("0.05"), Decimal("0.1"), Decimal("0.15"), Decimal("0.2"), Decimal("0.25"),
              Decimal("0.3"), Decimal("0.4"), Decimal("0.5"))
DEFAULT_LATENCY = 10.0                     # seconds assumed when no log or bundle gives a latency (said)
ESTIMATE_LABEL = ("estimate of the MEAN number in flight over the cPoC windows (Little's law: the accounting "
                  "API's confirmation_poc requests per second of the windows x a latency), not a peak nor a "
                  "percentile: kept apart from the measured peaks, never summed with them")
LOWER_BOUND_NOTE = ("demand is what the gateway logs in the store saw: one gateway's demand is a lower bound "
                    "on the network's; every log file given is summed")
LOWER_BOUND_BUNDLES = ("demand is what the gateway logs in the store and the bundles given saw: the gateways' demand "
                       "is a lower bound on the network's; every log file and bundle is summed")


@dataclass(frozen=True)
class TargetsOptions(Options):
    """Options of ``auditor targets`` (defaults: what ``auditor epoch N`` uses)."""

    epochs: str | None = option(None, "--epochs", "Pool the demand of epochs A to B (inclusive) and show how "
                                "stable it is.", metavar="A..B")     # the command's other form (run_range)
    statistic: str = option("max", "--statistic", "Demand statistic over per-second in flight in PoC windows: "
                            "max, or a percentile such as p99.", metavar="max|pNN")
    headroom: float = option(1.25, "--headroom", "Factor on the demand: demand x headroom is what the preserved "
                             "set must carry.", metavar="X", min=1.0)
    per_10000: float | None = cpoc.per_10000_option()     # PoCMaxConcurrentPer10000Weight; None = the gateway default
    bundles: tuple[str, ...] = option((), "--bundle", "A demand bundle (auditor export demand) of another gateway: "
                                      "its per-second demand is summed with the store's logs per model and window. "
                                      "Repeatable; an http(s) URL is fetched.", metavar="PATH_OR_URL", repeat=True)
    assume_latency: float | None = option(None, "--assume-latency", "Latency for the accounting-only estimate of "
                                          "the mean in flight (Little's law) when no log or bundle gives one. "
                                          "[default: 10]", metavar="SECONDS", min=0.001)

    EPOCH = Arg(help="Epoch index (or --epochs A..B).", optional=True)
    WITHOUT = ("participant",)

    @classmethod
    def call(cls, epoch: int | None, **values: Any) -> Call:
        """An epoch N, or ``--epochs A..B`` (demand pooled over the range, run_range), never both."""
        options = cls(**values)
        parse_statistic(options.statistic)
        if (epoch is None) == (options.epochs is None):
            raise UsageError("give either an epoch N or --epochs A..B")
        if epoch is not None:
            return Call(epoch, options)
        first, last = parse_epoch_range(options.epochs)
        return Call(last, options, collect=tuple(range(first, last + 1)),
                    run=lambda store, _epoch, opts: run_range(store, first, last, opts))


# -- pure rules ---------------------------------------------------------------------------------
def parse_epoch_range(text: str) -> tuple[int, int]:
    """``"A..B"`` -> ``(A, B)`` with 0 <= A <= B, and one epoch ``"N"`` -> ``(N, N)``; a
    :class:`UsageError` otherwise."""
    m = re.fullmatch(r"\s*(\d+)\s*(?:\.\.\s*(\d+)\s*)?", text or "")
    if not m:
        raise UsageError(f"--epochs {text!r}: expected A..B, e.g. 420..433, or one epoch N")
    a = int(m.group(1))
    b = int(m.group(2)) if m.group(2) is not None else a
    if a > b:
        raise UsageError(f"--epochs {text}: the first epoch ({a}) is after the last ({b})")
    if b - a > 200:
        raise UsageError(f"--epochs {text}: at most 201 epochs at once")
    return a, b


def parse_statistic(stat: str) -> float | None:
    """``max`` -> None; ``pNN`` (0 < NN <= 100, decimals allowed) -> NN/100; else UsageError."""
    if stat == "max":
        return None
    m = re.fullmatch(r"p(\d{1,2}(?:\.\d+)?|100)", stat or "")
    if not m or not 0 < float(m.group(1)) <= 100:
        raise UsageError(f"--statistic {stat!r}: expected max or pNN (a percentile, e.g. p99)")
    return float(m.group(1)) / 100


def demand_statistic(per_second: Sequence[int], stat: str) -> int | None:
    """The demand statistic over per-second in-flight maxima: the max, or a percentile
    (nearest rank). None for no seconds."""
    if not per_second:
        return None
    q = parse_statistic(stat)
    if q is None:
        return max(per_second)
    s = sorted(per_second)
    return s[min(len(s) - 1, max(0, math.ceil(q * len(s)) - 1))]


def demand_weight(peak: int | None, headroom: float, per_10000: float) -> int | None:
    """The weight whose cap ``floor(w x per_10000 / 10000)`` carries ``ceil(peak x headroom)``
    requests in flight: ``ceil(ceil(peak x headroom) x 10000 / per_10000)``. None when unknown."""
    if peak is None:
        return None
    need = math.ceil(Decimal(peak) * Decimal(str(headroom)))
    return math.ceil(Decimal(need) * Decimal(10000) / Decimal(str(per_10000)))


def smallest_first(nodes_by_participant: Mapping[str, Sequence[tuple[str, int]]], eligible: Iterable[str],
                   target: int) -> list[tuple[str, str, int]]:
    """The chain's ``samplePreservedForModel`` round robin (chain-api.md 7.2 step 6): rounds
    over the eligible participants in address order, each giving its smallest unallocated
    node (ties by node id), until the allocated weight reaches ``target`` or the pool runs
    out. Returns ``(participant, node_id, weight)`` in allocation order."""
    queues = {p: sorted(nodes_by_participant.get(p, ()), key=lambda n: (n[1], n[0])) for p in set(eligible)}
    chosen: list[tuple[str, str, int]] = []
    current = 0
    if target <= 0:
        return chosen
    while True:
        progressed = False
        for p in sorted(queues):
            if not queues[p]:
                continue
            node, w = queues[p].pop(0)
            chosen.append((p, node, w))
            current += w
            progressed = True
            if current >= target:
                return chosen
        if not progressed:
            return chosen


def largest_first(nodes: Iterable[tuple[str, str, int]], target: int) -> list[tuple[str, str, int]]:
    """The proposed fill: the heaviest nodes first (ties by participant, node id) until the
    weight reaches ``target``."""
    chosen: list[tuple[str, str, int]] = []
    current = 0
    for p, node, w in sorted(nodes, key=lambda n: (-n[2], n[0], n[1])):
        if current >= target:
            break
        chosen.append((p, node, w))
        current += w
    return chosen


def covering_fraction(demands: Mapping[str, int], w_m: Mapping[str, int]) -> Decimal | None:
    """The smallest fraction f (in steps of 0.001) with ``trunc(f x W_m) >= D_m`` for every
    model with a known demand; None when no model has one."""
    need = [Decimal(d) / Decimal(w_m[m]) for m, d in demands.items() if d is not None and w_m.get(m)]
    if not need:
        return None
    f = (max(need) * 1000).to_integral_value(rounding="ROUND_CEILING") / 1000
    while any(int(f * w_m[m]) < d for m, d in demands.items() if d is not None and w_m.get(m)):
        f += Decimal("0.001")
    return f


def _plan(chosen: Sequence[tuple[str, str, int]], per_10000: float, target: int) -> dict:
    weight = sum(w for _, _, w in chosen)
    smallest = min((w for _, _, w in chosen), default=None)
    return {"nodes": len(chosen), "participants": len({p for p, _, _ in chosen}), "weight": weight,
            "meets_target": weight >= target,
            "smallest_node_weight": smallest,
            "smallest_node_cap": cpoc.host_cap(smallest, per_10000),
            "selection": [{"participant": p, "node_id": n, "weight": w} for p, n, w in chosen]}


# -- the analysis -------------------------------------------------------------------------------
def _opts(options: Options | None) -> TargetsOptions:
    return TargetsOptions.of(options)


def _epoch_demand(run_: Run, by_window: Mapping[tuple[int, str], list]) -> dict:
    """Per model: per-second in-flight maxima over the epoch's CPoC windows the logs cover, the
    store's own logs and the bundles' summed (``by_window``: demand_bundle.merge)."""
    out: dict[str, Any] = {"windows": [], "per_second": defaultdict(list), "peaks": defaultdict(dict),
                           "served": set(), "latency": defaultdict(lambda: [0, 0.0])}
    for w in cpoc.epoch_windows(run_):
        if not w["window"].startswith("cpoc:"):
            continue
        start, end = w["start_time"], w["end_time"]
        if start is None or end is None:
            out["windows"].append({"window": w["window"], "evidence": "none", "detail": "block times not collected"})
            continue
        parts = by_window.get((run_.epoch, w["window"]), [])
        if not parts:
            out["windows"].append({"window": w["window"], "start": start, "end": end,
                                   "evidence": "none", "detail": "no gateway log line in this window"})
            continue
        lo, hi = min(p[1]["covered"][0] for p in parts), max(p[1]["covered"][1] for p in parts)
        # whole only where every gateway's logs span the window: elsewhere one gateway's demand is
        # unknown, not zero, and the sum read over the span any covers is partial
        full = all(covers_cpoc_window(*pw["covered"], start, end) for _, pw in parts)
        models = sorted({m for _, pw in parts for m in pw["models"]})
        for m in models:
            mine = [pw["models"][m] for _, pw in parts if m in pw["models"]]
            prof = cpoc.steps_profile(sum(d["initial"] for d in mine), [st for d in mine for st in d["steps"]],
                                      start, end, lo, hi)
            out["per_second"][m].extend(prof["per_second"])
            out["peaks"][m][w["window"]] = prof["peak"]
            out["latency"][m][0] += sum(d["attempts"] for d in mine)
            out["latency"][m][1] += sum(d["attempt_seconds"] for d in mine)
        out["served"] |= set(models)
        if full:
            detail = "the logs span the whole window"
        elif len(parts) == 1:
            detail = f"the logs cover {utc_text(lo)} to {utc_text(hi)} only"
        else:
            detail = "not every gateway's logs span the window: " + ", ".join(
                f"{c.gateway} {utc_text(pw['covered'][0])} to {utc_text(pw['covered'][1])}" for c, pw in parts)
        if (len(parts) > 1 and full) or (len(parts) == 1 and parts[0][0].created_at is not None):
            detail += f" ({len(parts)} gateway(s): {', '.join(c.gateway for c, _ in parts)})"
        out["windows"].append({"window": w["window"], "start": start, "end": end,
                               "evidence": "full" if full else "partial", "detail": detail})
    return out


def _model_rows(store: Store, epoch: int) -> tuple[list[dict], dict[str, list[dict]], dict[str, list[dict]]]:
    models = store.query("targets_models", epoch=epoch)
    nodes: dict[str, list[dict]] = defaultdict(list)
    for n in store.query("targets_nodes", epoch=epoch):
        nodes[n["model_id"]].append(n)
    episodes: dict[str, list[dict]] = defaultdict(list)
    for e in store.query("targets_episodes", epoch=epoch):
        episodes[e["model_id"]].append(e)
    return models, nodes, episodes


def _selection_comparison(model_nodes: list[dict], episodes: list[dict], target: int, per_10000: float) -> dict:
    by_p: dict[str, list[tuple[str, int]]] = defaultdict(list)
    for n in model_nodes:
        if n["poc_weight"] is not None:
            by_p[n["participant"]].append((n["node_id"], int(n["poc_weight"])))
    out = {"rule": "smallest-first round robin over eligible participants in address order (chain-api.md 7.2)",
           "eligibility": ("not simulated (75% rule, outlier cap, guardians, previous-epoch reward, the seeded "
                           "half+1 sample need inputs the store lacks): eligible = the participants the episode's "
                           "snapshot preserved, or every participant when there is no snapshot"),
           "episodes": []}
    for e in episodes or [None]:
        if e is None:
            eligible = sorted(by_p)
            recorded = None
            name = None
        else:
            eligible = sorted({nw["participant"] for nw in e["node_weights"]})
            recorded = e
            name = e["episode"]
        sim = smallest_first(by_p, eligible, target)
        entry = {"episode": name, "eligible_participants": len(eligible), **_plan(sim, per_10000, target)}
        if recorded is not None:
            rec = sorted((nw["participant"], nw["weight"]) for nw in recorded["node_weights"])
            entry["snapshot_weight"] = recorded["preserved_weight"]
            entry["snapshot_nodes"] = recorded["nodes"]
            entry["matches_snapshot"] = sorted((p, w) for p, _, w in sim) == rec
        out["episodes"].append(entry)
    return out


def _analyse_epoch(store: Store, epoch: int, opt: TargetsOptions, demand: Mapping[str, Any],
                   misses: Mapping[tuple[str, str], int], lower_bound: str
                   ) -> tuple[list[dict], list[Finding], list[str]]:
    """One epoch's rows, findings and notes against ``demand``; ``lower_bound``: where that
    demand came from (LOWER_BOUND_NOTE, or LOWER_BOUND_BUNDLES when bundles are summed in)."""
    per = opt.per_10000 if opt.per_10000 is not None else cpoc.DEFAULT_PER_10000
    models, nodes, episodes = _model_rows(store, epoch)
    out, findings, notes = [], [], []
    for m in models:
        mid = m["model_id"]
        w_m = None if m["w_m"] is None else int(m["w_m"])
        frac = m["poc_slot_allocation"]
        if frac is None:
            notes.append(f"{mid}: poc_slot_allocation not collected: the chain's fallback 0.5 is used")
        fraction = Decimal(frac) if frac is not None else DEFAULT_FRACTION
        target = int(m["allocation_target"]) if m["allocation_target"] is not None else None
        ps = demand["per_second"].get(mid)
        peak = demand_statistic(ps, opt.statistic) if mid in demand["served"] and ps else None
        d_m = demand_weight(peak, opt.headroom, per)
        suggested = None if d_m is None or target is None else max(target, d_m)
        eps = []
        for e in episodes.get(mid, []):
            pw = None if e["preserved_weight"] is None else int(e["preserved_weight"])
            caps = sum(cpoc.host_cap(int(nw["weight"]), per) for nw in e["node_weights"]
                       if nw["weight"] is not None)
            eps.append({"episode": e["episode"], "anchor_height": e["anchor_height"], "preserved_weight": pw,
                        "nodes": e["nodes"], "participants": e["participants"],
                        "preserved_cap_sum": caps,
                        "short_of_demand_weight": None if pw is None or d_m is None else max(0, d_m - pw)})
            if pw is not None and d_m is not None and pw < d_m:
                took = misses.get((e["episode"], mid))
                sev = "warn" if took else "info"
                findings.append(Finding(
                    "preserved_capacity_short", sev, {"kind": "model", "id": mid},
                    f"epoch {epoch} {e['episode']}: {mid} preserved weight {pw:,} below its demand weight "
                    f"{d_m:,} (demand {peak} in flight x {opt.headroom:g} at {per:g} per 10,000)"
                    + (f"; its preserved hosts took {took} misses in that window" if took else ""),
                    {"epoch": epoch, "episode": e["episode"], "preserved_weight": pw, "demand_weight": d_m,
                     "peak_inflight": peak, "statistic": opt.statistic, "headroom": opt.headroom,
                     "per_10000": per, "allocation_target": target, "w_m": w_m,
                     "misses_in_window": took, "lower_bound": lower_bound,
                     "query": "queries/targets_episodes.sql, queries/targets_demand_attempts.sql"},
                    model=mid))
        mnodes = [(n["participant"], n["node_id"], int(n["poc_weight"])) for n in nodes.get(mid, [])
                  if n["poc_weight"] is not None]
        plan_target = suggested if suggested is not None else target
        plan = _plan(largest_first(mnodes, plan_target), per, plan_target) if plan_target is not None else None
        if plan is not None:
            plan["target"] = plan_target
            plan["target_is"] = "suggested_target" if suggested is not None else "allocation_target (demand unknown)"
        comparison = (_selection_comparison(nodes.get(mid, []), episodes.get(mid, []), target, per)
                      if target is not None else None)
        out.append({
            "epoch": epoch, "model_id": mid, "total_weight": w_m, "subgroup_total_weight": m["total_weight"],
            "poc_slot_allocation": float(fraction), "allocation_target": target,
            "episodes": eps,
            "peak_inflight": peak, "peak_by_window": dict(demand["peaks"].get(mid, {})) or None,
            "statistic": opt.statistic, "headroom": opt.headroom, "per_10000": per,
            "demand_evidence": "none" if peak is None else "gateway logs",
            "demand_weight": d_m, "suggested_target": suggested,
            "gap": None if suggested is None else suggested - target,
            "suggested_exceeds_model_weight": None if suggested is None or w_m is None else suggested > w_m,
            "fill_plan": plan, "selection_comparison": comparison,
        })
    return out, findings, notes


def _governance(rows: list[dict], per: float) -> dict:
    """The single fraction that covers every model it can (never above 1: a model whose D_m
    exceeds its whole weight W_m is covered by none, and is named), which model drives it and
    what the others would need without it."""
    w_m = {r["model_id"]: r["total_weight"] for r in rows if r["total_weight"]}
    dem = {r["model_id"]: r["demand_weight"] for r in rows if r["demand_weight"] is not None}
    uncovered = sorted(m for m, d in dem.items() if w_m.get(m) and d > w_m[m])
    coverable = {m: d for m, d in dem.items() if m not in uncovered}
    f = covering_fraction(coverable, w_m)
    need = {m: covering_fraction({m: d}, w_m) for m, d in coverable.items() if w_m.get(m)}
    driver = max(sorted(need), key=lambda m: need[m]) if need else None
    rest = covering_fraction({m: d for m, d in coverable.items() if m != driver}, w_m)
    cands = sorted(set(CANDIDATES) | ({f} if f is not None else set())
                   | {Decimal(str(r["poc_slot_allocation"])) for r in rows})
    table = []
    for c in cands:
        implied = {m: int(c * w) for m, w in w_m.items()}
        covered = [m for m, d in dem.items() if implied.get(m, 0) >= d]
        table.append({"poc_slot_allocation": float(c),
                      "models_covered": len(covered), "models_with_demand": len(dem),
                      "share_covered": None if not dem else round(len(covered) / len(dem), 4),
                      "implied_preserved_weight": sum(implied.values()),
                      "implied_by_model": implied})
    return {"covering_poc_slot_allocation": None if f is None else float(f),
            "feasible": None if not dem else not uncovered,
            "models_with_demand": len(dem), "models_without_demand": sorted(set(w_m) - set(dem)),
            "note": ("the smallest single fraction f with trunc(f x W_m) >= D_m for every model whose demand is "
                     "known; implied weights are in each model's raw units (not comparable across models)"),
            "candidates": table,
            # issue 36: honest targets
            "uncovered_models": [
                {"model_id": m, "demand_weight": dem[m], "total_weight": w_m[m],
                 "why": (f"its D_m {dem[m]:,} exceeds its whole weight W_m {w_m[m]:,}: no poc_slot_allocation "
                         "(at most 1) covers it; only a per-model target, max(poc_slot_allocation x W_m, D_m), "
                         "can (and preserving every node still leaves it short)")} for m in uncovered],
            "need_by_model": {m: float(v) for m, v in sorted(need.items())},
            "driven_by": None if driver is None else {
                "model_id": driver, "demand_weight": dem[driver], "total_weight": w_m[driver],
                "needs": float(need[driver])},
            "covering_without_driver": None if rest is None else float(rest),
            "covers": ("the covering fraction covers every model with a known demand whose D_m is at most its W_m; "
                       "a model above its whole weight is in uncovered_models")}


def _network_estimate(store: Store, epochs: list[int], runs: Mapping[int, Run], latency: Mapping[str, list],
                      opt: TargetsOptions, per: float) -> dict | None:
    """Network demand without logs: per model, the accounting API's confirmation_poc requests
    over the cPoC windows' seconds, times a latency (the logs' and bundles', else assumed):
    Little's law's MEAN number in flight. None when no accounting source counted any."""
    acct = store.query("targets_accounting_cpoc_requests", first=epochs[0], last=epochs[-1])
    if not acct:
        return None
    timed = [w for e in epochs for w in cpoc.epoch_windows(runs[e])
             if w["window"].startswith("cpoc:") and w["start_time"] is not None and w["end_time"] is not None]
    seconds = sum((w["end_time"] - w["start_time"]).total_seconds() for w in timed)
    all_n = sum(n for n, _ in latency.values())
    all_s = sum(x for _, x in latency.values())
    assumed = opt.assume_latency if opt.assume_latency is not None else DEFAULT_LATENCY
    models: dict[str, dict] = {}
    for r in acct:
        m = models.setdefault(r["model"], {"requests": 0, "sources": []})
        m["requests"] += int(r["requests"])
        m["sources"].append({"accounting": r["source"], "gateway": r["gateway"], "escrow_epochs": r["epochs"],
                             "requests": int(r["requests"])})
    counted = sorted({r["gateway"] for r in acct})
    for mid, m in sorted(models.items()):
        n, secs = latency.get(mid, (0, 0.0))
        if n:
            lat, basis = secs / n, f"mean duration of {n:,} logged attempts of this model in the cPoC windows"
        elif all_n:
            lat, basis = all_s / all_n, f"mean duration of {all_n:,} logged attempts (every model) in the cPoC windows"
        else:
            lat = assumed
            basis = (f"assumed {assumed:g} s (--assume-latency)" if opt.assume_latency is not None else
                     f"assumed {assumed:g} s: no log or bundle gives a latency; set it with --assume-latency")
        rate = m["requests"] / seconds if seconds else None
        mean = None if rate is None else rate * lat
        m.update({"rate_per_second": None if rate is None else round(rate, 6), "latency_seconds": round(lat, 3),
                  "latency_basis": basis, "mean_inflight": None if mean is None else round(mean, 3),
                  "estimated_demand_weight": None if mean is None else demand_weight(math.ceil(mean), opt.headroom, per)})
    return {"label": ESTIMATE_LABEL, "statistic": "mean (not max, not a percentile)",
            "windows": len(timed), "window_seconds": seconds,
            "gateways_counted": len(counted), "gateways": counted,
            "inputs": ("requests: the accounting API's counters of dispatch phase confirmation_poc (every disposition "
                       "but ghost and protocol_only) on escrows created in the epochs, summed over the "
                       f"{len(counted)} gateway(s) whose accounting the store holds ({', '.join(counted)}; each "
                       "--accounting URL is one gateway, stored once however often given): the network's demand "
                       "through those gateways, a lower bound on the network's when others carry traffic too; "
                       "seconds: the epochs' cPoC windows (trigger to end of validation); "
                       f"estimated_demand_weight = D_m's rule on ceil(mean) x headroom {opt.headroom:g}"),
            "models": models}


def _proposal(rows: list[dict], gov: dict, estimate: dict | None, gateways: list[dict]) -> dict:
    """The governance proposal, per model: W_m, today's target, D_m and its basis, the suggested
    per-model target max(poc_slot_allocation x W_m, D_m); and the single fraction that covers the
    models left once the driving one (and any no fraction covers) have their own target."""
    counted = [g for g in gateways if g["windows_counted"]]
    measured = (f"measured: the {rows[0]['statistic'] if rows else 'max'} of per-second in flight from "
                f"{len(counted)} gateway(s)' logs and bundles ({', '.join(g['gateway'] for g in counted)})")
    own_target = {u["model_id"] for u in gov["uncovered_models"]} | (
        {gov["driven_by"]["model_id"]} if gov["driven_by"] else set())
    est = (estimate or {}).get("models", {})
    models, statements = [], []
    for r in rows:
        mid, target = r["model_id"], r["allocation_target"]
        d_m, basis = r["demand_weight"], measured if r["demand_weight"] is not None else None
        if d_m is None and (est.get(mid) or {}).get("estimated_demand_weight") is not None:
            d_m = est[mid]["estimated_demand_weight"]
            basis = "estimated from accounting: the MEAN in flight (Little's law), not a peak; a peak is higher"
        suggested = None if d_m is None or target is None else max(target, d_m)
        models.append({"model_id": mid, "total_weight": r["total_weight"], "allocation_target": target,
                       "poc_slot_allocation": r["poc_slot_allocation"], "demand_weight": d_m,
                       "demand_basis": basis or "unknown: no log, bundle or accounting count of its cPoC demand",
                       "suggested_target": suggested, "per_model_target": mid in own_target,
                       "exceeds_model_weight": None if suggested is None or not r["total_weight"]
                       else suggested > r["total_weight"]})
    drv = gov["driven_by"]
    if drv is not None:
        others = gov["covering_without_driver"]
        statements.append(
            f"one model drives the covering poc_slot_allocation {gov['covering_poc_slot_allocation']:g}: {drv['model_id']} "
            f"(D_m {drv['demand_weight']:,} against W_m {drv['total_weight']:,} needs {drv['needs']:g}); "
            + (f"the other models with a measured demand would need {others:g}" if others is not None else
               "no other model's demand is measured, so what they would need is unknown"))
    for u in gov["uncovered_models"]:
        statements.append(f"{u['model_id']}: {u['why']}")
    if own_target:
        statements.append("proposal: a per-model target max(poc_slot_allocation x W_m, D_m) for "
                          + ", ".join(sorted(own_target)) + "; "
                          + (f"the single fraction {gov['covering_without_driver']:g} covers the rest"
                             if gov["covering_without_driver"] is not None else
                             "today's poc_slot_allocation stands for the rest (no measured demand asks more)"))
    return {"models": models, "per_model_targets_for": sorted(own_target),
            "fraction_for_the_rest": gov["covering_without_driver"], "statements": statements,
            "rule": "suggested_target = max(poc_slot_allocation x W_m, D_m) (the seed's proposal)"}


def run(store: Store, epoch: int, options: Options | None = None, *, ctx: Run | None = None) -> Result:
    opt = _opts(options)
    parse_statistic(opt.statistic)
    run_ = run_for(store, epoch, ctx)
    require_epoch(store, epoch, run_)
    return _result(store, [epoch], opt, {epoch: run_})


def run_range(store: Store, first: int, last: int, options: Options | None = None) -> Result:
    """``--epochs A..B``: demand pooled over the CPoC windows of every stored epoch of the
    range; targets and plans against the last stored epoch's weights; per-epoch figures to
    show how stable the estimate is."""
    opt = _opts(options)
    parse_statistic(opt.statistic)
    stored = stored_epochs(store, first, last)
    if not stored:
        raise SourceError(not_stored(first) if first == last else
                          f"no epoch of {first}..{last} is in the store; collect them first: "
                          f"auditor collect --epoch {first} ... --epoch {last} --node URL")
    res = _result(store, stored, opt, {e: Run(store, e) for e in stored}, asked=range(first, last + 1))
    missing = [e for e in range(first, last + 1) if e not in stored]
    if missing:
        res.coverage.setdefault("missing", []).append(
            f"epochs not in the store: {epochs_text(missing)} (their demand is not counted)")
        res.complete = False
    res.data["epochs"] = {"first": first, "last": last, "stored": stored}
    return res


def epochs_text(xs: list[int]) -> str:
    """Sorted epochs as runs: ``[403, 405, 406, 407]`` -> ``403, 405..407`` (history's, targets'
    and prune's lines)."""
    out, start = [], None
    for i, x in enumerate(xs):
        if start is None:
            start = x
        if i + 1 == len(xs) or xs[i + 1] != x + 1:
            out.append(str(start) if start == x else f"{start}..{x}")
            start = None
    return ", ".join(out)


def _result(store: Store, epochs: list[int], opt: TargetsOptions, runs: Mapping[int, Run],
            asked: Sequence[int] | None = None) -> Result:
    """``runs``: the run of each epoch (the shared windows, log span and window misses);
    ``asked``: the epochs asked for (a bundle window of one the store lacks is refused)."""
    per = opt.per_10000 if opt.per_10000 is not None else cpoc.DEFAULT_PER_10000
    per_source = "given with --per-10000" if opt.per_10000 is not None else cpoc.PER_10000_DEFAULT_SOURCE
    last = epochs[-1]
    pooled: dict[str, list[int]] = defaultdict(list)
    per_epoch: dict[str, dict[int, int | None]] = defaultdict(dict)
    windows, served, unknown, notes = [], set(), [], []
    demands = {}
    contributions, bundle_report = _contributions(store, epochs, runs, opt, asked or epochs)
    lower_bound = LOWER_BOUND_BUNDLES if bundle_report else LOWER_BOUND_NOTE
    by_window, gateways = demand_bundle.merge(contributions, epochs)
    latency: dict[str, list] = defaultdict(lambda: [0, 0.0])
    for e in epochs:
        d = _epoch_demand(runs[e], by_window)
        for m, (n, secs) in d["latency"].items():
            latency[m][0] += n
            latency[m][1] += secs
        demands[e] = d
        served |= d["served"]
        for w in d["windows"]:
            windows.append({"epoch": e, **w})
            if w["evidence"] == "none":
                unknown.append(f"epoch {e} {w['window']}: {w['detail']}: demand unknown there")
        for m, ps in d["per_second"].items():
            pooled[m].extend(ps)
            per_epoch[m][e] = demand_statistic(ps, opt.statistic)
    combined = {"windows": [], "per_second": pooled, "peaks": defaultdict(dict), "served": served}
    for e in epochs:
        for m, pk in demands[e]["peaks"].items():
            for w, v in pk.items():
                combined["peaks"][m][f"{e}/{w}" if len(epochs) > 1 else w] = v
    rows, findings = [], []
    for e in epochs:
        if e == last:
            continue
        # findings for the earlier epochs of a range: their preserved weight against the pooled demand
        r, f, _ = _analyse_epoch(store, e, opt, combined, cpoc.window_misses(runs[e]), lower_bound)
        findings.extend(f)
    rows, f, n = _analyse_epoch(store, last, opt, combined, cpoc.window_misses(runs[last]), lower_bound)
    acct_misses = cpoc.model_accounting_misses(runs[last]) if cpoc.not_collected(runs[last]) is None else {}
    estimate = _network_estimate(store, epochs, runs, latency, opt, per)
    findings.extend(f)
    notes.extend(n)
    for r in rows:
        series = per_epoch.get(r["model_id"], {})
        vals = [v for v in series.values() if v is not None]
        r["demand_by_epoch"] = {str(k): v for k, v in series.items()} or None
        if len(vals) > 1:
            mean = sum(vals) / len(vals)
            sd = math.sqrt(sum((v - mean) ** 2 for v in vals) / (len(vals) - 1))
            r["demand_stability"] = {"epochs": len(vals), "min": min(vals), "max": max(vals),
                                     "mean": round(mean, 2), "cv": None if mean == 0 else round(sd / mean, 3)}
        else:
            r["demand_stability"] = None
        if r["suggested_exceeds_model_weight"]:
            notes.append(f"{r['model_id']}: the suggested target {r['suggested_target']:,} exceeds the model's whole "
                         f"weight {r['total_weight']:,}: preserving every node would still leave its PoC-time "
                         "demand short (the fill plan says how far)")
        acct = acct_misses.get(r["model_id"])
        took = r["cpoc_misses_accounting"] = None if acct is None else acct["misses"]
        if r["peak_inflight"] is None:
            est = ((estimate or {}).get("models", {}).get(r["model_id"]) or {}).get("estimated_demand_weight")
            hosts = ("" if acct is None or acct["hosts"] == acct["preserved_hosts"] else
                     f"; at least: the API has {acct['hosts']} of its {acct['preserved_hosts']} preserved hosts")
            unknown.append(f"{r['model_id']}: no gateway evidence of its demand in any PoC window: "
                           "the measured D_m and a suggested target from it are unknown (not zero)"
                           + ("" if est is None else f"; the proposal's D_m {est:,}, and its suggested target, "
                              "are estimated from the accounting API (network_estimate: a mean in flight, not a "
                              "peak)")
                           + ("" if took is None else f"; the accounting API gives no in-flight demand (counters "
                              f"without times), only that its preserved hosts took {took} misses in dispatch phase "
                              f"confirmation_poc (every CPoC of the epoch together{hosts})"))
            if took is not None:
                r["demand_evidence"] = ("none: the accounting API gives no in-flight demand, only the preserved "
                                        "hosts' misses in dispatch phase confirmation_poc (cpoc_misses_accounting)")
    sources = store.query("targets_sources")
    n_logs = sum(1 for s in sources if s["source"] == "gateway_log")
    n_acct = sum(1 for s in sources if s["source"] == "accounting")
    notes.append(lower_bound + f" ({n_logs} log file(s); {n_acct} accounting source(s), which give no "
                 "per-second timing and so add nothing to the peak)")
    notes.append(f"demand statistic {opt.statistic} of per-second in flight over the CPoC windows, "
                 f"x headroom {opt.headroom:g}; D_m = ceil(ceil(demand x headroom) x 10000 / {per:g}); "
                 f"per_10000: {per_source}")
    notes.append("in-flight demand in an overloaded window includes requests that hung on the overloaded host "
                 "until they failed: there it overstates what served requests would hold; compare the quiet "
                 "windows (peak_by_window) and a percentile (--statistic p95)")
    notes.append("weights: W_m and the node weights are raw poc_weight of the model; the gateway's cap reads the "
                 "participant's weight in the model's subgroup (poc-overload's weight), set by the chain from "
                 "all its nodes of the model, not only the preserved ones: it can exceed their poc_weight")
    if bundle_report:
        n_gw = len({g["gateway"] for g in gateways if g["windows_counted"]})
        own = "the store's own logs and " if n_logs else "no log in the store: "
        notes.append(f"demand summed over {n_gw} gateway(s): {own}{len(bundle_report)} "
                     "bundle(s) (demand_sources); a gateway's window given twice counts once (the newest bundle's)")
        for g in gateways:
            for same in sorted({w["same_as"] for w in g["windows_same_as_another"]}):
                n = sum(1 for w in g["windows_same_as_another"] if w["same_as"] == same)
                notes.append(f"{g['source']} ({g['gateway']}): {n} window(s) hold the very same per-second "
                             f"demand as {same}'s: one gateway's data under two names, counted once (as {same})")
            if g["source"] != demand_bundle.OWN_SOURCE and not g["windows_counted"] and not g["windows_superseded"] \
                    and not g["windows_same_as_another"]:
                notes.append(f"bundle {g['source']} ({g['gateway']}) covers no cPoC window of the epochs asked "
                             f"({g['windows_outside_epochs']} window(s) of other epochs): it adds nothing")
        other = sorted({f"{b['gateway']}: {b['per_10000']:g}" for b in gateways
                        if b["per_10000"] is not None and b["per_10000"] != per})
        if other:
            notes.append(f"D_m uses per_10000 {per:g} for every gateway; bundles that give another setting: "
                         + "; ".join(other))
    gov = _governance(rows, per)
    proposal = _proposal(rows, gov, estimate, gateways)
    data = {"epoch": last, "epochs_used": epochs, "statistic": opt.statistic, "headroom": opt.headroom,
            "per_10000": per, "per_10000_source": per_source, "windows": windows,
            "preserved_targets": rows, "governance": gov, "notes": notes,
            "demand_sources": {"gateways": gateways, "bundles": bundle_report},
            "network_estimate": estimate, "proposal": proposal}
    coverage = {"sources": ["chain", "gateway_log", "accounting"] + (["bundle"] if bundle_report else []),
                "missing": [], "unknown": unknown, "gateway_sources": sources}
    covering = gov["covering_poc_slot_allocation"]
    header = [("epochs", ", ".join(map(str, epochs))),
              ("demand statistic", f"{opt.statistic} x headroom {opt.headroom:g}"),
              ("per 10,000 weight", f"{per:g}"),
              ("covering poc_slot_allocation",
               "unknown (no demand seen)" if covering is None and not gov["uncovered_models"]
               else _covering_text(gov))]
    if estimate is not None:
        header.append(("network demand estimate", "estimate of the mean in flight from accounting "
                       "(Little's law), not a peak: see its table"))
    return Result(KEY, TITLE, data, _tables(rows, gov, notes, proposal, estimate), findings, coverage,
                  header=header)


def _covering_text(gov: dict) -> str:
    f = gov["covering_poc_slot_allocation"]
    parts = [] if f is None else [f"{f:g}"]
    drv = gov["driven_by"]
    if drv is not None and f is not None:
        parts[0] += (f", driven by {drv['model_id']} alone (D_m {drv['demand_weight']:,} of W_m "
                     f"{drv['total_weight']:,}); the others need "
                     + ("unknown: no other demand measured" if gov["covering_without_driver"] is None
                        else f"{gov['covering_without_driver']:g}"))
    for u in gov["uncovered_models"]:
        parts.append(f"none covers {u['model_id']} (D_m {u['demand_weight']:,} above W_m {u['total_weight']:,}): "
                     "only a per-model target can")
    return "; ".join(parts) if parts else "unknown (no demand seen)"


def _contributions(store: Store, epochs: list[int], runs: Mapping[int, Run], opt: TargetsOptions,
                   asked: Sequence[int]) -> tuple[list, list[dict]]:
    """The store's own logs and each ``--bundle``, read and checked against the chain in the store."""
    own = demand_bundle.own(store, runs)
    out = [own] if own is not None else []
    report = []
    if opt.bundles:
        known = {}
        for e in epochs:
            for w in cpoc.epoch_windows(runs[e]):
                known[(e, w["window"])] = w
        stored = stored_epochs(store, min(asked), max(asked))
        for src in opt.bundles:
            c = demand_bundle.load(src)
            demand_bundle.check_known(c, known, asked, stored)
            out.append(c)
            report.append({"bundle": c.source, "gateway": c.gateway, "created_at": c.created_at,
                           "epochs": c.meta.get("epochs"), "tool_version": c.meta.get("tool_version"),
                           "content_sha256": c.meta.get("content_sha256")})
    return out, report


def _tables(rows: list[dict], gov: dict, notes: list[str], proposal: dict, estimate: dict | None) -> list[Table]:
    est = (estimate or {}).get("models", {})
    t1 = []
    for r in rows:
        plan = r["fill_plan"] or {}
        cmp_ = (r["selection_comparison"] or {}).get("episodes") or [{}]
        preserved = ", ".join(f"{e['episode']} {'unknown' if e['preserved_weight'] is None else e['preserved_weight']}" for e in r["episodes"]) or "none"
        t1.append({"model_id": r["model_id"], "total_weight": r["total_weight"],
                   "poc_slot_allocation": r["poc_slot_allocation"], "allocation_target": r["allocation_target"],
                   "preserved": preserved, "peak_inflight": r["peak_inflight"],
                   "est_mean_inflight": (est.get(r["model_id"]) or {}).get("mean_inflight"),
                   "cpoc_misses_acct": r["cpoc_misses_accounting"],
                   "demand_weight": r["demand_weight"], "suggested_target": r["suggested_target"],
                   "gap": r["gap"],
                   "plan_nodes": plan.get("nodes"), "plan_smallest": plan.get("smallest_node_weight"),
                   "plan_smallest_cap": plan.get("smallest_node_cap"),
                   "chain_nodes": cmp_[0].get("nodes"), "chain_smallest": cmp_[0].get("smallest_node_weight"),
                   "chain_smallest_cap": cmp_[0].get("smallest_node_cap")})
    # the implied weights are per model, in each model's own units: their sum (the JSON's
    # implied_preserved_weight) is no quantity a reader can compare, so the table leaves it out
    t2 = [{k: v for k, v in c.items() if k not in ("implied_by_model", "implied_preserved_weight")}
          for c in gov["candidates"]]
    t3 = [{"model_id": m["model_id"], "W_m": m["total_weight"], "allocation_target": m["allocation_target"],
           "D_m": m["demand_weight"], "demand_basis": m["demand_basis"], "suggested_target": m["suggested_target"],
           "own_target": "yes" if m["per_model_target"] else "no"} for m in proposal["models"]]
    est_notes = [] if estimate is None else [
        f"est_mean_inflight: {ESTIMATE_LABEL}; its inputs and per-model figures are in the JSON (network_estimate)"]
    tables = [Table("Preserved-weight targets per model", list(t1[0].keys()) if t1 else [], t1,
                    notes + ["plan_* = largest-first fill of the suggested target, or of allocation_target where "
                             "there is none (demand unknown: --format json's plan.target_is); chain_* = the chain's "
                             "smallest-first selection simulated on the same node weights."] + est_notes,
                    narrow=["poc_slot_allocation", "preserved", "plan_smallest", "chain_smallest"],
                    priority=["model_id", "gap", "demand_weight", "suggested_target", "allocation_target",
                              "peak_inflight"], failing=lambda r: bool(r["gap"] and r["gap"] > 0),
                    legend=["W_m", "D_m"]),
              Table("Candidate poc_slot_allocation values", list(t2[0].keys()) if t2 else [], t2,
                    [gov["note"], "each model's implied weight per candidate: --format json (implied_by_model)"]
                    + [u["model_id"] + ": " + u["why"] for u in gov["uncovered_models"]]),
              Table("Proposal for governance: per-model targets and one fraction for the rest",
                    list(t3[0].keys()) if t3 else [], t3,
                    proposal["statements"] + [proposal["rule"]]
                    # an estimated D_m says so under the table too: its demand_basis column is the first
                    # a narrow terminal leaves out
                    + [f"D_m of {m['model_id']}: {m['demand_basis']}" for m in proposal["models"]
                       if m["demand_weight"] is not None and m["demand_basis"].startswith("estimated")],
                    priority=["model_id", "D_m", "suggested_target"])]
    if estimate is not None:
        t4 = [{"model_id": mid, "requests_cpoc": m["requests"], "rate_per_s": m["rate_per_second"],
               "latency_s": m["latency_seconds"], "est_mean_inflight": m["mean_inflight"],
               "est_demand_weight": m["estimated_demand_weight"], "latency_basis": m["latency_basis"]}
              for mid, m in estimate["models"].items()]
        tables.append(Table("Network demand ESTIMATED from accounting: mean in flight, not a peak",
                            list(t4[0].keys()), t4, [estimate["label"], estimate["inputs"],
                                                     f"{estimate['windows']} cPoC window(s), "
                                                     f"{estimate['window_seconds']:g} s"]))
    return tables


# -- what the registry reads of a result (analyses/registry.py): its charts and metrics ---------
def charts(result: Result) -> list:
    """One panel per model (their weights are not comparable): the weight preserved in each
    episode, red when below the demand weight, against the chain's target and the suggested one."""
    from ..result import FAIL_COLOUR, PASS_COLOUR, Chart

    out = []
    for m in result.data["preserved_targets"]:
        d_m = m["demand_weight"]
        eps = [e for e in m["episodes"] if e["preserved_weight"] is not None]
        short = [[e["episode"], e["preserved_weight"]] for e in eps if d_m is not None and e["preserved_weight"] < d_m]
        enough = [[e["episode"], e["preserved_weight"]] for e in eps if d_m is None or e["preserved_weight"] >= d_m]
        marks = [{"name": "chain target", "y": m["allocation_target"], "colour": "#555555"},
                 {"name": "suggested", "y": m["suggested_target"], "colour": FAIL_COLOUR}]
        out.append(Chart(f"{m['model_id']}: preserved weight per episode against the targets", "bar", "episode",
                         "weight", [{"name": "preserved, below the demand weight", "colour": FAIL_COLOUR,
                                     "points": short},
                                    {"name": "preserved", "colour": PASS_COLOUR, "points": enough}],
                         marks=[k for k in marks if k["y"] is not None]))
    return out


def metrics(result: Result) -> Iterable[tuple[str, tuple[str, ...], float]]:
    for t in result.data["preserved_targets"]:
        if t["gap"] is not None:
            yield "auditor_preserved_target_gap_weight", (str(t["model_id"]),), t["gap"]
