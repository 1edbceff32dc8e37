"""Parsing devshardctl gateway log lines (docs: gateway-logs.md, sections 1 and 12).

Three paths with one meaning:

* :func:`parse_line` is the reference: one line in, an :class:`Event` or a :class:`Reject`
  out. It accepts every format (text stage lines, raw events, the fixed-prefix free-text
  lines, Go ``%q`` quoting with every Go escape, the Go and Docker timestamp prefixes, the
  Docker json-file wrapper, slog JSON and slog text records).
* :func:`parse_block` parses a block of complete lines at once. The compiled tokenizer
  (``auditor/_logscan.c``, when pip could build it) takes the common text lines in one
  pass; polars takes the other common shapes (text lines whose values need no unescaping
  beyond JSON's, slog JSON stage records) when there are enough of them; every other line
  goes to :func:`parse_line`. Its output for a line is the same whichever path took it
  (the property tests compare all three).

An event's ``fields`` is a JSON object text holding every ``key=value`` pair of the line
except the line's identity (``request=`` before ``stage=`` and the first ``stage=``), values
as strings in text lines, as typed in JSON records, in line order (duplicates kept).
Synthetic keys start with ``_``: ``_text`` (free text that is not a pair, e.g. the
em-dash tail of ``escrow_balance_low``) and ``_event`` (the event words of a
``chain phase gate:`` line).

An :class:`Event` keeps its timestamps as text (``dts`` the Docker prefix or wrapper time,
``rts`` the slog record's time, ``gts`` the Go ``log`` prefix, read as UTC); a parsed block
carries them typed (``ts``: Docker, else record, else Go; ``src`` says which).
"""

from __future__ import annotations

import json
import os
import re
import threading
from dataclasses import dataclass, field
from typing import Any

# -- shapes ------------------------------------------------------------------------
D_RE = r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(?:\.[0-9]{1,9})?(?:Z|[+-][0-9]{2}:[0-9]{2})"
G_RE = r"[0-9]{4}/[0-9]{2}/[0-9]{2} [0-9]{2}:[0-9]{2}:[0-9]{2}(?:\.[0-9]{1,9})?"
PREFIX_RE = rf"^(?:{D_RE} )?(?:{G_RE} )?"
EVENT_NAME_RE = r"[a-z][a-z0-9]*(?:_[a-z0-9]+)+"
KEY_RE = r"[A-Za-z_][A-Za-z0-9_]*"
# request/stage values the vectorised path lifts: printable ASCII, no space, quote or backslash
_IDC = r'[!#-\[\]-~]'
_ID = _IDC + "+"
IDENT_RE = rf"(?:(?:request={_ID} )?stage={_ID}|{EVENT_NAME_RE})"
# a pair whose value needs no unescaping and contains no '=', space or quote: JSON by replacement
FAST_PAIR = rf' {KEY_RE}=(?:"[^ ="\\\x00-\x1f]*"|[^ ="\\\x00-\x1f]*)'
# a pair whose quoted value uses only escapes that mean the same in Go and JSON
_JSON_ESC = r'\\(?:["\\bfnrt]|u(?:[0-9a-cA-CeEfF][0-9a-fA-F]{3}|[dD][0-7][0-9a-fA-F]{2}))'
MED_PAIR = rf' {KEY_RE}=(?:"(?:[^"\\\x00-\x1f]|{_JSON_ESC})*"|[^ "\\\x00-\x1f]*)'
FAST_RE = rf"{PREFIX_RE}{IDENT_RE}(?:{FAST_PAIR})*$"
MED_RE = rf"{PREFIX_RE}{IDENT_RE}(?:{MED_PAIR})*$"
MED_SUB = rf'(?:^| )({KEY_RE})=(?:"((?:[^"\\]|\\.)*)"|([^ ]*))'
# a slog JSON stage record in the handler's key order
JHEAD_RE = (r'^\{"time":"(?P<rts>[^"\\]*)","level":"(?P<level>[^"\\]*)","msg":"(?:[^"\\]|\\.)*",'
            rf'(?:"request":"(?P<request>{_IDC}*)",)?"stage":"(?P<name>{_ID})"')
JHEAD_REQ_RE = r'^\{"time":"[^"\\]*","level":"[^"\\]*","msg":"(?:[^"\\]|\\.)*","request":"'
# the Docker json-file driver record around a line
WRAP_RE = (r'^\{"log":"(?:[^"\\\x00-\x1f]|' + _JSON_ESC + r'|\\/)*","stream":"[a-z]*","time":"' + D_RE
           + r'"\}$')
JSON_LINE_RE = (rf'{PREFIX_RE}\{{"time":"[^"\\]*","level":"[^"\\]*","msg":"(?:[^"\\]|\\.)*",'
                rf'(?:"request":"{_IDC}*",)?"stage":"{_ID}"[,}}]')

SAMPLES_PER_REASON = 5
SAMPLE_CHARS = 500


@dataclass(frozen=True)
class Event:
    kind: str                 # 'stage' | 'event'
    name: str
    request: str | None
    fields: str               # JSON object text
    dts: str | None = None
    rts: str | None = None
    gts: str | None = None
    fmt: str = "text"         # 'text' | 'json' | 'slog_text'
    level: str | None = None


