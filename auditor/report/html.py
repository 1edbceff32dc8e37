"""The html report: one self-contained file. Styles and the small table-sorting script are
inline, charts are inline SVG (``charts.py``): nothing is fetched when it is opened.

Findings come first, each linking to its evidence (the numbers behind it) and to the
section of the analysis that produced it; then one section per analysis, with its
charts and its tables. Click a column heading to sort a table.
"""

from __future__ import annotations

import json
import re

from ..result import Finding, Result, Table
from . import figures
from .charts import MIN_WIDTH, to_svg
from .view import Findings, View, cell, coverage_caveats, finding_groups, json_default, legend, numeric
from .text import TOKEN_CHAR, html as escape  # html: the rule for outside text in html

# an id, a time, a number or a path (a token of text.cut's characters: digits, hyphens, colons,
# dots or slashes): the browser breaks one at its hyphens (2026-09- / 17T09:41:09Z); kept on one
# line, up to a length a narrow window still shows whole
_UNBROKEN = re.compile(TOKEN_CHAR + "{8,48}")


def _kept(text: str) -> str:
    """``text`` escaped, each id, time, number or path in it on one line."""
    return _UNBROKEN.sub(lambda m: m.group(0) if m.group(0).isalpha() else f'<span class="nb">{m.group(0)}</span>',
                         escape(text))

STYLE = """
*,*::before,*::after{box-sizing:border-box}
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;margin:1.5em auto;max-width:1200px;padding:0 1em;color:#222;overflow-wrap:anywhere}
.scroll{overflow-x:auto;max-width:100%;margin:.6em 0}.scroll>table{margin:0}
figure.chart{margin:1em 0}figure.chart figcaption{font-weight:600;font-size:13px}
.chart-box{overflow-x:auto;max-width:100%}.chart-box svg.chart{min-width:MIN_WIDTHpx;max-width:900px}
td,th{overflow-wrap:normal}td.prose{min-width:30ch;max-width:60ch;overflow-wrap:break-word}.nb{white-space:nowrap}code.ref{overflow-wrap:anywhere}
.scroll.wide{width:calc(100vw - 2em);max-width:calc(100vw - 2em);margin-left:calc(50% - 50vw + 1em)}
nav.summary{background:#fafafa;border:1px solid #eee;padding:.4em 1em;margin:1em 0}nav.summary ul{margin:.2em 0}
tr.fail td{background:#fdecea}tr.fail td:first-child{box-shadow:inset 3px 0 #b00020}
.action{display:block;color:#333;margin-left:1em}.legend-note{color:#555;font-size:12px;margin:.2em 0}
pre{overflow-x:auto;white-space:pre-wrap;overflow-wrap:anywhere}
dl.header dd{margin:0;min-width:0}
h1{font-size:1.6em}h2{margin-top:2em;border-bottom:1px solid #ddd}h3{margin-top:1.4em}
table{border-collapse:collapse;margin:.6em 0;font-size:13px}
th,td{border:1px solid #ddd;padding:3px 7px;vertical-align:top}
th{background:#f4f4f4;cursor:pointer;user-select:none;white-space:nowrap}
th.sorted-asc::after{content:" \\25B2"}th.sorted-desc::after{content:" \\25BC"}
td.num{text-align:right;font-variant-numeric:tabular-nums}
.sev-error{color:#b00020;font-weight:600}.sev-warn{color:#a15c00;font-weight:600}.sev-info{color:#555}
.note{color:#555;margin:.2em 0}.evidence{background:#fafafa;border:1px solid #eee;padding:.4em .8em;margin:.3em 0 1em}
dl.header{display:grid;grid-template-columns:max-content minmax(0,1fr);gap:.1em 1em}dl.header dt{font-weight:600}
svg.chart{width:100%;height:auto;border:1px solid #eee;margin:.6em 0;background:#fff;display:block}
svg .grid{stroke:#eee}svg .tick,svg .legend{font-size:12px;fill:#444}svg .axis{font-size:13px;fill:#333}
svg .chart-title{font-size:14px;font-weight:600;fill:#222}svg .mark{stroke-width:1.5;stroke-dasharray:5 3}
svg .mark-label{font-size:12px}code{background:#f4f4f4;padding:0 .2em}
""".replace("MIN_WIDTH", str(MIN_WIDTH))

