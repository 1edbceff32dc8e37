"""Outside text is data in every format (issue 18: serious 1, 2 and 9, minor 1, 2 and 3).

A property test feeds hostile strings (rich markup, ESC/CSI/OSC sequences, CR, LF, NUL,
``|``, ``<``, ``>``, ``&``, backticks, formula prefixes, very long strings) as a value of a
result through every format and checks each format's rule (``auditor/report/text.py``);
then the concrete cases of the issue go through the CLI: host labels from a log, a
logged reason, a participant on the command line, a model id from the chain."""

from __future__ import annotations

import csv
import io
import json
import re
from html.parser import HTMLParser
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st
from markdown_it import MarkdownIt

from auditor.report.render import render
from auditor.report.view import View
from auditor.report.text import CONTROL, plain
from auditor.result import Finding, Result, Table
from conftest import FIXTURES, run_cli

PIECES = ["[/]", "[bold red]", "[link=http://evil.example]x[/link]", ":smile:", "\x1b[2J", "\x1b]0;PWNED\x07",
          "\x1b]8;;http://evil.example\x1b\\", "\x9b2J", "\x07", "\b", "\r", "\n", "\r\n", "\0", "\t", "\x7f",
          "\u202e", "\u2028", "|", "\\|", "\\", "<", ">", "&", "&amp;", "`", "```", "<!--", "-->", "</details>",
          "<img src=x onerror=alert(1)>", "<script>alert(1)</script>", "=HYPERLINK(\"http://evil.example\")",
          "+1", "-1", "@SUM(A1)", "*", "_", "__", "~~", "#", "# ", "- ", "1. ", "> ", "    ", "[x](http://e)",
          "![i](http://e)", "a_b", "é", "漢字"]
HOSTILE = st.one_of(
    st.lists(st.one_of(st.sampled_from(PIECES), st.text(max_size=4)), min_size=1, max_size=8).map("".join),
    st.text(min_size=1, max_size=30),
    st.tuples(st.sampled_from(PIECES), st.integers(100, 3000)).map(lambda t: t[0] * t[1] + "end"),   # very long
).filter(lambda v: plain(v).strip())         # a blank note makes no paragraph: nothing to compare
# what each format writes itself: the renderer's own newlines; the md report's own tags
MD_TAGS = re.compile(r"</?(?:details|summary|sub)>")


def _result(v: str) -> Result:
    """A result with the hostile value everywhere a renderer puts outside text."""
    table = Table(f"hosts of {v}", ["host", "n", "neg", "ratio"],
                  [{"host": v, "n": 5, "neg": -3, "ratio": -0.25},
                   {"host": "plain", "n": 1, "neg": None, "ratio": 2.0}],
                  notes=[v])
    finding = Finding("hedge_predictable_loss", "warn", {"kind": "participant", "id": v},
                      f"{v.replace(chr(10), ' ')} lost 7 races", {"host": v, "hosts": [v]}, model=v)
    return Result("hedging_demo", f"Report on {v}", {"host": v, "hosts": [v, "b"]}, tables=[table],
                  findings=[finding], coverage={"sources": ["gateway_log"], "missing": [v]},
                  header=[("label", v)])


def _unkept(page: str) -> str:
    """An html page without the spans html._kept puts around a token (text inside, no markup)."""
    return re.sub(r'<span class="nb">([^<]*)</span>', r"\1", page)


def _lines(text: str) -> str:
    """Line ends as an html parser may give them back: CR LF and CR as LF."""
    return text.replace("\r\n", "\n").replace("\r", "\n")


def _squash(text: str) -> str:
    return re.sub(r"\s+", "", text)


