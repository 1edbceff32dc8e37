"""The one rule for text that came from outside (logs, chain, accounting, metrics,
recordings, the command line): it is data in every format, never markup, never a
control sequence, never a formula.

- terminal (``terminal``, ``plain``): rich gets a ``rich.text.Text``, never a markup
  string; control characters other than tab (C0, DEL, C1, the bidi overrides and the
  line/paragraph separators) are shown escaped (``\\x1b``, ``\\r``, ``\\u202e``).
- Markdown (``md``, ``md_block``, ``md_code``): controls escaped as above; ``|``, the
  inline Markdown characters and ``\\`` backslash-escaped; ``<``, ``>`` and ``&`` as
  entities, so no HTML passes (a code span holds no ``<``); values longer than
  ``MD_LIMIT`` (sentences: ``PROSE_LIMIT``) are cut, and say so.
- html (``html``): ``html.escape`` (``&``, ``<``, ``>``, quotes).
- csv (``csv_cell``): a string starting ``=``, ``+``, ``-``, ``@``, tab or CR gets a
  leading ``'``, so a spreadsheet shows it instead of running it; numbers are numbers.
- json: exact, as ``json.dumps`` writes it (its own escapes for C0 controls, ``"`` and
  ``\\``): nothing to do here.

``cut`` is how a long value is shortened everywhere: its start, then an ellipsis with
the value's full length.
"""

from __future__ import annotations

import html as _html
import re
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:      # the annotation only: rich is imported when a terminal text is made
    from rich.text import Text

# every character a terminal or a Markdown renderer may act on instead of showing: C0 but
# tab, DEL, C1 (0x9b is CSI on an 8-bit terminal), the bidi embeddings, overrides and
# isolates (they reorder what is shown), and the Unicode line and paragraph separators
CONTROL = re.compile("[\x00-\x08\x0a-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069\u2028\u2029]")
_NAMED = {"\n": "\\n", "\r": "\\r", "\0": "\\0"}

TERMINAL_LIMIT = 1000      # a text of the terminal view (unless --wide)
MD_LIMIT = 400             # a value in the Markdown report: a cell, an id, a title
PROSE_LIMIT = 1000         # a sentence in the Markdown report: a note, a summary, a caveat


def _shown(m: re.Match) -> str:
    ch = m.group(0)
    return _NAMED.get(ch) or (f"\\x{ord(ch):02x}" if ord(ch) < 0x100 else f"\\u{ord(ch):04x}")


# a character of a number, a word, an id, a time (09:41:09) or a path with its line (gateway.log:118)
TOKEN_CHAR = r"[\w.+\-:/]"
_TOKEN = re.compile(TOKEN_CHAR)


def cut(text: str, limit: int | None) -> str:
    """``text``, or at most its first ``limit`` characters and ``… (N characters)``; the cut
    falls between tokens, never inside a number, an id, a time or a ``path:line`` (``98995200…``
    of 989952000 reads as a number 10x smaller), but for one token longer than ``limit``."""
    if limit is None or len(text) <= limit:
        return text
    end = limit
    while end > 0 and _TOKEN.match(text[end]) and _TOKEN.match(text[end - 1]):
        end -= 1
    return f"{text[:end or limit]}… ({len(text):,} characters)"


def plain(text: Any, limit: int | None = None) -> str:
    """Outside text for a terminal line: control characters shown escaped, cut at ``limit``."""
    return CONTROL.sub(_shown, cut(str(text), limit))


def terminal(text: Any, limit: int | None = None, style: str = "") -> "Text":
    """Outside text as rich shows it: literally (a ``Text``, no markup, no emoji codes)."""
    from rich.text import Text

    return Text(plain(text, limit), style=style)


# Markdown: the inline characters that format, link or escape; '_' only where it can open or
# close emphasis (not between two letters or digits: receipt_timeout stays as it is)
_MD_INLINE = re.compile(r"[\\`*\[\]|~#]|(?<![^\W_])_|_(?![^\W_])")
_MD_HTML = {"&": "&amp;", "<": "&lt;", ">": "&gt;"}
_MD_BLOCK = re.compile(r"^(?:([-+=])|(\d+)([.)]))")


def md(text: Any, limit: int | None = MD_LIMIT) -> str:
    """Outside text inside a Markdown line or table cell: shown as written, one line."""
    s = _MD_INLINE.sub(lambda m: "\\" + m.group(0), plain(text, limit))
    return re.sub("[&<>]", lambda m: _MD_HTML[m.group(0)], s)


def md_block(text: Any, limit: int | None = MD_LIMIT) -> str:
    """``md``, for text that starts a block (a paragraph, a list item): a leading ``-``,
    ``+``, ``=`` or ``1.`` is escaped so it does not make a list, a rule or a heading, and
    leading blanks (an indented code block) are dropped, as Markdown drops them anyway."""
    return _MD_BLOCK.sub(lambda m: "\\" + m.group(1) if m.group(1) else m.group(2) + "\\" + m.group(3),
                         md(str(text).lstrip(" \t"), limit))


def md_code(text: Any, limit: int | None = MD_LIMIT) -> str:
    """Outside text as a Markdown code span, fenced by more backticks than it holds; text
    holding a ``<`` is written by ``md`` instead, so no ``<`` is ever raw in the report."""
    s = plain(text, limit) or " "         # `` is no code span; ` ` is one of a blank
    if "<" in s:
        return md(text, limit)
    fence = "`" * (max((len(r) for r in re.findall("`+", s)), default=0) + 1)
    pad = " " if s.startswith("`") or s.endswith("`") or (s.startswith(" ") and s.endswith(" ") and s.strip()) else ""
    return f"{fence}{pad}{s}{pad}{fence}"


def html(text: Any) -> str:
    """Outside text in html: escaped (also inside a quoted attribute)."""
    return _html.escape(str(text))


FORMULA = ("=", "+", "-", "@", "\t", "\r")


def csv_cell(v: Any) -> Any:
    """A csv value: a string a spreadsheet would run as a formula gets a leading ``'``."""
    return "'" + v if isinstance(v, str) and v.startswith(FORMULA) else v
