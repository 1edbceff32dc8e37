"""The coverage section: what each source obtained for the epoch, and what is missing.

One entry per source. The chain entry lists the items of the fetch plan that were
not obtained; each gateway source (accounting, gateway_log, metrics) says what it
read, what it loaded, the time range it covers and which of the epoch's windows
(the effective span and each confirmation PoC) it does not cover; the gateway log also
says which gateway generation its lines point to (``generation``). A source never
collected says so: unknown is not zero. ``run`` is the ``coverage`` section of
``auditor epoch N``; its data is also the report's top-level ``coverage``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..result import Result, Table, utc_text
from . import cpoc
from .context import Run, run_for
from .frame import Options

if TYPE_CHECKING:      # annotations only: importing the analysis (its --help) needs no DuckDB
    from ..store import Store

KEY, TITLE = "coverage", "Coverage"


def run(store: Store, epoch: int, options: Options | None = None, *, ctx: Run | None = None) -> Result:
    run_ = run_for(store, epoch, ctx)
    windows = cpoc.epoch_windows(run_)
    items = {r["source"]: r for r in store.query("coverage", epoch=epoch)}
    data: dict[str, Any] = {"chain": chain(items.get("chain"))}
    if "chain_escrows" in items:         # probed for this epoch's escrows (auditor/sources/escrows.py)
        data["chain_escrows"] = chain(items["chain_escrows"])
        # an answer is not a record: a 404 says the chain has none (never existed, or pruned)
        (found,) = store.query("coverage_chain_escrows", epoch=epoch)
        data["chain_escrows"]["loaded"].update(found=found["found"], not_found=found["not_found"])
    data["accounting"] = accounting(store, epoch, items.get("accounting"))
    data["gateway_log"] = gateway_log(store, epoch, windows, generation_of(run_))
    data["metrics"] = metrics_scrapes(store, epoch, windows)
    rows = []
    for source, entry in data.items():
        rows.append({
            "source": source,
            "collected": entry.get("collected", True),
            "loaded": _loaded_text(entry),
            "time range": " … ".join(utc_text(t) for t in entry.get("time_range") or []) or None,
            "missing": "; ".join(entry["missing"]) or None,
        })
    table = Table(TITLE, ["source", "collected", "loaded", "time range", "missing"], rows)
    return Result(KEY, TITLE, data, [table], coverage={"sources": list(data), "missing": []})


def _untimed(windows: list[dict[str, Any]]) -> list[str]:
    """One line for each window whose start or end time is not known."""
    return [f"{w['window']}: {cpoc.UNTIMED}"
            for w in windows if w["start_time"] is None or w["end_time"] is None]


def _loaded_text(entry: dict[str, Any]) -> str | None:
    loaded = entry.get("loaded")
    if not loaded:
        return None
    return ", ".join(f"{k} {v:,}" if isinstance(v, int) else f"{k} {v}" for k, v in loaded.items())


def chain(items: dict[str, Any] | None) -> dict[str, Any]:
    """``items``: this source's row of queries/coverage.sql (None when nothing was collected)."""
    return {"collected": items is not None, "loaded": {"items": items["ok"]} if items else {},
            "missing": (items["missing"] or []) if items else ["nothing collected from the chain"]}


def accounting(store: Store, epoch: int, items: dict[str, Any] | None) -> dict[str, Any]:
    (r,) = store.query("coverage_accounting", epoch=epoch)
    missing = list(items["missing"] or []) if items else []
    collected = r["participant_records"] > 0
    if not collected and not missing:
        missing = [f"no accounting records for epoch {epoch} (collect with --accounting URL)"]
    return {
        "collected": collected,
        "urls": r["urls"] or [],
        "schema_versions": r["schema_versions"] or [],
        "loaded": {"participant_records": r["participant_records"], "slot_records": r["slot_records"],
                   "counter_records": r["counter_records"]} if collected else {},
        "time_range": [r["first_updated_at"], r["last_updated_at"]] if collected else None,
        "missing": missing,
    }


def metrics_scrapes(store: Store, epoch: int, windows: list[dict[str, Any]]) -> dict[str, Any]:
    (scrapes,) = store.query("coverage_metrics_scrapes")
    if not scrapes["scrapes"]:
        return {"collected": False, "urls": [], "loaded": {}, "time_range": None, "windows": [],
                "missing": ["no metrics scraped (collect with --metrics URL)"]}
    per_window = store.query("coverage_metrics_windows", epoch=epoch)
    missing = _untimed(windows)
    for w in per_window:
        if not w["measurable"]:
            missing.append(f"{w['window']}: counters need a scrape at or before {utc_text(w['start'])} "
                           f"and one at or after {utc_text(w['end'])}")
    return {"collected": True, "urls": scrapes["urls"], "loaded": {"scrapes": scrapes["scrapes"]},
            "time_range": [scrapes["first_scrape"], scrapes["last_scrape"]], "windows": per_window,
            "missing": missing}