class _Text(HTMLParser):
    """The text of an html page, and how many of each element it holds."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.text: list[str] = []
        self.tags: dict[str, int] = {}

    def handle_starttag(self, tag, attrs) -> None:
        self.tags[tag] = self.tags.get(tag, 0) + 1

    def handle_data(self, data) -> None:
        self.text.append(data)

    def handle_comment(self, data) -> None:
        self.tags["<!--"] = self.tags.get("<!--", 0) + 1


def _parse_html(page: str) -> _Text:
    p = _Text()
    p.feed(page)
    p.close()
    return p


def _markdown_html(md: str) -> _Text:
    """The Markdown as a CommonMark renderer (with tables, as GitHub) shows it."""
    return _parse_html(MarkdownIt("commonmark").enable("table").render(md))


def _unescaped_pipes(line: str) -> int:
    return len(re.findall(r"(?<!\\)(?:\\\\)*\|", line))


BENIGN = {fmt: render(_result("benign"), fmt, View(command="auditor hedging")) for fmt in ("md", "html")}


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(HOSTILE)
def test_hostile_text_is_data_in_every_format(v):
    result = _result(v)
    shown = plain(v)      # how a terminal shows the value: its controls escaped

    # table: no control character but the renderer's newlines; the value shown literally
    # (not as markup), and in full with --wide
    out = render(result, "table", View(wide=True))
    assert not CONTROL.search(out.replace("\n", "")), repr(out)
    assert not CONTROL.search(render(result, "table").replace("\n", ""))      # made to fit: cut, columns dropped
    assert "label:" + _squash(shown) in _squash(out)
    if len(v) < 60:
        assert _squash(f"Report on {shown}") in _squash(out)

    # md: no CR, no control character, no raw '<' but its own tags, one cell per column,
    # the headings and rows of a benign value, the value readable, within GitHub's limit
    md = render(result, "md", View(command=f"auditor hedging -p {v}"))
    assert "\r" not in md and not CONTROL.search(md.replace("\n", "")), repr(md)
    assert "<" not in MD_TAGS.sub("", md)
    rows = [line for line in md.splitlines() if line.startswith("| ")]
    assert rows and all(_unescaped_pipes(line) == 5 for line in rows), rows
    seen, benign = _markdown_html(md), _markdown_html(BENIGN["md"])
    for tag in ("h1", "h2", "h3", "tr", "ol", "li", "p", "details"):
        assert seen.tags.get(tag, 0) == benign.tags.get(tag, 0), (tag, md)
    assert not {"a", "img", "script", "em", "strong", "del", "pre", "hr", "blockquote", "<!--"} - set(benign.tags) \
        & set(seen.tags), md
    text = _squash("".join(seen.text))
    if len(v) <= 400:
        assert _squash(shown) in text
    assert len(md) <= 65_536

    # csv: reads back with the csv module; a formula prefix is neutralised, numbers are numbers
    data = list(csv.reader(io.StringIO(render(result, "csv"), newline="")))
    assert data[0] == ["host", "n", "neg", "ratio"] and len(data) == 3
    assert data[1] == [("'" + v) if v.startswith(tuple("=+-@\t\r")) else v, "5", "-3", "-0.25"]

    # html: no '<' from the value (as many as a benign value makes), the value's text exact; the
    # spans that keep an id or a time on one line (html._kept) are the page's own markup
    page = render(result, "html", View(command="auditor hedging"))
    assert _unkept(page).count("<") == _unkept(BENIGN["html"]).count("<")
    parsed = _parse_html(_unkept(page))
    assert parsed.tags == _parse_html(_unkept(BENIGN["html"])).tags
    assert _lines(v) in _lines("".join(parsed.text))

    # json: the exact string
    back = json.loads(render(result, "json"))
    assert back["host"] == v and back["hosts"] == [v, "b"] and back["findings"][0]["subject"]["id"] == v
    assert back["coverage"]["missing"] == [v]


def test_md_cuts_a_long_value_and_says_how_long():
    md = render(_result("x" * 20_000), "md")
    assert "x" * 400 + "… (20,000 characters)" in md                   # a value: its first 400 characters
    assert "x" * 1000 + "… (20,000 characters)" in md and "x" * 1001 not in md      # a sentence: 1000


@given(st.lists(st.one_of(st.integers(0, 10**12).map(str), st.from_regex(r"[a-z0-9-]{1,12}", fullmatch=True),
                          st.from_regex(r"[0-2][0-9]:[0-5][0-9]:[0-5][0-9]", fullmatch=True),
                          st.from_regex(r"/[a-z]{1,8}/[a-z]{1,8}\.log:[0-9]{1,4}", fullmatch=True),
                          st.sampled_from([", ", ": ", "{", "}", "[", "]", '"', " "])), min_size=1, max_size=80),
       st.integers(1, 200))
def test_a_cut_never_falls_inside_a_number_or_an_id(pieces, limit):
    """md's evidence cut `"balance_at_least": 989952000` to `98995200…`: a number 10x smaller; a
    time or a log line's `path:line` is one token too (cut at its `:`, the line was lost)."""
    from auditor.report.text import cut

    text = "".join(pieces)
    out = cut(text, limit)
    if len(text) <= limit:
        assert out == text
        return
    kept, _, said = out.rpartition("… (")
    assert said == f"{len(text):,} characters)" and text.startswith(kept) and len(kept) <= limit
    word = re.compile(r"[\w.+\-:/]")
    at_a_boundary = not kept or not (word.match(kept[-1]) and word.match(text[len(kept)]))
    # or no boundary to cut at: the text's first token alone is longer than the limit
    assert at_a_boundary or (kept == text[:limit] and re.fullmatch(r"[\w.+\-:/]+", text[:limit + 1]))


