"""The preserved nodes of each PoC episode of the epoch, per model and participant: the
weight the chain preserved against its per-model target (the ``preserved_nodes`` section
of ``auditor epoch N``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..result import Result, Table
from .context import Run
from .frame import Options

if TYPE_CHECKING:      # annotations only: importing the analysis (its --help) needs no DuckDB
    from ..store import Store

KEY, TITLE = "preserved_nodes", "Preserved nodes"


def run(store: Store, epoch: int, options: Options | None = None, *, ctx: Run | None = None) -> Result:
    participant = (options or Options()).participant
    summary = store.query("epoch_preserved_by_model", epoch=epoch)
    detail = store.query("epoch_preserved_nodes", epoch=epoch, participant=participant)
    data = {"by_model": summary, "nodes": detail}
    by_model_notes = ["Episodes: poc_start (anchor S(N)), poc_next (anchor S(N+1)), cpoc:<seq> (anchor trigger). "
                      "A snapshot whose anchor did not match is not stored (see coverage)."]
    if not participant:
        by_model_notes.append("Per-node list: --participant ADDR, or --format json.")
    tables = [
        Table("Preserved weight by episode and model",
              ["episode", "anchor_height", "model_id", "participants", "nodes", "achieved_weight",
               "target_weight", "w_m", "achieved_share"], summary, by_model_notes,
              priority=["episode", "model_id", "achieved_weight", "target_weight"]),
    ]
    if participant:
        tables.append(Table(f"Preserved nodes of {participant}",
                            ["episode", "model_id", "nodes", "preserved_weight", "node_ids"], detail))
    return Result(KEY, TITLE, data, tables, coverage={"sources": ["chain"], "missing": []})
