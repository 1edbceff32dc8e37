"""Parsing devshardctl gateway log lines (docs: gateway-logs.md, sections 1 and 12).

Three paths with one meaning:

* :func:`parse_line` is the reference: one line in, an :class:`Event` or a :class:`Reject`
  out. It accepts every format (text stage lines, raw events, the fixed-prefix free-text
  lines, Go ``%q`` quoting with every Go escape, the Go and Docker timestamp prefixes, the
  Docker json-file wrapper, slog JSON and slog text records).
* :func:`parse_block` parses a block of complete lines at once. The compiled tokenizer
  (``auditor/_logscan.c``, when pip could build it) takes the common text lines in one
  pass; when enough lines are left, polars and DuckDB take the slog JSON stage records and
  unwrap the Docker json-file records (whose lines go through the tokenizer again); every
  other line goes to :func:`parse_line`, which without the tokenizer reads all text lines
  (slowly). Its output for a line is the same whichever path took it (the property tests
  and tests/fuzz compare them), and it never raises on a block's content: a line that
  breaks a parser is rejected (``parse_error``), the rest of the block kept.

An event's ``fields`` is a JSON object text holding every ``key=value`` pair of the line
except the line's identity (``request=`` before ``stage=`` and the first ``stage=``), values
as strings (a JSON record's numbers and booleans too, as the gateway's stage logger writes
them: gateway-logs.md 13.1; nested objects and arrays stay JSON), in line order (duplicates
kept). A raw event named by a stage name (``STAGE_NAMES``) is that stage, its request
unknown; a raw event's trailing words that are no pairs are the last key's value (an
unquoted Go ``%v``), unless they open with an em dash; a standalone ``…`` or ``...`` (a
reporter's cut) is dropped.
Synthetic keys start with ``_``: ``_text`` (free text that is not a pair, e.g. the
em-dash tail of ``escrow_balance_low``) and ``_event`` (the event words of a
``chain phase gate:`` line).

An :class:`Event` keeps its timestamps as text (``dts`` the Docker prefix or wrapper time,
``rts`` the slog record's time, ``gts`` the Go ``log`` prefix, read as UTC); a parsed block
carries them typed (``ts``: Docker, else record, else Go; ``src`` says which).
"""

from __future__ import annotations

import json
import math
import os
import re
import threading
import time
from dataclasses import dataclass, field
from typing import Any

# -- shapes ------------------------------------------------------------------------
D_RE = r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(?:\.[0-9]{1,9})?(?:Z|[+-][0-9]{2}:[0-9]{2})"
G_RE = r"[0-9]{4}/[0-9]{2}/[0-9]{2} [0-9]{2}:[0-9]{2}:[0-9]{2}(?:\.[0-9]{1,9})?"
PREFIX_RE = rf"^(?:{D_RE} )?(?:{G_RE} )?"
EVENT_NAME_RE = r"[a-z][a-z0-9]*(?:_[a-z0-9]+)+"
KEY_RE = r"[A-Za-z_][A-Za-z0-9_]*"
# request/stage values the vectorised JSON path lifts: printable ASCII, no space, quote or backslash
_IDC = r'[!#-\[\]-~]'
_ID = _IDC + "+"
# the escapes that mean the same in Go and JSON
_JSON_ESC = r'\\(?:["\\bfnrt]|u(?:[0-9a-cA-CeEfF][0-9a-fA-F]{3}|[dD][0-7][0-9a-fA-F]{2}))'
# a slog JSON stage record in the handler's key order
JHEAD_RE = (r'^\{"time":"(?P<rts>[^"\\]*)","level":"(?P<level>[^"\\]*)","msg":"(?:[^"\\]|\\.)*",'
            rf'(?:"request":"(?P<request>{_IDC}*)",)?"stage":"(?P<name>{_ID})"')
JHEAD_REQ_RE = r'^\{"time":"[^"\\]*","level":"[^"\\]*","msg":"(?:[^"\\]|\\.)*","request":"'
# the Docker json-file driver record around a line
WRAP_RE = (r'^\{"log":"(?:[^"\\\x00-\x1f]|' + _JSON_ESC + r'|\\/)*","stream":"[a-z]*","time":"' + D_RE
           + r'"\}$')
JSON_LINE_RE = (rf'{PREFIX_RE}\{{"time":"[^"\\]*","level":"[^"\\]*","msg":"(?:[^"\\]|\\.)*",'
                rf'(?:"request":"{_IDC}*",)?"stage":"{_ID}"[,}}]')
# what DuckDB's JSON reader accepts and Python's (the reference) does not: a trailing comma,
# NaN and infinities, numbers beyond a double. A record holding any of these texts (a cheap
# literal search, and two regexes, each faster alone than in one alternation) is checked
# again strictly
LENIENT_JSON_TEXTS = [",}", ",]"] + [a + b for a in ":[," for b in ("n", "N", "i", "I", "-n", "-N", "-i", "-I", "+",
                                                                  " ", "\t", "\r", "\n")]
