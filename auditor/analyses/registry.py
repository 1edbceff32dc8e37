"""Every analysis, one record each, in report order: what ``auditor epoch N`` runs, which
commands the CLI has, which charts the html report draws, which metrics the textfile
exports, which finding codes exist, and the README's tables of all of these.

A record says what an analysis IS (its key, title, command, options, the sources it reads,
its finding codes and metric families); its module says what it
DOES: ``run(store, epoch, options[, ctx]) -> Result``, and at its end ``charts(result)``
and ``metrics(result)``, functions of its result next to the code that makes the data.
The module is imported only when the analysis runs, so ``auditor --help`` stays fast:
this file imports nothing of the package.

Adding an analysis is its module, its SQL files and one line in ``ANALYSES`` (README,
"Adding an analysis"). ``python -m auditor.analyses.registry --readme`` rewrites the
README's generated tables (between ``<!-- registry:... -->`` markers).
"""

from __future__ import annotations

import importlib
import inspect
import re
import sys
from collections.abc import Iterable
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

BASE_SUBJECT_KINDS = ("participant", "escrow", "model", "host_pair")
# what an analysis may read: the sources a collect stores (coverage's entries); a result's
# coverage may name a part of one (chain_escrows: the chain's escrows)
SOURCES = ("chain", "accounting", "gateway_log", "metrics", "host")
SOURCE_PARTS = {"chain_escrows": "chain"}


@dataclass(frozen=True)
class Code:
    """A finding code: its severities (most usual first), the kind of its subject, what it
    means, and ``action``: the next step, one line, each finding's own (``action_of``).

    ``action`` is a template: ``{subject}``, ``{model}`` and any number of the finding's
    evidence (or of its evidence's ``row``: ``{epoch}``) are filled in; a placeholder the
    finding lacks stays a word to replace (``N`` for the epoch, ``…`` else). ``when`` adds
    a clause, ``(evidence key, template)``, for a finding whose evidence has that key set
    (neither null, nor zero, nor empty)."""

    code: str
    severity: tuple[str, ...]
    subject: str
    meaning: str
    action: str = ""
    when: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class Metric:
    """A metric family of the Prometheus textfile (a gauge; ``epoch`` is its first label
    unless ``epoch`` is False: the run's own metrics, not facts of the epoch). ``help`` is its
    HELP line, ``meaning`` the README's words."""

    name: str
    labels: tuple[str, ...]
    help: str
    meaning: str
    epoch: bool = True

    def all_labels(self, mine: bool = False) -> tuple[str, ...]:
        """Its labels, the epoch first; with ``mine`` (--mine given) a per-participant family
        also has ``mine`` ("1" one of the operator's, "0" not), last."""
        return (("epoch",) if self.epoch else ()) + self.labels + (("mine",) if mine and self.per_participant else ())

    @property
    def per_participant(self) -> bool:
        return "participant" in self.labels

    def label_values(self, labels: tuple[str, ...], epoch: Any = None, mine: Any = None) -> tuple[str, ...]:
        """A sample's label values in ``all_labels`` order: ``labels`` (without epoch), the
        ``epoch`` first where it has one, and ``mine="1"/"0"`` when ``mine`` (the operator's
        addresses) is given and the family is per participant."""
        own = tuple(labels) + ((("1" if labels[self.labels.index("participant")] in mine else "0"),)
                               if mine is not None and self.per_participant else ())
        return ((str(epoch),) if self.epoch else ()) + own


@dataclass(frozen=True)
class Command:
    """An analysis's own CLI command: its name and its --help text (ending with an
    ``Example:`` block). Its flags, and the usage the README shows, are made from the
    analysis's Options class (``option`` fields, analyses/frame.py)."""

    name: str
    help: str


