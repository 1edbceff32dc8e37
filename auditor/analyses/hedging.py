"""Hedging waste (issue 9, incident #2105): what the gateway's speed-up hedges cost.

The nonce stream fixes a request's primary host whatever its speed; the speed-up policies
start a nearer host in parallel, it wins, and the far primary runs its whole generation as
a suppressed loser. This analysis reads the races from the stored gateway logs
(``queries/views/hedge_attempts.sql`` and ``hedge_races.sql`` hold the definitions of
race, primary, winner, suppressed loser, rescue and wasted work) over epoch N's effective
span or ``--since/--until``, and reports per host, per decision reason, totals per range
and per hour, how predictable the losses were before dispatch, the false firing of
``primary_unresponsive`` (#2103), and what four remedies would have saved.

SQL does the counting (``queries/hedging_*.sql``), the prediction rule and the counterfactuals
over every race included (``queries/hedging_predictions.sql``, with the thresholds here as its
parameters, printed with the numbers); Python fetches only the races the output lists, groups
their attempts, and builds the findings.
"""

from __future__ import annotations

import itertools
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from ..errors import UsageError
from ..result import Finding, Result, Stream, Table, utc, utc_text
from . import cpoc
from .context import Run, run_for
from .frame import Arg, Call, Options, option

KEY, TITLE = "hedging", "Hedging waste"

# -- thresholds (printed with the numbers) -------------------------------------------------
WINDOW_S = 3600             # the gateway's perf window of a host's receipt / first-token samples: the latest
WINDOW_SAMPLES = 256        # ... 256 samples in the hour before the race; fixed in queries/views/hedge_priors.sql
MIN_SAMPLES = 3             # samples a host needs in the window before a prediction is made (gateway: min samples 3)
CLEAR_RATIO = 1.5           # a host is "clearly faster" when the other's median is >= this many times its own ...
                            # ... and the two interquartile ranges do not overlap
REPLACE_RATIO = 2.0         # remedy 2: predicted advantage large enough to run only the candidate (candidateCost < 0.5)
AB_MIN_COMPARISONS = 6      # remedy 4: earlier direct comparisons of a pair before its ratio counts as established
AB_AGREEMENT = 0.9          # ... and the share of them the same host won
WASTE_MIN_RACES = 10        # suppressed_loser_waste: primary races a host needs before it is judged
WASTE_LOSS_SHARE = 0.5      # ... share of its primary races lost to a hedge (rescues excluded) above which it is flagged
WASTE_FULL_SHARE = 0.5      # ... share of those losses that ran on as suppressed losers ("full generations")
PREDICT_MIN_LOSSES = 5      # hedge_predictable_loss: losses with a prediction a host needs
PREDICT_SHARE = 0.8         # ... share of them that were predictable

SPEEDUP_DECISIONS = ("pairwise_budgeted_speedup", "secondary_faster")
AB_DECISION = "pairwise_ab_sample"
RACE_TABLE_ROWS = 50         # the terminal / md / html tables show the races with the most waste ...
RACES_LISTED = 100           # ... and the JSON lists as many (those with most waste), unless --all-races
RACES_PER_PAGE = 20_000      # --all-races writes the races this many at a time
BEATEN_TABLE_ROWS = 5        # ... and the commonest winners over each primary; --format json has every row


def thresholds() -> dict[str, Any]:
    return {"window_s": WINDOW_S, "window_samples": WINDOW_SAMPLES, "min_samples": MIN_SAMPLES,
            "clear_ratio": CLEAR_RATIO, "replace_ratio": REPLACE_RATIO, "ab_min_comparisons": AB_MIN_COMPARISONS,
            "ab_agreement": AB_AGREEMENT, "waste_min_races": WASTE_MIN_RACES,
            "waste_loss_share": WASTE_LOSS_SHARE, "waste_full_share": WASTE_FULL_SHARE,
            "predict_min_losses": PREDICT_MIN_LOSSES, "predict_share": PREDICT_SHARE}


# -- the time range --------------------------------------------------------------------------
def time_range(store: Any, epoch: int | None, options: Options,
               ctx: Run | None = None) -> tuple[datetime | None, datetime | None, str, str | None]:
    """``(since, until, what, problem)``: --since/--until when given, else epoch N's
    effective span [SNV(N), SNV(N+1)); ``problem`` says why no range could be fixed."""
    since, until = utc(options.since), utc(options.until)
    if since is not None or until is not None:
        if since is not None and until is not None and since >= until:
            raise UsageError(f"--since {utc_text(since)} is not before --until {utc_text(until)}")
        return since, until, "--since/--until", None
    if epoch is None:
        return None, None, "", "give an epoch N or --since/--until"
    windows = {w["window"]: w for w in cpoc.epoch_windows(run_for(store, epoch, ctx))}
    w = windows.get("epoch")
    if w is None:
        return None, None, "", (f"epoch {epoch} is not in the store, so its time span is unknown: collect it "
                                f"(auditor collect --epoch {epoch} --node URL) or give --since/--until")
    if w["start_time"] is None or w["end_time"] is None:
        return None, None, "", (f"epoch {epoch}'s time span is unknown (the block times of heights "
                                f"{w['start_height']} and {w['end_height']} were not collected): collect the "
                                "epoch again with --node, or give --since/--until")
    return utc(w["start_time"]), utc(w["end_time"]), f"epoch {epoch} effective span [SNV(N), SNV(N+1))", None


# -- per race (the listed races) ---------------------------------------------------------------
RACE_KEYS = ("request", "race_ts", "escrow", "model", "decision", "delay_ms", "primary_nonce", "primary_inferred",
             "rescue", "winner_host", "winner_role")