# a JSON value that is a number or a boolean (and text inside strings that looks like one)
TYPED_JSON_VALUE_RE = r"[:\[,][ \t\r\n]*[-0-9tf]"
LENIENT_JSON_RES = (r"[0-9][eE][+-]?[0-9]{3}", r"[0-9]{309}")

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
# the October 2026 gateway's (section 14.3): only the escrows that can fund the request count,
# the others are said skipped, and the answer is a 503
_ZERO_CAP_AFFORDABLE = re.compile(r"gateway: all (\d+) affordable escrow\(s\) at zero capacity \((\d+) skipped as"
                                  r" unable to fund the request\), returning (\d+); per-escrow weights:[ \t]*(.*)$")
# a slog JSON record whose message is a short phrase, not a gateway event (``nonce committed``,
# ``attempt finished``): the successor gateway's JSON logs (devshard/cmd/gateway of the
# qdanik/gonka fork, gateway-logs.md 13.3), which this parser does not read
_JSON_PHRASE = re.compile(r"[a-z][a-z0-9]*(?: [a-z0-9]+){1,5}")
_PHASE_GATE = "chain phase gate:"


# a reporter's cut in a pasted line (section 13.1), standing alone between pairs
ELISIONS = frozenset({"\u2026", "..."})

# stage names (sections 3, 13.2 and 14): a raw event of one of these names is that stage, its
# request unknown
STAGE_NAMES = frozenset("""
attempt_inter_chunk_stall background_timeout_failed classify_buffer_dropped decision_made empty_stream
error_stream escalation_skipped escrow_not_found_reported_by_host escrow_participant_state_blocked
escrow_participant_state_rewound first_token gateway_cache_hit gateway_cache_miss gateway_cache_stored
gateway_all_escrows_refused_funding gateway_devshard_cache_hit gateway_devshard_cache_miss
gateway_devshard_cache_skipped gateway_devshard_cache_stored gateway_devshard_limiter_acquired
gateway_devshard_limiter_bypassed_during_poc gateway_devshard_limiter_rejected gateway_devshard_request_received
gateway_devshard_runtime_selected gateway_devshard_unavailable gateway_escrow_refused_funding gateway_limiter_acquired gateway_limiter_bypassed_during_poc
gateway_limiter_rejected gateway_model_rejected gateway_model_unavailable_retry_later gateway_request_forwarded
gateway_request_received gateway_runtime_select_failed gateway_runtime_selected ghost_probe_answered_for
ghost_probe_sent ghost_probe_served ghost_probe_skipped ghost_probe_unserved nonce_disposition
pairwise_winner_hold_candidate pairwise_winner_hold_expired pairwise_winner_hold_no_preferred
pairwise_winner_hold_resolved pairwise_winner_hold_started phase_transition_aborted picker_exhausted
poc_probe_failed_no_timeout poc_probe_prepared poc_probe_stream_suppressed process_response_failed
proxy_client_disconnected proxy_flush_failed proxy_request_started proxy_response_finished
proxy_stream_client_gone proxy_stream_completed proxy_stream_failed proxy_stream_terminated proxy_write_failed
race_completed receipt_received reconnect_completed reconnect_failed reconnect_started request_failed
request_fully_settled request_returned_while_speculation_pending request_succeeded runner_prepare_failed
runner_started secondary_immediate_skipped secondary_immediate_start secondary_prepare_failed send_completed
send_failed served_without_finish session_picker_capability_blocked session_picker_chooser_error
session_picker_ghost_probe speculative_attempt_canceled speculative_wait_abandoned stream_forwarding_started
stream_suppressed streaming_inflight suspicious_winner_deferred timeout_failed timeout_skipped timeout_started
waiting_for_first_token waiting_for_receipt winner_failed_after_content winner_selected
winner_served_without_finish winner_stalled_after_content winner_stream_hard_timeout winner_write_ctx_cancelled
""".split())


class BadQuote(ValueError):
    pass


def _next_ws(s: str, i: int) -> int:
    n = len(s)
    while i < n and s[i] not in _WS:
        i += 1
    return i