@dataclass(frozen=True)
class Analysis:
    """One analysis: see the module docstring."""

    key: str                                 # its key in `auditor epoch N --format json`
    title: str
    module: str                              # dotted path; imported when it runs
    summary: str = ""                        # one line: what it answers (the README's command table)
    command: Command | None = None           # None: a part of the epoch report only
    options: str | None = None               # the module's Options subclass (None: frame.Options)
    sources: tuple[str, ...] = ("chain",)    # what it reads (SOURCES): the epoch header's "no X: ... unknown"
    kept: tuple[str, ...] = ()               # views over the logs it reads from their kept tables (Store.derived)
    codes: tuple[Code, ...] = ()
    metrics: tuple[Metric, ...] = ()         # samples: the module's metrics(result)
    charts: bool = False                     # the module's charts(result) draws the html pictures
    function: str = "run"

    def load(self) -> Any:
        return importlib.import_module(self.module)

    def run(self, store: Any, epoch: int | None, options: Any = None, ctx: Any = None) -> Any:
        """Run it, as one part of the run ``ctx``: the analysis gets ``ctx`` when its ``run``
        takes one, and its own options built from ``options`` (what the epoch report shares)."""
        fn = getattr(self.load(), self.function)
        options = self.options_from(options)
        with self.reading(store):
            if ctx is not None and "ctx" in inspect.signature(fn).parameters:
                return fn(store, epoch, options, ctx=ctx)
            return fn(store, epoch, options)

    def reading(self, store: Any) -> AbstractContextManager:
        """The block in which it runs: its ``kept`` views read from their tables kept in the store."""
        return store.derived(*self.kept) if self.kept else nullcontext()

    def options_class(self) -> type:
        if self.options is None:
            from .frame import Options
            return Options
        return getattr(self.load(), self.options)

    def usage(self) -> str:
        """Its command's usage, made from its Options class (the README's command table)."""
        return self.options_class().usage(self.command.name)

    def options_from(self, options: Any) -> Any:
        """``options`` as this analysis's own options (``Options.of``): the shared fields
        (participant, since, until, mine) carried over, the rest at their defaults (what ``epoch N`` uses)."""
        return self.options_class().of(options)

    def reads(self, source: str) -> bool:
        """Whether it reads ``source`` (a coverage entry's name: chain_escrows is the chain's)."""
        return SOURCE_PARTS.get(source, source) in self.sources

    def charts_of(self, result: Any) -> list:
        return self.load().charts(result) if self.charts else []

    def samples(self, result: Any) -> Iterable[tuple[str, tuple[str, ...], float]]:
        """``(metric, label values without epoch, value)`` of this analysis's metrics."""
        return self.load().metrics(result) if self.metrics else ()


# the report's own metric families (the textfile of report daily; promfile.py sets them)
REPORT_METRICS = (
    Metric("auditor_report_complete", (), "1 when the last run's report was complete, 0 when its data was "
           "incomplete or the run failed", "1 when the last run's report was complete, 0 when it was "
           "incomplete or failed (alert on it)", epoch=False),
    Metric("auditor_report_timestamp_seconds", (), "When the last run ended (Unix time)",
           "when the last run ended, a failed one too", epoch=False),
    Metric("auditor_report_epoch", (), "The epoch the last run reported", "the epoch the last run reported "
           "(absent when a run failed before knowing it)", epoch=False),
    Metric("auditor_findings", ("code", "severity"), "Findings by code and severity",
           "findings of each code and severity"),
    Metric("auditor_findings_by_severity", ("severity",), "Findings by severity",
           "the same by severity, 0 included (alert on it)"),
)


# -- the records, in report order -----------------------------------------------------------------
# one family in two textfiles: report daily's (a settled epoch) and watch's (the running one)
REQUESTS = Metric("auditor_miss_test_requests", ("participant",),
                  "Requests of the epoch, inferences + misses (auditor watch: so far, settled and not)",
                  "requests of the epoch, inferences + misses (`auditor watch`: so far in the running epoch, "
                  "settled and not): misses / requests is the miss rate")

