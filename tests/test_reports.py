"""The reports people read and the cron mode, through the CLI on the bundled recording:
the terminal view at 100 columns (a real pty), Markdown, the html report in a real
headless Chromium, the Prometheus textfile, `auditor report daily` (its lock, its
files, the systemd unit's and the crontab's command lines) and auditor.toml."""

from __future__ import annotations

import fcntl
import json
import math
import os
import pty
import re
import shlex
import shutil
import struct
import subprocess
import sys
import termios
from pathlib import Path

import pytest
from hypothesis import given, settings, strategies as st

from auditor.report.view import LONG_LIST
from conftest import FIXTURES, ROOT, q, run_cli, run_json

REC = FIXTURES / "chain" / "epoch-403"
DEMO = ["--replay", str(REC), "--replay", str(FIXTURES / "accounting" / "v5"),
        "--gateway-log", str(FIXTURES / "demo-epoch-403" / "gateway.log.gz")]
STORY = json.loads((FIXTURES / "chain" / "epoch-403.story.json").read_text())
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    """A store holding every bundled source of epoch 403."""
    db = tmp_path_factory.mktemp("demo") / "auditor.duckdb"
    r = run_cli("collect", "--epoch", "403", *DEMO, db=db)
    assert r.returncode == 0, r.stderr
    return db