def tokenize(body: str, starts: list[int] | None = None) -> list[tuple[str | None, str]]:
    """Split a text body into ``(key, value)`` pairs and ``(None, word)`` free words.

    Values are bare (up to the next space or tab) or Go-quoted; raises BadQuote on an
    unterminated quote, a bad escape or text glued to a closing quote. ``starts``, when
    given, receives where each token's value (or word) starts in ``body``."""
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
            if starts is not None:
                starts.append(i)
            i = end
            continue
        j = m.end()
        if starts is not None:
            starts.append(j)
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
    m = _ZERO_CAP_AFFORDABLE.match(body)
    if m:
        return ("event", "gateway_zero_capacity", None,
                [("candidates", m.group(1)), ("skipped_unfundable", m.group(2)), ("status", m.group(3)),
                 ("weights", m.group(4).strip())], [])
    starts: list[int] = []
    try:
        toks = tokenize(body, starts)
    except BadQuote:
        return Reject("bad_quote")
    keep = [i for i, (k, v) in enumerate(toks) if not (k is None and v in ELISIONS)]
    if len(keep) < len(toks):           # a pasted line's cut fields: only they are lost
        toks, starts = [toks[i] for i in keep], [starts[i] for i in keep]
    if not toks:
        return Reject("blank")
    k0, v0 = toks[0]
    if k0 is None:
        if _EVENT_NAME.fullmatch(v0) and (len(toks) == 1 or toks[1][0] is not None):
            toks = _trailing_value(body, toks, starts)
            pairs, free = _split_toks(toks[1:])
            # some builds print a stage without stage= and request= (section 13.1)
            return ("stage" if v0 in STAGE_NAMES else "event", v0, None, pairs, free)
        return Reject("not_gateway")
    return parse_text_body_from_toks(toks)


def _trailing_value(body: str, toks, starts):
    """A raw event whose pairs are followed by words that are not pairs ends in an
    unquoted Go ``%v`` (``error=unknown protocol version "v4"``): the rest of the line is
    the last key's value. Not an em-dash tail (``escrow_balance_low … — deactivating``),
    which stays ``_text``, nor a quoted last value."""
    f = next((i for i in range(2, len(toks)) if toks[i][0] is None), None)
    if f is None or toks[f][1].startswith("—") or body[starts[f - 1]:starts[f - 1] + 1] == '"':
        return toks
    if any(k is not None for k, _ in toks[f:]):
        return toks
    return toks[:f - 1] + [(toks[f - 1][0], body[starts[f - 1]:].rstrip(_WS))]


class _Pairs(list):
    """A JSON object kept as its list of pairs (duplicates and order preserved)."""


def _plain(v: Any) -> Any:
    if isinstance(v, _Pairs):
        return {k: _plain(x) for k, x in v}
    if isinstance(v, list):
        return [_plain(x) for x in v]
    if isinstance(v, bool):         # as fmt.Sprint writes it
        return "true" if v else "false"
    return v


class _Num(str):
    """A JSON number, kept as its text: the gateway's stage logger writes every value with
    ``fmt.Sprint`` (``"nonce":"4812"``), so a typed ``4812`` is the same field (section 13)."""


def _finite(text: str) -> _Num:
    if not math.isfinite(float(text)):      # beyond a double: not JSON the reference reads
        raise ValueError("number out of range")
    return _Num(text)


def _json_pairs(text: str) -> _Pairs | None:
    try:
        obj = json.loads(text, object_pairs_hook=_Pairs, parse_int=_Num, parse_float=_finite)
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
    rts = t if type(t) is str else None
    level = lv if type(lv) is str else None
    if type(stage) is str and stage:
        ri, req = _first(obj, "request")
        if ri > si:
            ri, req = -1, None
        request = None if req is None else (str(req) if isinstance(req, str) else json.dumps(req))
        drop = {ti, li, mi, si, ri}
        rest = [(k, _plain(v)) for i, (k, v) in enumerate(obj) if i not in drop]
        return Event("stage", stage, request, fields_json(rest, quote_keys=True), dts, rts, gts, "json", level)
    if type(msg) is str:
        extra = [(k, v) for i, (k, v) in enumerate(obj) if i not in {ti, li, mi}]
        r = _text_event(msg, dts, gts, rts, level, "json", extra)
        if isinstance(r, Reject) and r.reason == "not_gateway" and _JSON_PHRASE.fullmatch(msg):
            return Reject("successor_json")
        return r
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
            for v in (r.fields, r.name, r.request, r.dts, r.rts, r.gts, r.level):
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
        if type(inner) is not str:
            return Reject("bad_json")
        dts = t if type(t) is str else None
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
#   line_no, byte_offset, ts (timestamp[us, UTC]), src (a TS_SOURCE_CODES code, null: no
#   timestamp), fmt (a FMT_CODES code), level, is_stage, name, request (the line's request id,
#   else the first request= field), escrow, nonce (the first such field as DuckDB's TRY_CAST
#   to BIGINT reads it), host (the text of the first host= field), fields (JSON text);
#   fields missing from the line are null
EVENT_COLUMNS = ["line_no", "byte_offset", "ts", "src", "fmt", "level", "is_stage", "name", "request",
                 "escrow", "nonce", "host", "fields"]
