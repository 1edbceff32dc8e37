"""The epoch report's header sections: heights and times, models and weights,
confirmation PoC events and their windows, and the preserved nodes of each episode."""

from __future__ import annotations

from ..result import Section, Table
from ..store import Store


def heights(store: Store, epoch: int, participant: str | None = None) -> Section:
    rows = store.query("epoch_heights", epoch=epoch)
    notes = []
    if any(r["time"] is None for r in rows):
        notes.append("— = block time not collected (height not reached yet, or the node could not serve it).")
    return Section("heights", rows, [Table("Heights", ["name", "height", "time"], rows, notes)])


def models(store: Store, epoch: int, participant: str | None = None) -> Section:
    rows = store.query("epoch_models", epoch=epoch)
    cols = ["model_id", "members", "nodes", "total_weight", "w_m", "weight_scale_factor",
            "poc_slot_allocation", "preserved_target"]
    notes = ["w_m = sum of ml_nodes poc_weight (raw model units); preserved_target = "
             "trunc(poc_slot_allocation x w_m), the chain's per-model target."]
    return Section("models", rows, [Table("Models", cols, rows, notes)])


def cpoc_events(store: Store, epoch: int, participant: str | None = None) -> Section:
    rows = store.query("epoch_cpoc_events", epoch=epoch)
    cols = ["event_sequence", "phase", "trigger_height", "gen_start", "gen_end", "val_start", "val_end",
            "gen_start_time", "val_end_time"]
    notes = ["Grace period [trigger, gen_start); generation [gen_start, gen_end]; validation "
             "[val_start, val_end]. Only preserved hosts serve from trigger to val_end."]
    return Section("cpoc_events", rows, [Table("Confirmation PoC events", cols, rows, notes)])


def preserved_nodes(store: Store, epoch: int, participant: str | None = None) -> Section:
    summary = store.query("epoch_preserved_by_model", epoch=epoch)
    detail = store.query("epoch_preserved_nodes", epoch=epoch)
    if participant:
        detail = [r for r in detail if r["participant"] == participant]
    data = {"by_model": summary, "nodes": detail}
    by_model_notes = ["Episodes: poc_start (anchor S(N)), poc_next (anchor S(N+1)), cpoc:<seq> (anchor trigger). "
                      "A snapshot whose anchor did not match is not stored (see coverage)."]
    if not participant:
        by_model_notes.append("Per-node list: --participant ADDR, or --format json.")
    tables = [
        Table("Preserved weight by episode and model",
              ["episode", "anchor_height", "model_id", "participants", "nodes", "achieved_weight",
               "target_weight", "w_m", "achieved_share"], summary, by_model_notes),
    ]
    if participant:
        tables.append(Table(f"Preserved nodes of {participant}",
                            ["episode", "model_id", "nodes", "preserved_weight", "node_ids"], detail))
    return Section("preserved_nodes", data, tables)