def test_csv_keeps_numbers_and_neutralises_text():
    t = Table("t", ["v"], [{"v": -3}, {"v": -0.5}, {"v": "-3"}, {"v": "=1+1"}, {"v": "@x"}, {"v": "+1"},
                          {"v": "\tx"}, {"v": "a=b"}, {"v": None}])
    rows = list(csv.reader(io.StringIO(render(Result("x", "x", {}, tables=[t]), "csv"), newline="")))
    assert [r[0] for r in rows[1:]] == ["-3", "-0.5", "'-3", "'=1+1", "'@x", "'+1", "'\tx", "a=b", ""]


# -- through the CLI ----------------------------------------------------------------------------
H = FIXTURES / "hedging"
SMALL = ["--since", "2026-10-23T08:00:00", "--until", "2026-10-23T10:00:00"]


def _hedging_store(tmp_path: Path, fast: str, slow: str) -> Path:
    """The small hedging fixture (slog JSON lines) with its two host labels replaced."""
    text = (H / "small-slog.json").read_text()
    text = text.replace('"fa5th0st"', json.dumps(fast)).replace('"sl0wh0st"', json.dumps(slow))
    tmp_path.mkdir(parents=True, exist_ok=True)
    log = tmp_path / "gateway.json"
    log.write_text(text, encoding="utf-8")
    db = tmp_path / "a.duckdb"
    r = run_cli("collect", "--gateway-log", str(log), db=db)
    assert r.returncode == 0, r.stderr
    return db


def test_markup_in_host_labels_is_shown_as_written(tmp_path):
    db = _hedging_store(tmp_path, "fa5[/]", "[bold red]RED")
    r = run_cli("hedging", "--offline", *SMALL, db=db)
    assert r.returncode == 0 and "internal error" not in r.stderr, r.stderr
    labels = {line.split("│")[1].strip() for line in r.stdout.splitlines()
              if line.startswith("│ fa5") or line.startswith("│ [bold")}
    assert labels == {"[bold red]RED", "fa5[/]"}                 # the first column of the host tables
    assert "7 of [bold red]RED's 7 losses" in r.stdout          # a finding's summary, as written