# the codes of log_events.ts_source and log_events.fmt in a parsed block, defined here only:
# the store's INSERT turns them into the ENUM values, the compiled tokenizer is given its two
TS_SOURCE_CODES = {"docker": 1, "record": 2, "go": 3}
FMT_CODES = {"text": 0, "json": 1, "slog_text": 2}
D_FMT = "%Y-%m-%dT%H:%M:%S%.f%#z"
G_FMT = "%Y/%m/%d %H:%M:%S%.f"


BOM = b"\xef\xbb\xbf"       # a UTF-8 byte order mark (some editors and Windows tools start a file with one)
VECTOR_MIN_LINES = 100     # the lines the compiled tokenizer leaves go to polars when there are this many
LIFT_IN_PYTHON = 500       # text rows up to this many have their keys lifted in Python, not DuckDB

# the compiled tokenizer of the common text lines (auditor/_logscan.c); without it (installed
# without a C compiler, or AUDITOR_NO_COMPILED=1 to compare) the reference parser reads the
# text lines, many times slower
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
    return f"parsed without the compiled tokenizer ({why}): many times slower, same rows"


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


def _typed(df):
    """Rows with text timestamps (dts, rts, gts), fmt and kind names -> (EVENT_COLUMNS
    without the lifted keys, the line numbers whose Docker or Go timestamp is not a time)."""
    import polars as pl

    d = pl.col("dts").str.to_datetime(D_FMT, time_unit="us", time_zone="UTC", strict=False)
    r = pl.col("rts").str.to_datetime(D_FMT, time_unit="us", time_zone="UTC", strict=False)
    g = pl.col("gts").str.to_datetime(G_FMT, time_unit="us", strict=False).dt.replace_time_zone("UTC")
    df = df.with_columns(d=d, r=r, g=g)
    d, r, g = pl.col("d"), pl.col("r"), pl.col("g")
    bad = (pl.col("dts").is_not_null() & d.is_null()) | (pl.col("gts").is_not_null() & g.is_null())
    df = df.with_columns(bad_ts=bad)
    bad_lines = df.filter(pl.col("bad_ts"))["line_no"]
    if len(bad_lines):                  # rare: leave the frame as it is otherwise
        df = df.filter(~pl.col("bad_ts"))
    code = TS_SOURCE_CODES
    typed = df.select(
        "line_no", "byte_offset",
        ts=pl.coalesce(d, r, g),
        src=pl.when(d.is_not_null()).then(pl.lit(code["docker"], pl.Int8))
        .when(r.is_not_null()).then(pl.lit(code["record"], pl.Int8))
        .when(g.is_not_null()).then(pl.lit(code["go"], pl.Int8)),
        fmt=pl.col("fmt").replace_strict(FMT_CODES, return_dtype=pl.Int8),
        level="level", is_stage=pl.col("kind") == "stage", name="name", request="request", fields="fields",
    )
    return typed, bad_lines


def _vector_json(sub):
    """slog JSON stage records whose head is in the handler's order -> (rows with text
    timestamps, validity): DuckDB reads the head fields and checks the whole record in one
    parse (records that may hold text only DuckDB accepts, LENIENT_JSON_TEXTS, are checked
    again strictly); ``fields`` is the record without its head (time, level, msg, request, stage)."""
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
    ok = df["ok"]
    body = df["body"]
    lax = body.str.contains_any(LENIENT_JSON_TEXTS)
    for rx in LENIENT_JSON_RES:
        lax = lax | body.str.contains(rx)
    lax = lax.fill_null(False)
    if lax.any():
        at = lax.arg_true()
        strict = body.gather(at).str.json_path_match("$").is_not_null()
        ok = ok.scatter(at.filter(~strict), False)
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
    # a typed number or boolean is written as text in fields, as parse_line writes it: the
    # records that may hold one (and, harmlessly, any whose strings look alike) in Python
    typed = ok & body.str.contains(TYPED_JSON_VALUE_RE).fill_null(False)
    if typed.any():
        at = typed.arg_true()
        texts = [_JSON_SCALAR.sub(_as_string, t) for t in out["fields"].gather(at)]
        out = out.with_columns(fields=out["fields"].scatter(at, pl.Series(texts, dtype=pl.String)))
    return out, ok


# a JSON string (kept) or a number or boolean outside strings (written as a string)
_JSON_SCALAR = re.compile(r'("(?:[^"\\]|\\.)*")|(-?[0-9]+(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?|true|false)')