ANALYSES: list[Analysis] = [
    Analysis("heights", "Heights", "auditor.analyses.epoch_facts", function="heights"),
    Analysis("models", "Models", "auditor.analyses.epoch_facts", function="models"),
    Analysis("cpoc_events", "Confirmation PoC events", "auditor.analyses.epoch_facts", function="cpoc_events"),
    Analysis("preserved_nodes", "Preserved nodes", "auditor.analyses.preserved"),
    Analysis("coverage", "Coverage", "auditor.analyses.coverage",
             sources=("chain", "accounting", "gateway_log", "metrics"), kept=("log_host_lines", "log_participants"),
             metrics=(Metric("auditor_gateway_log_window_covered", ("window",),
                             "1 when the gateway logs read cover the window whole, 0 when in part or not at all",
                             "1 when the gateway logs cover the window (`epoch`, its effective span, or a "
                             "`cpoc:N`) whole, 0 when in part or not at all: a 0 makes that window's figures "
                             "(wasted seconds, remints, loads) a part of it (alert on it)"),)),
    Analysis(
        "miss_test", "Miss test", "auditor.analyses.misstest",
        summary="the chain's miss test for every participant of epoch N",
        command=Command("misstest", """\
Reproduce the chain's binomial miss test for every participant of epoch N.

\b
Example:
  auditor misstest 433 --node http://node1.gonka.ai:8000
  auditor misstest 433 --offline --format csv --output misstest-433.csv
  auditor misstest 433 --offline --participant gonka1... --fail-on error"""),
        codes=(Code("reward_zeroed_miss_test", ("error",), "participant",
                    "the miss test zeroed the epoch reward; in the epoch report with the misses the evidence "
                    "places in cPoC windows",
                    "attach `auditor epoch {epoch} --participant {subject} --format md` to an issue in gonka-ai/gonka",
                    when=(("misses_in_cpoc_windows", "; the evidence places {misses_in_cpoc_windows} misses "
                           "in its cPoC windows, a known gateway problem (#2107)"),)),
               Code("miss_test_discrepancy", ("warn",), "participant",
                    "the recomputed test fails but the chain paid",
                    "compare the chain's binom_test_p0 and counts with `auditor misstest {epoch} --participant "
                    "{subject} --format json`; a difference there is worth an issue in gonka-ai/gonka")),
        metrics=(Metric("auditor_miss_test_passed", ("participant",),
                        "1 when the recomputed miss test passed and the chain paid the reward, else 0",
                        "1 passed and paid; 0 failed, or paid 0 for another reason (an excluded host)"),
                 Metric("auditor_miss_test_verdict", ("participant", "verdict"),
                        "1 for the participant's verdict, 0 for the others",
                        "1 for its verdict (`passed`, `zeroed_by_miss_test`, `zero_for_other_reason`, "
                        "`no_requests`), 0 for the others"),
                 REQUESTS,
                 Metric("auditor_miss_test_missed_requests", ("participant",), "Missed requests in the epoch",
                        "missed requests in the epoch"),
                 Metric("auditor_miss_test_critical_misses", ("participant",), "The most misses the test allowed",
                        "the most misses the test allowed")),
        charts=True),
    Analysis(
        "poc_overload", "Preserved hosts under confirmation PoC", "auditor.analyses.poc_overload",
        summary="preserved hosts of each cPoC: weight, cap, load, misses, the miss test, the capped counterfactual",
        command=Command("poc-overload", """\
Preserved hosts under each confirmation PoC of epoch N: weight and cap, load, misses,
the miss test, and the window replayed with the proposed per-host cap.

\b
Example:
  auditor poc-overload 433 --node http://node1.gonka.ai:8000 --gateway-log /var/log/gateway/app.log
  auditor poc-overload 433 --node http://node1.gonka.ai:8000 --accounting https://gateway.example.org:9091
  auditor poc-overload 433 --offline --participant gonka1... --format json
  auditor poc-overload 433 --offline --per-10000 10 --cap-span window --fail-on error"""),
        options="PocOverloadOptions", sources=("chain", "accounting", "gateway_log", "metrics"),
        kept=("attempts", "log_ghosts", "log_host_lines", "log_participants"),
        codes=(Code("poc_overload", ("warn", "error"), "participant",
                    "a preserved host's peak in flight in a cPoC window far above its cap, with misses there; "
                    "without a log, its misses in dispatch phase `confirmation_poc` by the accounting API, a large "
                    "share of its misses; error when they flip its miss test",
                    "attach `auditor poc-overload {epoch} --participant {subject} --format md` to an issue in "
                    "gonka-ai/gonka; preserved-host pile-ups in cPoC are #2107",
                    when=(("window_flips_verdict", "; the window's misses alone flipped its miss test"),
                          ("counterfactual", "; the report holds the window replayed with the proposed cap"))),
               Code("miss_count_discrepancy", ("warn",), "participant",
                    "a gateway's accounting, or the logs in one cPoC window, count more misses for a participant "
                    "than the chain's `missed_requests` for the whole epoch",
                    "neither count is settled truth: compare `auditor poc-overload {epoch} --participant {subject} "
                    "--format json` (both numbers and their sources) and ask the gateway operator which escrows "
                    "the extra misses are on")),
        metrics=(Metric("auditor_poc_overload_peak_inflight", ("participant", "model", "episode"),
                        "Peak in-flight requests of a preserved host in a cPoC window",
                        "a preserved host's peak in flight in a cPoC window"),
                 Metric("auditor_poc_overload_cap", ("participant", "model", "episode"),
                        "The proposed per-host cap of a preserved host", "its proposed per-host cap")),
        charts=True),
    Analysis(
        "preserved_targets", "Preserved-weight targets from PoC demand", "auditor.analyses.targets",
        summary="per-model demand in PoC windows, D_m, the suggested target, fill plans, the covering "
                "`poc_slot_allocation`",
        command=Command("targets", """\
Per-model preserved-weight targets from the demand measured in PoC windows: D_m, the
suggested max(target, D_m), a largest-first fill plan and the chain's smallest-first choice.

\b
Example:
  auditor targets 433 --node http://node1.gonka.ai:8000 --gateway-log /var/log/gateway/app.log
  auditor targets --epochs 420..433 --offline --format md
  auditor targets 433 --offline --statistic p99 --headroom 1.5 --format json
  auditor targets --epochs 420..433 --offline --bundle gw-a.parquet --bundle https://gw-b.example/demand.parquet"""),
        options="TargetsOptions", sources=("chain", "gateway_log", "accounting"),
        kept=("attempts",),
        codes=(Code("preserved_capacity_short", ("warn", "info"), "model",
                    "an episode preserved less weight than the model's demand; warn when its hosts then took "
                    "misses",
                    "compare {model}'s poc_slot_allocation with the suggested target in `auditor targets {epoch} "
                    "--format md`; a governance proposal can raise it",
                    when=(("misses_in_window", "; its preserved hosts took {misses_in_window} misses in the "
                           "window"),)),),
        metrics=(Metric("auditor_preserved_target_gap_weight", ("model",),
                        "Suggested preserved target minus the chain's", "suggested preserved target minus the chain's"),),
        charts=True),
    Analysis(
        "hedging", "Hedging waste", "auditor.analyses.hedging",
        summary="races, suppressed losers, wasted work, predictability, remedies' savings, "
                "`primary_unresponsive` false positives",
        command=Command("hedging", """\
Hedging waste: races, primaries beaten by speed-up hedges, suppressed losers that ran
to completion, predictability, primary_unresponsive false positives and what the
remedies would have saved, over epoch N's span or --since/--until.

\b
Example:
  auditor hedging 433 --gateway-log '/var/log/gateway/*.log.gz' --node http://node1.gonka.ai:8000
  auditor hedging 433 --offline --format json --fail-on warn
  auditor hedging --offline --since 2026-10-23T11:35 --until 2026-10-23T11:45 --format md"""),
        options="HedgingOptions", sources=("gateway_log", "chain", "metrics"),
        kept=("attempts", "hedge_attempts", "hedge_races", "hedge_priors", "log_host_lines", "log_participants"),
        codes=(Code("suppressed_loser_waste", ("warn",), "participant",
                    "a host loses most of its primary races to a hedge, and most of those losses run to "
                    "completion as suppressed losers",
                    "add `auditor hedging {range} --format md` (the hosts that beat {subject}, the remedies' "
                    "savings) to gonka-ai/gonka #2105, the known suppressed-loser waste"),
               Code("hedge_predictable_loss", ("warn",), "participant",
                    "most of a host's losses as primary were predictable before dispatch from the gateway's "
                    "own perf window",
                    "add it to gonka-ai/gonka #2105: the gateway's own perf window predicted {predictable} of "
                    "these losses, so sending the primary to the faster host would have avoided them"),
               Code("primary_unresponsive_false_positive", ("warn",), "participant",
                    "`primary_unresponsive` fired on a host whose primary then finished normally (#2103)",
                    "add its {false_positives} false firing(s) (examples in the evidence) to gonka-ai/gonka "
                    "#2103, the known `primary_unresponsive` problem")),
        metrics=(Metric("auditor_wasted_attempt_seconds", ("host",), "Attempt-seconds of suppressed losers",
                        "attempt-seconds of suppressed losers"),),
        charts=True),
    Analysis(
        "remints", "Escrow remints", "auditor.analyses.remints",
        summary="every escrow deactivation classified spurious / legitimate / unknown, mints per model, "
                "peaks, costs",
        command=Command("remints", """\
Escrow remints: every deactivation of epoch N classified spurious (one request too large
for a healthy escrow retired it), legitimate (low balance, high nonce, epoch rotation) or
unknown (with what is missing), the replacement mints per model, unexplained mint peaks,
and what the spurious ones cost. On today's gateway (v4.1.2+) also its escrow holds (a
healthy escrow held is a spurious_hold) and the requests no escrow could fund (503).

\b
Example:
  auditor remints 396 --node http://node1.gonka.ai:8000 --gateway-log '/var/log/gateway/*.log*'
  auditor remints 396 --offline --format json --fail-on warn
  auditor remints 396 --offline --threshold 2000000 --rotation-target 4 --format md"""),
        options="RemintOptions", sources=("chain", "accounting", "gateway_log"),
        kept=("attempts", "log_requests"),
        codes=(Code("spurious_remint", ("warn",), "escrow",
                    "a healthy escrow retired and replaced because one request's reservation exceeded its "
                    "balance",
                    "attach `auditor remints {epoch} --format md` to an issue in gonka-ai/gonka citing #1799: "
                    "one request larger than the balance retired escrow {subject}"),
               Code("mint_peak", ("warn",), "model",
                    "more regular mints than rotation explains within the peak window",
                    "look for the cause of the {rest} mint(s) of {model} that rotation and legitimate deactivations "
                    "do not explain, in the gateway's logs from {start} to {end}"),
               Code("spurious_hold", ("warn",), "escrow",
                    "a healthy escrow held (gateway v4.1.2+): its balance at the hold was at or above its own "
                    "release balance, so one request's reservation failed on it (#1799's mechanism in the hold path)",
                    "attach `auditor remints {epoch} --format md` to an issue in gonka-ai/gonka citing #1799: "
                    "escrow {subject} was held with a balance of {balance} >= its release balance "
                    "{release_balance} (request and how long held in the evidence)")),
        metrics=(Metric("auditor_remint_deactivations", ("classification",), "Escrow deactivations by classification",
                        "escrow deactivations by class"),),
        charts=True),
    # a new analysis: one record here, above this line (README, "Adding an analysis")
]