def on_a_terminal(args: list[str], columns: int, colour: bool = False) -> str:
    """Run the CLI with stdout on a pseudo-terminal of ``columns`` columns; what it printed
    (with ``colour``: NO_COLOR unset and the escape sequences kept)."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 50, columns, 0, 0))
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES", "NO_COLOR")
           and not k.startswith("AUDITOR_")}
    env.update({"TERM": "xterm"} if colour else {"NO_COLOR": "1", "TERM": "xterm"})
    p = subprocess.Popen([sys.executable, "-m", "auditor", *args], stdout=slave, stderr=subprocess.DEVNULL,
                         stdin=subprocess.DEVNULL, env=env)
    os.close(slave)
    out = b""
    while True:
        try:
            chunk = os.read(master, 1 << 16)
        except OSError:
            break
        if not chunk:
            break
        out += chunk
    p.wait(timeout=60)
    os.close(master)
    if colour:
        return out.decode("utf-8").replace("\r\n", "\n")
    return re.sub(r"\x1b\[[0-9;?]*[a-zA-Z]", "", out.decode("utf-8")).replace("\r\n", "\n")


def printed_to_a_gone_reader(args: list[str], stderr_too: bool = False) -> tuple[int, str]:
    """Run the CLI with its stdout (and with ``stderr_too`` its stderr: ``2>&1 | head``) a pipe
    whose reader is gone: its exit code and stderr."""
    r, w = os.pipe()
    os.close(r)
    try:
        p = subprocess.run([sys.executable, "-m", "auditor", *args], stdout=w,
                           stderr=w if stderr_too else subprocess.PIPE, stdin=subprocess.DEVNULL, text=True,
                           timeout=120)
    finally:
        os.close(w)
    return p.returncode, p.stderr or ""


@pytest.mark.parametrize("fmt,fail_on", [("table", None), ("table", "info"), ("json", None), ("json", "info"),
                                         ("md", "info"), ("html", "info"), ("csv", "info")])
def test_a_reader_gone_leaves_the_runs_exit_code(demo, fmt, fail_on):
    """`auditor epoch 403 | head`: the report stops quietly, and the exit code is the run's
    (0, or 1 for findings at --fail-on), not click's or rich's 1, which reads as findings."""
    args = ["--db", str(demo), "--quiet", "epoch", "403", "--offline", "--format", fmt,
            *(["--fail-on", fail_on] if fail_on else [])]
    whole = subprocess.run([sys.executable, "-m", "auditor", *args], stdout=subprocess.DEVNULL,
                           stderr=subprocess.PIPE, text=True, timeout=120)
    assert whole.returncode == (1 if fail_on else 0), whole.stderr
    code, err = printed_to_a_gone_reader(args)
    assert code == whole.returncode and err == "", err


def test_a_collect_whose_stderr_reader_is_gone_stores_everything(demo, tmp_path):
    """`auditor collect ... 2>&1 | head -1`: the progress and the report lines nobody reads stop
    nothing. It stored nothing and exited 1 (its first progress line raised)."""
    from conftest import q

    db = tmp_path / "a.duckdb"
    code, _ = printed_to_a_gone_reader(["--db", str(db), "collect", "--epoch", "403", *DEMO], stderr_too=True)
    assert code == 0
    for table in ("log_events", "chain_performance", "acct_counters"):
        assert q(db, f"SELECT count(*) FROM {table}") == q(demo, f"SELECT count(*) FROM {table}"), table


def test_terminal_view_fits_100_columns(demo):
    text = on_a_terminal(["--db", str(demo), "epoch", "403", "--offline"], 100)
    lines = text.splitlines()
    assert len(lines) > 100 and max(map(len, lines)) <= 100
    # ids whole: model ids and shortened addresses are never broken across lines
    assert "deepseek-ai/DeepSeek-V4-Flash-0731" in text
    assert f"gonka1…{STORY['victim'][-8:]}" in text and STORY["victim"] not in text
    for short in re.findall(r"gonka1…[0-9a-z]*", text):
        assert re.fullmatch(r"gonka1…[02-9ac-hj-np-z]{8}", short), short
    # headings wrap between words only: every word of a shown heading is whole somewhere
    for word in ("allocation", "participant", "preserved", "critical"):
        assert re.search(rf"\b{word}\b", text)
    assert "not shown at this width" in text         # what was dropped is said
    wide = on_a_terminal(["--db", str(demo), "epoch", "403", "--offline", "--wide"], 160)
    assert STORY["victim"] in wide and "not shown at this width" not in wide
    one = on_a_terminal(["--db", str(demo), "epoch", "403", "--offline", "-p", STORY["victim"]], 100)
    assert STORY["victim"] in one and "not shown at this width" not in one    # one host: its full detail


def test_markdown_report(demo):
    r = run_cli("epoch", "403", "--offline", "--format", "md", db=demo)
    assert r.returncode == 0, r.stderr
    md = r.stdout
    assert len(md) < 65536                           # GitHub's limit for an issue or comment
    findings = md.split("## Findings")[1].split("\n## ")[0]
    assert "`reward_zeroed_miss_test`" in findings and STORY["victim"] in findings
    assert "missed = 345" in findings and "critical_misses = 176" in findings   # the numbers behind it
    assert "<details><summary>27 rows</summary>" in md                          # the long miss-test table
    assert re.search(r"Made by `auditor --db \S+ epoch 403 --offline --format md`", md)
    chain_only = run_cli("--db", str(demo) + ".chain", "epoch", "403", "--replay", str(REC), "--format", "md")
    assert "## Coverage caveats" in chain_only.stdout and "no gateway logs ingested" in chain_only.stdout


def test_html_report_is_self_contained_and_linked(demo, tmp_path):
    out = tmp_path / "r.html"
    assert run_cli("epoch", "403", "--offline", "--format", "html", "--output", str(out), db=demo).returncode == 0
    html = out.read_text(encoding="utf-8")
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", html)
    assert "<link" not in html and "@import" not in html and "url(" not in html
    ids = set(re.findall(r'id="([^"]+)"', html))
    links = re.findall(r'href="#([^"]+)"', html)
    assert links and all(link in ids for link in links)
    assert html.count('class="sortable"') > 5 and html.count("<svg") >= 3    # miss test, load, targets


def _browser():
    pw = pytest.importorskip("playwright.sync_api") if not os.environ.get("CI") else __import__(
        "playwright.sync_api", fromlist=["sync_playwright"])
    if CHROMIUM is None:
        if os.environ.get("CI"):
            pytest.fail("chromium is not installed (.ci/run installs it)")
        pytest.skip("no chromium on this machine")
    return pw


# every element whose right edge passes the viewport's, outside the boxes that scroll
OVERFLOW = """() => [...document.querySelectorAll('body *')]
    .filter(e => !e.closest('.scroll, .chart-box') && e.getBoundingClientRect().right > innerWidth + 0.5)
    .map(e => e.tagName + '.' + (typeof e.className === 'string' ? e.className : e.className.baseVal))"""
# per chart: the lowest edge of its data and the highest of its legend (the legend sits under the data)
LEGEND_PLACE = """s => [Math.max(...[...s.querySelectorAll('.datum, .span')].map(e => e.getBoundingClientRect().bottom)),
    Math.min(...[...s.querySelectorAll('.legend')].map(e => e.getBoundingClientRect().top))]"""


@pytest.mark.parametrize("width", [420, 1400])
def test_html_report_fits_the_page(demo, tmp_path, width):
    """At a phone's width and a desktop's, the page never scrolls sideways (tables and charts
    scroll in their own boxes); chart text stays readable; every chart's legend is under its data."""
    pw = _browser()
    out = tmp_path / "report.html"
    assert run_cli("epoch", "403", "--offline", "--format", "html", "--output", str(out), db=demo).returncode == 0
    with pw.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu"])
        page = browser.new_page(viewport={"width": width, "height": 900})
        page.goto(out.as_uri())
        page.wait_for_load_state("load")
        widths = page.evaluate("[document.documentElement.scrollWidth, document.documentElement.clientWidth]")
        over = page.evaluate(OVERFLOW)
        boxes = page.eval_on_selector_all(".scroll", "bs => bs.map(b => b.scrollWidth > b.clientWidth)")
        tick_px = page.eval_on_selector_all("svg.chart .tick", "ts => ts.map(t => t.getBoundingClientRect().height)")
        places = page.eval_on_selector_all("svg.chart", f"ss => ss.map({LEGEND_PLACE})")
        browser.close()
    assert widths[0] <= widths[1], (widths, over[:10])
    assert over == []
    assert len(boxes) > 5 and (width > 1000 or any(boxes))    # on a phone, wide tables scroll in their box
    assert min(tick_px) >= 9, min(tick_px)                    # chart text a phone can read
    assert places and all(data <= legend for data, legend in places), places


