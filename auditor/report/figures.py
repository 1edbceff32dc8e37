"""Which pictures the html report draws for each analysis, from the analysis's own data
(``Result.data``): presentation only, every number comes from the result. ``charts(r)``
returns the charts for one result; an analysis without pictures gets none."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta
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


def _time(t: datetime | str) -> datetime:
    return t if isinstance(t, datetime) else datetime.fromisoformat(t.replace("Z", "+00:00"))


def poc_overload(data: dict[str, Any]) -> list[Chart]:
    """Per preserved host with gateway evidence: its in-flight load across the cPoC window
    against the cap the proposed per-host limit would give it."""
    out = []
    for w in data.get("windows", []):
        series = w.get("inflight_series")
        if not series or not series.get("max_inflight"):
            continue
        t0, step = _time(series["start"]), series["step_seconds"]
        points = [[t0 + timedelta(seconds=i * step), v] for i, v in enumerate(series["max_inflight"])]
        out.append(Chart(f"{w['episode']}: {_label(w['participant'])} ({w['model']}) in flight against its cap",
                         "line", "time (UTC)", "requests in flight",
                         [{"name": f"in flight (max per {step} s)", "points": points}],
                         marks=[{"name": "cap", "y": w.get("cap")}]))
    return out


def preserved_targets(data: dict[str, Any]) -> list[Chart]:
    """Per model: the weight preserved in each episode against the chain's target and the
    suggested one."""
    models = data.get("preserved_targets", [])
    if not models:
        return []
    name = {m["model_id"]: m["model_id"].split("/")[-1] for m in models}
    episodes = list(dict.fromkeys(e["episode"] for m in models for e in m.get("episodes", [])))
    series = [{"name": f"preserved {ep}", "points": [[name[m["model_id"]], e["preserved_weight"]]
                                                    for m in models for e in m.get("episodes", [])
                                                    if e["episode"] == ep]} for ep in episodes]
    series.append({"name": "chain target", "points": [[name[m["model_id"]], m["allocation_target"]] for m in models]})
    series.append({"name": "suggested target", "points": [[name[m["model_id"]], m["suggested_target"]]
                                                          for m in models]})
    return [Chart("Preserved weight against the targets", "bar", "model", "weight", series)]


def remints(data: dict[str, Any]) -> list[Chart]:
    """Mints per model over time (cumulative), with every deactivation marked by its class."""
    series = []
    for m in data.get("mints", []):
        times = sorted(_time(e["at"]) for e in m.get("events", []) if e.get("at"))
        if times:
            series.append({"name": m["model"].split("/")[-1], "points": [[t, i] for i, t in enumerate(times, 1)]})
    if not series:
        return []
    events = [{"x": _time(d["at"]), "label": f"escrow {d['escrow']}: {d['classification']}",
               "class": d["classification"]} for d in data.get("deactivations", []) if d.get("at")]
    return [Chart("Mints per model, with deactivations (red spurious, green legitimate, grey unknown)", "line",
                  "time (UTC)", "mints so far", series, events=events)]


def hedging(data: dict[str, Any]) -> list[Chart]:
    """Wasted attempt-seconds per hour, one bar per decision reason."""
    rows = data.get("wasted_by_hour_and_decision", [])
    if not rows:
        return []
    hour = {r["hour"]: (r["hour"] if isinstance(r["hour"], datetime) else _time(str(r["hour"]))).strftime("%m-%d %H:00")
            for r in rows}
    decisions = list(dict.fromkeys(r["decision"] for r in rows))
    series = [{"name": d, "points": [[hour[r["hour"]], r["wasted_seconds"]] for r in rows if r["decision"] == d]}
              for d in decisions]
    return [Chart("Wasted attempt-seconds per hour, by decision reason", "bar", "hour (UTC)", "attempt-seconds",
                  series)]


FIGURES: dict[str, Callable[[dict[str, Any]], list[Chart]]] = {
    "miss_test": miss_test,
    "poc_overload": poc_overload,
    "preserved_targets": preserved_targets,
    "remints": remints,
    "hedging": hedging,
}


def charts(result: Result) -> list[Chart]:
    draw = FIGURES.get(result.key)
    if draw is None or not isinstance(result.data, dict) or result.unavailable:
        return []
    return draw(result.data)
