"""A host operator's path (issue 33): a mistyped address, a missing log file, a bare
``auditor`` and an exit 3 each say what is wrong, in one line, before any work."""

from __future__ import annotations

import pytest

from conftest import FIXTURES, run_cli
from test_reports import DEMO, STORY, demo  # noqa: F401  (demo: the store of every bundled source)

VICTIM = STORY["victim"]


@pytest.mark.parametrize("command", ["epoch", "misstest", "poc-overload", "hedging"])
def test_a_mistyped_full_address_is_a_usage_error_naming_the_closest(demo, command):
    typo = VICTIM[:-1] + ("q" if VICTIM[-1] != "q" else "p")
    r = run_cli(command, "403", "--offline", "--participant", typo, db=demo)
    assert r.returncode == 2, r.stdout[-500:]
    (line,) = r.stderr.strip().splitlines()[-1:]
    assert f"--participant {typo} is no participant of epoch 403" in line
    assert f"the closest stored address is {VICTIM}" in line
    assert r.stdout == ""


def test_an_address_nothing_near_is_said_so_and_a_right_one_runs(demo):
    r = run_cli("misstest", "403", "--offline", "--participant", "gonka1" + "a" * 38, db=demo)
    assert r.returncode == 2 and "no stored address is near it" in r.stderr
    r = run_cli("misstest", "403", "--offline", "--participant", VICTIM, "--format", "json", db=demo)
    assert r.returncode == 0, r.stderr


def test_a_gateway_log_that_is_not_there_is_exit_2_before_any_work(tmp_path):
    db = tmp_path / "a.duckdb"
    r = run_cli("epoch", "403", "--replay", str(FIXTURES / "chain" / "epoch-403"),
                "--gateway-log", str(tmp_path / "gateway.log"), db=db)
    assert r.returncode == 2, r.stderr
    assert r.stderr.strip().splitlines() == [f"auditor: error: --gateway-log {tmp_path / 'gateway.log'}: "
                                             "no such file (nor a glob, nor - for stdin)"]
    assert r.stdout == "" and not db.exists()        # nothing collected, no store made


def test_stdin_and_a_glob_are_still_logs(tmp_path):
    import gzip

    log = gzip.decompress((FIXTURES / "demo-epoch-403" / "gateway.log.gz").read_bytes())
    r = run_cli("collect", "--gateway-log", "-", stdin=log, db=tmp_path / "a.duckdb")
    assert r.returncode == 0 and b"loaded log_events 35736" in r.stderr, r.stderr
    r = run_cli("collect", "--gateway-log", str(tmp_path / "none-*.log"), db=tmp_path / "a.duckdb")
    assert r.returncode == 3 and "no file matches" in r.stderr


def test_a_bare_auditor_prints_its_help_as_lines():
    r = run_cli()
    assert r.returncode == 2
    lines = r.stderr.splitlines()
    assert lines[0] == "Usage: auditor [OPTIONS] COMMAND [ARGS]..." and "\\n" not in r.stderr
    assert any(line.split()[:1] == ["misstest"] for line in lines) and len(lines) > 20


def test_exit_3_says_why_in_words(demo):
    r = run_cli("targets", "--epochs", "400..403", "--offline", "--format", "json", db=demo)
    assert r.returncode == 3
    lines = [line for line in r.stderr.splitlines() if "incomplete" in line]
    assert lines == ["auditor: incomplete: Preserved-weight targets from PoC demand: epochs not in the store: "
                     "400..402 (their demand is not counted) (collect it with --node URL, without --offline)"]


def test_every_incomplete_result_gives_a_line_for_each_missing_item():
    from auditor.report.collect_report import incomplete_lines
    from auditor.result import Result

    logs = Result("a", "A", {}, coverage={"missing": ["cpoc:0: logs cover only 00:00 … 02:00"]}, complete=False)
    fine = Result("b", "B", {}, coverage={"missing": ["not needed"]})
    silent = Result("c", "C", {}, complete=False)
    report = Result("epoch", "Epoch 433", {}, parts=[logs, fine, silent], complete=False)
    assert incomplete_lines(report) == [
        "auditor: incomplete: A: cpoc:0: logs cover only 00:00 … 02:00 (collect it with --gateway-log PATH)"]
    assert incomplete_lines(silent)[0].startswith("auditor: incomplete: C: some data it needs is not stored")
    said = Result("d", "D", {}, coverage={"missing": ["no metrics scraped (collect with --metrics URL)"]},
                  complete=False)
    assert incomplete_lines(said) == ["auditor: incomplete: D: no metrics scraped (collect with --metrics URL)"]