def test_html_charts_say_what_failed(demo, tmp_path):
    """The misses chart: missed/allowed per participant, every participant labelled, the two
    failures red and above 1; the targets: one panel per model; the PoC chart: its phases shaded."""
    out = tmp_path / "r.html"
    assert run_cli("epoch", "403", "--offline", "--format", "html", "--output", str(out), db=demo).returncode == 0
    html = out.read_text(encoding="utf-8")
    misses = html.split('<section id="section-miss-test">')[1].split("</svg>")[0]
    tested = [p for p in run_json("misstest", "403", "--offline", "--format", "json", db=demo)["participants"]
              if p["total"] and p["critical_misses"]]
    failed = {p["participant"][-8:] for p in tested if p["missed"] > p["critical_misses"]}
    red = re.findall(r'<rect class="datum"[^>]*fill="#d62728"><title>failed (\w+): ([\d.]+)</title>', misses)
    assert {label for label, _ in red} == failed and STORY["victim"][-8:] in failed and len(red) == 2, red
    assert all(float(v) > 1 for _, v in red)
    labels = set(re.findall(r'class="tick">([0-9a-z]{8})</text>', misses))
    assert labels == {p["participant"][-8:] for p in tested}               # every participant named
    targets = html.split('<section id="section-preserved-targets">')[1].split("</section>")[0]
    models = run_json("targets", "403", "--offline", "--format", "json", db=demo)["preserved_targets"]
    assert targets.count("<svg") == len(models) > 1
    assert all(f"<figcaption>{m['model_id']}:" in targets for m in models)
    poc = html.split('<section id="section-poc-overload">')[1].split("</svg>")[0]
    assert [t for t in re.findall(r'<rect class="span"[^>]*><title>([^<]+)</title>', poc)] == [
        "grace", "generation", "validation"]


