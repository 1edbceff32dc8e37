"""The gateway log parsers: property tests (hypothesis) and the vectorised path against the
line-by-line reference, plus block boundaries and over-long lines through the library."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from auditor.progress import Progress
from auditor.sources import gatewaylog
from auditor.sources import gatewaylog_parse, gatewaylog_read
from auditor.sources.gatewaylog_parse import BOM, Event, Reject, go_unquote, parse_block, parse_line
from auditor.store import Store
from tools.synth import FORMATS, generate_lines, go_quote, sanitize_value
from conftest import FIXTURES

SECTION12 = (FIXTURES / "gateway-logs" / "section12.log").read_bytes().splitlines()
OTHER_FORMATS = [line for name in ("section12-slog-json.log", "section12-dockerjson.log", "section12-slog-text.log",
                                   "section12-docker.log", "escapes.log")
                 for line in (FIXTURES / "gateway-logs" / name).read_bytes().splitlines()]
SETTINGS = settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def rows(res) -> dict[int, tuple]:
    """line_no -> (kind, name, request, fields as pairs, ts, src, fmt, level, byte_offset,
    escrow, nonce, host) of a BlockResult."""
    out = {}
    for r in pl.from_arrow(res.events).iter_rows(named=True):
        out[r["line_no"]] = ("stage" if r["is_stage"] else "event", r["name"], r["request"],
                             json.loads(r["fields"], object_pairs_hook=list), r["ts"], r["src"], r["fmt"],
                             r["level"], r["byte_offset"], r["escrow"], r["nonce"], r["host"])
    return out


def check_block(data: bytes, base_line: int = 1, base_off: int = 0) -> None:
    """Never raises; every line is parsed or rejected; the default path (the compiled
    tokenizer, the rest vectorised when there are enough), the path without the tokenizer
    and the line-by-line reference all give the same rows."""
    body = data[3:] if base_off == 0 and data.startswith(BOM) else data     # a file's mark is no line's
    n = body.count(b"\n") + (1 if body and not body.endswith(b"\n") else 0)
    results = [parse_block(data, base_line, base_off), parse_block(data, base_line, base_off, compiled=False),
               parse_block(data, base_line, base_off, vectorised=False)]
    ref = results[-1]
    for res in results:
        assert res.lines == n
        assert "parse_error" not in res.rejected, res.rejects    # a parser that raised: contained, but a bug
        assert res.parsed + sum(res.rejected.values()) == n
        assert res.rejects == ref.rejects
        line_nos = res.events.column("line_no").to_pylist()
        assert line_nos == sorted(line_nos) and all(base_line <= x < base_line + n for x in line_nos)
        assert rows(res) == rows(ref)
    assert all(name for _, name, *_ in rows(ref).values())


def test_compiled_tokenizer_is_built():
    """pip builds auditor/_logscan.c wherever a C compiler is present (CI has one); without
    it the ingestion still works (the reference parser reads the text lines), many times slower."""
    assert gatewaylog_parse._logscan is not None


# -- random and mutated lines ------------------------------------------------------------------
def mutate(line: bytes, ops: list[tuple[int, int, bytes]]) -> bytes:
    b = bytearray(line)
    for kind, pos, chunk in ops:
        if not b:
            break
        i = pos % len(b)
        if kind == 0:
            del b[i:i + 1 + pos % 7]
        elif kind == 1:
            b[i:i] = chunk
        elif kind == 2:
            del b[i:]
        else:
            b[i:i + 1] = chunk
    return bytes(b).replace(b"\n", b" ")


INSERTS = st.sampled_from([b'"', b"\\", b" ", b"  ", b"=", b"\t", b"\r", b"\xff", b"\xe2\x80\x94", b"\x00",
                           b"stage=", b"request=", b'="', b'x="a b"', b"{", b"}", b"\\x4", b"\\u12", b'"stage":"x",',
                           b'"request":"r",', b"\\ud800", b"NaN", b",", b":"])
MUTATED = st.builds(mutate, st.sampled_from(SECTION12 + OTHER_FORMATS),
                    st.lists(st.tuples(st.integers(0, 3), st.integers(0, 10_000), INSERTS), max_size=4))
GARBAGE = st.one_of(
    st.binary(max_size=80).map(lambda b: b.replace(b"\n", b"")),
    st.text(max_size=80).map(lambda s: s.replace("\n", "").encode("utf-8", "surrogatepass")),
)
LINE = st.one_of(MUTATED, MUTATED, GARBAGE, st.sampled_from(SECTION12 + OTHER_FORMATS))


@SETTINGS
@given(st.lists(LINE, min_size=1, max_size=25), st.booleans())
def test_random_and_mutated_lines(lines, final_newline):
    check_block(b"\n".join(lines) + (b"\n" if final_newline else b""))


@SETTINGS
@given(st.lists(LINE, min_size=1, max_size=25), st.booleans())
def test_a_byte_order_mark_at_the_file_start_changes_only_the_offsets(lines, final_newline):
    """Issue 35, 24: a UTF-8 BOM at byte 0 of a file is not part of its first line: the block
    with it parses, on every path, to the rows of the block without it, 3 bytes further on."""
    data = b"\n".join(lines) + (b"\n" if final_newline else b"")
    marked = b"\xef\xbb\xbf" + data
    check_block(marked)
    plain, got = parse_block(data), parse_block(marked)
    assert got.rejects == plain.rejects
    assert {n: r[:8] + (r[8] + 3,) + r[9:] for n, r in rows(plain).items()} == rows(got)


# -- the lines the compiled tokenizer takes, and their near misses ------------------------------
def _two(lo: int, hi: int):
    return st.integers(lo, hi).map(lambda v: f"{v:02d}")


FRACTION = st.one_of(st.just(""), st.from_regex(r"\.[0-9]{1,9}", fullmatch=True))
GOOD = dict(
    date=st.tuples(st.sampled_from(["1971", "2024", "2026", "9999"]), _two(1, 12), _two(1, 28), _two(0, 23),
                   _two(0, 59), _two(0, 59), FRACTION),
    offset=st.sampled_from(["Z", "+02:00", "-00:30", "+23:59"]),
    token=st.from_regex(r"[a-z0-9_.:/-]{0,8}", fullmatch=True),
    ident=st.from_regex(r"[a-z0-9_.:/=-]{1,8}", fullmatch=True),
    event=st.from_regex(r"[a-z][a-z0-9]{0,3}(_[a-z0-9]{1,3}){1,2}", fullmatch=True),
    space=st.just(" "),
    head=st.sampled_from(["request={} stage={}", "stage={}", "{}"]),
)
# one date part out of range (by index: year, month, day, hour, minute, second, fraction),
# or a day that the month does not have
BAD_DATE_PARTS = st.sampled_from([{0: "1969"}, {0: "1970"}, {1: "00"}, {1: "13"}, {2: "00"}, {2: "32"}, {3: "24"},
                                  {4: "60"}, {5: "60"}, {6: ".1234567890"}, {6: "."}, {1: "02", 2: "29"},
                                  {1: "02", 2: "30"}, {1: "04", 2: "31"}, {0: "2024", 1: "02", 2: "29"}])
ODD = dict(
    date=st.builds(lambda d, bad: tuple(bad.get(i, v) for i, v in enumerate(d)), GOOD["date"], BAD_DATE_PARTS),
    offset=st.sampled_from(["+24:00", "-12:60", "z", "", "+0200"]),
    token=st.lists(st.sampled_from(list("ab_=Z09") + ['"', " ", "\\", "\x7f", "é", "\r", "\t", "{", "-"]),
                   max_size=6).map("".join),
    ident=st.sampled_from(["", "a b", 'a"', "é", "a\\"]),
    event=st.sampled_from(["a__b", "a_", "_a", "ab", "A_b", "a_b:", "9_a"]),
    space=st.sampled_from(["  ", ""]),
    head=st.sampled_from(["request={}", "{} stage={}", "request={} stage={} stage={}"]),
)


@st.composite
def near_fast_lines(draw) -> bytes:
    """Lines of the shape the compiled tokenizer takes; half of them are off in one to
    three places (a bad date or offset, a stray character, a wrong space)."""
    odd = set(draw(st.lists(st.sampled_from(sorted(GOOD)), max_size=3))) if draw(st.booleans()) else set()

    def one(what: str):
        return draw(ODD[what] if what in odd and draw(st.booleans()) else GOOD[what])

    parts = []
    if draw(st.booleans()):
        y, mo, d, h, mi, se, fr = one("date")
        parts.append(f"{y}-{mo}-{d}T{h}:{mi}:{se}{fr}{one('offset')}{one('space')}")
    if draw(st.booleans()):
        y, mo, d, h, mi, se, fr = one("date")
        parts.append(f"{y}/{mo}/{d} {h}:{mi}:{se}{fr}{one('space')}")
    head = one("head")
    if head == "{}":
        parts.append(one("event"))
    else:
        parts.append(head.format(*[one("ident") for _ in range(head.count("{}"))]))
    for _ in range(draw(st.integers(0, 5))):
        key = draw(st.one_of(st.sampled_from(["escrow", "nonce", "host", "request", "stage", "k", "K_9"]),
                             st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,5}", fullmatch=True)))
        val = draw(st.one_of(st.sampled_from(["12", "-3", "0x10", "", "abcdefgh", "9" * 25, "1e3", " 7", "a b",
                                              "x=y", '\\"q\\"', "\\\\", "\\t", "\\u00e9", "\\uD7ff",
                                              "\\ud800", "\\x41", "\\q", "\\u12", "\\", "-0", "007",
                                              "9223372036854775807", "-9223372036854775808",
                                              "9223372036854775808", "-9223372036854775809", "-"]),
                             GOOD["token"])) if "token" not in odd else one("token")
        quote = draw(st.sampled_from(["", "", '"']))
        parts.append(f"{one('space')}{key}={quote}{val}{quote}")
    return "".join(parts).replace("\n", " ").encode("utf-8")


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(near_fast_lines(), min_size=1, max_size=12), st.integers(1, 10**12), st.integers(0, 10**15))
def test_compiled_tokenizer_matches_reference(lines, base_line, base_off):
    check_block(b"\n".join(lines) + b"\n", base_line, base_off)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(st.one_of(GOOD["date"], ODD["date"]), GOOD["offset"], st.booleans()), min_size=1,
                max_size=30))
def test_compiled_tokenizer_timestamps_match_reference(stamps):
    """Both prefixes with dates near and past the edges of the calendar."""
    lines = [(f"{y}-{mo}-{d}T{h}:{mi}:{se}{fr}{off} " if docker else f"{y}/{mo}/{d} {h}:{mi}:{se}{fr} ") + "stage=x"
             for (y, mo, d, h, mi, se, fr), off, docker in stamps]
    check_block(("\n".join(lines) + "\n").encode())


def test_compiled_tokenizer_takes_the_common_lines():
    """The synthetic text log is nearly all tokenized in C (and what it leaves is parsed)."""
    lines, _ = generate_lines(500_000, seed=11, fmt="text")
    out = gatewaylog_parse._scan(("\n".join(lines) + "\n").encode(), 1, 0)
    assert out["rows"] >= 0.95 * len(lines)
    assert out["rows"] + len(out["rest_line_no"]) // 8 == len(lines)


# -- well-formed lines round-trip ----------------------------------------------------------------
KEYS = st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,12}", fullmatch=True)
VALUES = st.one_of(
    st.text(st.characters(codec="utf-8"), max_size=30),
    st.from_regex(r"[a-z0-9./:_-]{1,20}", fullmatch=True),
    st.sampled_from(["", "true", "0", "— dash", 'say "hi"', "a\tb\nc", "\\", "x=y", "{\"a\":1}"]),
)
PREFIXES = st.sampled_from(["", "2026/09/30 11:02:47 ", "2026/09/30 11:02:47.123456 ",
                            "2026-09-30T11:02:47.118204551Z ", "2026-09-30T11:02:47Z 2026/09/30 11:02:47 ",
                            "2026-09-30T11:02:47.5+02:00 "])
IDENT = st.one_of(
    st.tuples(st.just("stage"), st.from_regex(r"[a-z_]{1,20}", fullmatch=True),
              st.one_of(st.none(), st.from_regex(r"req-[0-9]{1,19}-[0-9]{1,5}", fullmatch=True))),
    st.tuples(st.just("event"), st.from_regex(r"[a-z][a-z0-9]{0,8}(_[a-z0-9]{1,8}){1,3}", fullmatch=True),
              st.none()),
)


def render(prefix, ident, pairs) -> str:
    kind, name, request = ident
    head = (f"request={request} " if request else "") + f"stage={name}" if kind == "stage" else name
    return prefix + " ".join([head] + [f"{k}={sanitize_value(v)}" for k, v in pairs])


@SETTINGS
@given(st.lists(st.tuples(PREFIXES, IDENT, st.lists(st.tuples(KEYS, VALUES), max_size=8)), min_size=1, max_size=20))
def test_wellformed_lines_round_trip(specs):
    lines = [render(*s) for s in specs]
    for line, (prefix, (kind, name, request), pairs) in zip(lines, specs):
        ev = parse_line(line)
        assert isinstance(ev, Event), (line, ev)
        assert (ev.kind, ev.name, ev.request) == (kind, name, request)
        assert json.loads(ev.fields, object_pairs_hook=list) == [(k, v) for k, v in pairs]
    check_block("\n".join(lines).encode("utf-8") + b"\n")


@given(st.text(st.characters(codec="utf-8"), max_size=40))
@settings(max_examples=150, deadline=None)
def test_go_unquote_inverts_go_quote(s):
    assert go_unquote(go_quote(s)[1:-1]) == s


def test_go_escapes_and_errors():
    assert go_unquote(r"a\x41\101\u00e9\U0001F600\a\v\'") == "aAAé\U0001F600\a\v'"
    assert go_unquote(r"\xe2\x80\x94") == "—"
    assert go_unquote(r"\xff") == "\ufffd"
    for bad in (r"\q", r"\x4", "\\", r"\ud800", r"\U00110000", r"\400"):
        with pytest.raises(ValueError):
            go_unquote(bad)
    assert parse_line('stage=x a="\\q"') == Reject("bad_quote")
    assert parse_line('stage=x a="open') == Reject("bad_quote")
    assert parse_line('stage=x a="closed"glued') == Reject("bad_quote")
    assert parse_line('{"time":"t","msg":"x","n":NaN}') == Reject("not_gateway")
    assert parse_line('{"time":"t","level":"INFO","msg":"m","stage":"s","v":NaN}') == Reject("bad_json")
    assert parse_line('{"time":"t","level":"INFO","msg":"m","stage":"s","v":"\\ud800"}') == Reject("bad_json")
    assert parse_line("random words here") == Reject("not_gateway")
    assert parse_line("some_event free words") == Reject("not_gateway")
    assert isinstance(parse_line("some_event"), Event)


@pytest.mark.parametrize("fmt", FORMATS)
def test_synthetic_formats_vectorised_equals_reference(fmt):
    lines, _ = generate_lines(150_000, seed=7, fmt=fmt)
    data = ("\n".join(lines) + "\n").encode("utf-8")
    check_block(data)
    res = parse_block(data)
    assert res.parsed >= len(lines) - 10


JSON_HEAD = b'{"time":"2026-09-30T11:02:47Z","level":"INFO","msg":"m","stage":"s",'


@pytest.mark.parametrize("value", [b"1,", b"[1 ,]", b"1, ", b"NaN", b"-Infinity", b"inf", b" nan", b"1e999", b"-2.5E+400",
                                   b"{\"b\":2,}"])
def test_json_only_duckdb_accepts_is_rejected_on_every_path(value):
    """DuckDB's JSON reader takes a trailing comma, NaN and infinities; Python's does not.
    Enough such records to take the vectorised path: every path rejects them alike."""
    good = JSON_HEAD + b'"a":1}'
    data = b"\n".join([JSON_HEAD + b'"a":' + value + b"}", good] * 100) + b"\n"
    check_block(data)
    res = parse_block(data)
    assert res.rejects == {"bad_json": list(range(1, 201, 2))} and res.parsed == 100


@pytest.mark.parametrize("n", [1, 150])
def test_impossible_times_are_rejected_with_a_reason(n):
    lines = [b"2026/02/30 25:61:61 stage=x a=1", b"2026-02-30T11:02:47Z stage=x a=1",
             b"2026/02/30 11:02:47 " + JSON_HEAD + b'"a":1}', b"2026/09/30 11:02:47 stage=x a=1"]
    data = b"\n".join(lines * n) + b"\n"
    check_block(data)
    res = parse_block(data)
    assert res.rejected == {"bad_timestamp": 3 * n} and res.parsed == n
    assert res.samples["bad_timestamp"][0] == (1, 0, lines[0].decode())


def test_a_line_that_breaks_the_parser_costs_that_line_only(monkeypatch):
    """An unforeseen exception while parsing a block: the block is parsed again in halves
    and only the line that fails is rejected (parse_error)."""
    real = gatewaylog_parse.parse_line

    def fragile(text):
        if "boom" in text:
            raise RuntimeError("a parser bug")
        return real(text)

    monkeypatch.setattr(gatewaylog_parse, "parse_line", fragile)
    lines = [line for line in SECTION12 if line.strip()]
    data = b"\n".join(lines[:40] + [b"stage=boom a=1 free words"] + lines[40:]) + b"\n"
    for kw in ({}, {"vectorised": False}):
        res = parse_block(data, 10, 100, **kw)
        assert res.rejected == {"parse_error": 1} and res.rejects["parse_error"] == [50]
        assert res.parsed == len(lines) and res.lines == len(lines) + 1
        assert res.events.column("line_no").to_pylist() == [n for n in range(10, 11 + len(lines)) if n != 50]


def test_docker_time_with_a_lone_surrogate_is_rejected():
    line = b'{"log":"2026/09/30 11:02:47 stage=x a=1\\n","stream":"stderr","time":"2026-09-30T11:21\\ud800:48Z"}'
    check_block(line + b"\n")
    assert parse_block(line + b"\n").rejected == {"bad_json": 1}


@pytest.mark.parametrize("n", [1, 150])
def test_docker_json_record_around_a_docker_prefixed_line(n):
    """Issue 35, 33: a json-file record whose logged line has its own Docker prefix (and a
    Go one) is a gateway line (gateway-logs.md 1.5: each prefix is optional, in order); the
    record's time wins. The vectorised path (150 lines) read it as not_gateway."""
    inner = (b"2026-09-30T11:02:47.123456789Z 2026/09/30 08:03:27 stage=nonce_disposition escrow=97403 nonce=66 "
             b"trace_id=\\\"\\\"")
    line = b'{"log":"' + inner + b'\\n","stream":"stderr","time":"2026-09-30T08:03:27.316245939Z"}'
    data = b"\n".join([line] * n) + b"\n"
    check_block(data)
    res = parse_block(data)
    assert res.parsed == n and not res.rejects
    assert {(r[1], str(r[4]), r[5]) for r in rows(res).values()} == {
        ("nonce_disposition", "2026-09-30 08:03:27.316245+00:00", gatewaylog_parse.TS_SOURCE_CODES["docker"])}


