"""The epoch's facts from the chain, as the first sections of ``auditor epoch N``:
heights and block times, models and weights, confirmation PoC events and their windows.
Each is an analysis without findings (``run(store, epoch, options) -> Result``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..result import Result, Table
from . import cpoc
from .context import Run, run_for
from .frame import Options

if TYPE_CHECKING:      # annotations only: importing the analysis (its --help) needs no DuckDB
    from ..store import Store

HEIGHTS, MODELS, CPOC_EVENTS = "heights", "models", "cpoc_events"


def heights(store: Store, epoch: int, options: Options | None = None, *, ctx: Run | None = None) -> Result:
    rows = store.query("epoch_heights", epoch=epoch)
    notes = []
    if any(r["time"] is None for r in rows):
        notes.append("— = block time not collected (height not reached yet, or the node could not serve it).")
    return _fact(HEIGHTS, "Heights", rows, Table("Heights", ["name", "height", "time"], rows, notes))


def models(store: Store, epoch: int, options: Options | None = None, *, ctx: Run | None = None) -> Result:
    rows = store.query("epoch_models", epoch=epoch)
    cols = ["model_id", "members", "nodes", "total_weight", "w_m", "weight_scale_factor",
            "poc_slot_allocation", "preserved_target"]
    notes = ["w_m = sum of ml_nodes poc_weight (raw model units); preserved_target = "
             "trunc(poc_slot_allocation x w_m), the chain's per-model target."]
    return _fact(MODELS, "Models", rows, Table("Models", cols, rows, notes))


EVENT_COLUMNS = ["event_sequence", "phase", "trigger_height", "gen_start", "gen_end", "val_start", "val_end",
                 "trigger_time", "gen_start_time", "gen_end_time", "val_start_time", "val_end_time"]


def cpoc_events(store: Store, epoch: int, options: Options | None = None, *, ctx: Run | None = None) -> Result:
    """The epoch's CPoC events and their windows: the run's events (cpoc.events), not read again."""
    rows = [{c: e[c] for c in EVENT_COLUMNS} for e in cpoc.events(run_for(store, epoch, ctx))]
    cols = ["event_sequence", "phase", "trigger_height", "gen_start", "gen_end", "val_start", "val_end",
            "gen_start_time", "val_end_time"]
    notes = ["Grace period [trigger, gen_start); generation [gen_start, gen_end]; validation "
             "[val_start, val_end]. Only preserved hosts serve from trigger to val_end."]
    return _fact(CPOC_EVENTS, "Confirmation PoC events", rows, Table("Confirmation PoC events", cols, rows, notes))


def _fact(key: str, title: str, rows: list[dict], table: Table) -> Result:
    return Result(key, title, rows, [table], coverage={"sources": ["chain"], "missing": []})
