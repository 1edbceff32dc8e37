"""Charts as inline SVG, for the self-contained html report: no library, no script, no
font to fetch. A bar chart gives each category a slot, shared by the series that have a
value there; an ``hbar`` chart is the same laid on its side, one labelled row per
category (every participant named, readable on a phone); a line chart draws one polyline
per series over numbers or times. Horizontal marks (a cap, a threshold; on an hbar chart
vertical) are dashed lines; vertical events (a deactivation) are thin lines with a
tooltip; spans (the phases of a PoC) are shaded bands. The legend sits under the plot,
never over the data. Every drawn datum carries ``class="datum"``, so a test can see a
chart drew.

The drawing is ``W`` units wide with text of 12-14 units; the html report keeps it at
least ``MIN_WIDTH`` px wide in a box of its own that scrolls, so on a phone its text stays
about 10 px and the page itself never scrolls sideways."""

from __future__ import annotations

import math
from datetime import datetime, timezone
from typing import Any

from ..result import Chart
from ..times import utc
from .text import html as escape  # the rule for outside text in html

W, H = 560, 260
MIN_WIDTH = 480                # px: what the html report never shrinks a chart below
LEFT, RIGHT, TOP, BOTTOM = 70, 14, 12, 64
ROW = 18                       # an hbar chart's row
TITLE_H = 26                   # the title's band, when the SVG carries its title
LEGEND_ROW = 18
PALETTE = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f",
           "#bcbd22", "#17becf"]
EVENT_COLOURS = {"spurious": "#d62728", "legitimate": "#2ca02c", "unknown": "#7f7f7f"}
SPAN_COLOURS = ["#fff3cd", "#d9ecff", "#e6e6e6", "#e2f5e2"]
MARK_COLOUR = "#b00020"


def nice_max(v: float) -> float:
    """The smallest 1, 2 or 5 x 10^k at or above ``v`` (1 for nothing to show)."""
    if v <= 0 or not math.isfinite(v):
        return 1.0
    e = 10 ** math.floor(math.log10(v))
    return next(m * e for m in (1, 2, 5, 10) if m * e >= v)


def _num(x: Any) -> float:
    if isinstance(x, datetime):
        return utc(x).timestamp()
    return float(x)


def _label(x: Any, span: float = 0) -> str:
    if isinstance(x, datetime):
        x = utc(x)             # a naive time is UTC, not the machine's zone
        return x.strftime("%H:%M:%S" if span < 600 else "%m-%d %H:%M" if span > 86400 else "%H:%M")
    if isinstance(x, float):
        return f"{x:.3g}"
    return str(x)


def _fmt(y: float) -> str:
    return f"{y:,.0f}" if abs(y) >= 10 or y == int(y) else f"{y:.3g}"


def _tick(y: float) -> str:
    """An axis tick, short: 50k, 1.5M."""
    for div, unit in ((1e9, "G"), (1e6, "M"), (1e4, "k")):
        if abs(y) >= div:
            return f"{y / (div if unit != 'k' else 1e3):.3g}{unit}"
    return _fmt(y)


def _colour(s: dict[str, Any], i: int) -> str:
    return str(s.get("colour") or PALETTE[i % len(PALETTE)])


def _categories(chart: Chart) -> list[Any]:
    cats: list[Any] = []
    for s in chart.series:
        for x, _ in s["points"]:
            if x not in cats:
                cats.append(x)
    return cats


def _legend(chart: Chart, top: float) -> tuple[list[str], float]:
    """The legend under the plot, wrapped to the width: its elements and its height. A mark
    (a dashed line) is named here with its value, never written over the data."""
    entries = [(str(s["name"])[:48], _colour(s, i), "box") for i, s in enumerate(chart.series)
               if any(p[1] is not None for p in s["points"])]
    entries += [(str(sp["label"])[:48], sp.get("colour") or SPAN_COLOURS[i % len(SPAN_COLOURS)], "box")
                for i, sp in enumerate(chart.spans)]
    entries += [(f"{str(m['name'])[:40]} {_fmt(float(m['y']))}", m.get("colour") or MARK_COLOUR, "line")
                for m in chart.marks if m.get("y") is not None]
    out, x, y = [], 8.0, top
    for name, colour, shape in entries:
        width = 30 + 7 * len(name)
        if x + width > W - 8 and x > 8:
            x, y = 8.0, y + LEGEND_ROW
        out.append(f'<rect x="{x:.0f}" y="{y:.0f}" width="12" height="12" fill="{colour}" stroke="#999" '
                   f'stroke-width="0.5"/>' if shape == "box" else
                   f'<line x1="{x:.0f}" x2="{x + 12:.0f}" y1="{y + 6:.0f}" y2="{y + 6:.0f}" class="mark" '
                   f'stroke="{colour}"/>')
        out.append(f'<text x="{x + 16:.0f}" y="{y + 11:.0f}" class="legend">{escape(name)}</text>')
        x += width
    return out, (y - top + LEGEND_ROW if entries else 0)


