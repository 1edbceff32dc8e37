"""`auditor history ADDR [--epochs A..B]`: one participant over several settled epochs.

One row per epoch: the chain's miss test as the epoch's whole test reproduces it (the dynamic
p0 reads every participant's counts, so each epoch's whole chain data is collected, as
``collect --epoch E`` does), the margin (misses allowed minus missed), what it was paid, the
CPoC episodes in which its nodes were preserved, the misses the evidence places in those
windows (null where no log or accounting says), and the codes of its findings. Default: the
last 7 settled epochs (the node's, asked of it; offline, the store's that hold the
participant). An epoch the store does not hold after collecting is said, by number, in
``coverage.missing`` (exit 3).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..result import FAIL_COLOUR, PASS_COLOUR, Chart, Finding, Result, Table, ranked
from . import cpoc
from .context import Run
from .frame import Arg, Call, Options, chart_label, epoch_state, option
from .targets import epochs_text, parse_epoch_range

KEY = "history"
TITLE = "History"
DEFAULT_EPOCHS = 7
COLUMNS = ["epoch", "verdict", "total", "missed", "critical_misses", "margin", "p0", "rewarded_coins", "preserved",
           "misses_in_cpoc_windows", "findings"]


@dataclass(frozen=True)
class HistoryOptions(Options):
    """``auditor history ADDR [--epochs A..B]``: the participant is the command's argument."""

    epochs: str | None = option(None, "--epochs", "Epochs A to B (inclusive), or one epoch N. [default: the last 7 settled epochs]",
                                metavar="A..B")

    EPOCH = Arg(name="participant", kind=str, metavar="ADDR", help="The participant: its address, or the label "
                "the tables print (p86j0skk) when one stored address fits.")
    WITHOUT = ("participant",)          # the argument, not a flag

    @classmethod
    def call(cls, epoch: int | None, **values: Any) -> Call:
        """The arguments as a :class:`frame.Call` (its epoch None: the address is checked against
        every stored epoch): the epochs to collect and read are ``--epochs A..B``, else picked
        with the sources (``pick``) before anything is collected."""
        options = cls(**values)
        if options.epochs is None:
            return Call(None, options, collect=(), pick=_pick)
        first, last = parse_epoch_range(options.epochs)
        span = tuple(range(first, last + 1))
        return Call(None, options, collect=span, run=lambda store, _e, opts: run(store, span, opts))


def _pick(call_: Call, sources: Any, store: Any) -> Call:
    """The last ``DEFAULT_EPOCHS`` settled epochs: the node's (its latest settled epoch, as
    ``report daily`` asks it), else those of the store that hold the participant."""
    from ..collect import resolved
    from ..daily import latest_settled_on_chain

    last = None
    if not sources.offline and (sources.nodes or sources.replay):
        with resolved(sources) as s:
            if s.nodes:
                last = latest_settled_on_chain(s)
    if last is not None:
        span = tuple(range(max(0, last - DEFAULT_EPOCHS + 1), last + 1))
    else:
        held = [r["epoch"] for r in store.query("history_epochs", participant=call_.options.participant,
                                                  n=DEFAULT_EPOCHS)]
        span = tuple(sorted(held))
    return Call(None, call_.options, collect=span, run=lambda store_, _e, opts: run(store_, span, opts))