# click a heading to sort its table (numbers as numbers, the em dash of unknown last)
SCRIPT = """
document.querySelectorAll("table.sortable th").forEach(function (th) {
  th.addEventListener("click", function () {
    var table = th.closest("table"), body = table.tBodies[0], i = Array.prototype.indexOf.call(th.parentNode.children, th);
    var asc = !th.classList.contains("sorted-asc");
    table.querySelectorAll("th").forEach(function (h) { h.classList.remove("sorted-asc", "sorted-desc"); });
    th.classList.add(asc ? "sorted-asc" : "sorted-desc");
    var rows = Array.prototype.slice.call(body.rows);
    function key(r) { var t = r.cells[i].getAttribute("data-sort"); return t === null ? r.cells[i].textContent : t; }
    rows.sort(function (a, b) {
      var x = key(a), y = key(b);
      if (x === y) return 0; if (x === "") return 1; if (y === "") return -1;
      var nx = parseFloat(x), ny = parseFloat(y);
      var c = (!isNaN(nx) && !isNaN(ny) && isFinite(x) && isFinite(y)) ? nx - ny : x.localeCompare(y);
      return asc ? c : -c;
    });
    rows.forEach(function (r) { body.appendChild(r); });
  });
});
// a link to evidence folded in a <details> opens it
function openTarget() {
  var el = location.hash && document.getElementById(location.hash.slice(1));
  for (; el; el = el.parentElement) if (el.tagName === "DETAILS") el.open = true;
}
window.addEventListener("hashchange", openTarget); openTarget();
"""


def _slug(text: str) -> str:
    return "".join(ch if ch.isalnum() else "-" for ch in text.lower()).strip("-")


def _table(t: Table, section_title: str = "") -> str:
    """A table in a box of its own that scrolls sideways (the page never does); failing rows
    marked; its notes, then the legend of the abbreviations it uses."""
    out = [f"<h3>{escape(t.title)}</h3>" if t.title != section_title else ""]
    if not t.rows:
        out.append('<p class="note">none</p>')
    else:
        nums = {c for c in t.columns if numeric(t, c)}
        prose_columns = {c for c in t.columns if _prose(c, [r.get(c) for r in t.rows])}
        wide = " wide" if len(t.columns) > WIDE_COLUMNS else ""         # it may take the window's width
        out.append(f'<div class="scroll{wide}"><table class="sortable"><thead><tr>'
                   + "".join(f"<th>{escape(c)}</th>" for c in t.columns) + "</tr></thead><tbody>")
        for r in t.rows:
            cells = []
            for c in t.columns:
                v = r.get(c)
                if c in nums:
                    key = "" if v is None else str(v)
                    cells.append(f'<td class="num" data-sort="{escape(key)}">{escape(cell(v, c))}</td>')
                else:
                    unknown = ' data-sort=""' if v is None else ""       # sorts last
                    prose = ' class="prose"' if c in prose_columns else ""
                    cells.append(f"<td{unknown}{prose}>{_kept(cell(v, c))}</td>")
            out.append(("<tr class=\"fail\">" if t.failed(r) else "<tr>") + "".join(cells) + "</tr>")
        out.append("</tbody></table></div>")
    out += [f'<p class="note">{_kept(n)}</p>' for n in t.notes]
    out.append(_legend(t.legend))
    return "".join(out)


WIDE_COLUMNS = 8                      # a table of more columns may use the window's width
PROSE_COLUMNS = ("why", "reason", "summary", "action", "notes", "detail", "explanation")


def _prose(column: str, values: list) -> bool:
    """A column of sentences: it wraps, and is never narrower than 30 characters."""
    return column in PROSE_COLUMNS or any(isinstance(v, str) and len(v) > 40 and v.count(" ") >= 3 for v in values)


FINDING_ANCHORS = ("findings", "findings-others")     # the groups of view.finding_groups, in order


def _summary(groups: list[Findings], parts: list[Result]) -> str:
    """At the top: the findings counted by severity (with --mine, yours first, then the rest's),
    and a table of contents."""
    def counted(g: Findings) -> str:
        return ", ".join(f'<span class="sev-{sev}">{sum(f.severity == sev for f in g)} {sev}</span>'
                         for sev in ("error", "warn", "info"))

    said = "".join(f"<p>{escape(g.title)}: {counted(g)}</p>" for g in groups)
    toc = [f'<li><a href="#{anchor}">{escape(g.title)}</a></li>' for g, anchor in zip(groups, FINDING_ANCHORS)] + [
        f'<li><a href="#section-{_slug(p.key)}">{escape(p.title)}</a></li>' for p in parts]
    return f'<nav class="summary">{said}<ul>{"".join(toc)}</ul></nav>'


def _legend(abbreviations: list[str]) -> str:
    return "".join(f'<p class="legend-note">{escape(line)}</p>' for line in legend(abbreviations))


def _header(lines: list[tuple[str, str]], abbreviations: list[str] = ()) -> str:
    if not lines:
        return ""
    return ('<dl class="header">' + "".join(f"<dt>{escape(k)}</dt><dd>{escape(v)}</dd>" for k, v in lines) + "</dl>"
            + _legend(list(abbreviations)))