def _as_string(m: re.Match) -> str:
    return m.group(1) or f'"{m.group(2)}"'


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
    prefix (which is what parse_line makes of them), marked ``unwrapped``. A Docker prefix
    inside the logged line (``docker logs --timestamps`` output that was logged again) is
    dropped: the record's time wins, as in parse_line. Records that do not fit the strict
    shape (or hold several lines) stay as they are, for parse_line."""
    import polars as pl

    w = df["line"].str.contains(WRAP_RE).fill_null(False)
    if not w.any():
        return df.with_columns(unwrapped=pl.lit(False))
    sub = df.filter(w)
    rec = sub["line"].str.json_decode(pl.Struct({"log": pl.String, "time": pl.String}))
    inner = rec.struct.field("log").str.strip_suffix("\n").str.replace(f"^{D_RE} ", "")
    ok = ~inner.str.contains("[\r\n]").fill_null(True)
    synth = pl.select(pl.when(pl.lit(ok)).then(pl.concat_str([rec.struct.field("time"), pl.lit(" "), inner]))
                      .otherwise(pl.lit(sub["line"]))).to_series()
    return pl.concat([df.filter(~w).with_columns(unwrapped=pl.lit(False)),
                      sub.with_columns(line=synth, unwrapped=ok)]).sort("line_no")


def _scan_unwrapped(df):
    """The unwrapped Docker json-file lines of ``df`` through the compiled tokenizer: (the
    events it took, with their own line numbers and offsets, or None; the rows it left)."""
    import polars as pl
    import pyarrow as pa

    u = df.filter(pl.col("unwrapped"))
    if not u.height:
        return None, df
    out = _scan(("\n".join(u["line"].to_list()) + "\n").encode("utf-8"), 0, 0)    # line_no: the row in u
    if not out["rows"]:
        return None, df
    tbl = _scanned_events(out)
    at = tbl.column("line_no")
    for c in ("line_no", "byte_offset"):
        tbl = tbl.set_column(tbl.schema.get_field_index(c), c, u[c].to_arrow().take(at))
    left = pa.Array.from_buffers(pa.int64(), len(out["rest_line_no"]) // 8, [None, pa.py_buffer(out["rest_line_no"])])
    rest = u[pl.Series(left, dtype=pl.Int64)]
    return tbl, pl.concat([df.filter(~pl.col("unwrapped")), rest]).sort("line_no")


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


def _arrow(frame):
    import polars as pl

    return frame.to_arrow(compat_level=pl.CompatLevel.newest())     # string views: no copy


def count_lines(block) -> int:
    """The number of newlines in a bytes-like block."""
    return _logscan.count_lines(block) if _logscan is not None else bytes(block).count(b"\n")


def parse_block(block: bytes | memoryview, base_line: int = 1, base_off: int = 0, *, vectorised: bool = True,
                compiled: bool = True) -> BlockResult:
    """Parse ``block`` (complete lines, each ending in ``\\n``; a last line without one is
    taken as a line too). ``base_line`` is the number of its first line, ``base_off`` the
    byte offset of its first byte in the file. Every line is either an event or a reject.

    The compiled tokenizer takes the common text lines first (when it is installed and
    ``compiled``); polars and DuckDB take the slog JSON records and the Docker json-file
    wrappers, :func:`parse_line` the rest. ``vectorised=False`` parses every line with
    :func:`parse_line` (for tests).

    It never raises on what the block holds: when parsing fails unexpectedly, the block is
    parsed again in halves, down to the line that fails, which is rejected (``parse_error``).

    A UTF-8 byte order mark at the start of the file (``base_off`` 0) is not part of its
    first line: that line starts after it, at byte 3."""
    if base_off == 0 and block[:3] == BOM:
        block, base_off = block[3:], 3
    try:
        res = _parse_block(block, base_line, base_off, vectorised, compiled)
    except Exception:  # noqa: BLE001 - a line the parsers did not foresee costs that line, not the file
        res = _parse_halves(bytes(block), base_line, base_off, vectorised, compiled)
    res.events = _stages_by_name(res.events)
    return _reject_implausible_times(_reject_nul(res, block, base_off), block, base_off)


def _stages_by_name(events):
    """A raw event named by a stage name is that stage (as parse_line reads it); the
    compiled tokenizer leaves that to this one pass over its rows."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if not events.num_rows:
        return events
    named = pc.is_in(events.column("name").cast(pa.string()), value_set=pa.array(sorted(STAGE_NAMES)))
    at = events.schema.get_field_index("is_stage")
    return events.set_column(at, "is_stage", pc.or_(events.column("is_stage"), named))


# -- plausible times ---------------------------------------------------------------------
EARLIEST_US = 1_704_067_200 * 10**6      # 2024-01-01 UTC: before any devshardctl gateway ran
FUTURE_SLACK_US = 86_400 * 10**6      # a line dated more than a day after the run is a wrong clock
NEIGHBOURS = 5
MAX_JUMP_US = 86_400 * 10**6