def to_svg(chart: Chart, titled: bool = True) -> str:
    """The chart as an SVG element; ``titled=False`` leaves its title to the page (the html
    report writes it as a caption, which wraps on a phone)."""
    values = [float(p[1]) for s in chart.series for p in s["points"] if p[1] is not None]
    values += [float(m["y"]) for m in chart.marks if m.get("y") is not None]
    top = nice_max(max(values, default=0))
    if chart.kind == "hbar":
        cats = _categories(chart)
        plot_h = max(1, len(cats)) * ROW
        body, left = _hbars(chart, cats, top, plot_h)
        axis_y = TOP + plot_h
        legend, lh = _legend(chart, axis_y + 40)
        height = axis_y + 40 + lh + 6
        axes = [f'<text x="{left + (W - RIGHT - left) / 2:.0f}" y="{axis_y + 34:.0f}" text-anchor="middle" '
                f'class="axis">{escape(chart.y_label)}</text>']
    else:
        ph = H - TOP - BOTTOM
        pw = W - LEFT - RIGHT

        def y_at(y: float) -> float:
            return TOP + ph - ph * y / top

        body = []
        for i in range(5):                                   # y grid and ticks
            y = top * i / 4
            body.append(f'<line x1="{LEFT}" x2="{W - RIGHT}" y1="{y_at(y):.1f}" y2="{y_at(y):.1f}" class="grid"/>'
                        f'<text x="{LEFT - 6}" y="{y_at(y) + 4:.1f}" text-anchor="end" class="tick">{_tick(y)}</text>')
        body += _bars(chart, y_at, pw) if chart.kind == "bar" else _lines(chart, y_at, pw, ph)
        body += [_mark(m, LEFT, W - RIGHT, y_at(float(m["y"])), y_at(float(m["y"])))
                 for m in chart.marks if m.get("y") is not None]
        axes = [f'<text x="16" y="{TOP + ph / 2:.0f}" transform="rotate(-90 16 {TOP + ph / 2:.0f})" '
                f'text-anchor="middle" class="axis">{escape(chart.y_label)}</text>',
                f'<text x="{LEFT + pw / 2:.0f}" y="{H - 8}" text-anchor="middle" class="axis">'
                f'{escape(chart.x_label)}</text>']
        legend, lh = _legend(chart, H + 2)
        height = H + lh + 6
    head = TITLE_H if titled else 0
    return "".join([f'<svg class="chart" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {W} {height + head:.0f}" '
                    f'role="img" aria-label="{escape(chart.title)}">',
                    f'<text x="8" y="18" class="chart-title">{escape(chart.title)}</text>' if titled else "",
                    f'<g transform="translate(0 {head})">', *axes, *body, *legend, "</g></svg>"])


def _hbars(chart: Chart, cats: list[Any], top: float, plot_h: float) -> tuple[list[str], float]:
    """One row per category, its label on the left; the value axis along the bottom."""
    labels = [escape(_label(c)[:24]) for c in cats]
    left = 16 + 8 * max((len(_label(c)[:24]) for c in cats), default=4)
    pw = W - RIGHT - left

    def x_at(v: float) -> float:
        return left + pw * v / top

    out = []
    for i in range(5):                                       # value grid and ticks
        v = top * i / 4
        out.append(f'<line x1="{x_at(v):.1f}" x2="{x_at(v):.1f}" y1="{TOP}" y2="{TOP + plot_h}" class="grid"/>'
                   f'<text x="{x_at(v):.1f}" y="{TOP + plot_h + 14}" text-anchor="middle" class="tick">{_tick(v)}</text>')
    for ci, c in enumerate(cats):
        here = [(si, s, y) for si, s in enumerate(chart.series) for x, y in s["points"] if x == c and y is not None]
        yy = TOP + ci * ROW
        out.append(f'<text x="{left - 6}" y="{yy + ROW * 0.7:.1f}" text-anchor="end" class="tick">{labels[ci]}</text>')
        bh = (ROW - 4) / max(1, len(here))
        for k, (si, s, y) in enumerate(here):
            out.append(f'<rect class="datum" x="{left}" y="{yy + 2 + k * bh:.1f}" width="{x_at(float(y)) - left:.1f}" '
                       f'height="{bh:.1f}" fill="{_colour(s, si)}"><title>{escape(str(s["name"]))} '
                       f'{escape(_label(c))}: {_fmt(float(y))}</title></rect>')
    out += [_mark(m, x_at(float(m["y"])), x_at(float(m["y"])), TOP - 4, TOP + plot_h)
            for m in chart.marks if m.get("y") is not None]
    return out, left


