"""The coverage section: what each source obtained for the epoch and what is missing."""

from __future__ import annotations

from ..model import Section, Table
from ..store import Store


def section(store: Store, epoch: int, participant: str | None = None) -> Section:
    rows = store.query("coverage", epoch=epoch)
    data = {r["source"]: {"ok": r["ok"], "missing": r["missing"] or []} for r in rows}
    table_rows = [{"source": r["source"], "ok": r["ok"], "missing": len(r["missing"] or []),
                   "what is missing": "; ".join(r["missing"] or []) or None} for r in rows]
    return Section("coverage", data, [Table("Coverage", ["source", "ok", "missing", "what is missing"], table_rows)])