@dataclass(frozen=True)
class Reject:
    reason: str


# -- Go quoting ----------------------------------------------------------------------
_SIMPLE_ESC = {"a": b"\a", "b": b"\b", "f": b"\f", "n": b"\n", "r": b"\r", "t": b"\t",
               "v": b"\v", "\\": b"\\", '"': b'"', "'": b"'"}
_HEX = set("0123456789abcdefABCDEF")


def go_unquote(inner: str) -> str:
    """The value of a Go ``%q`` string, given the text between its quotes.

    Go escapes: ``\\a \\b \\f \\n \\r \\t \\v \\\\ \\" \\'``, ``\\xNN`` and ``\\NNN`` (octal)
    bytes, ``\\uNNNN`` and ``\\UNNNNNNNN`` runes. Bytes that do not form UTF-8 become
    U+FFFD. Raises ValueError on an escape Go would not accept."""
    if "\\" not in inner:
        return inner
    out = bytearray()
    i, n = 0, len(inner)
    while i < n:
        j = inner.find("\\", i)
        if j < 0:
            out += inner[i:].encode("utf-8", "surrogatepass")
            break
        out += inner[i:j].encode("utf-8", "surrogatepass")
        if j + 1 >= n:
            raise ValueError("trailing backslash")
        c = inner[j + 1]
        if c in _SIMPLE_ESC:
            out += _SIMPLE_ESC[c]
            i = j + 2
        elif c == "x":
            h = inner[j + 2:j + 4]
            if len(h) != 2 or not set(h) <= _HEX:
                raise ValueError("bad \\x escape")
            out.append(int(h, 16))
            i = j + 4
        elif c in "01234567":
            o = inner[j + 1:j + 4]
            if len(o) != 3 or not set(o) <= set("01234567") or int(o, 8) > 255:
                raise ValueError("bad octal escape")
            out.append(int(o, 8))
            i = j + 4
        elif c in "uU":
            width = 4 if c == "u" else 8
            h = inner[j + 2:j + 2 + width]
            if len(h) != width or not set(h) <= _HEX:
                raise ValueError("bad unicode escape")
            cp = int(h, 16)
            if cp > 0x10FFFF or 0xD800 <= cp <= 0xDFFF:
                raise ValueError("invalid rune")
            out += chr(cp).encode("utf-8")
            i = j + 2 + width
        else:
            raise ValueError(f"unknown escape \\{c}")
    return out.decode("utf-8", "replace")


# -- text tokens -----------------------------------------------------------------------
_KEY_EQ = re.compile(rf"({KEY_RE})=")
_QUOTED = re.compile(r'"((?:[^"\\]|\\.)*)"')
_WS = " \t"
_EVENT_NAME = re.compile(EVENT_NAME_RE)
_PREFIX = re.compile(rf"^(?:({D_RE}) )?(?:({G_RE}) )?")
_DEVSHARD_DEACT = re.compile(r"devshard (\S+) deactivated: (.*)$")
_ZERO_CAP = re.compile(r"gateway: all (\d+) candidate escrow\(s\) at zero capacity, returning (\d+);"
                       r" per-escrow weights:[ \t]*(.*)$")
_PHASE_GATE = "chain phase gate:"


class BadQuote(ValueError):
    pass


def _next_ws(s: str, i: int) -> int:
    n = len(s)
    while i < n and s[i] not in _WS:
        i += 1
    return i


def tokenize(body: str) -> list[tuple[str | None, str]]:
    """Split a text body into ``(key, value)`` pairs and ``(None, word)`` free words.

    Values are bare (up to the next space or tab) or Go-quoted; raises BadQuote on an
    unterminated quote, a bad escape or text glued to a closing quote."""
    toks: list[tuple[str | None, str]] = []
    i, n = 0, len(body)
    while i < n:
        if body[i] in _WS:
            i += 1
            continue
        m = _KEY_EQ.match(body, i)
        if m is None:
            end = _next_ws(body, i)
            toks.append((None, body[i:end]))
            i = end
            continue
        j = m.end()
        if j < n and body[j] == '"':
            q = _QUOTED.match(body, j)
            if q is None:
                raise BadQuote("unterminated quoted value")
            end = q.end()
            if end < n and body[end] not in _WS:
                raise BadQuote("text after a closing quote")
            try:
                toks.append((m.group(1), go_unquote(q.group(1))))
            except ValueError as exc:
                raise BadQuote(str(exc)) from None
            i = end
        else:
            end = _next_ws(body, j)
            toks.append((m.group(1), body[j:end]))
            i = end
    return toks


def _jdump(v: Any) -> str:
    return json.dumps(v, ensure_ascii=False, allow_nan=False)


def fields_json(pairs: list[tuple[str, Any]], free: list[str] | None = None, *, quote_keys: bool = False) -> str:
    if quote_keys:
        parts = [f"{_jdump(k)}:{json.dumps(v, ensure_ascii=False, allow_nan=False, separators=(',', ':'))}"
                 for k, v in pairs]
    else:
        parts = [f'"{k}":{_jdump(v)}' for k, v in pairs]
    if free:
        parts.append(f'"_text":{_jdump(" ".join(free))}')
    return "{" + ",".join(parts) + "}"