def _mark(m: dict[str, Any], x1: float, x2: float, y1: float, y2: float) -> str:
    """A reference line (a cap, a threshold) from (x1, y1) to (x2, y2), named in its tooltip."""
    return (f'<line x1="{x1:.1f}" x2="{x2:.1f}" y1="{y1:.1f}" y2="{y2:.1f}" class="mark" '
            f'stroke="{m.get("colour") or MARK_COLOUR}"><title>{escape(str(m["name"]))} '
            f'{_fmt(float(m["y"]))}</title></line>')


def _bars(chart: Chart, y_at, pw: float) -> list[str]:
    cats = _categories(chart)
    if not cats:
        return []
    slot = pw / len(cats)
    out = []
    for ci, c in enumerate(cats):
        here = [(si, s, y) for si, s in enumerate(chart.series) for x, y in s["points"] if x == c and y is not None]
        bw = max(1.0, slot * 0.8 / max(1, len(here)))
        for k, (si, s, y) in enumerate(here):
            cx = LEFT + slot * ci + slot * 0.1 + bw * k
            out.append(f'<rect class="datum" x="{cx:.1f}" y="{y_at(float(y)):.1f}" width="{bw:.1f}" '
                       f'height="{y_at(0) - y_at(float(y)):.1f}" fill="{_colour(s, si)}">'
                       f'<title>{escape(str(s["name"]))} {escape(_label(c))}: {_fmt(float(y))}</title></rect>')
    step = max(1, math.ceil(len(cats) / 16))           # category labels, thinned to fit
    flat = slot >= 8 + 7 * max(len(_label(c)[:18]) for c in cats)     # room to write them level
    for i in range(0, len(cats), step):
        cx, ty = LEFT + slot * (i + 0.5), y_at(0) + (16 if flat else 12)
        turn = 'text-anchor="middle"' if flat else f'transform="rotate(30 {cx:.1f} {ty:.1f})"'
        out.append(f'<text x="{cx:.1f}" y="{ty:.1f}" {turn} class="tick">{escape(_label(cats[i])[:18])}</text>')
    return out


def _lines(chart: Chart, y_at, pw: float, ph: float) -> list[str]:
    xs = [_num(p[0]) for s in chart.series for p in s["points"]] + [_num(e["x"]) for e in chart.events]
    xs += [_num(v) for sp in chart.spans for v in (sp["from"], sp["to"])]
    if not xs:
        return []
    lo, hi = min(xs), max(xs)
    span = (hi - lo) or 1.0
    sample = next((p[0] for s in chart.series for p in s["points"]), None)

    def x_at(x: Any) -> float:
        return LEFT + pw * (_num(x) - lo) / span

    out = []
    for i, sp in enumerate(chart.spans):                # shaded phases, under the data
        x0, x1 = x_at(sp["from"]), x_at(sp["to"])
        out.append(f'<rect class="span" x="{x0:.1f}" y="{TOP}" width="{max(0.5, x1 - x0):.1f}" height="{ph:.1f}" '
                   f'fill="{sp.get("colour") or SPAN_COLOURS[i % len(SPAN_COLOURS)]}">'
                   f'<title>{escape(str(sp["label"]))}</title></rect>')
    for si, s in enumerate(chart.series):
        pts = [(x_at(x), y_at(float(y))) for x, y in s["points"] if y is not None]
        if not pts:
            continue
        path = " ".join(f"{x:.1f},{y:.1f}" for x, y in pts)
        out.append(f'<polyline class="datum" points="{path}" fill="none" stroke="{_colour(s, si)}" '
                   f'stroke-width="1.5"><title>{escape(str(s["name"]))}: {len(pts)} points</title></polyline>')
    for e in chart.events:
        ex = x_at(e["x"])
        colour = EVENT_COLOURS.get(e.get("class", ""), "#444")
        out.append(f'<line class="datum event" x1="{ex:.1f}" x2="{ex:.1f}" y1="{TOP}" y2="{TOP + ph}" '
                   f'stroke="{colour}" stroke-dasharray="2 2"><title>{escape(str(e.get("label", "")))}</title></line>')
    for i in range(5):                                  # x ticks
        x = lo + span * i / 4
        value: Any = datetime.fromtimestamp(x, timezone.utc) if isinstance(sample, datetime) else x
        anchor = "start" if i == 0 else "end" if i == 4 else "middle"      # the ends stay inside
        out.append(f'<text x="{LEFT + pw * i / 4:.1f}" '
                   f'y="{TOP + ph + 16:.1f}" text-anchor="{anchor}" class="tick">{escape(_label(value, span))}</text>')
    return out
