"""The terminal view: aligned tables that fit the terminal.

On a terminal the tables take its width; into a file or a pipe (cron) they are 250
columns wide so nothing wraps. Unless ``--wide``, the view is made to fit: addresses are
shortened to the form the gateway's logs use (``gonka1…x7m3qk5d``), a table short of
width keeps the columns it names in ``Table.priority`` (the verdict, the misses, the
waste), never shows its low-value ``Table.narrow`` ones, and drops first those with one
value in every row (a note gives it), then the widest; column names wrap between words (``poc slot
allocation``) and ids never wrap at all. On a terminal narrower than ``FINDINGS_TABLE``
the findings print one block each: severity, code and subject, then the summary and the
next step wrapped. Severities and failing rows are coloured when colour is on (rich's
rules: a terminal, and no ``NO_COLOR``). Without colour (a file, a pipe, cron) a table whose
columns fit is drawn as rich draws it, without its cell-by-cell layout (``_drawn``). json,
csv and md keep everything.
"""

from __future__ import annotations

import re
import sys
import textwrap
from typing import Any

from ..result import Finding, Result, Table
from .view import View, cell, coverage_caveats, findings_table, layout, numeric
from .text import TERMINAL_LIMIT, plain

ADDRESS = re.compile(r"\bgonka1[02-9ac-hj-np-z]{38}\b")
FILE_WIDTH = 250
FINDINGS_TABLE = 160        # narrower than this, the findings print one block each
SEVERITY_STYLE = {"error": "bold red", "warn": "yellow", "info": "dim"}
FAILING_STYLE = "red"


def short_addresses(text: str) -> str:
    """``gonka1`` + the last 8 characters, as the gateway's logs print a host."""
    return ADDRESS.sub(lambda m: f"gonka1…{m.group(0)[-8:]}", text)


def _prose(texts: list[str]) -> bool:
    """A column of sentences (reasons, summaries): the one kind allowed to wrap."""
    return any(x.count(" ") >= 3 and len(x) > 24 for x in texts)


def _label(column: str) -> str:
    return plain(column).replace("_", " ")


def _need(c: str, texts: list[str], prose: bool) -> int:
    """How wide column ``c`` must be for no word to break: an id or number column its
    longest cell, a heading its longest word, a prose column ``PROSE_MIN`` or its longest word
    (a request id, a time, a path inside a sentence is never cut either)."""
    word = max(len(w) for w in _label(c).split())
    if prose:
        return max([word, PROSE_MIN, *(len(w) for x in texts for w in x.split())])
    return max([word, *map(len, texts)])


def constant(texts: list[str]) -> bool:
    """One value in every row (of two or more): a column that says nothing row by row."""
    return len(texts) > 1 and len(set(texts)) == 1


def keep_order(t: Table, texts: dict[str, list[str]], need: dict[str, int]) -> list[str]:
    """The columns in the order a terminal keeps them: the table's ``priority`` (by default its
    first column, the row's id), then the rest narrowest first (long ids and long numbers go
    early), those with one value in every row last; never its ``narrow`` ones. Right after
    the first come the columns that tell its rows apart (``_apart``)."""
    first = [c for c in t.priority if c in t.columns] or [c for c in t.columns if c not in t.narrow][:1]
    rest = [c for c in t.columns if c not in first and c not in t.narrow]
    order = first + sorted(rest, key=lambda c: (constant(texts[c]), need[c]))
    apart = _apart(t, order, texts)
    return order[:1] + apart + [c for c in order[1:] if c not in apart]


def _apart(t: Table, order: list[str], texts: dict[str, list[str]]) -> list[str]:
    """The columns that, beside the first, tell the rows apart (a host's row per window: the
    window; a model's per hour: the hour), chosen from those that name rather than measure
    (no number, no prose), each the one that tells most rows apart, the earliest in ``order``
    on a tie, until the rows differ as much as all of ``order`` makes them."""
    if len(t.rows) < 2 or not order:
        return []

    def kinds(cols: list[str]) -> int:
        return len(set(zip(*(texts[c] for c in cols))))

    whole = kinds(order)
    chosen: list[str] = []
    names = [c for c in order[1:] if not numeric(t, c) and not _prose(texts[c]) and not constant(texts[c])]
    while names and kinds(order[:1] + chosen) < whole:
        best = max(names, key=lambda c: kinds(order[:1] + chosen + [c]))
        if kinds(order[:1] + chosen + [best]) == kinds(order[:1] + chosen):
            break
        chosen.append(best)
        names.remove(best)
    return chosen