def group_races(races: list[dict[str, Any]], attempts: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The rows of queries/hedging_races.sql, each with its ``attempts``: the rows of
    queries/hedging_race_attempts.sql (in race_place's order, views/race_primary.sql: the race's
    primary row first, the one every view reads), as they are, which the per-race list shows,
    less the two facts of the race each row carries, which the race takes:
    ``predicted_winner``, the predicted host, and ``loss_predictable``, whether a loss of the
    primary was predictable (None when the primary did not lose, the hedge rescued it, or no
    prediction was made), both by the prediction rule (views/hedge_prediction.sql)."""
    by_request = {r["request"]: r for r in races}
    for r in races:
        r["attempts"], r["predicted_winner"], r["loss_predictable"] = [], None, None
    for a in attempts:
        r = by_request[a.pop("request")]
        r["predicted_winner"] = a.pop("race_predicted_winner")
        r["loss_predictable"] = a.pop("race_loss_predictable")
        r["attempts"].append(a)
    return races


# -- over every race of the range: queries/hedging_predictions.sql ---------------------------------
def prediction_args() -> dict[str, Any]:
    """The thresholds queries/hedging_predictions.sql applies, as its parameters."""
    return {"min_samples": MIN_SAMPLES, "clear_ratio": CLEAR_RATIO, "replace_ratio": REPLACE_RATIO,
            "ab_min_comparisons": AB_MIN_COMPARISONS, "ab_agreement": AB_AGREEMENT,
            "speedup_decisions": list(SPEEDUP_DECISIONS), "ab_decision": AB_DECISION}


def predictability(row: dict[str, Any]) -> dict[str, Any]:
    """How often the lowest prior median picked the real winner, and, per primary host,
    how many of its losses were predictable (``predict(primary, winner).clear``), from
    queries/hedging_predictions.sql's row."""
    evaluable, right = row["evaluable_races"], row["prediction_right"]
    hosts = [{"label": h["label"], "losses": h["losses"], "with_prediction": h["with_prediction"],
              "predictable": h["predictable"], "predictable_share": _share(h["predictable"], h["with_prediction"]),
              "predictable_requests": list(h["predictable_requests"])}
             for h in sorted(row["hosts"], key=lambda h: (-h["losses"], h["label"]))]
    return {"evaluable_races": evaluable, "prediction_right": right, "prediction_right_share": _share(right, evaluable),
            "rule": (f"predicted winner = the attempt whose host had the lowest first-token median (then receipt "
                     f"median) over its latest {WINDOW_SAMPLES} attempts in the {WINDOW_S} s before the race "
                     f"(the gateway's perf window), hosts with >= {MIN_SAMPLES} samples; a loss is predictable "
                     f"when the winner's host was clearly faster: a median ratio "
                     f">= {CLEAR_RATIO} with the interquartile ranges apart, on first token or on receipt"),
            "hosts": hosts}


# -- counterfactuals -------------------------------------------------------------------------
# Each remedy's rule is in queries/hedging_predictions.sql; here what it applies to and assumes.
# 1 speed_aware_primary: dispatch to the predicted-fastest host in the first place: a hedged race
#   whose predicted-fastest attempt is not the primary and is clearly faster than it is served by
#   that attempt alone (every other attempt saved; its latency its own started -> first token,
#   as it starts at the race's start; would_fail when it failed in the race).
# 2 replace_instead_of_add: when a speed-up decision accepted a candidate whose predicted advantage
#   over the primary is at least REPLACE_RATIO, only the candidate (the first secondary the
#   decision started) runs: the primary and any other attempt are saved.
# 3 cancel_losers: every loser is cancelled once the winner streams: its time after the winner was
#   selected and all its output (a loser writes no content before a winner exists) are saved, in
#   rescue races too; the attempts themselves still start.
# 4 stop_ab_sampling: a pairwise_ab_sample attempt is skipped once its (primary host, candidate
#   host) pair has AB_MIN_COMPARISONS earlier direct comparisons (races, any decision, where both
#   delivered a first token) of which the same host was faster in at least AB_AGREEMENT. The
#   sampled attempt is saved; the primary then serves alone: latency cost when the sample had
#   won, a would_fail when the primary failed and the sample was the rescue.
def remedies() -> list[tuple[str, str, list[str]]]:
    """``(remedy, applies_to, assumptions)`` of the four remedies, in report order."""
    return [
        ("speed_aware_primary",
         f"hedged races whose predicted-fastest host (lowest prior first-token median) is not the primary "
         f"and is clearly faster (ratio >= {CLEAR_RATIO}, quartiles apart): only that host runs",
         ["the chosen host would have served as it did in the race, started at the race's start",
          "each redirected request burns one ghost nonce on the skipped host (not counted as an attempt)",
          "races that were not hedged are not evaluated: the data do not show how another host would have done"]),
        ("replace_instead_of_add",
         f"races decided {' or '.join(SPEEDUP_DECISIONS)} whose candidate's predicted advantage "
         f"(prior median ratio primary/candidate) is >= {REPLACE_RATIO}: only the candidate runs",
         ["the candidate would have served as it did in the race, started at the race's start",
          "would_fail: the candidate failed in the race, so the primary it replaced was the rescue"]),
        ("cancel_losers",
         "every race with a winner and a loser still running after the winner was selected",
         ["the winner's output reaches the user unchanged: once a winner streams devshardctl forwards "
          "no loser's bytes, so cancelling a loser costs no latency (no latency cost is counted)",
          "attempts_saved is 0: the losers' nonces are still started and must still be settled",
          "saved seconds are the losers' time after the winner's winner_selected line, in rescued races too: "
          "the wasted attempt-seconds leave rescues out, so the saving can exceed them"]),
        ("stop_ab_sampling",
         f"{AB_DECISION} attempts of pairs with >= {AB_MIN_COMPARISONS} earlier direct comparisons, "
         f">= {AB_AGREEMENT:.0%} won by the same host: the sample is not started",
         ["a comparison is a race where both hosts delivered a first token; the faster is the earlier "
          "first token from the race's start",
          "without the sample the primary serves alone, as it did in the race"]),
    ]


def counterfactuals(row: dict[str, Any]) -> list[dict[str, Any]]:
    """What each remedy would have saved, from queries/hedging_predictions.sql's ``remedies``
    (times summed there in whole ms, printed here in seconds); a remedy that changes no race
    saves nothing."""
    sums = {m["remedy"]: m for m in row["remedies"]}
    out = []
    for name, applies, assumptions in remedies():
        m = sums.get(name, {})
        n = {k: int(m.get(k) or 0) for k in ("races", "attempts_saved", "attempt_ms_saved", "output_bytes_saved",
                                             "latency_worse", "latency_added_ms", "latency_better",
                                             "latency_saved_ms", "latency_unknown", "would_fail")}
        out.append({"remedy": name, "applies_to": applies, "races": n["races"], "attempts_saved": n["attempts_saved"],
                    "attempt_seconds_saved": round(n["attempt_ms_saved"] / 1000, 3),
                    "output_bytes_saved": n["output_bytes_saved"], "latency_worse": n["latency_worse"],
                    "latency_added_seconds": round(n["latency_added_ms"] / 1000, 3),
                    "latency_better": n["latency_better"],
                    "latency_saved_seconds": round(n["latency_saved_ms"] / 1000, 3),
                    "latency_unknown": n["latency_unknown"], "would_fail": n["would_fail"],
                    "assumptions": assumptions})
    return out


# -- helpers ---------------------------------------------------------------------------------
def _share(n: float | None, d: float | None) -> float | None:
    return None if not d or n is None else round(n / d, 4)


def _num(v: Any) -> Any:
    """DuckDB decimals and hugeints as plain JSON numbers."""
    if v is None or isinstance(v, (bool, int, float, str)):
        return v
    try:
        f = float(v)
        return int(f) if f.is_integer() else f
    except (TypeError, ValueError):
        return v


def _clean(row: dict[str, Any]) -> dict[str, Any]:
    return {k: _num(v) if not isinstance(v, datetime) else v for k, v in row.items()}


def _matches(host: dict[str, Any], who: str | None) -> bool:
    return who is None or who in (host["host"], host["label"])


# -- findings --------------------------------------------------------------------------------
def _findings(hosts: list[dict[str, Any]], beaten: dict[str, list[dict[str, Any]]], pred: dict[str, Any],
              unresp: list[dict[str, Any]], model_of: dict[str, str | None], query_args: dict[str, Any]) -> list[Finding]:
    out: list[Finding] = []
    pred_by = {h["label"]: h for h in pred["hosts"]}
    for h in hosts:
        subject = {"kind": "participant", "id": h["host"]}
        waste_losses = h["primary_losses"] - h["primary_rescued"]
        full = h["suppressed_losers_wasted"]
        if (h["primary_races"] >= WASTE_MIN_RACES and waste_losses / h["primary_races"] > WASTE_LOSS_SHARE
                and waste_losses and full / waste_losses >= WASTE_FULL_SHARE):
            out.append(Finding(
                "suppressed_loser_waste", "warn", subject,
                f"{h['label']} lost {waste_losses} of its {h['primary_races']} primary races to a hedge and "
                f"{full} of them ran on as suppressed losers: {h['wasted_seconds'] or 0:,.0f} s and "
                f"{h['wasted_bytes'] or 0:,} output bytes thrown away",
                {"races": h["primary_races"], "wins": h["primary_wins"], "losses": h["primary_losses"],
                 "rescued": h["primary_rescued"], "suppressed_losers": h["suppressed_losers"],
                 "suppressed_losers_completed": h["suppressed_losers_completed"],
                 "failed_after_suppression": h["failed_after_suppression"],
                 "wasted_seconds": h["wasted_seconds"], "wasted_bytes": h["wasted_bytes"],
                 "wasted_tokens": h["wasted_tokens"], "beaten_by": beaten.get(h["label"], []),
                 "thresholds": {"min_races": WASTE_MIN_RACES, "loss_share": WASTE_LOSS_SHARE,
                                "full_share": WASTE_FULL_SHARE},
                 "query": "queries/hedging_hosts.sql", "row": {"label": h["label"], **query_args}},
                model_of.get(h["label"])))
        p = pred_by.get(h["label"])
        if p and p["with_prediction"] >= PREDICT_MIN_LOSSES and p["predictable"] / p["with_prediction"] >= PREDICT_SHARE:
            out.append(Finding(
                "hedge_predictable_loss", "warn", subject,
                f"{p['predictable']} of {h['label']}'s {p['losses']} losses as primary ({p['with_prediction']} "
                f"with a prediction) were predictable before dispatch: the winner's host was clearly faster over "
                f"its latest {WINDOW_SAMPLES} samples in the previous {WINDOW_S} s",
                {"losses": p["losses"], "losses_with_prediction": p["with_prediction"],
                 "predictable": p["predictable"], "predictable_share": p["predictable_share"],
                 "rule": pred["rule"], "predictable_requests": p["predictable_requests"][:20],
                 "query": "queries/hedging_race_attempts.sql",
                 "row": {"request": "each of predictable_requests", **query_args}},
                model_of.get(h["label"])))
    by_host: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for u in unresp:
        if u["false_positive"]:
            by_host[u["primary_host"]].append(u)
    label_to_host = {h["label"]: h["host"] for h in hosts}
    for label, rows in sorted(by_host.items()):       # one false firing is reported
        fired = sum(1 for u in unresp if u["primary_host"] == label)
        out.append(Finding(
            "primary_unresponsive_false_positive", "warn", {"kind": "participant", "id": label_to_host.get(label, label)},
            f"primary_unresponsive fired {fired} time(s) on {label}, and {len(rows)} time(s) the primary then "
            "delivered its first token and finished normally (#2103)",
            {"decisions": fired, "false_positives": len(rows),
             "primary_won": sum(1 for u in rows if u["winner"]),
             "examples": [{"request": u["request"], "time": u["race_ts"], "escrow": u["escrow"],
                           "primary_nonce": u["primary_nonce"], "receipt_ms": u["receipt_ms"],
                           "ttft_ms": u["ttft_ms"], "winner": u["winner"], "winner_host": u["winner_host"]}
                          for u in rows[:5]],
             "query": "queries/hedging_unresponsive.sql", "row": {"primary_host": label, **query_args}},
            rows[0]["model"]))
    return out


@dataclass(frozen=True)
class HedgingOptions(Options):
    all_races: bool = option(False, "--all-races", "List every race in the JSON (by default the 100 with the most "
                             "wasted work; all stay in the store: hedge_races).")   # RACES_LISTED

    EPOCH = Arg(help="Epoch index: its effective span is the range (unless --since/--until are given).",
                optional=True)
    RANGE = True

    @classmethod
    def call(cls, epoch: int | None, **values: Any) -> Call:
        """It needs a range, epoch N's span or --since/--until (time_range's rule, checked
        before anything is collected)."""
        options = cls(**values)
        if epoch is None and options.since is None and options.until is None:
            raise UsageError(f"hedging: {time_range(None, None, options)[3]}")
        return Call(epoch, options)


# -- the analysis ----------------------------------------------------------------------------
def run(store: Any, epoch: int | None, options: Options | None = None, *, ctx: Run | None = None) -> Result:
    """The hedging analysis of epoch N's span (or --since/--until). The views over the logs it
    reads most are read from their tables kept in the store (its registry record's ``kept``:
    ``attempts``, ``hedge_attempts``, ``hedge_races``, ``hedge_priors``, and the host labels'
    ``log_host_lines`` and ``log_participants``), rebuilt only when logs were collected since."""
    options = HedgingOptions.of(options)
    since, until, what, problem = time_range(store, epoch, options, ctx)
    if problem is not None:
        return _unavailable(epoch, problem)
    facts = store.query("hedging_log_facts")[0]
    if not facts["race_completed_lines"]:
        return _unavailable(epoch, "no gateway log with race_completed lines is in the store: collect the "
                                   "gateway's logs (--gateway-log PATH)")
    args = {"since": since, "until": until}
    query_args = {"since": since, "until": until}
    totals_rows = [_clean(r) for r in store.query("hedging_totals", **args)]
    total = next((r for r in totals_rows if r["hour"] is None), None)
    if total is None or not total["races"]:
        reason = (f"no race in {what} [{utc_text(since)}, {utc_text(until)}): the stored gateway logs cover "
                  f"{utc_text(facts['first_ts'])} … {utc_text(facts['last_ts'])}")
        return _unavailable(epoch, reason)
    hosts = [_clean(r) for r in store.query("hedging_hosts", **args)]
    beaten_rows = [_clean(r) for r in store.query("hedging_beaten_by", **args)]
    decisions = [_clean(r) for r in store.query("hedging_decisions", **args)]
    unresp = store.query("hedging_unresponsive", **args)
    predictions = store.query("hedging_predictions", **args, **prediction_args())[0]
    pred = predictability(predictions)
    cfs = counterfactuals(predictions)
    beaten = _beaten(beaten_rows)
    model_of = {m["host"]: m["model"] for m in predictions["host_models"]}
    for h in hosts:
        h["beaten_by"] = beaten.get(h["label"], [])

    shown = [h for h in hosts if _matches(h, options.participant)]
    notes = _notes(facts, options, shown, since, until)
    check = _metrics_check(hosts, store.query("hedging_metrics_suppressed", **args), since, until)
    if check is not None:
        notes.append(check["summary"])
    unresp_data = _unresponsive(unresp)
    durations = attempt_durations(store.query("hedging_attempt_durations", **args)[0])
    totals = _totals(total, facts, predictions, hosts)
    totals["duration_basis"] = durations["basis"]
    if durations["disagreements"]:
        notes.append(durations["summary"])
    per_hour = [r for r in totals_rows if r["hour"] is not None]

    # the RACES_LISTED with the most waste: the JSON's list, and the race table's top
    # RACE_TABLE_ROWS (the same with --all-races, whose list is written from the store)
    # with --participant the races listed are the participant's own: the network's most wasteful
    # held only some of them
    labels = None if options.participant is None else sorted(h["label"] for h in shown)
    listed = [_race_json(r) for r in _listed_races(store, args, RACES_LISTED, hosts=labels)]
    in_range = total["hedged_races"] if labels is None else \
        (store.query("hedging_races_with_hosts", **args, hosts=labels)[0]["races"] if labels else 0)
    races = Stream(in_range, lambda: _race_pages(store, args, labels)) if options.all_races else listed
    data = {
        "epoch": epoch,
        "available": True,
        "range": {"since": since, "until": until, "from": what},
        "hosts": [{k: h[k] for k in HOST_KEYS} for h in shown],
        "decisions": decisions,
        "totals": totals,
        "per_hour": per_hour,
        "wasted_by_hour_and_decision": [_clean(r) for r in store.query("hedging_wasted_by_hour", **args)],
        "predictability": pred,
        "primary_unresponsive": unresp_data,
        "counterfactuals": cfs,
        "attempt_durations": durations,
        "races": races,
        "races_listed": {"listed": len(races), "of": in_range,
                         "which": "all" if len(races) == in_range else f"the {len(races)} with the most "
                                                                            "wasted work, in time order",
                         "all": _all_races_hint(since, until, options.participant, labels), "with_hosts": labels},
        "thresholds": thresholds(),
        "notes": notes,
    }
    findings = [f for f in _findings(hosts, beaten, pred, unresp, model_of, query_args)
                if options.participant is None or f.subject["id"] in {h["host"] for h in shown}]
    header = _header(what, since, until, totals, pred, unresp_data, bool(facts["cache_lines"]))
    if options.participant is not None:     # the figures below are every host's; the tables are narrowed
        header.insert(1, ("figures", f"the network's, every host's; --participant {options.participant} narrows "
                                     "the per-host tables and the races listed"))
    tables = _tables(shown, beaten_rows, decisions, totals, per_hour, pred, cfs, listed, in_range, len(races),
                     unresp_data, notes, narrowed=options.participant is not None)
    first, last = utc(facts["first_ts"]), utc(facts["last_ts"])
    covered = (since is None or (first is not None and first <= since)) and \
        (until is None or (last is not None and last >= until))
    unknown = [] if covered else [f"the race_completed lines read span {utc_text(first)} … {utc_text(last)}, not "
                                  f"all of [{utc_text(since)}, {utc_text(until)}): the figures are for the part covered"]
    notes.extend(unknown)
    coverage = {"sources": ["gateway_log", "chain"] if epoch is not None and not (options.since or options.until)
                else ["gateway_log"], "missing": [], "unknown": unknown, "log_covers_range": covered,
                "log_span": [facts["first_ts"], facts["last_ts"]], "time_resolution": facts["time_resolution"]}
    if check is not None:
        coverage["sources"].append("metrics")
        coverage["suppressed_losers_vs_metrics"] = check
    return Result(KEY, TITLE, data, tables, findings, coverage, header=header)


def _count(x: float) -> float | int:
    """A counter's value as an int when it is whole (a count of attempts)."""
    return int(x) if float(x).is_integer() else x


METRIC_SUPPRESSED = 'devshard_gateway_attempts_terminal_total{visibility="suppressed_loser"}'


def _metrics_check(hosts: list[dict[str, Any]], rows: list[dict[str, Any]], since: datetime | None,
                   until: datetime | None) -> dict[str, Any] | None:
    """The analysis's suppressed losers against the gateway's own count of them: the increase of
    attempts_terminal_total{visibility="suppressed_loser"} over the range, from the stored
    /metrics scrapes (queries/hedging_metrics_suppressed.sql), per participant and in all.
    None when no scrape is stored; status ``agree``, ``disagree``, or ``not_compared`` when
    the scrapes do not bracket the range (the increase is then unknown, not zero)."""
    if not rows:
        return None
    ours = {h["host"]: (h["suppressed_losers"], h["secondary_suppressed_losers"]) for h in hosts}
    out: dict[str, Any] = {"metric": METRIC_SUPPRESSED, "urls": sorted({r["url"] for r in rows}),
                           "analysis": sum(p + s for p, s in ours.values()),
                           "basis": "the metric counts an attempt when it ends, the analysis by its race's time, so "
                                    "races across the range's ends can differ; the metric counts every model and "
                                    "escrow of the gateway scraped, the analysis the races in the logs read"}
    unbracketed = sorted({r["url"] for r in rows if not r["bracketed"]})
    if unbracketed:
        out.update(status="not_compared", gateway=None,
                   summary=f"suppressed losers not compared with {METRIC_SUPPRESSED}: no scrape of "
                           f"{', '.join(unbracketed)} at or before {utc_text(since)} and another at or after "
                           f"{utc_text(until)}, so the metric's increase over the range is unknown")
        return out
    theirs: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0])
    for r in rows:
        if r["participant"] is not None:
            theirs[r["participant"]][0 if r["role"] == "primary" else 1] += r["increase"]
    by = []
    for who in sorted(set(ours) | set(theirs)):
        a, g = ours.get(who, (0, 0)), [_count(x) for x in theirs.get(who, [0, 0])]
        if sum(a) or sum(g):
            by.append({"participant": who, "analysis": sum(a), "gateway": sum(g),
                       "analysis_primary": a[0], "gateway_primary": g[0]})
    differ = [b for b in by if b["analysis"] != b["gateway"] or b["analysis_primary"] != b["gateway_primary"]]
    gateway = _count(sum(sum(v) for v in theirs.values()))
    out.update(status="disagree" if differ else "agree", gateway=gateway, by_participant=by,
               disagreements=[b["participant"] for b in differ])
    out["summary"] = (f"suppressed losers: the analysis counts {out['analysis']}, the gateway's {METRIC_SUPPRESSED} "
                      f"rose by {gateway} over the range" + (
                          f"; they disagree for {', '.join(out['disagreements'])}" if differ else ": they agree"))
    return out