# `auditor epoch N`: not an analysis but the report over all of them (epoch_report.run)
EPOCH = Analysis(
    "epoch", "Epoch report", "auditor.analyses.epoch_report",
    summary="collect what is missing for epoch N, then run every analysis: all findings ranked by severity, "
            "then one section per analysis",
    options="EpochOptions",
    command=Command("epoch", """\
Collect what is missing for epoch N, then print its report: every analysis, and
all their findings ranked by severity.

\b
Example:
  auditor epoch 433 --node http://node1.gonka.ai:8000 --gateway-log /var/log/gateway/app.log
  auditor epoch 433 --offline --participant gonka1... --format md --output epoch-433.md
  auditor epoch 433 --offline --format json --fail-on error"""),
    sources=("chain", "accounting", "gateway_log", "metrics"))


# `auditor watch`: the miss test of the running epoch, read live (not part of `auditor epoch N`,
# whose epochs are stored); its run(store, N) is the backtest of epoch N's stored readings
WATCH = Analysis(
    "watch", "Miss test of the running epoch", "auditor.analyses.watch",
    summary="the running epoch's miss test projected to its end, per participant, with the misses not yet "
            "on chain; once for cron, or re-read at an interval; `--backtest N` replays epoch N's readings",
    command=Command("watch", """\
Early warning: the chain's miss test of the running epoch, projected to its end from the
chain's counters (settled escrows) plus the misses of escrows not settled yet (--accounting,
--host). Without --once it re-reads every --interval and prints only what changed.

\b
Example:
  auditor watch --once --node http://node1.gonka.ai:8000 --accounting http://gw:9091 --fail-on warn
  auditor watch --participant gonka1... --node http://node1.gonka.ai:8000 \\
      --host http://my-host:8000/devshard/v1 --prom-textfile /var/lib/node_exporter/textfile/watch.prom
  auditor watch --backtest 433 --offline"""),
    options="WatchOptions", sources=("chain", "accounting", "host"),
    codes=(Code("miss_test_at_risk", ("warn", "error"), "participant",
                "the running epoch's miss test: error when today's counts already fail it, warn when the "
                "projection to the epoch's end fails or leaves a margin under --margin-share of the allowance",
                "check the host's failing requests now (its node's logs, `auditor watch --once --participant "
                "{subject} --format md`); the misses not yet on chain are in the gateway's accounting"),),
    metrics=(Metric("auditor_miss_test_margin", ("participant",),
                    "Misses a participant can still take at the projected end of the running epoch",
                    "`auditor watch`: misses it can still take at the projected end of the running epoch"),
             Metric("auditor_miss_test_projected_pass", ("participant",),
                    "1 when the running epoch's projected miss test passes",
                    "`auditor watch`: 1 when the projection passes, 0 when it fails"),
             REQUESTS))
