"""Charts as inline SVG, for the self-contained html report: no library, no script, no
font to fetch. A bar chart groups one bar per series under each category; a line chart
draws one polyline per series over numbers or times. Horizontal marks (a cap, a
threshold) are dashed lines; vertical events (a deactivation) are thin lines with a
tooltip. Every drawn datum carries ``class="datum"``, so a test can see a chart drew."""

from __future__ import annotations

import math
from datetime import datetime, timezone
from typing import Any

from ..result import Chart
from .text import html as escape  # the rule for outside text in html

W, H = 720, 300
LEFT, RIGHT, TOP, BOTTOM = 64, 16, 28, 64
PALETTE = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f",
           "#bcbd22", "#17becf"]
EVENT_COLOURS = {"spurious": "#d62728", "legitimate": "#2ca02c", "unknown": "#7f7f7f"}


def nice_max(v: float) -> float:
    """The smallest 1, 2 or 5 x 10^k at or above ``v`` (1 for nothing to show)."""
    if v <= 0 or not math.isfinite(v):
        return 1.0
    e = 10 ** math.floor(math.log10(v))
    return next(m * e for m in (1, 2, 5, 10) if m * e >= v)


def _num(x: Any) -> float:
    if isinstance(x, datetime):
        return (x if x.tzinfo else x.replace(tzinfo=timezone.utc)).timestamp()
    return float(x)


def _label(x: Any, span: float = 0) -> str:
    if isinstance(x, datetime):
        x = x.astimezone(timezone.utc)
        return x.strftime("%H:%M:%S" if span < 600 else "%m-%d %H:%M" if span > 86400 else "%H:%M")
    if isinstance(x, float):
        return f"{x:.3g}"
    return str(x)


def _fmt(y: float) -> str:
    return f"{y:,.0f}" if abs(y) >= 10 or y == int(y) else f"{y:.2g}"


def to_svg(chart: Chart) -> str:
    ys = [float(p[1]) for s in chart.series for p in s["points"] if p[1] is not None]
    ys += [float(m["y"]) for m in chart.marks if m.get("y") is not None]
    top = nice_max(max(ys, default=0))
    pw, ph = W - LEFT - RIGHT, H - TOP - BOTTOM

    def y_at(y: float) -> float:
        return TOP + ph - ph * y / top

    out = [f'<svg class="chart" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {W} {H}" role="img" '
           f'aria-label="{escape(chart.title)}">',
           f'<text x="{LEFT}" y="16" class="chart-title">{escape(chart.title)}</text>']
    for i in range(5):                                   # y grid and ticks
        y = top * i / 4
        out.append(f'<line x1="{LEFT}" x2="{W - RIGHT}" y1="{y_at(y):.1f}" y2="{y_at(y):.1f}" class="grid"/>'
                   f'<text x="{LEFT - 6}" y="{y_at(y) + 4:.1f}" text-anchor="end" class="tick">{_fmt(y)}</text>')
    out.append(f'<text x="14" y="{TOP + ph / 2:.0f}" transform="rotate(-90 14 {TOP + ph / 2:.0f})" '
               f'text-anchor="middle" class="axis">{escape(chart.y_label)}</text>')
    out.append(f'<text x="{LEFT + pw / 2:.0f}" y="{H - 6}" text-anchor="middle" class="axis">'
               f'{escape(chart.x_label)}</text>')
    if chart.kind == "bar":
        out += _bars(chart, y_at, pw)
    else:
        out += _lines(chart, y_at, pw, ph)
    for m in chart.marks:
        if m.get("y") is None:
            continue
        yy = y_at(float(m["y"]))
        out.append(f'<line x1="{LEFT}" x2="{W - RIGHT}" y1="{yy:.1f}" y2="{yy:.1f}" class="mark"/>'
                   f'<text x="{W - RIGHT - 4}" y="{yy - 4:.1f}" text-anchor="end" class="mark-label">'
                   f'{escape(str(m["name"]))} {_fmt(float(m["y"]))}</text>')
    x, y = LEFT + 8, TOP + 4                             # legend, wrapped to the plot's width
    for i, s in enumerate(chart.series):
        name = str(s["name"])[:40]
        width = 24 + 6 * len(name)
        if x + width > W - RIGHT and x > LEFT + 8:
            x, y = LEFT + 8, y + 14
        out.append(f'<rect x="{x}" y="{y}" width="10" height="10" fill="{PALETTE[i % len(PALETTE)]}"/>'
                   f'<text x="{x + 14}" y="{y + 9}" class="legend">{escape(name)}</text>')
        x += width
    out.append("</svg>")
    return "".join(out)