def _split_toks(toks):
    pairs = [(k, v) for k, v in toks if k is not None]
    free = [v for k, v in toks if k is None]
    return pairs, free


def parse_text_body(body: str) -> tuple[str, str, str | None, list[tuple[str, Any]], list[str]] | Reject:
    """A text body (prefixes stripped) -> (kind, name, request, pairs, free words) or Reject."""
    if body.startswith(_PHASE_GATE):
        try:
            toks = tokenize(body[len(_PHASE_GATE):])
        except BadQuote:
            return Reject("bad_quote")
        k = 0
        while k < len(toks) and toks[k][0] is None:
            k += 1
        words = [v for _, v in toks[:k]]
        pairs, free = _split_toks(toks[k:])
        if words:
            pairs.insert(0, ("_event", " ".join(words)))
        return ("event", "chain_phase_gate", None, pairs, free)
    m = _DEVSHARD_DEACT.match(body)
    if m:
        return ("event", "devshard_deactivated", None, [("escrow", m.group(1)), ("reason", m.group(2))], [])
    m = _ZERO_CAP.match(body)
    if m:
        return ("event", "gateway_zero_capacity", None,
                [("candidates", m.group(1)), ("status", m.group(2)), ("weights", m.group(3).strip())], [])
    try:
        toks = tokenize(body)
    except BadQuote:
        return Reject("bad_quote")
    if not toks:
        return Reject("blank")
    k0, v0 = toks[0]
    if k0 is None:
        if _EVENT_NAME.fullmatch(v0) and (len(toks) == 1 or toks[1][0] is not None):
            pairs, free = _split_toks(toks[1:])
            return ("event", v0, None, pairs, free)
        return Reject("not_gateway")
    return parse_text_body_from_toks(toks)


class _Pairs(list):
    """A JSON object kept as its list of pairs (duplicates and order preserved)."""


def _plain(v: Any) -> Any:
    if isinstance(v, _Pairs):
        return {k: _plain(x) for k, x in v}
    if isinstance(v, list):
        return [_plain(x) for x in v]
    return v


def _json_pairs(text: str) -> _Pairs | None:
    try:
        obj = json.loads(text, object_pairs_hook=_Pairs)
    except (ValueError, RecursionError):
        return None
    return obj if isinstance(obj, _Pairs) else None


def _first(pairs: _Pairs, key: str) -> tuple[int, Any]:
    for i, (k, v) in enumerate(pairs):
        if k == key:
            return i, v
    return -1, None


def _text_event(body: str, dts, gts, rts=None, level=None, fmt="text", extra=()) -> Event | Reject:
    r = parse_text_body(body)
    if isinstance(r, Reject):
        return r
    kind, name, request, pairs, free = r
    pairs = list(pairs) + list(extra)
    quote = fmt == "json" and bool(extra)
    return Event(kind, name, request, fields_json([(k, _plain(v)) for k, v in pairs] if quote else pairs, free,
                                                  quote_keys=quote),
                 dts, rts, gts, fmt, level)


def _json_record(body: str, dts, gts) -> Event | Reject:
    obj = _json_pairs(body)
    if obj is None:
        return Reject("bad_json")
    ti, t = _first(obj, "time")
    li, lv = _first(obj, "level")
    mi, msg = _first(obj, "msg")
    si, stage = _first(obj, "stage")
    rts = t if isinstance(t, str) else None
    level = lv if isinstance(lv, str) else None
    if isinstance(stage, str) and stage:
        ri, req = _first(obj, "request")
        if ri > si:
            ri, req = -1, None
        request = None if req is None else (req if isinstance(req, str) else json.dumps(req))
        drop = {ti, li, mi, si, ri}
        rest = [(k, _plain(v)) for i, (k, v) in enumerate(obj) if i not in drop]
        return Event("stage", stage, request, fields_json(rest, quote_keys=True), dts, rts, gts, "json", level)
    if isinstance(msg, str):
        extra = [(k, v) for i, (k, v) in enumerate(obj) if i not in {ti, li, mi}]
        return _text_event(msg, dts, gts, rts, level, "json", extra)
    return Reject("bad_json")


def _slog_text(body: str, dts, gts) -> Event | Reject | None:
    """``time=… level=… msg="…" k=v…`` (slog text handler); None when it is not one."""
    try:
        toks = tokenize(body)
    except BadQuote:
        return Reject("bad_quote")
    keys = [k for k, _ in toks]
    if not toks or toks[0][0] != "time" or "msg" not in keys:
        return None
    rts = toks[0][1]
    level = next((v for k, v in toks if k == "level"), None)
    mi = keys.index("msg")
    li = keys.index("level") if "level" in keys else -1
    rest = [t for i, t in enumerate(toks) if i not in (0, li, mi)]
    if any(k == "stage" for k, _ in rest):
        r = parse_text_body_from_toks(rest)
        if isinstance(r, Reject):
            return r
        kind, name, request, pairs, free = r
        return Event(kind, name, request, fields_json(pairs, free), dts, rts, gts, "slog_text", level)
    pairs, free = _split_toks(rest)
    ev = _text_event(toks[mi][1], dts, gts, rts, level, "slog_text", pairs)
    return ev