LIVE: list[Analysis] = [WATCH]

# `auditor history ADDR`: one participant over several settled epochs (not part of `auditor
# epoch N`): each epoch's miss test and CPoC facts, from each epoch's whole chain data
HISTORY = Analysis(
    "history", "History of a participant", "auditor.analyses.history",
    summary="one participant over several settled epochs (default: the last 7): verdict, misses against the "
            "allowance, margin, reward, CPoC episodes preserved in, misses in cPoC windows, findings",
    command=Command("history", """One participant over several settled epochs: each epoch's miss test (the whole epoch's, as
the chain runs it), the margin (misses allowed minus missed), the reward, the CPoC episodes
in which its nodes were preserved, the misses the evidence places in cPoC windows and the
codes of its findings. Default: the last 7 settled epochs; each one the store lacks is
collected from the chain as `collect --epoch E` does.

\b
Example:
  auditor history gonka1... --node http://node1.gonka.ai:8000
  auditor history p86j0skk --epochs 420..433 --offline --format md
  auditor history gonka1... --epochs 51..56 --offline --format json"""),
    options="HistoryOptions", sources=("chain", "accounting", "gateway_log"),
    kept=("attempts", "log_ghosts", "log_host_lines", "log_participants"), charts=True)
OVER_EPOCHS: list[Analysis] = [HISTORY]