def test_html_report_in_a_real_browser(demo, tmp_path):
    pw = _browser()
    out = tmp_path / "report.html"
    assert run_cli("epoch", "403", "--offline", "--format", "html", "--output", str(out), db=demo).returncode == 0
    with pw.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=[
            "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
            "--disable-sync", "--no-first-run", "--disable-quic"])
        page = browser.new_page(viewport={"width": 1280, "height": 1000})
        errors, requests = [], []
        page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.on("request", lambda r: requests.append(r.url))
        page.goto(out.as_uri())
        page.wait_for_load_state("load")
        drawn = page.eval_on_selector_all("svg.chart", "s => s.map(c => c.querySelectorAll('.datum').length)")
        # sorting: click the miss test's 'missed' heading twice, the column comes out descending
        table = page.locator("#section-miss-test table").first
        table.locator("th", has_text="missed").first.click()
        table.locator("th", has_text="missed").first.click()
        col = page.eval_on_selector("#section-miss-test table", """t => {
            const i = [...t.tHead.rows[0].cells].findIndex(c => c.textContent.trim().startsWith('missed'));
            return [...t.tBodies[0].rows].map(r => Number(r.cells[i].textContent)); }""")
        if os.environ.get("AUDITOR_SCREENSHOTS"):      # the README's pictures: a folder to write them in
            shots = Path(os.environ["AUDITOR_SCREENSHOTS"])
            page.goto(out.as_uri())
            page.screenshot(path=shots / "epoch-403-report.png", full_page=False)
            page.locator("#section-poc-overload figure.chart").first.screenshot(path=shots / "epoch-403-poc-overload.png")
        browser.close()
    assert errors == []
    assert len(drawn) >= 3 and all(n > 0 for n in drawn), drawn
    assert all(u.startswith("file://") for u in requests), requests
    assert col == sorted(col, reverse=True) and col[0] > col[-1]


def _metrics(text: str) -> dict:
    from prometheus_client.parser import text_string_to_metric_families

    return {f.name: f.samples for f in text_string_to_metric_families(text)}