def _bars(chart: Chart, y_at, pw: float) -> list[str]:
    cats: list[Any] = []
    for s in chart.series:
        for x, _ in s["points"]:
            if x not in cats:
                cats.append(x)
    if not cats:
        return []
    n = len(chart.series)
    slot = pw / len(cats)
    bw = max(1.0, slot * 0.8 / n)
    out = []
    for si, s in enumerate(chart.series):
        colour = PALETTE[si % len(PALETTE)]
        for x, y in s["points"]:
            if y is None:
                continue
            cx = LEFT + slot * cats.index(x) + slot * 0.1 + bw * si
            out.append(f'<rect class="datum" x="{cx:.1f}" y="{y_at(float(y)):.1f}" width="{bw:.1f}" '
                       f'height="{y_at(0) - y_at(float(y)):.1f}" fill="{colour}">'
                       f'<title>{escape(str(s["name"]))} {escape(_label(x))}: {_fmt(float(y))}</title></rect>')
    step = max(1, math.ceil(len(cats) / 24))           # category labels, thinned to fit
    for i in range(0, len(cats), step):
        cx = LEFT + slot * (i + 0.5)
        out.append(f'<text x="{cx:.1f}" y="{y_at(0) + 12:.1f}" transform="rotate(35 {cx:.1f} {y_at(0) + 12:.1f})" '
                   f'class="tick">{escape(_label(cats[i])[:24])}</text>')
    return out


def _lines(chart: Chart, y_at, pw: float, ph: float) -> list[str]:
    xs = [_num(p[0]) for s in chart.series for p in s["points"]] + [_num(e["x"]) for e in chart.events]
    if not xs:
        return []
    lo, hi = min(xs), max(xs)
    span = (hi - lo) or 1.0
    sample = next((p[0] for s in chart.series for p in s["points"]), None)

    def x_at(x: Any) -> float:
        return LEFT + pw * (_num(x) - lo) / span

    out = []
    for si, s in enumerate(chart.series):
        pts = [(x_at(x), y_at(float(y))) for x, y in s["points"] if y is not None]
        if not pts:
            continue
        colour = PALETTE[si % len(PALETTE)]
        path = " ".join(f"{x:.1f},{y:.1f}" for x, y in pts)
        out.append(f'<polyline class="datum" points="{path}" fill="none" stroke="{colour}" stroke-width="1.5">'
                   f'<title>{escape(str(s["name"]))}: {len(pts)} points</title></polyline>')
    for e in chart.events:
        ex = x_at(e["x"])
        colour = EVENT_COLOURS.get(e.get("class", ""), "#444")
        out.append(f'<line class="datum event" x1="{ex:.1f}" x2="{ex:.1f}" y1="{TOP}" y2="{TOP + ph}" '
                   f'stroke="{colour}" stroke-dasharray="2 2"><title>{escape(str(e.get("label", "")))}</title></line>')
    for i in range(5):                                  # x ticks
        x = lo + span * i / 4
        value: Any = datetime.fromtimestamp(x, timezone.utc) if isinstance(sample, datetime) else x
        out.append(f'<text x="{LEFT + pw * i / 4:.1f}" '
                   f'y="{TOP + ph + 16:.1f}" text-anchor="middle" class="tick">{escape(_label(value, span))}</text>')
    return out