def _records() -> list[Analysis]:
    """Every record: the analyses, then the ones over several epochs, then the live ones."""
    return [*ANALYSES, *OVER_EPOCHS, *LIVE]


def by_key(key: str) -> Analysis:
    for a in _records():
        if a.key == key:
            return a
    raise KeyError(f"no analysis {key!r} in the registry")


def commands() -> list[Analysis]:
    """The records with a command of their own, ``epoch`` first, in report order."""
    return [EPOCH, *(a for a in ANALYSES if a.command is not None), *OVER_EPOCHS, *LIVE]


def codes() -> dict[str, Code]:
    return {c.code: c for a in _records() for c in a.codes}


def undeclared(code: str) -> str | None:
    """What is wrong with a finding's ``code`` that no record declares, in a sentence; None
    when one does (``Finding`` refuses an undeclared one: a code is the registry's)."""
    if code in codes():
        return None
    return (f"finding code {code!r} is not declared: add Code({code!r}, severities, subject kind, meaning, "
            f"action) to the codes of its analysis's record in auditor/analyses/registry.py")


class _Facts(dict):
    """What an action's placeholders are filled from; one it lacks stays a word to replace."""

    def __missing__(self, key: str) -> str:
        return "N" if key == "epoch" else "…"


def action_of(finding: Any) -> str | None:
    """The finding's next step: its code's ``action`` with the finding's specifics (``Code``);
    None for a code the registry does not declare."""
    code = codes().get(finding.code)
    if code is None or not code.action:
        return None
    ev = finding.evidence or {}
    row = ev.get("row") if isinstance(ev.get("row"), dict) else {}
    from ..report.numbers import identifier
    from ..times import utc_text

    def shown(k: str, v: Any) -> Any:
        if isinstance(v, datetime):
            return utc_text(v)
        if isinstance(v, int) and not isinstance(v, bool) and not identifier(k):
            return f"{v:,}"             # a quantity grouped as the summary groups it; an id or epoch not
        return v

    facts = _Facts({k: shown(k, v) for k, v in {**row, **ev}.items()
                    if v is not None and not isinstance(v, (dict, list))})
    # {range}: the run's range as its command takes it, epoch N, else --since/--until
    span = f"--since {facts['since']} --until {facts['until']}" if {"since", "until"} <= facts.keys() else "N"
    facts.update(subject=finding.subject.get("id"), model=finding.model or "…", range=facts.get("epoch", span))
    text = code.action.format_map(facts)
    for key, clause in code.when:
        if ev.get(key) not in (None, 0, False, "", [], {}):
            text += clause.format_map(facts)
    return " ".join(text.split())            # one line, whatever the evidence held