def test_terminal_escapes_from_a_log_are_shown_escaped(tmp_path):
    db = _hedging_store(tmp_path, "fa5\x1b[2J\x1b]0;PWNED\x07", "\x1b]8;;http://evil\x1b\\hi\x1b]8;;\x1b\\")
    r = run_cli("hedging", "--offline", *SMALL, "--wide", db=db)
    assert r.returncode == 0, r.stderr
    assert "\x1b" not in r.stdout and "\x07" not in r.stdout
    assert "fa5\\x1b[2J\\x1b]0;PWNED\\x07" in r.stdout
    assert "\\x1b]8;;http://evil\\x1b\\hi\\x1b]8;;\\x1b\\" in r.stdout


def test_link_markup_makes_no_hyperlink_on_a_terminal(tmp_path):
    from test_reports import on_a_terminal

    db = _hedging_store(tmp_path, "[link=http://evil.example]fa5[/link]", "sl0wh0st")
    out = on_a_terminal(["--db", str(db), "hedging", "--offline", *SMALL], 200)
    assert "\x1b]8" not in out and "[link=http://evil.example]fa5[/link]" in out


def test_markdown_with_cr_and_html_in_values_keeps_every_heading_and_row(tmp_path):
    plain_db = _hedging_store(tmp_path / "p", "fa5th0st", "sl0wh0st")
    db = _hedging_store(tmp_path / "h", "fa5\r<!--", "<img src=x onerror=alert(1)></details>")
    want = _markdown_html(run_cli("hedging", "--offline", *SMALL, "-f", "md", db=plain_db).stdout)
    r = run_cli("hedging", "--offline", *SMALL, "-f", "md", db=db)
    assert r.returncode == 0, r.stderr
    assert "\r" not in r.stdout and "<!--" not in r.stdout and "<img" not in r.stdout
    seen = _markdown_html(r.stdout)
    assert {t: seen.tags.get(t) for t in ("h1", "h2", "tr", "details")} == \
        {t: want.tags.get(t) for t in ("h1", "h2", "tr", "details")}
    assert "img" not in seen.tags and "<!--" not in seen.tags
    assert "fa5\\r<!--" in "".join(seen.text)                   # shown, escaped


def test_csv_neutralises_a_formula_label(tmp_path):
    db = _hedging_store(tmp_path, '=HYPERLINK("http://evil.example","x")', "-sl0wh0st")
    r = run_cli("hedging", "--offline", *SMALL, "-f", "csv", db=db)
    assert r.returncode == 0, r.stderr
    labels = {row["label"] for row in csv.DictReader(io.StringIO(r.stdout))}
    assert labels == {"'=HYPERLINK(\"http://evil.example\",\"x\")", "'-sl0wh0st"}


def test_a_logged_reason_with_markup_in_remints_wide(tmp_path):
    src = FIXTURES / "remints"
    d = tmp_path / "fx"
    d.mkdir()
    for f in ("gateway.log", "gateway.log.1"):
        (d / f).write_text((src / f).read_text().replace('reason="high_nonce"', 'reason="high[/]nonce"'))
    args = ["--replay", str(src / "chain"), "--replay", str(src / "accounting"),
            "--gateway-log", str(d / "gateway.log.1"), "--gateway-log", str(d / "gateway.log")]
    r = run_cli("remints", "396", *args, "--wide", db=tmp_path / "a.duckdb")
    assert r.returncode in (0, 1) and "internal error" not in r.stderr, r.stderr
    assert "high[/]nonce" in r.stdout


def test_a_participant_with_markup_on_the_command_line(tmp_path):
    r = run_cli("epoch", "403", "--replay", str(FIXTURES / "chain" / "epoch-403"), "--participant", "x[/]",
                db=tmp_path / "a.duckdb")
    assert r.returncode in (0, 1, 3) and "internal error" not in r.stderr, r.stderr
    assert "x[/]" in r.stdout