def run(store: Any, epochs: tuple[int, ...], options: Options) -> Result:
    """The rows of ``epochs`` for ``options.participant``."""
    from .registry import by_key

    address = options.participant
    assert address is not None
    rows: list[dict[str, Any]] = []
    findings: list[Finding] = []
    absent: list[int] = []
    unsettled: list[int] = []
    unknown: list[str] = []
    for epoch in epochs:
        state = epoch_state(store, epoch)
        if state is None:
            absent.append(epoch)
            continue
        if not state[0]:
            unsettled.append(epoch)
        row, found = _epoch_row(store, epoch, address, by_key)
        rows.append(row)
        if (row["misses_in_cpoc_windows_is"] or "").startswith("a lower bound"):
            unknown.append(f"epoch {epoch}: misses_in_cpoc_windows {row['misses_in_cpoc_windows']:,} is "
                           f"{row['misses_in_cpoc_windows_is']}")
        findings.extend(found)
        if row["verdict"] is None:
            unknown.append(f"epoch {epoch}: no performance summary of {address} (not active in that epoch)")
    missing = [f"epochs not in the store: {epochs_text(absent)} (their chain data: collect it with --node URL, "
               f"as auditor collect --epoch E does)"] if absent else []
    if not epochs:
        missing.append(f"no settled epoch with a performance summary of {address} is stored: give --node URL "
                       "(its last settled epochs are collected) or --epochs A..B")
    if unsettled:
        unknown.append(f"epochs not settled yet: {epochs_text(unsettled)} (their rewards may not be final)")
    data = {"participant": address, "first": epochs[0] if epochs else None, "last": epochs[-1] if epochs else None,
            "epochs": rows}
    header = [("participant", address),
              ("epochs", epochs_text(list(epochs)) if epochs else "none stored"),
              ("failed", str(sum(1 for r in rows if r["verdict"] not in (None, "passed", "no_requests"))))]
    table = Table(f"{TITLE} of {address}", COLUMNS, [{**r, "findings": ", ".join(r["findings"])} for r in rows],
                  notes=[*missing, *unknown], priority=["epoch", "verdict", "missed", "critical_misses", "margin"],
                  failing=lambda r: r["verdict"] not in (None, "passed", "no_requests"))
    coverage = {"sources": ["chain", "gateway_log", "accounting"], "missing": missing, "unknown": unknown}
    return Result(KEY, f"{TITLE} of {address}", data, [table], ranked(findings), coverage,
                  complete=not missing, header=header)


def _epoch_row(store: Any, epoch: int, address: str, by_key: Any) -> tuple[dict[str, Any], list[Finding]]:
    """One epoch: its whole miss test for ``address``, and the CPoC facts, in one run."""
    from .poc_overload import PocOverloadOptions

    ctx = Run(store, epoch, analyses=["miss_test", "poc_overload"])
    mt = by_key("miss_test").run(store, epoch, Options(participant=address), ctx=ctx)
    me = next(iter(mt.data.get("participants") or []), None) if isinstance(mt.data, dict) else None
    found = list(mt.findings)
    po = by_key("poc_overload").run(store, epoch, PocOverloadOptions(participant=address), ctx=ctx)
    seen = {(f.code, f.subject["id"]) for f in found}
    found += [f for f in po.findings if (f.code, f.subject["id"]) not in seen]
    with store.derived(*by_key("poc_overload").kept):
        evidence = cpoc.miss_evidence(ctx)
        episodes = None if evidence is None else len(
            {w["episode"] for w in cpoc.host_windows(ctx) if w["participant"] == address})
    windows = basis = None
    if evidence is not None:
        c = evidence[0].get(address) or {}
        basis = cpoc.misses_basis(c)
        windows = c.get("misses_in_cpoc_windows") if basis is not None else None
    missed = None if me is None else me["missed"]
    allowed = None if me is None else me["critical_misses"]
    return {
        "epoch": epoch,
        "verdict": None if me is None else me["verdict"],
        "total": None if me is None else me["total"],
        "missed": missed,
        "critical_misses": allowed,
        "margin": None if missed is None or allowed is None else int(allowed) - int(missed),
        "p0": None if me is None else me["p0"],
        "rewarded_coins": None if me is None else me["rewarded_coins"],
        "preserved": episodes,
        "misses_in_cpoc_windows": windows,
        "misses_in_cpoc_windows_is": basis,
        "findings": sorted({f.code for f in found}),
    }, found


def charts(result: Result) -> list:
    """Missed against allowed, per epoch: a failing epoch's bar red."""
    rows = [r for r in result.data["epochs"] if r["missed"] is not None]
    if not rows:
        return []
    failed = [r for r in rows if r["critical_misses"] is not None and r["missed"] > r["critical_misses"]]
    ok = [r for r in rows if r not in failed]
    return [Chart(f"Missed against allowed per epoch: {chart_label(result.data['participant'])}", "bar",
                  "epoch", "requests",
                  [{"name": "missed (failed)", "colour": FAIL_COLOUR, "points": [[str(r["epoch"]), r["missed"]]
                                                                                  for r in failed]},
                   {"name": "missed", "colour": PASS_COLOUR, "points": [[str(r["epoch"]), r["missed"]] for r in ok]},
                   {"name": "allowed", "colour": "#7f7f7f",
                    "points": [[str(r["epoch"]), r["critical_misses"]] for r in rows
                               if r["critical_misses"] is not None]}])]