def subject_kinds() -> tuple[str, ...]:
    """The kinds a finding's subject may have: the base ones and any an analysis declares."""
    return tuple(dict.fromkeys([*BASE_SUBJECT_KINDS, *(c.subject for a in _records() for c in a.codes)]))


def metrics(*, live: bool = True) -> list[Metric]:
    """Every metric family of the textfiles, each once: the report's own, then each analysis's
    (``live=False``: report daily's alone, without the families only watch writes)."""
    records = _records() if live else ANALYSES
    return list({m.name: m for m in [*REPORT_METRICS, *(m for a in records for m in a.metrics)]}.values())


# -- the README's tables ------------------------------------------------------------------------
MARKER = re.compile(r"(<!-- registry:(?P<name>[a-z_ ]+) -->\n)(?P<body>.*?)(<!-- /registry -->)", re.S)


def _row(*cells: str) -> str:
    return "| " + " | ".join(cells) + " |"


# The CLI's commands that are not analyses (their flags are in cli.py), for the README's table:
# before the analyses and after them.
COMMANDS_BEFORE = [("collect", "`auditor collect [--epoch N]... [source flags]`",
                    "collect any combination of sources into the store"),
                   ("prune", "`auditor prune --keep-epochs N`",
                    "drop the gateway log lines older than the newest N stored epochs; every epoch's chain and "
                    "accounting stay")]