def _beaten(beaten_rows: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    """Per primary host: who won the races it lost, by decision and the winner's start reason."""
    beaten: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for b in beaten_rows:
        beaten[b["primary_host"]].append({k: b[k] for k in ("decision", "winner_host", "winner_start_reason",
                                                             "races", "rescued", "primary_suppressed")})
    return beaten


def _notes(facts: dict[str, Any], options: Options, shown: list[dict[str, Any]], since: datetime | None,
           until: datetime | None) -> list[str]:
    """What the reader needs to know about the logs read and the participant asked for."""
    notes: list[str] = []
    if options.participant and not shown:
        notes.append(f"{options.participant} took part in no race in this range (network figures still cover all hosts)")
    if facts["time_resolution"] == "second":
        notes.append("the log lines' times have 1 s resolution (plain Go log prefix, no Docker or slog time): "
                     "wasted seconds and first-token times are whole-second readings, each within ±1 s")
    if facts["races_primary_inferred"]:
        notes.append(f"{facts['races_primary_inferred']} race(s) have no decision_made line in the logs read: "
                     "their primary is the lowest nonce (nonces are assigned in order)")
    if not facts["cache_lines"]:
        notes.append("no cache line (gateway_cache_hit, _miss, _stored) in the logs read: cache_hits 0 is none "
                     "logged (the cache off, or a gateway that does not log it), and user_requests the races")
    if facts["races_without_time"] and (since or until):
        notes.append(f"{facts['races_without_time']} race(s) have no time (lines without a timestamp) and "
                     "cannot be placed in the range: not counted")
    return notes


def _unresponsive(unresp: list[dict[str, Any]]) -> dict[str, Any]:
    """The primary_unresponsive decisions, and those whose primary then finished normally."""
    fp = [u for u in unresp if u["false_positive"]]
    return {"decisions": len(unresp), "false_positives": len(fp),
            "false_positive_share": _share(len(fp), len(unresp)),
            "examples": [{"request": u["request"], "time": u["race_ts"], "primary_host": u["primary_host"],
                          "receipt_ms": u["receipt_ms"], "ttft_ms": u["ttft_ms"], "winner": u["winner"],
                          "winner_host": u["winner_host"]} for u in fp[:10]],
            "rule": "a primary_unresponsive decision whose primary then delivered its first token and "
                    "finished normally (race_completed finished=true responsive=true)"}


DURATION_BASIS_LOGGED = "attempt_ms"
DURATION_BASIS_STAGES = "stage_lines_where_attempt_ms_disagrees"
DISAGREE_MS = 1000          # more than the lines' whole-second resolution can explain


def attempt_durations(row: dict[str, Any]) -> dict[str, Any]:
    """How often race_completed's attempt_ms disagrees with the attempt's own stage lines by more
    than DISAGREE_MS (#1935), from queries/hedging_attempt_durations.sql's row, and the basis of
    the durations the figures use: ``attempt_ms`` when no attempt of the range disagrees (every
    figure is then the logged one), else the stage lines for those that do."""
    n = {k: int(row[k] or 0) for k in ("attempts", "stage_timed", "with_attempt_ms", "disagreements",
                                        "loser_ends_from_stage_lines")}
    moved = n["disagreements"] or n["loser_ends_from_stage_lines"]
    out = {**n, "disagreement_share": _share(n["disagreements"], n["with_attempt_ms"]),
           "threshold_ms": DISAGREE_MS,
           "attempt_seconds_logged": _num(row["attempt_seconds_logged"]),
           "attempt_seconds_used": _num(row["attempt_seconds_used"]),
           "basis": DURATION_BASIS_STAGES if moved else DURATION_BASIS_LOGGED,
           "rule": (f"an attempt's duration is race_completed's attempt_ms unless its started and end-of-stream "
                    f"lines (send_completed, send_failed, empty_stream, error_stream) span a time that differs by "
                    f"more than {DISAGREE_MS} ms: then that span (gateway v5.1.0 measured attempt_ms, and logged "
                    "race_completed, when the whole request settled, #1935); a loser's wasted time ends at its "
                    f"end-of-stream line when its race_completed line came more than {DISAGREE_MS} ms later"),
           "examples": [_clean(dict(e)) for e in row["examples"]]}
    out["summary"] = (f"attempt durations: race_completed attempt_ms disagrees by more than {DISAGREE_MS} ms with the "
                      f"attempt's own stage lines for {n['disagreements']} of {n['with_attempt_ms']} attempts "
                      f"(#1935): the figures use the stage lines for those ({out['attempt_seconds_used']:,} "
                      f"attempt-seconds instead of {out['attempt_seconds_logged']:,} logged)"
                      + (f"; {n['loser_ends_from_stage_lines']} loser(s)' waste measured to the end of their stream"
                         if n["loser_ends_from_stage_lines"] else ""))
    return out


def _totals(total: dict[str, Any], facts: dict[str, Any], predictions: dict[str, Any],
            hosts: list[dict[str, Any]]) -> dict[str, Any]:
    """The range's totals, with the time resolution, what the rescues saved
    (queries/hedging_predictions.sql's rescue_*) and the losers that failed after their
    suppression (the gateway's failed_not_finished, not suppressed)."""
    totals = {k: v for k, v in total.items() if k != "hour"}
    totals["failed_after_suppression"] = sum(h["failed_after_suppression"] + h["secondary_failed_after_suppression"]
                                             for h in hosts)
    totals["time_resolution"] = facts["time_resolution"]
    totals["rescue_latency_saved_seconds"] = (round(int(predictions["rescue_latency_saved_ms"]) / 1000, 3)
                                              if predictions["rescues_timed"] else None)
    totals["rescues_primary_never_delivered"] = predictions["rescues_primary_never_delivered"]
    return totals


def _header(what: str, since: datetime | None, until: datetime | None, totals: dict[str, Any],
            pred: dict[str, Any], unresp: dict[str, Any], cache_logged: bool = True) -> list[tuple[str, str]]:
    return [("range", f"{what}: {utc_text(since)} … {utc_text(until)}"),
            ("races", f"{totals['races']} ({totals['hedged_races']} hedged, {totals['rescues']} rescues; "
                      + (f"{totals['cache_hits']} cache hits)" if cache_logged else "no cache line logged)")),
            ("attempts per request", str(totals["attempts_per_request"])),
            ("wasted attempt-seconds", f"{totals['wasted_seconds']:,} of {totals['attempt_seconds']:,} "
                                       f"({_pct(totals['wasted_seconds_share'])})"),
            ("wasted output bytes", f"{totals['wasted_bytes']:,} of {totals['output_bytes']:,} "
                                    f"({_pct(totals['wasted_bytes_share'])})"),
            ("prediction right", f"{pred['prediction_right']} of {pred['evaluable_races']} evaluable hedged races "
                                 f"({_pct(pred['prediction_right_share'])})"),
            ("primary_unresponsive", f"{unresp['false_positives']} of {unresp['decisions']} decisions fired on a "
                                     "primary that then finished normally")]


HOST_KEYS = ("host", "label", "label_status", "primary_races", "primary_wins", "primary_losses", "primary_rescued",
             "primary_no_winner", "loss_rate", "suppressed_losers", "suppressed_losers_completed",
             "failed_after_suppression", "secondary_attempts", "secondary_wins", "secondary_suppressed_losers",
             "secondary_failed_after_suppression", "wasted_seconds",
             "wasted_attempts", "wasted_time_unknown", "wasted_chunks", "wasted_bytes", "wasted_tokens",
             "attempt_seconds", "output_bytes", "beaten_by")


def _race_json(r: dict[str, Any]) -> dict[str, Any]:
    out = {k: r[k] for k in RACE_KEYS}
    out["predicted_winner"] = r.get("predicted_winner")
    out["loss_predictable"] = r.get("loss_predictable")
    out["attempts"] = r["attempts"]
    return out


def _all_races_hint(since: datetime | None, until: datetime | None, participant: str | None = None,
                    labels: list[str] | None = None) -> str:
    """Where every race of the range is: the hedging command that lists them (the epoch report
    has no --all-races of its own), and the rows in the store (queries/hedging_races.sql's rule:
    a hedged race whose time is in [since, until); with --participant, one its hosts ``labels``
    took part in)."""
    hosts = [] if labels is None else [
        "request IN (SELECT request FROM hedge_attempts WHERE NOT probe AND host IN ("
        + (", ".join("'" + x.replace("'", "''") + "'" for x in labels) or "NULL") + "))"]
    where = " AND ".join(["hedged", *([f"race_ts >= '{utc_text(since)}'"] if since else []),
                          *([f"race_ts < '{utc_text(until)}'"] if until else []), *hosts])
    command = " ".join(["auditor hedging", *([f"--since {utc_text(since)}"] if since else []),
                        *([f"--until {utc_text(until)}"] if until else []),
                        *([f"--participant {participant}"] if participant else []), "--all-races"])
    return (f"{command} lists them all; so does auditor sql \"SELECT * FROM hedge_races WHERE {where}\" "
            "(their attempts: hedge_attempts)")


def _listed_races(store: Any, args: dict[str, Any], listed: int | None, page: int | None = None,
                  offset: int = 0, hosts: list[str] | None = None) -> list[dict[str, Any]]:
    """The hedged races of the range the JSON lists, in time order, with their attempts: the
    ``listed`` with the most wasted work, or every one (None); ``page`` of them from the
    ``offset``-th on (None: all); those with an attempt of one of ``hosts`` (None: every race)."""
    if hosts is not None and not hosts:
        return []
    races = store.query("hedging_races", **args, listed=listed, page=page, offset=offset, hosts=hosts)
    if not races:
        return []
    return group_races(races, store.query("hedging_race_attempts", **args, requests=[r["request"] for r in races],
                                          min_samples=MIN_SAMPLES, clear_ratio=CLEAR_RATIO))


def _race_pages(store: Any, args: dict[str, Any], hosts: list[str] | None = None) -> Iterator[list[dict[str, Any]]]:
    """Every hedged race of the range (of ``hosts``: _listed_races), as the JSON lists them,
    RACES_PER_PAGE at a time (``--all-races``: a busy day's 220 k races are never held at once)."""
    for offset in itertools.count(0, RACES_PER_PAGE):
        page = _listed_races(store, args, None, RACES_PER_PAGE, offset, hosts)
        yield [_race_json(r) for r in page]
        if len(page) < RACES_PER_PAGE:
            return


def _most_waste(races: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The races, the most wasted work first (a stable sort: ties keep their order)."""
    return sorted(races, key=lambda r: -sum((a["wasted_ms"] or 0) for a in r["attempts"]))


def _pct(x: float | None) -> str:
    return "unknown" if x is None else f"{x:.1%}"


def _unavailable(epoch: int | None, reason: str) -> Result:
    """No answer, said plainly: the hedging command exits 3; in the epoch report the
    section says why and the report is not made incomplete by an optional source."""
    return Result(KEY, TITLE, {"epoch": epoch, "available": False, "reason": reason}, [Table(TITLE, [], [], [reason])],
                  coverage={"sources": ["gateway_log"], "missing": [reason]}, unavailable=reason)


def _tables(hosts, beaten_rows, decisions, totals, per_hour, pred, cfs, listed, in_range, in_json, unresp, notes,
            narrowed: bool = False) -> list[Table]:
    """The tables; ``narrowed`` (--participant): the per-host tables keep the rows of ``hosts``
    alone (a race, a pair or an example it took part in), the per-decision and the totals stay
    the network's."""
    labels = {h["label"] for h in hosts}

    def ours(*hosts_of_row: str | None) -> bool:
        return not narrowed or bool(labels & set(hosts_of_row))

    beaten_rows = [b for b in beaten_rows if ours(b["primary_host"], b["winner_host"])]
    pred = {**pred, "hosts": [h for h in pred["hosts"] if ours(h["label"])]}
    unresp = {**unresp, "examples": [x for x in unresp["examples"] if ours(x["primary_host"], x["winner_host"])]}
    host_cols = ["host", "label", "primary_races", "primary_wins", "primary_losses", "primary_rescued",
                 "primary_no_winner", "loss_rate", "suppressed_losers", "secondary_attempts", "secondary_wins",
                 "secondary_suppressed_losers", "wasted_seconds", "wasted_bytes"]
    t_hosts = Table("Hosts: as primary and as secondary", host_cols, [{c: h[c] for c in host_cols} for h in hosts],
                    notes=list(notes), narrow=["host", "primary_rescued", "wasted_bytes"],
                    priority=["label", "primary_races", "primary_losses", "suppressed_losers", "wasted_seconds",
                              "loss_rate"])
    shown_beaten, per_primary = [], defaultdict(int)
    for b in beaten_rows:                       # the query orders each primary's rows by races, most first
        per_primary[b["primary_host"]] += 1
        if per_primary[b["primary_host"]] <= BEATEN_TABLE_ROWS:
            shown_beaten.append(b)
    t_beaten = Table("Who beat each primary, under which decision",
                     ["primary_host", "decision", "winner_host", "winner_start_reason", "races", "rescued",
                      "primary_suppressed"], shown_beaten,
                     notes=[f"the {BEATEN_TABLE_ROWS} commonest per primary host: {len(shown_beaten)} of "
                            f"{len(beaten_rows)} rows; all in --format json (hosts[].beaten_by)"]
                     if len(shown_beaten) < len(beaten_rows) else [])
    dec_cols = ["decision", "races", "races_started", "extra_won", "extra_attempts", "extra_wasted",
                "extra_wasted_share", "primaries_suppressed", "rescues", "wasted_seconds"]
    started = sum(d["races_started"] for d in decisions)
    later = (totals.get("hedged_races") or 0) - started
    t_dec = Table("Per decision reason", dec_cols, [{c: d[c] for c in dec_cols} for d in decisions],
                  priority=["decision", "races", "extra_wasted", "wasted_seconds", "extra_won"],
                  # a reader adds races_started up to the hedged races: say where the rest went
                  notes=[f"races_started: races whose decision started an extra attempt, {started:,} of the "
                         f"{totals['hedged_races']:,} hedged; the other {later:,} have a secondary their "
                         "decision did not start (a later escalation: attempt_failed, a timeout, ...; or no "
                         f"decision_made line read); rescues and wasted_seconds count the races_started only "
                         f"(the totals: {totals['rescues']:,} rescues, {totals['wasted_seconds']:,} wasted seconds)"]
                  if later > 0 else [])
    tot_cols = ["hour", "races", "attempts", "attempts_per_request", "hedged_races", "rescues", "suppressed_losers",
                "attempt_seconds", "wasted_seconds", "wasted_seconds_share", "output_bytes", "wasted_bytes",
                "wasted_bytes_share", "wasted_tokens_share"]
    tot_rows = [{**{c: totals.get(c) for c in tot_cols}, "hour": "range"}] + \
               [{c: r.get(c) for c in tot_cols} for r in per_hour]
    t_tot = Table("Totals over the range and per hour", tot_cols, tot_rows,
                  notes=[f"time resolution of the lines: {totals['time_resolution']}"],
                  priority=["hour", "races", "wasted_seconds", "wasted_seconds_share", "suppressed_losers"])
    t_pred = Table("Predictability of losses (before dispatch)",
                   ["label", "losses", "with_prediction", "predictable", "predictable_share"], pred["hosts"],
                   priority=["label", "predictable", "losses", "predictable_share"],
                   notes=["losses: a host's losses as primary that no rescue explains (the hosts table's "
                          "primary_losses less primary_rescued)", pred["rule"],
                          f"prediction right in {pred['prediction_right']} of {pred['evaluable_races']} "
                          "evaluable hedged races"])
    cf_cols = ["remedy", "races", "attempts_saved", "attempt_seconds_saved", "output_bytes_saved", "latency_worse",
               "latency_added_seconds", "latency_better", "latency_saved_seconds", "latency_unknown", "would_fail"]
    t_cf = Table("Counterfactuals of the remedies", cf_cols, [{c: s[c] for c in cf_cols} for s in cfs],
                 priority=["remedy", "attempt_seconds_saved", "attempts_saved", "latency_added_seconds", "would_fail"],
                 notes=[f"{s['remedy']}: {s['applies_to']}; " + "; ".join(s["assumptions"]) for s in cfs]
                 + ["thresholds: " + ", ".join(f"{k}={v}" for k, v in thresholds().items())])
    top = _most_waste(listed)[:RACE_TABLE_ROWS]
    race_rows = []
    for r in top:
        losers = [a for a in r["attempts"] if a["wasted"]]
        race_rows.append({
            "time": r["race_ts"], "request": r["request"], "decision": r["decision"],
            "attempts": ", ".join(f"{a['host']}({a['role'][0]}{'*' if a['winner'] else ''})" for a in r["attempts"]),
            "winner": r["winner_host"], "rescue": r["rescue"],
            "wasted_seconds": round(sum((a["wasted_ms"] or 0) for a in losers) / 1000, 3),
            "wasted_bytes": sum((a["output_bytes"] or 0) for a in losers),
            "loss_predictable": r.get("loss_predictable")})
    # what the JSON lists (in_json: RACES_LISTED, or every race with --all-races)
    in_json_text = f"the JSON lists {in_json}" + (", all with --all-races" if in_json < in_range else ": all")
    title = (f"Hedged races, most waste first (top {min(RACE_TABLE_ROWS, in_range)} of {in_range}; "
             f"{in_json_text})") if not narrowed else (
        f"Hedged races with {', '.join(sorted(labels)) or 'the participant'}, most waste first (top "
        f"{len(race_rows)} of their {in_range}; {in_json_text})")
    t_races = Table(title,
                    ["time", "request", "decision", "attempts", "winner", "rescue", "wasted_seconds", "wasted_bytes",
                     "loss_predictable"], race_rows,
                    notes=["attempts: host(p = primary, s = secondary; * = winner)"], narrow=["request"],
                    priority=["time", "wasted_seconds", "wasted_bytes", "winner", "decision", "attempts"])
    t_unresp = Table("primary_unresponsive false positives (#2103)",
                     ["request", "time", "primary_host", "receipt_ms", "ttft_ms", "winner", "winner_host"],
                     unresp["examples"],
                     priority=["time", "primary_host", "receipt_ms", "ttft_ms", "winner"],
                     notes=[f"{unresp['false_positives']} of {unresp['decisions']} decisions; {unresp['rule']}"]
                     # ttft is two lines' times apart; receipt_ms is a field the gateway measured
                     + (["ttft_ms: started -> first_token from lines timed to the whole second: each within "
                         "±1,000 ms (0: under a second), where receipt_ms is the gateway's own measure"]
                        if totals["time_resolution"] == "second" else []))
    return [t_hosts, t_beaten, t_dec, t_tot, t_pred, t_cf, t_unresp, t_races]


# -- what the registry reads of a result (analyses/registry.py): its charts and metrics ---------
def charts(result: Result) -> list:
    """Wasted attempt-seconds per hour, one bar per decision reason."""
    from ..result import Chart
    from .frame import chart_time

    rows = result.data["wasted_by_hour_and_decision"]
    if not rows:
        return []
    hour = {r["hour"]: chart_time(r["hour"]).strftime("%m-%d %H:00") for r in rows}
    decisions = list(dict.fromkeys(r["decision"] for r in rows))
    series = [{"name": d, "points": [[hour[r["hour"]], r["wasted_seconds"]] for r in rows if r["decision"] == d]}
              for d in decisions]
    return [Chart("Wasted attempt-seconds per hour, by decision reason", "bar", "hour (UTC)", "attempt-seconds",
                  series)]


def metrics(result: Result):
    for h in result.data["hosts"]:
        if h["wasted_seconds"] is not None:
            yield "auditor_wasted_attempt_seconds", (str(h["host"] or h["label"]),), h["wasted_seconds"]
