"""The terminal view: aligned tables that fit the terminal.

On a terminal the tables take its width; into a file or a pipe (cron) they are 250
columns wide so nothing wraps. Unless ``--wide``, the view is made to fit: addresses are
shortened to the form the gateway's logs use (``gonka1…x7m3qk5d``), the low-value
columns a table names in ``Table.narrow`` are dropped, column names wrap between words
(``poc slot allocation``) and ids never wrap at all. json, csv and md keep everything.
"""

from __future__ import annotations

import re
import sys
import textwrap
from typing import Any

from ..result import Result
from .render import View, cell, findings_table, layout, numeric
from .text import TERMINAL_LIMIT, plain

ADDRESS = re.compile(r"\bgonka1[02-9ac-hj-np-z]{38}\b")
FILE_WIDTH = 250


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
    longest cell, a heading its longest word, a prose column ``PROSE_MIN``."""
    word = max(len(w) for w in _label(c).split())
    return max(word, PROSE_MIN) if prose else max([word, *map(len, texts)])


def _fitting(columns: list[str], need: dict[str, int], width: int) -> list[str]:
    """The columns, in order, that fit in ``width`` (each takes 3 more for padding and border)."""
    kept, used = [], 1
    for c in columns:
        if used + need[c] + 3 <= width:
            kept.append(c)
            used += need[c] + 3
    return kept


PROSE_MIN = 20


def print_table(result: Result, file: Any = None, view: View = View()) -> None:
    from rich.console import Console
    from rich.table import Table as RichTable
    from rich.text import Text

    file = file or sys.stdout
    terminal = file.isatty()
    console = Console(file=file, highlight=False, soft_wrap=False, width=None if terminal else FILE_WIDTH)

    # every text shown is a rich Text (never markup), its control characters escaped (text.py)
    def fit(s: str) -> str:
        return plain(s) if view.wide else plain(short_addresses(s), TERMINAL_LIMIT)

    for kind, depth, item in layout(result):
        if kind == "title":
            if depth > 1:
                console.print()
            console.print(Text(fit(item), style="bold"))
        elif kind == "header":
            for k, v in item:
                console.print(Text(f"  {plain(k)}: {fit(v)}"))
        else:
            if kind == "findings":
                item = findings_table(item)
            console.print()
            if not item.rows:
                console.print(Text.assemble((fit(item.title), "bold"), ": none"))
            else:
                texts = {c: [fit(cell(r.get(c))) for r in item.rows] for c in item.columns}
                prose = {c: _prose(texts[c]) for c in item.columns}
                need = {c: _need(c, texts[c], prose[c]) for c in item.columns}
                columns = item.columns if view.wide else _fitting(
                    [c for c in item.columns if c not in item.narrow], need, console.width)
                # the title on its own line: as a rich table title it wraps to the table's width,
                # mid-word for a narrow table
                console.print(Text(fit(item.title), style="bold"))
                rt = RichTable()
                for c in columns:
                    # the heading wraps between its words, never inside one; the cells of an
                    # id or number column do not wrap at all
                    rt.add_column(Text(textwrap.fill(_label(c), need[c])),
                                  justify="right" if numeric(item, c) else "left",
                                  no_wrap=not prose[c], overflow="fold",
                                  min_width=PROSE_MIN if prose[c] else None)
                for i in range(len(item.rows)):
                    rt.add_row(*(Text(texts[c][i]) for c in columns))
                console.print(rt)
                dropped = [plain(c) for c in item.columns if c not in columns]
                if dropped:
                    console.print(Text(f"(not shown at this width: {', '.join(dropped)}; "
                                       "--wide or --format json has them)"))
            for n in item.notes:
                console.print(Text(fit(n)))