COMMANDS_AFTER = [
    ("report daily", "`auditor report daily --out DIR [--date D] [--epoch N] [--fail-on L] [--prom-textfile PATH] "
                     "[--mine ADDR]... [--retain-epochs N] [source flags]`",
     "the cron job: `DIR/<date>/report.{json,md,html}` and Prometheus metrics"),
    ("sql", "`auditor sql \"SELECT ...\" [--format table\\|json\\|csv\\|md] [--output FILE] [--allow-files]`",
     "query the store, read-only: no other file read or written unless `--allow-files`, no setting changed"),
    ("serve", "`auditor serve DIR... [--port 8000]`", "serve `--record` directories on loopback"),
    ("export demand", "`auditor export demand --epochs A..B --out FILE.parquet [--name NAME] [--per-10000 X]`",
     "one gateway's cPoC demand as a small Parquet bundle for `auditor targets --bundle` (no request ids, keys "
     "or log lines)"),
]


def commands_table() -> list[str]:
    rows = [(u, s) for _, u, s in COMMANDS_BEFORE] + [(f"`{a.usage()}`".replace("|", "\\|"), a.summary)
                                                      for a in commands()]
    return ["| command | what it does |", "|---|---|",
            *(_row(*r) for r in rows + [(u, s) for _, u, s in COMMANDS_AFTER])]


def codes_table(keys: Iterable[str] | None = None, *, exclude: Iterable[str] = ()) -> list[str]:
    chosen = [a for a in _records() if (keys is None or a.key in keys) and a.key not in set(exclude)]
    return ["| code | severity | subject | meaning | next step (the finding's `action`) |", "|---|---|---|---|---|",
            *(_row(f"`{c.code}`", " / ".join(c.severity), c.subject, c.meaning, _action_text(c))
              for a in chosen for c in a.codes)]


class _Names(dict):
    def __missing__(self, key: str) -> str:
        return key.upper()


def _action_text(code: Code) -> str:
    """A code's action as the README shows it: its placeholders as NAMES, each clause in brackets."""
    names = _Names(epoch="N")
    text = code.action.format_map(names) + "".join(f" [{c.format_map(names).lstrip('; ')}]" for _, c in code.when)
    return text.replace("|", "\\|")


def _labels_text(m: Metric) -> str:
    """A family's labels as the README's table shows them (``mine`` only with --mine)."""
    if not m.all_labels():
        return "none"
    return f"`{', '.join(m.all_labels())}`" + (" (and `mine` with --mine)" if m.per_participant else "")


def metrics_table() -> list[str]:
    return ["| metric | labels | value |", "|---|---|---|",
            *(_row(f"`{m.name}`", _labels_text(m), m.meaning)
              for m in metrics())]


def generate(readme: str) -> str:
    """``readme`` with every ``<!-- registry:NAME -->`` block rewritten from the registry.
    NAME: ``commands`` (the analysis rows of the command table), ``codes`` (every code not
    listed in a ``codes KEY`` block), ``codes KEY`` (one analysis's codes), ``metrics``."""
    names = [m.group("name").split() for m in MARKER.finditer(readme)]
    own = [n[1] for n in names if n[0] == "codes" and len(n) == 2]

    def block(m: re.Match) -> str:
        name = m.group("name").split()
        if name == ["commands"]:
            lines = commands_table()
        elif name == ["codes"]:
            lines = codes_table(exclude=own)
        elif name[0] == "codes" and len(name) == 2:
            by_key(name[1])
            lines = codes_table([name[1]])
        elif name == ["metrics"]:
            lines = metrics_table()
        else:
            raise KeyError(f"unknown registry block {m.group('name')!r}")
        return m.group(1) + "".join(line + "\n" for line in lines) + m.group(4)

    return MARKER.sub(block, readme)


def main(argv: list[str] | None = None) -> int:
    """``--readme [PATH]``: rewrite PATH's generated tables (default: the README beside the
    package); ``--check``: exit 1 when they differ from the registry."""
    args = sys.argv[1:] if argv is None else argv
    path = Path(next((a for a in args if not a.startswith("--")), Path(__file__).parents[2] / "README.md"))
    text = path.read_text(encoding="utf-8")
    new = generate(text)
    if "--check" in args:
        if new != text:
            print(f"{path}: the generated tables differ from the registry; run "
                  "python -m auditor.analyses.registry --readme", file=sys.stderr)
            return 1
        return 0
    if "--readme" in args and new != text:
        path.write_text(new, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