def test_collect_says_the_time_range_the_log_covers_and_hedging_names_it(tmp_path):
    db = tmp_path / "a.duckdb"
    r = run_cli("collect", "--gateway-log", str(FIXTURES / "demo-epoch-403" / "gateway.log.gz"), db=db)
    covers = "the stored gateway logs cover 2026-09-22T23:30:04.000000Z to 2026-09-23T01:02:28.000000Z"
    assert r.returncode == 0 and f"gateway_log: note: {covers}" in r.stderr, r.stderr
    r = run_cli("hedging", "--offline", db=db)
    assert r.returncode == 2
    assert r.stderr.strip() == f"auditor: error: hedging: give an epoch N or --since/--until ({covers})"


def test_progress_is_in_the_users_words(tmp_path):
    """Off a terminal: timestamped lines, in words (what was read, how much), no table names."""
    import re

    r = run_cli("epoch", "403", *DEMO, "--format", "json", db=tmp_path / "a.duckdb")
    assert r.returncode == 0, r.stderr
    steps = [line.split(" auditor: ", 1)[1] for line in r.stderr.splitlines()
             if re.match(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ auditor: ", line)]
    assert "chain epoch 403: 27 participants, 3 models, 1 cPoC" in steps
    # the file as given (two app.log of two folders were both "reading app.log")
    assert any(s.startswith("reading ") and s.endswith("demo-epoch-403/gateway.log.gz: 35,736 lines") for s in steps), steps
    assert "working out the logs' lines per host (kept until more log is collected): done" in steps
    names = re.compile(r"\b(log_\w+|chain_\w+|hedge_\w+|derived_\w+|acct_\w+|devshard_escrow|line tables)\b")
    assert not [s for s in steps if names.search(s)], steps


def test_the_html_opens_with_a_summary_and_wraps_prose_at_30_characters_or_more(demo):
    import json
    import re

    html = run_cli("epoch", "403", "--offline", "--format", "html", db=demo).stdout
    findings = json.loads(run_cli("epoch", "403", "--offline", "--format", "json", db=demo).stdout)["findings"]
    nav = html.split('<nav class="summary">', 1)[1].split("</nav>", 1)[0]
    assert html.index('<nav class="summary">') < html.index('<h2 id="findings">')        # at the top
    for sev in ("error", "warn", "info"):
        assert f">{sum(f['severity'] == sev for f in findings)} {sev}<" in nav
    links = re.findall(r'href="#([^"]+)"', nav)
    assert links[0] == "findings" and len(links) > 5 and all(f'id="{x}"' in html for x in links)
    assert "td.prose{min-width:30ch" in html
    reasons = html.split("<h2>Miss test</h2>", 1)[1].split("</table>", 1)[0]
    assert reasons.count('<td class="prose">') == 27          # every cell of the reason column, short or long
    assert '<div class="scroll wide">' in html                # a table of many columns may use the window


@pytest.mark.parametrize("value", ["", "  "])
def test_an_empty_participant_is_a_usage_error(demo, value):
    """`--participant ""` ran the whole network's report, exit 0, as if no filter was given."""
    r = run_cli("epoch", "403", "--offline", "--participant", value, db=demo)
    assert r.returncode == 2 and r.stdout == ""
    assert r.stderr.strip().splitlines()[-1] == \
        "auditor: error: --participant is empty: give an address, or the label the tables print"


def test_a_mistyped_address_of_mine_is_a_note_naming_the_closest(demo):
    """One wrong character in --mine turned a cron alarm off with a note that did not say
    which stored address was meant."""
    typo = VICTIM[:-1] + ("q" if VICTIM[-1] != "q" else "p")
    r = run_cli("misstest", "403", "--offline", "--mine", typo, "--format", "json", db=demo)
    assert r.returncode == 0, r.stderr
    assert f"note: --mine {typo} is no participant of epoch 403" in r.stderr
    assert f"; the closest stored address is {VICTIM}" in r.stderr