def _reject_implausible_times(res: BlockResult, block, base_off: int) -> BlockResult:
    """Reject the lines of a parsed block whose time cannot be where they sit
    (``implausible_time``), so that no span of the logs (coverage, poc-overload's and
    targets' evidence, remints' log spans: min and max of the stored times) reaches where
    the lines do not: two lines dated 1970 and 2100 made every window look covered. A
    timed line is implausible when

    * it is dated before 2024 (EARLIEST_US), or more than a day after now (a reset clock, a mangled
      line), or
    * the lines around it agree and it does not: the median time of the NEIGHBOURS timed
      lines before it and that of the NEIGHBOURS after it are within MAX_JUMP (a day) of
      each other, and it is more than MAX_JUMP from both.

    Lines in time order with any gaps (a quiet gateway), lines reordered by seconds, a
    clock or time zone that jumps for good (the two medians disagree), files concatenated
    out of order: all kept. The medians let up to two strays in a row be found. Within
    NEIGHBOURS timed lines of the block's edge (8 MiB blocks; a few lines appended since
    the last run are a block) only the first rule applies. Every parse path gives the same
    events table, so the rule is the same on every path."""
    import polars as pl

    if not res.parsed:
        return res
    now = int(time.time() * 1e6)
    if _plausible_at_a_glance(res.events, now):
        return res
    df = pl.from_arrow(res.events.select(["line_no", "byte_offset", "ts"])).with_row_index("i")
    timed = df.filter(pl.col("ts").is_not_null())
    us = timed["ts"].dt.epoch("us")
    x = us.cast(pl.Float64)
    med = x.rolling_median(NEIGHBOURS)              # of the timed lines j-NEIGHBOURS+1 .. j
    before, after = med.shift(1), med.shift(-NEIGHBOURS)
    frame = pl.DataFrame({"x": x, "b": before, "a": after})
    lo = pl.min_horizontal("b", "a") - MAX_JUMP_US
    hi = pl.max_horizontal("b", "a") + MAX_JUMP_US
    relative = ((pl.col("b") - pl.col("a")).abs() <= MAX_JUMP_US) & ((pl.col("x") < lo) | (pl.col("x") > hi))
    bad = frame.select(relative.fill_null(False))["b"] | (us < EARLIEST_US) | (us > now + FUTURE_SLACK_US)
    _reject_events(res, block, base_off, "implausible_time", timed.filter(bad))
    return res


def _plausible_at_a_glance(events, now: int) -> bool:
    """True when no line of ``events`` can be implausible: every time within the bounds, and
    the earliest and the latest within MAX_JUMP of each other, so that no time is more than
    MAX_JUMP from a median of others (every median lies between the two). The usual block:
    ~0.2 ms, where the rule's medians cost ~4 ms."""
    import pyarrow.compute as pc

    span = pc.min_max(events.column("ts").cast("int64"))
    first, last = span["min"].as_py(), span["max"].as_py()
    return first is None or (first >= EARLIEST_US and last <= now + FUTURE_SLACK_US and last - first <= MAX_JUMP_US)


def _reject_nul(res: BlockResult, block, base_off: int) -> BlockResult:
    """Reject the lines with a NUL character in a value, raw or escaped (``nul_char``): the
    gateway never writes one, and ``host=\\0sl0wh0st`` would be a second host beside
    ``sl0wh0st`` (a participant, a model: the same). Other control characters are data,
    shown escaped by every renderer (auditor/report/text.py). The events table is the same
    on every parse path, so the rule is too."""
    import polars as pl

    if not res.parsed or not _may_hold_nul(block):
        return res
    # host, escrow, nonce are lifted from fields, where a NUL is written \u0000; the line's
    # identity (request, stage name) and a JSON record's level are not in fields
    cols = ("level", "name", "request")
    hits = [pl.from_arrow(res.events.column(c)).str.contains("\x00", literal=True) for c in cols]
    hits.append(pl.from_arrow(res.events.column("fields")).str.contains("\\u0000", literal=True))
    mask = hits[0].fill_null(False)
    for h in hits[1:]:
        mask = mask | h.fill_null(False)
    if not mask.any():          # the usual case: ~4 ms of an 8 MiB block's ~270
        return res
    ev = pl.from_arrow(res.events.select(["line_no", "byte_offset", *cols, "fields"])).with_row_index("i")
    maybe = ev.filter(mask)
    # the fields text may hold a backslash and "u0000" (no NUL): decide on the values
    has = [any("\x00" in (v or "") for v in (lv, nm, rq)) or _holds_nul(json.loads(f))
           for lv, nm, rq, f in maybe.select(*cols, "fields").iter_rows()]
    _reject_events(res, block, base_off, "nul_char", maybe.filter(pl.Series(has, dtype=pl.Boolean)))
    return res