def _code_spans(text: str) -> str:
    """``text`` escaped, its `quoted` commands as code (when the backticks pair up), each id or
    time outside them on one line (``_kept``)."""
    parts = text.split("`")
    if len(parts) % 2 == 0:
        return _kept(text)
    return "".join(f"<code>{escape(p)}</code>" if i % 2 else _kept(p) for i, p in enumerate(parts))


def _findings(groups: list[Findings], section_of: dict[int, str]) -> str:
    """Each finding links to its evidence block, which links to its analysis's section; with
    --mine, "Your hosts" first, then the rest (view.finding_groups), numbered on."""
    out, start = [], 1
    for g, anchor in zip(groups, FINDING_ANCHORS):
        out.append(_findings_list([(f, section_of[id(f)]) for f in g], g.title, anchor, start))
        start += len(g)
    return "".join(out)


def _log_lines(f: Finding) -> str:
    """Where a finding's lines are (its evidence's ``log_lines``), each ``path:line name``, as the
    md report gives them: the bug report's core, not only inside the evidence block."""
    lines = f.evidence.get("log_lines")
    if not isinstance(lines, list) or not lines:
        return ""
    def ref(entry: str) -> str:         # the folders may wrap; file:line stays on one line
        folder, slash, rest = str(entry).rpartition("/")
        where, space, name = rest.partition(" ")
        return (f'<code class="ref">{escape(folder + slash)}<span class="nb">{escape(where)}</span>'
                f'{escape(space + name)}</code>')

    return '<span class="action">lines: ' + ", ".join(ref(x) for x in lines) + "</span>"


def _findings_list(findings: list[tuple[Finding, str]], title: str, anchor: str, start: int = 1) -> str:
    if not findings:
        return f'<h2 id="{anchor}">{escape(title)}</h2><p class="note">none</p>'
    items, blocks = [], []
    for i, (f, section) in enumerate(findings, start):
        model = f" ({escape(f.model)})" if f.model and f.model != f.subject["id"] else ""
        items.append(f'<li><span class="sev-{f.severity}">{f.severity}</span> <code>{escape(f.code)}</code> '
                     f'{escape(f.subject["kind"])} <code>{escape(str(f.subject["id"]))}</code>{model}: '
                     f'{_kept(f.summary)} <a href="#evidence-{i}">evidence</a>'
                     + (f'<span class="action">next: {_code_spans(f.action)}</span>' if f.action else "")
                     + _log_lines(f) + "</li>")
        evidence = json.dumps(f.evidence, default=json_default, indent=1, ensure_ascii=False)
        blocks.append(f'<div class="evidence" id="evidence-{i}"><b>{i}. {escape(f.code)}</b> — '
                      f'<a href="#{section}">the {escape(section.removeprefix("section-"))} section</a>'
                      f"<pre>{escape(evidence)}</pre></div>")
    numbered = f' start="{start}"' if start > 1 else ""
    return (f'<h2 id="{anchor}">{escape(title)}</h2><ol{numbered}>' + "".join(items) + "</ol>"
            + '<details><summary>Evidence behind each finding</summary>' + "".join(blocks) + "</details>")


def _section(r: Result) -> str:
    out = [f'<section id="section-{_slug(r.key)}"><h2>{escape(r.title)}</h2>', _header(r.header, r.legend)]
    out += [f'<figure class="chart"><figcaption>{escape(c.title)}</figcaption>'
            f'<div class="chart-box">{to_svg(c, titled=False)}</div></figure>' for c in figures.charts(r)]
    out += [_table(t, r.title) for t in r.tables]
    out.append("</section>")
    return "".join(out)


def to_html(result: Result, view: View = View()) -> str:
    parts = result.parts or [result]
    owner = {id(f): f"section-{_slug(p.key)}" for p in parts for f in p.findings}
    section_of = {id(f): owner.get(id(f), f"section-{_slug(result.key)}") for f in result.findings}
    groups = finding_groups(result.findings)
    body = [f"<h1>{escape(result.title)}</h1>", _summary(groups, parts),
            _header(result.header, result.legend) if result.parts else "", _findings(groups, section_of)]
    body += [_section(p) for p in parts]
    if caveats := coverage_caveats(result):
        body.append('<h2 id="caveats">Coverage caveats</h2><ul>' + "".join(f"<li>{_kept(c)}</li>" for c in caveats)
                    + "</ul>")
    if view.command:
        body.append(f'<p class="note">Made by <code>{escape(view.command)}</code>.</p>')
    return ("<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\"><title>{escape(result.title)}</title>"
            f"<style>{STYLE}</style></head><body>" + "".join(body) + f"<script>{SCRIPT}</script></body></html>\n")


def write(result: Result, out, view: View) -> None:
    """This format's record (formats.py): the report to the text stream ``out``."""
    out.write(to_html(result, view))