def parse_text_body_from_toks(toks):
    """The stage-line rule, for text lines and slog text attributes alike: the first
    ``stage=`` names the stage, and a ``request=`` is the line's request only when it is
    the line's first pair and stands right before that ``stage=`` (``logging.Stage``
    writes ``request=<id> stage=<stage>``); any other ``request=`` stays a field."""
    si = next((i for i, (k, _) in enumerate(toks) if k == "stage"), None)
    if si is None or toks[si][1] == "":
        return Reject("not_gateway")
    request = toks[0][1] if si == 1 and toks[0][0] == "request" else None
    drop = {si, 0} if request is not None else {si}
    pairs, free = _split_toks([t for i, t in enumerate(toks) if i not in drop])
    return ("stage", toks[si][1], request, pairs, free)


def parse_line(line: str) -> Event | Reject:
    """Parse one log line (without its newline)."""
    try:
        r = _parse_line(line)
    except ValueError:              # NaN / Infinity in a JSON record
        return Reject("bad_json")
    if isinstance(r, Event):
        try:                        # lone surrogates from JSON \ud800 escapes cannot be stored
            for v in (r.fields, r.name, r.request, r.rts, r.level):
                if v is not None:
                    v.encode("utf-8")
        except UnicodeEncodeError:
            return Reject("bad_json")
    return r


def _parse_line(line: str) -> Event | Reject:
    if line.endswith("\r"):
        line = line[:-1]
    if not line.strip():
        return Reject("blank")
    dts = None
    if line.startswith('{"log":'):
        obj = _json_pairs(line)
        if obj is None:
            return Reject("bad_json")
        _, inner = _first(obj, "log")
        _, t = _first(obj, "time")
        if not isinstance(inner, str):
            return Reject("bad_json")
        dts = t if isinstance(t, str) else None
        line = inner[:-1] if inner.endswith("\n") else inner
        if line.endswith("\r"):
            line = line[:-1]
        if not line.strip():
            return Reject("blank")
    m = _PREFIX.match(line)
    d, gts = m.group(1), m.group(2)
    dts = dts or d
    body = line[m.end():]
    if body.startswith("{"):
        return _json_record(body, dts, gts)
    if body.startswith("time="):
        r = _slog_text(body, dts, gts)
        if r is not None:
            return r
    return _text_event(body, dts, gts)


# -- blocks ----------------------------------------------------------------------------------
# A parsed block is one table of events sorted by line_no, typed for the store:
#   line_no, byte_offset, ts (timestamp[us, UTC]), src (1 docker, 2 record, 3 go, null),
#   fmt (0 text, 1 json, 2 slog_text), level, is_stage, name, request (the line's request id,
#   else the first request= field), escrow, nonce (the first such field as DuckDB's TRY_CAST
#   to BIGINT reads it), host (the text of the first host= field), fields (JSON text);
#   fields missing from the line are null
EVENT_COLUMNS = ["line_no", "byte_offset", "ts", "src", "fmt", "level", "is_stage", "name", "request",
                 "escrow", "nonce", "host", "fields"]
FMT_CODES = {"text": 0, "json": 1, "slog_text": 2}
D_FMT = "%Y-%m-%dT%H:%M:%S%.f%#z"
G_FMT = "%Y/%m/%d %H:%M:%S%.f"


VECTOR_MIN_LINES = 100     # the lines the compiled tokenizer leaves go to polars when there are this many
LIFT_IN_PYTHON = 500       # text rows up to this many have their keys lifted in Python, not DuckDB

# the compiled tokenizer of the common text lines (auditor/_logscan.c); without it (installed
# without a C compiler, or AUDITOR_NO_COMPILED=1 to compare) polars does all the work, slower
COMPILED_OFF = bool(os.environ.get("AUDITOR_NO_COMPILED"))
try:
    from .. import _logscan
except ImportError:
    _logscan = None
if COMPILED_OFF:
    _logscan = None


def compiled_note() -> str | None:
    """What the run report says when the compiled tokenizer is not in use."""
    if _logscan is not None:
        return None
    why = "AUDITOR_NO_COMPILED is set" if COMPILED_OFF else "auditor._logscan was not built (no C compiler at install?)"
    return f"parsed without the compiled tokenizer ({why}): several times slower, same rows"


@dataclass
class BlockResult:
    """One parsed block: its events (a pyarrow Table, EVENT_COLUMNS, sorted by line_no),
    the number of lines, the rejected lines (line numbers per reason) and a few sample
    rejected lines per reason ``(line_no, byte_offset, text)``."""

    events: Any
    lines: int
    rejects: dict[str, list[int]] = field(default_factory=dict)
    samples: dict[str, list[tuple[int, int, str]]] = field(default_factory=dict)

    @property
    def parsed(self) -> int:
        return self.events.num_rows

    @property
    def rejected(self) -> dict[str, int]:
        return {k: len(v) for k, v in self.rejects.items()}