GENERATIONS = {
    "hold_era": "devshardctl of October 2026 (gateway v4.1.2 and later: escrow holds, funding refusals)",
    "september": "devshardctl of September 2026 (the #1799 report's; before gateway v4.1.2)",
    "successor_json": "the successor gateway's JSON logs (devshard/cmd/gateway; not read)",
}


def generation_of(run: Run) -> dict[str, Any]:
    """:func:`generation`, worked out once a run (coverage and remints both ask it)."""
    return run.shared("gateway_generation", lambda: generation(run.store))


def generation(store: Store) -> dict[str, Any]:
    """Which gateway generation the stored lines point to, from the shapes only one writes
    (``queries/coverage_gateway_log_generation.sql``): ``generation`` (hold_era, september,
    successor_json; ``mixed`` when lines of several are stored; ``september_or_hold_era`` when
    no line tells the two devshardctl generations apart), the shapes seen per generation, and
    the basis in words."""
    shapes: dict[str, dict[str, int]] = {}
    for r in store.query("coverage_gateway_log_generation"):
        shapes.setdefault(r["generation"], {})[r["shape"]] = int(r["lines"])
    seen = [g for g in GENERATIONS if g in shapes]
    # a hold-era gateway still logs the older balance-low text in some builds: the hold-era
    # shapes decide between the two devshardctl generations
    if "hold_era" in seen and "september" in seen:
        seen.remove("september")
    if not seen:
        gen, basis = "september_or_hold_era", ("no line of a shape only one devshardctl generation writes: "
                                               "the lines fit both")
    elif len(seen) == 1:
        gen = seen[0]
        basis = f"{GENERATIONS[gen]}: " + ", ".join(f"{k} {v}" for k, v in shapes[gen].items())
    else:
        gen = "mixed"
        basis = "; ".join(f"{GENERATIONS[g]}: " + ", ".join(f"{k} {v}" for k, v in shapes[g].items()) for g in seen)
    return {"generation": gen, "generation_basis": basis, "generation_shapes": shapes}


def gateway_log(store: Store, epoch: int, windows: list[dict[str, Any]],
                gen: dict[str, Any] | None = None) -> dict[str, Any]:
    """The gateway-log entry; ``gen``: the run's :func:`generation` (worked out when not given)."""
    files = store.query("coverage_gateway_log_files")
    if not files:
        return {"collected": False, "files": [], "loaded": {}, "rejected": {}, "time_range": None,
                "windows": [], "missing": ["no gateway logs ingested (collect with --gateway-log PATH)"]}
    rejected = {r["reason"]: r["lines"] for r in store.query("coverage_gateway_log_rejects")}
    first = min((f["first_ts"] for f in files if f["first_ts"] is not None), default=None)
    last = max((f["last_ts"] for f in files if f["last_ts"] is not None), default=None)
    per_window = store.query("coverage_gateway_log_windows", epoch=epoch)
    missing = _untimed(windows)
    for w in per_window:
        if not w["lines"]:
            missing.append(f"{w['window']}: no log lines between {utc_text(w['start'])} and {utc_text(w['end'])}")
        elif not w["fully_covered"]:
            gaps = (f"; inside the window, {w['stretches'] - 1} gap(s) of more than 10 minutes without a line"
                    if w["stretches"] > 1 else "")
            missing.append(f"{w['window']}: logs cover only {utc_text(w['covered_from'])} … "
                           f"{utc_text(w['covered_to'])} of {utc_text(w['start'])} … {utc_text(w['end'])}{gaps}")
    labels = store.query("coverage_host_labels")
    unresolved = [r for r in labels if r["status"] != "resolved"]
    if unresolved:
        missing.append("host labels not resolved to an address: " + ", ".join(
            f"{r['label']} ({r['status']}" + (f": {', '.join(r['candidates'])})" if r["candidates"] else ")")
            for r in unresolved))
    return {
        "collected": True,
        **(gen if gen is not None else generation(store)),
        "files": files,
        "host_labels": {"resolved": sum(r["status"] == "resolved" for r in labels),
                        "unresolved": [{k: r[k] for k in ("label", "status", "candidates")} for r in unresolved]},
        "loaded": {"files": len(files), "lines": sum(f["lines"] for f in files), "events": sum(f["events"] for f in files)},
        # files whose content has rotated out of view since it was read: their rows are kept
        "gone": [{"path": f["path"], "gone_at": f["gone_at"]} for f in files if f.get("gone")],
        "rejected": rejected,
        "time_range": [first, last] if first is not None else None,
        "windows": per_window,
        "missing": missing,
    }


# -- what the registry reads of a result (analyses/registry.py): its metrics --------------------
def metrics(result: Result):
    """Whether the gateway logs cover each window of the epoch whole (absent without logs)."""
    for w in (result.data.get("gateway_log") or {}).get("windows") or []:
        yield "auditor_gateway_log_window_covered", (w["window"],), 1 if w["fully_covered"] else 0