def test_report_daily_writes_every_format_and_a_textfile(demo, tmp_path):
    out, prom = tmp_path / "reports", tmp_path / "textfile" / "auditor.prom"
    r = run_cli("report", "daily", "--out", str(out), "--offline", "--fail-on", "error",
                "--prom-textfile", str(prom), db=demo, stdin="")
    assert r.returncode == 1, r.stderr            # the bundled epoch has error findings
    day = out / "2026-09-22"                      # epoch 403 took effect on 2026-09-22 (SNV(N))
    assert sorted(p.name for p in day.iterdir()) == ["report.html", "report.json", "report.md"]
    report = json.loads((day / "report.json").read_text())
    assert report["epoch"] == 403 and report["findings"]
    # plain log lines off a terminal, no progress bar; then (exit 1) the error findings, one line each
    logs = [line for line in r.stderr.splitlines() if not line.startswith("auditor: error ")]
    assert logs and all(re.match(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ auditor: ", line) for line in logs)
    metrics = _metrics(prom.read_text())
    counted = {(s.labels["code"], s.labels["severity"]): s.value for s in metrics["auditor_findings"]}
    expected: dict = {}
    for f in report["findings"]:
        expected[(f["code"], f["severity"])] = expected.get((f["code"], f["severity"]), 0) + 1
    assert counted == expected
    passed = {s.labels["participant"]: s.value for s in metrics["auditor_miss_test_passed"]}
    assert passed[STORY["victim"]] == 0 and passed[STORY["boundary_pass"]] == 1
    from auditor.report.promfile import METRICS

    assert set(METRICS) <= set(metrics), set(METRICS) - set(metrics)        # every documented family is written
    # each has samples on the demo, so a renamed data key cannot empty it unseen; the demo's logs
    # show no escrow deactivation (tests/test_remints.py covers that one)
    assert [m for m in METRICS if not metrics[m]] == ["auditor_remint_deactivations"]
    assert all(f"`{m}" in (ROOT / "README.md").read_text() for m in METRICS)   # and documented
    assert [p.name for p in prom.parent.iterdir()] == ["auditor.prom"]     # written, then renamed


def test_report_daily_asks_a_replayed_node_for_the_latest_epoch(tmp_path):
    """--replay stands in for --node: the latest settled epoch comes from the recording's
    /v1/epochs/latest, not a usage error. It says 405 is in Inference, so 404 would be the
    latest settled; but the recording holds no root group of 405: 404 is not settled there,
    403 is (tests/test_cron.py: the same run, quiet)."""
    out = tmp_path / "reports"
    r = run_cli("report", "daily", "--out", str(out), "--replay", str(FIXTURES / "chain" / "epoch-403"),
                db=tmp_path / "a.duckdb", stdin="")
    assert r.returncode == 0 and "needs --epoch" not in r.stderr, r.stderr
    assert "report daily: epoch 403" in r.stderr
    (day,) = [d for d in out.iterdir() if d.is_dir()]
    assert sorted(p.name for p in day.iterdir()) == ["report.html", "report.json", "report.md"]

def test_report_daily_lock_keeps_runs_apart(demo, tmp_path):
    out = tmp_path / "reports"
    code = ("import sys, time; sys.path.insert(0, sys.argv[1]); from auditor import daily; from pathlib import Path\n"
            "with daily.locked(Path(sys.argv[2])):\n    print('held', flush=True); time.sleep(30)")
    holder = subprocess.Popen([sys.executable, "-c", code, str(ROOT), str(out)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        r = run_cli("report", "daily", "--out", str(out), "--offline", db=demo)
        assert r.returncode == 3 and r.stderr.strip().count("\n") == 0
        assert "another `auditor report daily` holds" in r.stderr
    finally:
        holder.kill()
        holder.wait()


def _contrib_command(line: str, config: Path, out: Path, prom: Path) -> list[str]:
    """A command line of contrib/, with its paths pointed at the test's."""
    line = (line.replace("/etc/auditor/auditor.toml", str(config)).replace("/srv/auditor/reports", str(out))
            .replace("/var/lib/node_exporter/textfile/auditor.prom", str(prom)))
    args = shlex.split(line)
    args = [a for a in args if not a.startswith("AUDITOR_DB=")]
    assert args[0] == "/usr/local/bin/auditor"
    return args[1:]


@pytest.mark.parametrize("source", ["systemd", "crontab"])
def test_the_documented_cron_and_systemd_lines_run(demo, tmp_path, source):
    if source == "systemd":
        unit = (ROOT / "contrib" / "auditor-daily.service").read_text()
        line = next(x for x in unit.splitlines() if x.startswith("ExecStart="))[len("ExecStart="):]
        assert "Environment=AUDITOR_DB=" in unit
    else:
        line = next(x for x in (ROOT / "contrib" / "crontab").read_text().splitlines()
                    if x and not x.startswith("#")).split(None, 5)[5]
    config = tmp_path / "auditor.toml"
    config.write_text("offline = true\n")
    args = _contrib_command(line, config, tmp_path / "out", tmp_path / "auditor.prom")
    r = run_cli(*args, env={"AUDITOR_DB": str(demo)}, stdin="")
    assert r.returncode == 1, r.stderr            # findings at or above error: the unit fails, cron mails
    assert (tmp_path / "out" / "2026-09-22" / "report.md").is_file() and (tmp_path / "auditor.prom").is_file()


def test_config_file_precedence(demo, tmp_path):
    other = tmp_path / "empty.duckdb"
    shutil.copy(demo, tmp_path / "demo.duckdb")         # a working-directory config reaches only its folder
    (tmp_path / "auditor.toml").write_text('db = "demo.duckdb"\noffline = true\n[misstest]\nformat = "json"\n')
    r = subprocess.run([sys.executable, "-m", "auditor", "misstest", "403"], cwd=tmp_path, capture_output=True,
                       text=True, env={k: v for k, v in os.environ.items() if not k.startswith("AUDITOR_")})
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["epoch"] == 403                     # the file's db and format
    env = {k: v for k, v in os.environ.items() if not k.startswith("AUDITOR_")} | {"AUDITOR_DB": str(other)}
    r = subprocess.run([sys.executable, "-m", "auditor", "misstest", "403"], cwd=tmp_path, capture_output=True,
                       text=True, env=env)
    assert r.returncode == 3 and f"no database at {other}" in r.stderr      # the env var wins over the file
    r = subprocess.run([sys.executable, "-m", "auditor", "misstest", "403", "--db", str(demo), "--format", "csv"],
                       cwd=tmp_path, capture_output=True, text=True, env=env)
    assert r.returncode == 0 and r.stdout.startswith("participant,")  # flags win over both


@pytest.mark.parametrize("text, says", [
    ("nodes = ['http://x']\n", "unknown key nodes"),
    ("rate = 'fast'\n", "rate = 'fast'"),
    ("[epoch]\nformat = 'xml'\n", "epoch.format = 'xml'"),
    ("[epochs]\nx = 1\n", "unknown table [epochs]"),
    ("rate = [\n", "not valid TOML"),
    (b"rate = '\xff'\n", "not UTF-8 at byte 8"),          # tomllib's UnicodeDecodeError: an internal error
])
def test_bad_config_is_one_line_and_exit_2(tmp_path, text, says):
    cfg = tmp_path / "bad.toml"
    cfg.write_bytes(text if isinstance(text, bytes) else text.encode())
    r = run_cli("--config", str(cfg), "misstest", "403", db=tmp_path / "x.duckdb")
    assert r.returncode == 2 and says in r.stderr and r.stderr.count("\n") == 1, r.stderr


def test_the_example_config_is_valid(tmp_path):
    r = run_cli("--config", str(ROOT / "contrib" / "auditor.toml.example"), "sql", "SELECT 1 AS one",
                "--format", "json", db=tmp_path / "x.duckdb")
    said = [line for line in r.stderr.splitlines() if not line.startswith("auditor: config ")]   # the file applied
    assert r.returncode in (0, 3) and "auditor.toml.example" not in "".join(said), r.stderr


@pytest.mark.parametrize("args, code, says", [
    (["epoch", "403", "--no-such-flag"], 2, "No such option"),
    (["epoch", "403", "--node", "http://127.0.0.1:9", "--timeout", "1"], 3, "127.0.0.1:9"),
    (["collect", "--gateway-log", "/nonexistent/app.log"], 2, "/nonexistent/app.log"),     # before any work
])
def test_bad_configuration_is_one_clear_line(tmp_path, args, code, says):
    r = run_cli(*args, db=tmp_path / "x.duckdb")
    assert r.returncode == code, r.stderr
    assert says in r.stderr and "Traceback" not in r.stderr
    if code == 2:
        assert r.stderr.count("\n") == 1, r.stderr          # a usage error is one line, nothing else


def test_a_locked_database_is_one_line_and_exit_3(tmp_path):
    import duckdb

    db = tmp_path / "x.duckdb"
    holder = duckdb.connect(str(db))            # another process's write lock: this one's, here
    try:
        r = run_cli("epoch", "403", "--offline", db=db, process=True)    # a process of its own
    finally:
        holder.close()
    assert r.returncode == 3 and r.stderr.count("\n") == 1, r.stderr
    assert r.stderr.startswith("auditor: error: the database") and "locked by another process" in r.stderr


# -- the JSON writer ------------------------------------------------------------------------------
_json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(),
    lambda inner: st.lists(inner, max_size=6) | st.dictionaries(st.text(max_size=5), inner, max_size=6),
    max_leaves=40)


@settings(max_examples=300, deadline=None)
@given(_json_values)
def test_json_writer_is_json_dumps_indented(value):
    """Short lists: exactly what json.dumps(indent=2) writes; the same value read back."""
    from auditor.report.view import json_default, to_json

    assert to_json(value) == json.dumps(value, default=json_default, indent=2, ensure_ascii=False)


def _strict(text: str):
    def refuse(word):
        raise ValueError(f"{word} is not JSON")
    return json.loads(text, parse_constant=refuse)


_any_floats = st.recursive(
    st.none() | st.integers() | st.floats() | st.sampled_from([math.nan, math.inf, -math.inf, "NaN", "-Infinity"]),
    lambda inner: st.lists(inner, max_size=LONG_LIST + 3) | st.dictionaries(st.text(max_size=5), inner, max_size=6),
    max_leaves=200)


@settings(max_examples=200, deadline=None)
@given(_any_floats)
def test_json_writer_never_writes_nan_or_infinity(value):
    """Issue 35, 13: Python's encoder writes NaN and Infinity, which are not JSON. The writer
    every command shares writes NaN as null and an infinity as the string "Infinity" or
    "-Infinity", in short and long lists alike; a strict reader takes the whole text."""
    from auditor.report.view import json_finite, to_json

    assert _strict(to_json(value)) == json.loads(json.dumps(json_finite(value)))


@settings(max_examples=20, deadline=None)
@given(st.lists(st.dictionaries(st.text(max_size=5), st.integers() | st.text(max_size=5) | st.none(), max_size=4),
                min_size=101, max_size=110))
def test_json_writer_long_list_one_item_per_line(items):
    from auditor.report.view import to_json

    text = to_json({"races": items})
    assert json.loads(text) == {"races": items}
    assert len(text.split("\n")) == len(items) + 4          # {, "races": [, one line each, ], }


@settings(max_examples=100, deadline=None)
@given(st.lists(st.dictionaries(st.text(max_size=5), st.integers() | st.text(max_size=5) | st.none(), max_size=4),
                max_size=130), st.integers(1, 40))
def test_json_writer_streamed_list_is_the_list(items, per_page):
    """A Stream (a list a result does not hold, made a page at a time as it is written) is
    written exactly as the list it makes, whatever the pages; one that makes fewer or more
    items than it announced fails rather than contradict its count."""
    from auditor.report.view import to_json
    from auditor.result import Stream

    def pages(items=items):
        return (items[i:i + per_page] for i in range(0, len(items) + 1, per_page))

    assert to_json({"races": Stream(len(items), pages), "n": 1}) == to_json({"races": items, "n": 1})
    for wrong in {len(items) + 1, max(len(items) - 1, 1)} - {len(items)}:
        with pytest.raises(RuntimeError, match="announced"):
            to_json({"races": Stream(wrong, pages)})


def test_formats_are_records():
    """Each format is one record (report/formats.py): --format offers every record, and each
    names its extension, what it renders (a command's CSV: its first table, without findings;
    the epoch report's CSV: its findings alone) and the writer that makes it."""
    import importlib

    from auditor import cli
    from auditor.report.formats import FORMATS

    assert [f.value for f in cli.Format] == list(FORMATS) == ["table", "json", "csv", "md", "html"]
    for f in FORMATS.values():
        module, function = f.writer.split(":")
        assert callable(getattr(importlib.import_module(module), function)) and f.extension and f.renders
    assert "first table, without its findings" in FORMATS["csv"].renders and "findings alone" in FORMATS["csv"].renders


def test_a_new_format_is_one_record(monkeypatch):
    import sys
    import types

    from auditor.report import render
    from auditor.report.formats import FORMATS, Format
    from auditor.result import Result, Table

    module = types.ModuleType("fake_format")
    module.write = lambda result, out, view: out.write("\n".join(map(str, result.tables[0].rows)))
    monkeypatch.setitem(sys.modules, "fake_format", module)
    monkeypatch.setitem(FORMATS, "lines", Format("lines", "txt", "a row a line", "fake_format:write"))
    result = Result("x", "X", {}, [Table("t", ["a"], [{"a": 1}, {"a": 2}])])
    assert render.render(result, "lines") == "{'a': 1}\n{'a': 2}"


@pytest.mark.parametrize("fmt", ["table", "md", "html"])
def test_every_text_format_ends_with_the_coverage_caveats(demo, fmt):
    """The demo's log covers 1.5 h of the epoch: hedging's figures are for that part, which
    json (coverage.unknown) and md said, and the table and html did not."""
    said = run_json("hedging", "403", "--offline", "--format", "json", db=demo)["coverage"]["unknown"]
    assert len(said) == 1 and said[0].endswith("the figures are for the part covered")
    text = run_cli("hedging", "403", "--offline", "--format", fmt, db=demo).stdout
    tail = text.rsplit("Coverage caveats", 1)[1]
    # md escapes the bracket; html keeps each time on one line in a span of its own
    shown = tail.replace("\\[", "[") if fmt == "md" else re.sub(r"</?span[^>]*>", "", tail)
    assert said[0] in shown, tail


def test_the_epoch_reports_caveats_hold_what_each_analysis_could_not_tell(demo):
    """`poc-overload 403` alone says its cPoC windows without evidence are unknown, and remints
    that the log covers part of the epoch; the epoch report listed only its sources' caveats."""
    epoch = run_cli("epoch", "403", "--offline", "--format", "md", db=demo).stdout
    tail = " ".join(epoch.rsplit("Coverage caveats", 1)[1].replace("\\", "").split())
    for key, command in (("poc_overload", "poc-overload"), ("remints", "remints"), ("hedging", "hedging")):
        said = run_json(command, "403", "--offline", "--format", "json", db=demo)["coverage"]["unknown"]
        assert said, command
        for u in said:
            assert f"{key}: {u}" in tail, (u, tail)


def test_the_hedging_hosts_table_adds_up(demo):
    """A primary's races are its wins, its losses and its races no attempt won: the table had
    no column for the last (p86j0skk: 1,383 races, 935 wins, 62 losses) and did not add up;
    json had it."""
    rows = [line.split(",") for line in run_cli("hedging", "403", "--offline", "--format", "csv",
                                                  db=demo).stdout.splitlines()]
    head = rows[0]
    assert "primary_no_winner" in head
    table = [dict(zip(head, r)) for r in rows[1:]]
    for row in table:
        assert int(row["primary_races"]) == sum(int(row[c]) for c in ("primary_wins", "primary_losses",
                                                                        "primary_no_winner")), row
    assert any(int(row["primary_no_winner"]) for row in table)


def test_participant_narrows_every_per_host_table_of_hedging(demo):
    """--participant kept the hosts table to the host but listed other hosts' pairs, priors and
    races below it; the per-decision and the totals stay the network's."""
    label = "p86j0skk"
    md = run_cli("hedging", "403", "--offline", "--participant", label, "--format", "md", db=demo).stdout
    whole = run_cli("hedging", "403", "--offline", "--format", "md", db=demo).stdout

    def rows(text: str, title: str) -> list[str]:
        section = text.split(f"## {title}", 1)[1].split("\n## ", 1)[0]
        return [line for line in section.splitlines() if line.startswith("| ") and not line.startswith("| ---")][1:]

    for title in ("Who beat each primary", "Hedged races with", "Predictability of losses"):
        mine = rows(md, title)
        assert mine and all(label in r for r in mine), (title, mine)
    assert any(label not in r for r in rows(whole, "Who beat each primary"))      # the network has others
    assert rows(md, "Per decision reason") == rows(whole, "Per decision reason")


def test_coverage_groups_what_it_loaded(demo):
    """The coverage table's loaded counts are quantities: `lines 35,736`, not `lines 35736`."""
    loaded = run_json("epoch", "403", "--offline", "--format", "json", db=demo)["coverage"]["gateway_log"]["loaded"]
    assert loaded["lines"] >= 1000
    md = run_cli("epoch", "403", "--offline", "--format", "md", db=demo).stdout
    row = next(line for line in md.splitlines() if line.startswith("| gateway_log |"))
    assert f"lines {loaded['lines']:,}, events {loaded['events']:,}" in row, row


def test_export_demand_of_one_epoch_and_an_identity_the_chain_has_no_record_of(demo, tmp_path):
    """`--epochs 403` is 403..403 (it was a usage error: expected A..B). The demo's escrows were
    asked of the chain and are not on it: the error says so, where it said to collect with
    --node to probe them, which had been done."""
    r = run_cli("export", "demand", "--epochs", "403", "--out", str(tmp_path / "a.parquet"), db=demo)
    assert r.returncode == 2 and not (tmp_path / "a.parquet").exists()
    assert "the chain has no record of the 2 escrow(s) the logs name (asked: not found)" in r.stderr, r.stderr
    assert "--node" not in r.stderr
    one = run_cli("export", "demand", "--epochs", "403", "--name", "gw", "--out", str(tmp_path / "one.parquet"), db=demo)
    span = run_cli("export", "demand", "--epochs", "403..403", "--name", "gw", "--out", str(tmp_path / "span.parquet"),
                   db=demo)
    assert one.returncode == span.returncode == 0, one.stderr + span.stderr
    import pyarrow.parquet as pq

    assert pq.read_table(tmp_path / "one.parquet").equals(pq.read_table(tmp_path / "span.parquet"))


def test_misstest_with_participant_says_its_verdict_is_of_that_participant(demo):
    """`misstest --participant` printed '1 zeroed_by_miss_test' as 'verdicts' beside the
    network's T / M, where the epoch has 2 zeroed: the filtered count read as the network's."""
    victim = STORY["victim"]
    text = run_cli("misstest", "403", "--participant", victim, "--offline", "--format", "md", db=demo).stdout
    assert f"verdict of {victim} (--participant)" in text.replace("\\", "")
    whole = run_cli("misstest", "403", "--offline", "--format", "md", db=demo).stdout
    assert "**verdicts**" in whole and "(--participant)" not in whole


def test_coverage_says_how_many_probed_escrows_the_chain_holds(demo):
    """The demo's escrows were probed and the chain answered 404 for each: coverage said
    'items 2' under loaded, as if their records were there."""
    loaded = run_json("epoch", "403", "--offline", "--format", "json", db=demo)["coverage"]["chain_escrows"]["loaded"]
    stored = {r[0]: r[1] for r in q(demo, "SELECT found, count(*) FROM chain_escrows GROUP BY found")}
    assert loaded["found"] + loaded["not_found"] == loaded["items"] > 0
    assert loaded["found"] == 0 and stored.get(True) is None          # none of them is on chain