_SEPARATORS = [bytes([c]) for c in (0x1F, 0x1E, 0x1D, 0x1C, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08,
                                    0x0B, 0x0C, 0x0E, 0x0F, 0x10, 0x11, 0x12, 0x13, 0x14, 0x15, 0x16)]


def _split_lines(block: bytes):
    """The block's lines as a polars String Series (None for an empty line), the indexes
    of lines that are not UTF-8, and each line's byte offset in the block (None when the
    offsets follow from the line lengths)."""
    import polars as pl

    n_nl = block.count(b"\n")
    sep = next((s for s in _SEPARATORS if s not in block), None)
    if sep is not None and n_nl:
        try:
            df = pl.read_csv(block, has_header=False, separator=sep.decode(), quote_char=None,
                             new_columns=["line"], schema_overrides={"line": pl.String},
                             infer_schema=False, raise_if_empty=False)
            s = df["line"] if df.width == 1 else None
        except Exception:  # noqa: BLE001 - invalid UTF-8 and the like: the exact path below
            s = None
        if s is not None and len(s) == n_nl and int(s.str.len_bytes().fill_null(0).sum()) + n_nl == len(block):
            return s, [], None
    # exact path: every line on its own (CRLF, invalid UTF-8, separator bytes present)
    raw = block.split(b"\n")
    if raw and raw[-1] == b"":
        raw.pop()
    texts: list[str | None] = []
    bad: list[int] = []
    offsets = []
    off = 0
    for i, b in enumerate(raw):
        offsets.append(off)
        off += len(b) + 1
        try:
            texts.append(b.decode("utf-8") if b else None)
        except UnicodeDecodeError:
            texts.append(None)
            bad.append(i)
    return pl.Series("line", texts, dtype=pl.String), bad, offsets


def _vector_text(sub, fast: bool):
    """Text rows, all matching FAST_RE (or all MED_RE) -> event rows.

    Positions are computed once each, as integers, and every output is a slice of the
    line (views, no copies): the prefix and identity are ASCII, so byte and character
    offsets agree up to the rest of the line."""
    import polars as pl

    ln = pl.col("line")
    df = sub.select("line_no", "byte_offset", "line", pfx=ln.str.extract(PREFIX_RE, 0))
    pfx = pl.col("pfx")
    has_d = pfx.str.slice(4, 1) == "-"             # a Docker prefix starts YYYY-
    if df.select(has_d.any()).item():
        dlen = pl.when(has_d).then(pfx.str.find(" ", literal=True) + 1).otherwise(0).cast(pl.Int64)
    else:
        dlen = pl.lit(0, pl.Int64)
    df = df.with_columns(plen=pfx.str.len_bytes().cast(pl.Int64), dlen=dlen)
    df = df.with_columns(body=ln.str.slice(pl.col("plen")))
    b = pl.col("body")
    df = df.with_columns(has_req=b.str.starts_with("request="), sp1=b.str.find(" ", literal=True).cast(pl.Int64))
    df = df.with_columns(o2=pl.when(pl.col("has_req")).then(pl.col("sp1") + 1).otherwise(0))
    df = df.with_columns(b2=b.str.slice(pl.col("o2")))
    b2 = pl.col("b2")
    df = df.with_columns(is_stage=b2.str.starts_with("stage="), sp2=b2.str.find(" ", literal=True).cast(pl.Int64))
    sp2, dl, plen = pl.col("sp2"), pl.col("dlen"), pl.col("plen")
    nstart = pl.when(pl.col("is_stage")).then(6).otherwise(0)
    glen = plen - dl - 1
    df = df.select(
        "line_no", "byte_offset", "is_stage",
        d=pl.when(dl > 0).then(ln.str.slice(0, dl - 1)),
        g=pl.when(glen > 0).then(ln.str.slice(dl, glen)),
        request=pl.when(pl.col("has_req")).then(b.str.slice(8, pl.col("sp1") - 8)),
        name=b2.str.slice(nstart, sp2.fill_null(b2.str.len_bytes()) - nstart),
        rest=pl.when(sp2.is_null()).then(pl.lit("")).otherwise(b2.str.slice(sp2 + 1)),
    )
    rest = pl.col("rest")
    if fast:
        # FAST values hold no space, '=' or quote: drop the quotes, then spaces and '=' are
        # exactly the pair and key separators
        body = (rest.str.replace_all('"', "", literal=True).str.replace_all(" ", '","', literal=True)
                .str.replace_all("=", '":"', literal=True))
        fj = pl.concat_str([pl.lit('{"'), body, pl.lit('"}')])
    else:
        fj = pl.concat_str([pl.lit("{"), rest.str.replace_all(MED_SUB, r',"${1}":"${2}${3}"').str.strip_prefix(","),
                            pl.lit("}")])
    df = df.with_columns(
        d=pl.col("d").str.to_datetime(D_FMT, time_unit="us", time_zone="UTC", strict=False),
        g=pl.col("g").str.to_datetime(G_FMT, time_unit="us", strict=False).dt.replace_time_zone("UTC"),
        fields=pl.when(rest == "").then(pl.lit("{}")).otherwise(fj),
    )
    d, gt = pl.col("d"), pl.col("g")
    return df.select(
        "line_no", "byte_offset",
        ts=pl.coalesce(d, gt),
        src=pl.when(d.is_not_null()).then(pl.lit(1, pl.Int8)).when(gt.is_not_null()).then(pl.lit(3, pl.Int8)),
        fmt=pl.lit(0, pl.Int8), level=pl.lit(None, pl.String),
        is_stage="is_stage", name="name", request="request", fields="fields",
    )