def test_fuzz_corpus_blocks_agree():
    """Every block the fuzzer ever found (tests/fuzz/corpus/, with its bases): the compiled,
    polars-only and reference paths agree (fuzz_logscan.py runs them under ASan too)."""
    from fuzz.fuzz_logscan import corpus_blocks

    blocks = corpus_blocks()
    assert blocks and blocks[0][0].name.startswith("0001-seed3458747570-block615.")
    for _, data, base_line, base_off in blocks:
        check_block(data, base_line, base_off)


# -- through the library: block boundaries and over-long lines --------------------------------------
def ingest_rows(tmp_path: Path, name: str, log: Path, **kw) -> list[tuple]:
    store = Store(tmp_path / f"{name}.duckdb")
    try:
        gatewaylog.ingest(store, [str(log)], Progress(quiet=True), **kw)
        return store.con.execute(
            "SELECT line_no, byte_offset, ts, ts_source, kind, name, request, escrow, nonce, host, fields "
            "FROM log_events ORDER BY line_no").fetchall()
    finally:
        store.close()


def test_block_boundaries_do_not_matter(tmp_path):
    log = tmp_path / "gw.log"
    lines, _ = generate_lines(60_000, seed=3, fmt="docker")
    log.write_text("\n".join(lines) + "\n", encoding="utf-8")
    whole = ingest_rows(tmp_path, "whole", log)
    small = ingest_rows(tmp_path, "small", log, block_size=1500)
    ref = ingest_rows(tmp_path, "ref", log, vectorised=False)
    assert len(whole) > 200 and whole == small == ref


def test_over_long_line_is_rejected_not_buffered(tmp_path, monkeypatch):
    monkeypatch.setattr(gatewaylog_read, "MAX_LINE", 3000)
    log = tmp_path / "gw.log"
    log.write_bytes(SECTION12[0] + b"\n" + b"x" * 10_000 + b"\n" + SECTION12[1] + b"\n" + b"y" * 5000)
    store = Store(tmp_path / "a.duckdb")
    try:
        rep = gatewaylog.ingest(store, [str(log)], Progress(quiet=True), block_size=1024)
        assert rep.rejected == {"line_too_long": 1}
        assert store.con.execute("SELECT line_no FROM log_events ORDER BY 1").fetchall() == [(1,), (3,)]
        assert store.con.execute("SELECT lines, byte_offset FROM log_files").fetchone() == \
            (3, len(SECTION12[0]) + len(SECTION12[1]) + 10_003)
    finally:
        store.close()