def _may_hold_nul(block) -> bool:
    """Whether a line of ``block`` may hold a NUL: a NUL byte, or a backslash before ``0``,
    ``x0``, ``u0`` or ``U0``, which every escape of a NUL starts with (Go's \\000, \\x00,
    \\u0000 and \\U00000000, JSON's \\u0000, and those escaped again in a Docker wrapper).
    False: no line can, and the block's values need no look (~1 ms for an 8 MiB block of
    text lines, where the look costs ~4 ms). A block of many escapes is looked at whole. The
    block is read a piece at a time: a copy of it whole cost the collect 50 MB of memory."""
    view = memoryview(block).cast("B")
    seen = 0
    for start in range(0, len(view), NUL_PIECE):
        data = bytes(view[start:start + NUL_PIECE + 2])     # and the 2 bytes an escape cut here needs
        if data.find(b"\x00") >= 0:
            return True
        at = data.find(b"\\", 0, NUL_PIECE)
        while at >= 0:
            seen += 1
            after = data[at + 1:at + 3]
            if seen > MAX_ESCAPES_SEEN or after[:1] == b"0" or after in (b"x0", b"u0", b"U0"):
                return True
            at = data.find(b"\\", at + 1, NUL_PIECE)
    return False


NUL_PIECE = 256 << 10         # bytes _may_hold_nul reads at a time
MAX_ESCAPES_SEEN = 2000      # backslashes _may_hold_nul looks at before it leaves the block to the look


def _holds_nul(v: Any) -> bool:
    if isinstance(v, str):
        return "\x00" in v
    if isinstance(v, dict):
        return any(_holds_nul(k) or _holds_nul(x) for k, x in v.items())
    if isinstance(v, list):
        return any(_holds_nul(x) for x in v)
    return False


def _reject_events(res: BlockResult, block, base_off: int, reason: str, rows) -> None:
    """Move the events ``rows`` (a frame of ``i``, their index in ``res.events``, with
    ``line_no`` and ``byte_offset``) to the block's rejected lines, sampled from ``block``."""
    import polars as pl

    if not rows.height:
        return
    keep = pl.Series([True] * res.parsed).scatter(rows["i"], False)
    res.events = _arrow(pl.from_arrow(res.events).filter(keep))
    for line_no, off in rows.select("line_no", "byte_offset").iter_rows():
        text = ""
        if len(res.samples.get(reason, [])) < SAMPLES_PER_REASON:
            rel = off - base_off
            text = bytes(block[rel:rel + 4 * SAMPLE_CHARS]).split(b"\n")[0].decode("utf-8", "backslashreplace")
        _reject(res, reason, line_no, off, text)