def _typed(df):
    """Rows with text timestamps (dts, rts, gts), fmt and kind names -> EVENT_COLUMNS."""
    import polars as pl

    d = pl.col("dts").str.to_datetime(D_FMT, time_unit="us", time_zone="UTC", strict=False)
    r = pl.col("rts").str.to_datetime(D_FMT, time_unit="us", time_zone="UTC", strict=False)
    g = pl.col("gts").str.to_datetime(G_FMT, time_unit="us", strict=False).dt.replace_time_zone("UTC")
    df = df.with_columns(d=d, r=r, g=g)
    d, r, g = pl.col("d"), pl.col("r"), pl.col("g")
    return df.select(
        "line_no", "byte_offset",
        ts=pl.coalesce(d, r, g),
        src=pl.when(d.is_not_null()).then(pl.lit(1, pl.Int8)).when(r.is_not_null()).then(pl.lit(2, pl.Int8))
        .when(g.is_not_null()).then(pl.lit(3, pl.Int8)),
        fmt=pl.col("fmt").replace_strict(FMT_CODES, return_dtype=pl.Int8),
        level="level", is_stage=pl.col("kind") == "stage", name="name", request="request", fields="fields",
    )


def _vector_json(sub):
    """slog JSON stage records whose head is in the handler's order -> (rows with text
    timestamps, validity): DuckDB reads the head fields and checks the whole record in one
    parse; ``fields`` is the record without its head (time, level, msg, request, stage)."""
    import polars as pl

    ln = pl.col("line")
    df = sub.with_columns(pfx=ln.str.extract(PREFIX_RE, 0))
    pfx = pl.col("pfx")
    has_d = pfx.str.slice(4, 1) == "-"
    sp = pfx.str.find(" ", literal=True)
    df = df.select(
        "line_no", "byte_offset",
        dts=pl.when(has_d).then(pfx.str.slice(0, sp)),
        g=pl.when(has_d).then(pfx.str.slice(sp + 1)).otherwise(pfx),
        body=ln.str.slice(pfx.str.len_chars()),
    )
    head = _duck_frame(
        "SELECT ok, j[1] AS rts, j[2] AS level, j[3] AS request, j[4] AS name FROM ("
        " SELECT coalesce(json_valid(body), false) AS ok,"
        "        CASE WHEN json_valid(body) THEN json_extract_string(body, ['time', 'level', 'request', 'stage'])"
        "        END AS j FROM _gw_block)", df.select("body"))
    df = pl.concat([df, head], how="horizontal")
    g = pl.col("g")
    # the request id of the head only (a later "request" key stays a field, as in parse_line)
    head_req = pl.col("body").str.contains(JHEAD_REQ_RE)
    out = df.select(
        "line_no", "byte_offset", "dts", "rts",
        gts=pl.when(g.str.len_bytes() > 0).then(g.str.head(-1)),
        fmt=pl.lit("json"), level="level", kind=pl.lit("stage"), name="name",
        request=pl.when(head_req).then(pl.col("request")),
        fields=pl.col("body").str.replace(JHEAD_RE + ",?", "{"),
    )
    return out, df["ok"]


_local = threading.local()


def _duck_frame(sql: str, frame):
    """Run ``sql`` over the polars ``frame`` (as ``_gw_block``) in this thread's in-memory
    DuckDB (JSON reads of a block) and return the result as a polars frame."""
    import polars as pl

    con = getattr(_local, "con", None)
    if con is None:
        import duckdb

        con = _local.con = duckdb.connect()
    con.register("_gw_block", frame.to_arrow())
    try:
        return pl.from_arrow(con.sql(sql).to_arrow_table())
    finally:
        con.unregister("_gw_block")


def _unwrap_docker_json(df):
    """Docker json-file records: the logged line, with the record's time as a Docker
    prefix (which is what parse_line makes of them). Records that do not fit the strict
    shape (or hold several lines) stay as they are, for parse_line."""
    import polars as pl

    w = df["line"].str.contains(WRAP_RE).fill_null(False)
    if not w.any():
        return df
    sub = df.filter(w)
    rec = sub["line"].str.json_decode(pl.Struct({"log": pl.String, "time": pl.String}))
    inner = rec.struct.field("log").str.strip_suffix("\n")
    ok = ~inner.str.contains("[\r\n]").fill_null(True)
    synth = pl.select(pl.when(pl.lit(ok)).then(pl.concat_str([rec.struct.field("time"), pl.lit(" "), inner]))
                      .otherwise(pl.lit(sub["line"]))).to_series()
    return pl.concat([df.filter(~w), sub.with_columns(line=synth)]).sort("line_no")