def _fitting(t: Table, texts: dict[str, list[str]], need: dict[str, int], width: int) -> list[str]:
    """The columns that fit in ``width`` (each takes 3 more for padding and border), chosen in
    ``keep_order`` and shown in the table's order; a column with one value in every row only
    when every other one fits (its note says the value)."""
    kept, used, short = set(), 1, False
    for c in keep_order(t, texts, need):
        if used + need[c] + 3 <= width and not (short and constant(texts[c])):
            kept.add(c)
            used += need[c] + 3
        else:
            short = True
    return [c for c in t.columns if c in kept]


PROSE_MIN = 20


def print_table(result: Result, file: Any = None, view: View = View(), console: Any = None) -> None:
    """The terminal view of ``result`` on ``file`` (stdout), or on ``console`` (a rich Console
    of a given width and colour: the tests draw at every width)."""
    from rich.console import Console
    from rich.text import Text

    if console is None:
        file = file or sys.stdout
        terminal = file.isatty()
        console = Console(file=file, highlight=False, soft_wrap=False, width=None if terminal else FILE_WIDTH)

    # every text shown is a rich Text (never markup), its control characters escaped (text.py)
    def fit(s: str) -> str:
        return plain(s) if view.wide else plain(short_addresses(s), TERMINAL_LIMIT)

    def full(s: str) -> str:        # a participant's report: addresses whole
        return plain(s) if view.wide else plain(s, TERMINAL_LIMIT)

    for kind, depth, item in layout(result):
        if kind == "title":
            if depth > 1:
                console.print()
            console.print(Text(fit(item), style="bold"))
        elif kind == "header":
            for k, v in item:
                console.print(Text(f"  {plain(k)}: {fit(v)}"))
        elif kind == "legend":
            for line in item:
                console.print(Text(fit(line), style="dim"))
        elif kind == "findings" and item and console.width < FINDINGS_TABLE:
            console.print()
            console.print(Text(getattr(item, "title", "Findings"), style="bold"))
            for f in item:
                _finding_block(console, f, fit)
        else:
            if kind == "findings":
                item = findings_table(item)
            console.print()
            if not item.rows:
                console.print(Text.assemble((fit(item.title), "bold"), ": none"))
            else:
                _table(console, item, fit, view, full)
            for n in item.notes:
                console.print(Text(fit(n)))
    caveats = coverage_caveats(result)
    if caveats:
        console.print()
        console.print(Text("Coverage caveats", style="bold"))
        for c in caveats:
            console.print(Text(f"  - {fit(c)}"))


def _finding_block(console: Any, f: Finding, fit: Any) -> None:
    """One finding: ``severity code kind subject (model)``, then its summary and its next step
    wrapped under it."""
    from rich.text import Text

    head = Text.assemble((f.severity, SEVERITY_STYLE.get(f.severity, "")), " ", (fit(f.code), "bold"), " ",
                         fit(f"{f.subject['kind']} {f.subject['id']}"))
    if f.model and f.model != f.subject["id"]:
        head.append(f" ({fit(f.model)})")
    console.print(head)
    width = max(20, console.width - 4)
    for line in textwrap.wrap(fit(f.summary), width, break_long_words=False, break_on_hyphens=False):
        console.print(Text("    " + line))
    if f.action:
        lines = textwrap.wrap("next: " + fit(f.action), width, break_long_words=False, break_on_hyphens=False)
        for line in lines:
            console.print(Text("    " + line, style="italic"))


def _pairs(console: Any, t: Table, row: dict[str, Any], fit: Any) -> None:
    """One row as ``key: value`` lines, every column, each value whole: a value longer than
    the line wraps between its words, under itself, and a word (an id, a number, an
    address) is never broken."""
    from rich.text import Text

    style = FAILING_STYLE if t.failed(row) else ""
    for c in t.columns:
        text = fit(cell(row.get(c), c))
        head = f"  {plain(c)}: "
        lines = textwrap.wrap(text, max(20, console.width - len(head)), break_long_words=False,
                              break_on_hyphens=False) or [text]
        for i, line in enumerate(lines):
            shown = Text((head if i == 0 else " " * len(head)) + line,
                         style=SEVERITY_STYLE.get(text, style) if c == "severity" else style)
            console.print(shown, no_wrap=True, overflow="ignore", crop=False)