def _parse_halves(block: bytes, base_line: int, base_off: int, vectorised: bool, compiled: bool) -> BlockResult:
    import polars as pl

    n = block.count(b"\n") + (0 if block.endswith(b"\n") else 1)
    if n <= 1:
        res = BlockResult(events=_arrow(_empty_events()), lines=1)
        _reject(res, "parse_error", base_line, base_off, block.rstrip(b"\n").decode("utf-8", "backslashreplace"))
        return res
    cut = 0
    for _ in range(n // 2):
        cut = block.index(b"\n", cut) + 1
    halves = []
    for part, line, off in ((block[:cut], base_line, base_off), (block[cut:], base_line + n // 2, base_off + cut)):
        try:
            halves.append(_parse_block(part, line, off, vectorised, compiled))
        except Exception:  # noqa: BLE001 - as in parse_block
            halves.append(_parse_halves(part, line, off, vectorised, compiled))
    a, b = halves
    res = BlockResult(events=_arrow(pl.concat([pl.from_arrow(a.events), pl.from_arrow(b.events)])),
                      lines=a.lines + b.lines)
    for part in (a, b):
        for reason, nums in part.rejects.items():
            res.rejects.setdefault(reason, []).extend(nums)
        for reason, ss in part.samples.items():
            kept = res.samples.setdefault(reason, [])
            kept.extend(ss[:SAMPLES_PER_REASON - len(kept)])
    return res


def _scan(block, base_line: int, base_off: int) -> dict:
    return _logscan.scan(block, base_line, base_off, TS_SOURCE_CODES["docker"], TS_SOURCE_CODES["go"])


def _parse_block(block, base_line: int, base_off: int, vectorised: bool, compiled: bool) -> BlockResult:
    import polars as pl

    scanned, lines_at = None, None
    compiled = compiled and vectorised and _logscan is not None
    if compiled:
        out = _scan(block, base_line, base_off)      # any bytes-like block; its rest ends in \n
        scanned = _scanned_events(out) if out["rows"] else None
        block = out["rest"]
        lines_at = (out["rest_line_no"], out["rest_byte_offset"])
        # the few lines it leaves go line by line: cheaper than the polars path's fixed cost
        vectorised = len(out["rest_line_no"]) // 8 >= VECTOR_MIN_LINES
    else:
        block = bytes(block)
        if block and not block.endswith(b"\n"):
            block += b"\n"
    res, parts = _parse_lines(block, base_line, base_off, lines_at, vectorised, compiled)
    if scanned is not None:
        res.lines += scanned.num_rows
        parts.insert(0, scanned)
    if len(parts) == 1:
        res.events = parts[0]
    elif not parts:
        res.events = _arrow(_empty_events())
    else:
        res.events = _arrow(pl.concat([pl.from_arrow(p) for p in parts]).sort("line_no"))
    return res


def _scanned_events(out: dict):
    """The compiled tokenizer's buffers (see auditor/_logscan.c) -> an events table
    (pyarrow, no copy)."""
    import pyarrow as pa

    n = out["rows"]
    buf = pa.py_buffer

    def ints(typ, name: str, valid: str | None = None):
        return pa.Array.from_buffers(typ, n, [buf(out[valid]) if valid else None, buf(out[name])])

    def strings(name: str, nullable: bool = True):
        return pa.Array.from_buffers(pa.string_view(), n, [buf(out[f"{name}_valid"]) if nullable else None,
                                                           buf(out[f"{name}_views"]), buf(out[f"{name}_data"])])

    return pa.table({
        "line_no": ints(pa.int64(), "line_no"),
        "byte_offset": ints(pa.int64(), "byte_offset"),
        "ts": ints(pa.timestamp("us", "UTC"), "ts", "ts_valid"),
        "src": ints(pa.int8(), "src", "ts_valid"),
        "fmt": pa.repeat(pa.scalar(FMT_CODES["text"], pa.int8()), n),
        "level": pa.nulls(n, pa.string_view()),
        "is_stage": ints(pa.bool_(), "is_stage"),
        "name": strings("name", nullable=False),
        "request": strings("request"),
        "escrow": ints(pa.int64(), "escrow", "escrow_valid"),
        "nonce": ints(pa.int64(), "nonce", "nonce_valid"),
        "host": strings("host"),
        "fields": strings("fields", nullable=False),
    })


def _parse_lines(block: bytes, base_line: int, base_off: int, lines_at, vectorised: bool, compiled: bool):
    """Every path but the compiled tokenizer's first pass, over ``block``: a BlockResult
    without events, and the event tables (pyarrow, each in line order). ``lines_at`` gives
    the line numbers and byte offsets (int64 buffers) of the block's lines when they are
    not consecutive."""
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
    bad = set(df["line_no"].gather(bad_utf8).to_list()) if bad_utf8 else set()
    parts, others = [], []      # event tables; frames with text timestamps
    slow = df
    if vectorised and n:
        if lines.str.starts_with('{"log":"').any():
            df = _unwrap_docker_json(df)
            if compiled:
                tbl, df = _scan_unwrapped(df)
                if tbl is not None:
                    parts.append(tbl)
        js = df["line"].str.contains(JSON_LINE_RE).fill_null(False)
        slow = df.filter(~js)
        if js.any():
            jt, ok = _vector_json(df.filter(js))
            others.append(jt.filter(ok))
            if not ok.all():
                slow = pl.concat([slow, df.filter(js).filter(~ok)]).sort("line_no")
    # everything else, line by line
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
    if others:
        typed, bad_ts = _typed(pl.concat(others).sort("line_no") if len(others) > 1 else others[0])
        if len(bad_ts):
            bad_rows = df.filter(pl.col("line_no").is_in(bad_ts.implode())).sort("line_no")
            for line_no, o, text in bad_rows.select("line_no", "byte_offset", "line").iter_rows():
                _reject(res, "bad_timestamp", line_no, o, text)
        if typed.height:
            parts.append(_arrow(_lift_keys(typed)))
    return res, parts


def _lift_keys(ev):
    """Add the request (when the line has none), escrow, nonce and host fields as columns,
    as DuckDB reads them: json_extract_string of the first such key in ``fields``, escrow
    and nonce through TRY_CAST to BIGINT. A few text rows (the lines the compiled tokenizer
    leaves in a block of text lines) are read in Python when that reads them alike: their
    values are all strings (json.loads reads them as DuckDB does) and their escrow and
    nonce plain decimal integers; a DuckDB query costs ~2.5 ms of CPU a block, 2% of the
    ingestion of a text log (benchmarks/README.md)."""
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
_LIFTED = ("escrow", "nonce", "host", "request")


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


def _reject(res: BlockResult, reason: str, line_no: int, off: int, text: str) -> None:
    res.rejects.setdefault(reason, []).append(line_no)
    s = res.samples.setdefault(reason, [])
    if len(s) < SAMPLES_PER_REASON:
        s.append((line_no, off, text[:SAMPLE_CHARS]))