def _other_schema():
    import polars as pl

    return {"line_no": pl.Int64, "byte_offset": pl.Int64,
            **{c: pl.String for c in ("dts", "rts", "gts", "fmt", "level", "kind", "name", "request", "fields")}}


def _empty_events():
    import polars as pl

    return pl.DataFrame(schema={"line_no": pl.Int64, "byte_offset": pl.Int64, "ts": pl.Datetime("us", "UTC"),
                                "src": pl.Int8, "fmt": pl.Int8, "level": pl.String, "is_stage": pl.Boolean,
                                "name": pl.String, "request": pl.String, "escrow": pl.Int64,
                                "nonce": pl.Int64, "host": pl.String, "fields": pl.String})


def count_lines(block) -> int:
    """The number of newlines in a bytes-like block."""
    return _logscan.count_lines(block) if _logscan is not None else bytes(block).count(b"\n")


def parse_block(block: bytes | memoryview, base_line: int = 1, base_off: int = 0, *, vectorised: bool = True,
                compiled: bool = True) -> BlockResult:
    """Parse ``block`` (complete lines, each ending in ``\\n``; a last line without one is
    taken as a line too). ``base_line`` is the number of its first line, ``base_off`` the
    byte offset of its first byte in the file. Every line is either an event or a reject.

    The compiled tokenizer takes the common text lines first (when it is installed and
    ``compiled``); polars takes the other common shapes, :func:`parse_line` the rest.
    ``vectorised=False`` parses every line with :func:`parse_line` (for tests)."""
    import polars as pl

    scanned, lines_at = None, None
    if vectorised and compiled and _logscan is not None:
        out = _logscan.scan(block, base_line, base_off)      # any bytes-like block; its rest ends in \n
        scanned = _scanned_events(out) if out[0] else None
        block = out[22]
        lines_at = (out[23], out[24])
        # the few lines it leaves go line by line: cheaper than the polars path's fixed cost
        vectorised = len(out[23]) // 8 >= VECTOR_MIN_LINES
    else:
        block = bytes(block)
        if block and not block.endswith(b"\n"):
            block += b"\n"
    res, events = _parse_lines(block, base_line, base_off, lines_at, vectorised)
    if scanned is not None:
        res.lines += scanned.num_rows
        if events is None:
            res.events = scanned
            return res
        events = pl.concat([pl.from_arrow(scanned), events]).sort("line_no")
    res.events = (events if events is not None else _empty_events()).to_arrow(
        compat_level=pl.CompatLevel.newest())    # string views: no copy
    return res


def _scanned_events(out):
    """The compiled tokenizer's buffers (see auditor/_logscan.c) -> an events table
    (pyarrow, no copy)."""
    import pyarrow as pa

    n = out[0]
    buf = pa.py_buffer

    def strings(i: int, nullable: bool = True):
        return pa.Array.from_buffers(pa.string_view(), n, [buf(out[i + 2]) if nullable else None, buf(out[i]),
                                                           buf(out[i + 1])])

    valid = buf(out[4])
    return pa.table({
        "line_no": pa.Array.from_buffers(pa.int64(), n, [None, buf(out[1])]),
        "byte_offset": pa.Array.from_buffers(pa.int64(), n, [None, buf(out[2])]),
        "ts": pa.Array.from_buffers(pa.timestamp("us", "UTC"), n, [valid, buf(out[3])]),
        "src": pa.Array.from_buffers(pa.int8(), n, [valid, buf(out[5])]),
        "fmt": pa.repeat(pa.scalar(FMT_CODES["text"], pa.int8()), n),
        "level": pa.nulls(n, pa.string_view()),
        "is_stage": pa.Array.from_buffers(pa.bool_(), n, [None, buf(out[6])]),
        "name": strings(11, nullable=False),
        "request": strings(14),
        "escrow": pa.Array.from_buffers(pa.int64(), n, [buf(out[8]), buf(out[7])]),
        "nonce": pa.Array.from_buffers(pa.int64(), n, [buf(out[10]), buf(out[9])]),
        "host": strings(17),
        "fields": strings(20, nullable=False),
    })