def _chain_with_model(tmp_path: Path, model: str) -> Path:
    """The epoch-403 recording with one model id replaced (in the answers and the queries)."""
    from urllib.parse import parse_qsl, urlencode

    old = "zai-org/GLM-5.3-Flash"
    d = tmp_path / "chain"
    d.mkdir()
    for f in sorted((FIXTURES / "chain" / "epoch-403").glob("*.json")):
        e = json.loads(f.read_text())
        e["body"] = e["body"].replace(json.dumps(old), json.dumps(model))
        query = parse_qsl(e["query"], keep_blank_values=True)
        e["query"] = urlencode([(k, model if v == old else v) for k, v in query])
        (d / f.name).write_text(json.dumps(e))
    return d


def test_a_chain_model_id_with_markup(tmp_path):
    r = run_cli("epoch", "403", "--replay", str(_chain_with_model(tmp_path, "zai[/]GLM")), db=tmp_path / "a.duckdb")
    assert r.returncode in (0, 1) and "internal error" not in r.stderr, r.stderr
    assert "zai[/]GLM (W_m 25,771)" in r.stdout


def test_a_20k_character_model_id_keeps_md_within_githubs_limit(tmp_path):
    model = "m/" + "x" * 20_000
    r = run_cli("epoch", "403", "--replay", str(_chain_with_model(tmp_path, model)), "-f", "md",
                db=tmp_path / "a.duckdb")
    assert r.returncode in (0, 1), r.stderr
    assert len(r.stdout) <= 65_536 and "… (20,002 characters)" in r.stdout
    assert "x" * 1001 not in r.stdout            # a value: 400 characters; a sentence (a header line): 1000


def test_collect_lines_show_a_path_with_escapes_escaped(tmp_path):
    (tmp_path / "gw[").mkdir()
    log = tmp_path / "gw[" / "]\x1b[2J.log"                   # .../gw[/]ESC[2J.log
    log.write_bytes((H / "small.log").read_bytes())
    r = run_cli("collect", "--gateway-log", str(log), "--gateway-log", str(tmp_path / "gone\x1b]0;T\x07-*.log"),
                db=tmp_path / "a.duckdb")
    assert r.returncode == 3, r.stderr                       # the second matches nothing
    assert "\x1b" not in r.stderr and "\x07" not in r.stderr
    assert "reading " + str(tmp_path / "gw[/]\\x1b[2J.log") in r.stderr           # the progress line
    assert "MISSING " + str(tmp_path / "gone\\x1b]0;T\\x07-*.log") in r.stderr    # the collect summary
    # a path that names nothing is a usage error before any work (issue 33), escaped the same
    r = run_cli("collect", "--gateway-log", str(tmp_path / "gone\x1b]0;T\x07.log"), db=tmp_path / "b.duckdb")
    assert r.returncode == 2 and "\x1b" not in r.stderr and "gone\\x1b]0;T\\x07.log" in r.stderr, r.stderr


def test_a_progress_bar_shows_its_description_as_text():
    from rich.console import Console

    from auditor.progress import Progress

    p = Progress(interactive=True)
    out = io.StringIO()
    p._console = Console(file=out, force_terminal=True, width=120)
    with p.task("reading /logs/gw[/]\x1b[2J.log", 10) as advance:
        advance(5)
    p.log("wrote [bold]x\x1b]0;T\x07")
    assert "reading /logs/gw[/]\\x1b[2J.log" in out.getvalue() and "wrote [bold]x\\x1b]0;T\\x07" in out.getvalue()
    assert "\x1b[2J" not in out.getvalue() and "\x1b]0;" not in out.getvalue()


def test_an_error_line_shows_outside_text_escaped(tmp_path):
    """The one error line quotes what the user or a server gave (here a table name with a
    terminal escape and a CR): it stays one line and no control character reaches stderr."""
    from auditor.store import Store

    Store(tmp_path / "a.duckdb").close()
    r = run_cli("sql", 'SELECT * FROM "x\x1b[2J\ry"', db=tmp_path / "a.duckdb")
    assert r.returncode == 2, r.stderr
    assert r.stderr.count("\n") == 1 and not CONTROL.search(r.stderr.rstrip("\n")), repr(r.stderr)
    assert "x\\x1b[2J" in r.stderr
