"""Which pictures the html report draws for each analysis, from the analysis's own data
(``Result.data``): presentation only, every number comes from the result. ``charts(r)``
returns the charts for one result; an analysis without pictures gets none."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..result import Chart, Result


def _label(address: str | None) -> str:
    return "?" if not address else address[-8:]


def miss_test(data: dict[str, Any]) -> list[Chart]:
    """Each participant's misses against the most the test allowed it (table path)."""
    tested = [p for p in data.get("participants", []) if p["total"] and p["critical_misses"] is not None]
    if not tested:
        return []
    return [Chart("Misses against the miss test's threshold", "bar", "participant (last 8 characters)",
                  "requests",
                  [{"name": "missed", "points": [[_label(p["participant"]), p["missed"]] for p in tested]},
                   {"name": "most allowed", "points": [[_label(p["participant"]), p["critical_misses"]]
                                                      for p in tested]}])]


FIGURES: dict[str, Callable[[dict[str, Any]], list[Chart]]] = {
    "miss_test": miss_test,
}


def charts(result: Result) -> list[Chart]:
    draw = FIGURES.get(result.key)
    if draw is None or not isinstance(result.data, dict) or result.unavailable:
        return []
    return draw(result.data)