def _parse_lines(block: bytes, base_line: int, base_off: int, lines_at, vectorised: bool):
    """The polars and line-by-line paths over ``block``: a BlockResult without events, and
    the events frame (None when there are none). ``lines_at`` gives the line numbers and
    byte offsets (int64 buffers) of the block's lines when they are not consecutive."""
    import polars as pl

    lines, bad_utf8, offsets = _split_lines(block)
    n = len(lines)
    res = BlockResult(events=None, lines=n)
    if offsets is None:
        lens = lines.str.len_bytes().fill_null(0).cast(pl.Int64) + 1
        rel = lens.cum_sum() - lens
    else:
        rel = pl.Series(offsets, dtype=pl.Int64)
    if lines_at is None:
        line_no, off = pl.int_range(base_line, base_line + n, dtype=pl.Int64, eager=True), rel + base_off
    else:
        import pyarrow as pa

        line_no, off = (pl.Series(pa.Array.from_buffers(pa.int64(), len(b) // 8, [None, pa.py_buffer(b)]))
                        for b in lines_at)
    df = pl.DataFrame({"line_no": line_no, "line": lines, "byte_offset": off, "rel": rel})
    texts, others = [], []      # typed frames; frames with text timestamps
    if vectorised and n:
        ln = pl.col("line")
        if lines.str.starts_with('{"log":"').any():
            df = _unwrap_docker_json(df)
        fast = ln.str.contains(FAST_RE).fill_null(False)
        df = df.with_columns(fast=fast)
        f = df.filter(pl.col("fast"))
        if f.height:
            texts.append(_vector_text(f, True))
        slow = df.filter(~pl.col("fast"))
        if slow.height:
            slow = slow.with_columns(med=ln.str.contains(MED_RE).fill_null(False))
            med = slow.filter(pl.col("med"))
            if med.height:
                texts.append(_vector_text(med, False))
            slow = slow.filter(~pl.col("med")).with_columns(js=ln.str.contains(JSON_LINE_RE).fill_null(False))
            js = slow.filter(pl.col("js"))
            if js.height:
                jt, ok = _vector_json(js)
                others.append(jt.filter(ok))
                bad_js = jt.filter(~ok)["line_no"]
                slow = slow.filter(~pl.col("js") | pl.col("line_no").is_in(bad_js.implode()))
            else:
                slow = slow.filter(~pl.col("js"))
    else:
        slow = df
    # everything else, line by line
    bad = set(df["line_no"].gather(bad_utf8).to_list()) if bad_utf8 else set()
    ocols = list(_other_schema())
    cols: dict[str, list] = {c: [] for c in ocols}
    for line_no, text, o, r0 in slow.select("line_no", "line", "byte_offset", "rel").iter_rows():
        if text is None:
            if line_no in bad:
                end = block.find(b"\n", r0)
                _reject(res, "invalid_utf8", line_no, o, block[r0:end].decode("utf-8", "backslashreplace"))
            else:
                _reject(res, "blank", line_no, o, "")
            continue
        r = parse_line(text)
        if isinstance(r, Reject):
            _reject(res, r.reason, line_no, o, text)
            continue
        for c, v in zip(ocols, (line_no, o, r.dts, r.rts, r.gts, r.fmt, r.level, r.kind, r.name,
                                r.request, r.fields)):
            cols[c].append(v)
    if cols["line_no"]:
        others.append(pl.DataFrame(cols, schema=_other_schema()))
    parts = len(texts) + len(others)
    if others:
        texts.append(_typed(pl.concat(others)))
    if not texts:
        return res, None
    ev = texts[0] if parts == 1 else pl.concat(texts).sort("line_no")    # one source is in line order
    return res, _lift_keys(ev)


def _lift_keys(ev):
    """Add the request (when the line has none), escrow, nonce and host fields as columns,
    as DuckDB reads them: json_extract_string of the first such key in ``fields``, escrow
    and nonce through TRY_CAST to BIGINT. A few text rows are read in Python when that
    reads them alike: their values are all strings (json.loads reads them as DuckDB does)
    and their escrow and nonce plain decimal integers."""
    import polars as pl

    keys = None
    if ev.height <= LIFT_IN_PYTHON and not (ev["fmt"] == FMT_CODES["json"]).any():
        keys = _lift_in_python(ev["fields"])
    if keys is None:
        keys = _duck_frame(
            "SELECT TRY_CAST(j[1] AS BIGINT) AS escrow, TRY_CAST(j[2] AS BIGINT) AS nonce, j[3] AS host,"
            " j[4] AS frequest"
            " FROM (SELECT json_extract_string(fields, ['escrow', 'nonce', 'host', 'request']) AS j FROM _gw_block)",
            ev.select("fields"))
    ev = pl.concat([ev, keys], how="horizontal")
    return ev.with_columns(request=pl.coalesce("request", "frequest")).select(EVENT_COLUMNS)


_DECIMAL = re.compile(r"-?[0-9]+")


def _lift_in_python(fields):
    """The lifted keys of text rows, or None when an escrow or nonce is not a plain
    decimal integer in range (DuckDB's TRY_CAST then decides)."""
    import polars as pl

    cols: dict[str, list] = {k: [] for k in _LIFTED}
    for text in fields:
        first: dict[str, str] = {}
        for k, v in json.loads(text, object_pairs_hook=list):
            if k in _LIFTED and k not in first:
                first[k] = v
        for k in _LIFTED:
            v = first.get(k)
            if k in ("escrow", "nonce") and v is not None:
                if v == "":
                    v = None
                elif not _DECIMAL.fullmatch(v) or not -2**63 <= int(v) < 2**63:
                    return None
                else:
                    v = int(v)
            cols[k].append(v)
    return pl.DataFrame(cols, schema={"escrow": pl.Int64, "nonce": pl.Int64, "host": pl.String,
                                      "request": pl.String}).rename({"request": "frequest"})


_LIFTED = ("escrow", "nonce", "host", "request")


def _reject(res: BlockResult, reason: str, line_no: int, off: int, text: str) -> None:
    res.rejects.setdefault(reason, []).append(line_no)
    s = res.samples.setdefault(reason, [])
    if len(s) < SAMPLES_PER_REASON:
        s.append((line_no, off, text[:SAMPLE_CHARS]))