def _table(console: Any, t: Table, fit: Any, view: View, full: Any) -> None:
    from rich.text import Text

    # the title on its own line: as a rich table title it wraps to the table's width,
    # mid-word for a narrow table
    console.print(Text(fit(t.title), style="bold"))
    if len(t.rows) == 1 and not view.wide:
        # one row (a participant's report): its columns as lines, every one kept and whole
        return _pairs(console, t, t.rows[0], full if view.whole else fit)
    texts = {c: [fit(cell(r.get(c), c)) for r in t.rows] for c in t.columns}
    prose = {c: _prose(texts[c]) for c in t.columns}
    need = {c: _need(c, texts[c], prose[c]) for c in t.columns}
    columns = t.columns if view.wide else _fitting(t, texts, need, console.width)
    if view.whole and not view.wide:
        # a participant's report keeps every column: each row as lines when they do not all fit
        if sum(need[c] + 3 for c in t.columns) + 1 > console.width:
            for row in t.rows:
                _pairs(console, t, row, full)
                console.print()
            return
        columns = t.columns
    # the heading wraps between its words, never inside one
    heads = {c: textwrap.fill(_label(c), need[c]) for c in columns}
    right = {c: numeric(t, c) for c in columns}
    width = console.width
    if view.wide:
        # --wide: every column whole, however wide (never cut to the terminal's or a file's
        # width: rich gives no renderable more than its console's width)
        console.width = max(width, sum((PROSE_MIN if prose[c] else 0) + 3 + max([need[c], *map(len, texts[c])])
                                       for c in columns) + 1)
    try:
        _draw(console, t, columns, heads, texts, prose, need, right)
    finally:
        console.width = width
    same = [f"{plain(c)} {texts[c][0]}" for c in t.columns if c not in columns and constant(texts[c])]
    if same:
        console.print(Text(f"(the same in every row: {'; '.join(same)})"))
    dropped = [plain(c) for c in t.columns if c not in columns and not constant(texts[c])]
    if dropped:
        console.print(Text(f"(not shown at this width: {', '.join(dropped)}; "
                           "--wide or --format json has them)"))


def _draw(console: Any, t: Table, columns: list[str], heads: dict[str, str], texts: dict[str, list[str]],
          prose: dict[str, bool], need: dict[str, int], right: dict[str, bool]) -> None:
    """The chosen columns as a table: an id or number cell is never cut nor wrapped (each such
    column is at least as wide as its widest cell), only prose wraps."""
    from rich.table import Table as RichTable
    from rich.text import Text

    drawn = None if console.color_system else _drawn(
        [heads[c].split("\n") for c in columns], [texts[c] for c in columns], [right[c] for c in columns],
        [PROSE_MIN if prose[c] else 0 for c in columns], console.width)
    if drawn is not None:
        console.print(Text(drawn), no_wrap=True, overflow="ignore", crop=False)
    else:
        rt = RichTable()
        for c in columns:
            # the cells of an id or number column do not wrap at all
            rt.add_column(Text(heads[c]), justify="right" if right[c] else "left",
                          no_wrap=not prose[c], overflow="fold", min_width=need[c])
        for i, row in enumerate(t.rows):
            style = FAILING_STYLE if t.failed(row) else ""
            cells = [Text(texts[c][i], style=SEVERITY_STYLE.get(texts[c][i], style) if c == "severity" else style)
                     for c in columns]
            rt.add_row(*cells)
        console.print(rt, crop=False)


def _drawn(heads: list[list[str]], cells: list[list[str]], right: list[bool], min_width: list[int],
           width: int) -> str | None:
    """The table rich's ``Table()`` draws without colour (its HEAVY_HEAD box, one space either
    side of a cell), when every column can take its widest cell (or heading line, or
    ``min_width``) within ``width``: what a file, a pipe or cron gets, without rich's
    cell-by-cell layout (a sixth of the demo report's time). None when the columns do not
    fit: rich then shares the width out and wraps the prose (``_table``).
    ``tests/test_operator_view.py`` holds it to rich's own drawing."""
    from rich.cells import cell_len

    widths = [max([m, *map(cell_len, h), *map(cell_len, col)]) or 1 for h, col, m in zip(heads, cells, min_width)]
    if sum(w + 3 for w in widths) + 1 > width:
        return None

    def line(texts: list[str], bar: str) -> str:
        parts = []
        for s, w, r in zip(texts, widths, right):
            s = s.rstrip() if r else s         # as rich justifies to the right
            pad = " " * (w - cell_len(s))
            parts.append(f" {pad}{s} " if r else f" {s}{pad} ")
        return bar + bar.join(parts) + bar

    rule = ["━" * (w + 2) for w in widths]
    out = ["┏" + "┳".join(rule) + "┓"]
    tall = max(map(len, heads))
    for i in range(tall):       # headings sit on the rule under them
        out.append(line([h[i - tall + len(h)] if i >= tall - len(h) else "" for h in heads], "┃"))
    out.append("┡" + "╇".join(rule) + "┩")
    for row in zip(*cells):
        out.append(line(list(row), "│"))
    out.append("└" + "┴".join("─" * (w + 2) for w in widths) + "┘")
    return "\n".join(out)


def write(result: Result, out, view: View) -> None:
    """This format's record (formats.py): the report to the text stream ``out`` (print_table)."""
    print_table(result, out, view)
