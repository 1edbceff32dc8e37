"""The shape every command shares, through the CLI: global options before or after the
command, --fail-on and the exit-code precedence, --output for every format, usage errors
as one plain line, an Example: block in every command's help."""

from __future__ import annotations

import json
import shutil

import pytest

from conftest import FIXTURES, ROOT, run_cli

REC = FIXTURES / "chain" / "epoch-403"
STORY = json.loads((FIXTURES / "chain" / "epoch-403.story.json").read_text())


def _commands() -> list[str]:
    """Every leaf command of the CLI, as typed ("report daily")."""
    import typer

    from auditor.cli import app

    def walk(cmd, prefix):
        if hasattr(cmd, "commands"):                # a group
            for name, sub in cmd.commands.items():
                yield from walk(sub, [*prefix, name])
        else:
            yield " ".join(prefix)
    return sorted(walk(typer.main.get_command(app), []))


COMMANDS = _commands()


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    db = tmp_path_factory.mktemp("frame") / "auditor.duckdb"
    r = run_cli("collect", "--epoch", "403", "--replay", str(REC), db=db)
    assert r.returncode == 0, r.stderr
    return db


def _cli(*args, db):
    """Run with --db placed by the caller (run_cli's db= puts it first)."""
    return run_cli(*args, "--db", str(db))


def test_global_options_before_or_after_the_command(store):
    before = run_cli("--db", str(store), "--quiet", "misstest", "403", "--offline", "--format", "json")
    after = run_cli("misstest", "403", "--offline", "--format", "json", "--db", str(store), "-q")
    eq_form = run_cli("misstest", "403", "--offline", "--format", "json", f"--db={store}")
    assert before.returncode == after.returncode == eq_form.returncode == 0, after.stderr
    assert json.loads(before.stdout) == json.loads(after.stdout) == json.loads(eq_form.stdout)


def test_debug_after_the_command_shows_the_traceback(tmp_path):
    r = run_cli("sql", "SELECT 1", "--db", str(tmp_path / "nope.duckdb"), "--debug")
    assert r.returncode == 3 and "Traceback" in r.stderr
    r = run_cli("sql", "SELECT 1", "--db", str(tmp_path / "nope.duckdb"))
    assert r.returncode == 3 and "Traceback" not in r.stderr and r.stderr.count("\n") == 1


def test_fail_on_thresholds(store):
    # the bundled epoch zeroes two participants by the miss test: error findings
    assert _cli("epoch", "403", "--offline", "--format", "json", db=store).returncode == 0
    for cmd in ("epoch", "misstest"):
        for level in ("info", "warn", "error"):
            r = _cli(cmd, "403", "--offline", "--format", "json", "--fail-on", level, db=store)
            assert r.returncode == 1, (cmd, level, r.stderr)
    # one participant that passed: no finding about it, so nothing reaches the threshold
    r = _cli("misstest", "403", "--offline", "-p", STORY["boundary_pass"], "--fail-on", "info", "--format", "json",
             db=store)
    assert r.returncode == 0 and json.loads(r.stdout)["findings"] == []
    r = _cli("misstest", "403", "--offline", "-p", STORY["victim"], "--fail-on", "error", "--format", "json",
             db=store)
    assert r.returncode == 1
    (f,) = json.loads(r.stdout)["findings"]
    assert f["code"] == "reward_zeroed_miss_test" and f["subject"] == {"kind": "participant", "id": STORY["victim"]}


def test_incomplete_data_outranks_findings(tmp_path):
    rec = tmp_path / "rec"
    shutil.copytree(REC, rec)
    for f in rec.glob("*.json"):  # one block time the node cannot serve: the collection is incomplete
        if json.loads(f.read_text())["query"] == "height=6218778":
            f.unlink()
    db = tmp_path / "x.duckdb"
    r = _cli("epoch", "403", "--replay", str(rec), "--format", "json", "--fail-on", "error", db=db)
    assert r.returncode == 3, r.stderr
    report = json.loads(r.stdout)
    assert any(f["severity"] == "error" for f in report["findings"])  # findings there, yet 3 wins


def test_epoch_findings_are_ranked_and_keys_kept(store):
    report = json.loads(_cli("epoch", "403", "--offline", "--format", "json", db=store).stdout)
    for key in ("epoch", "settled", "complete", "heights", "models", "cpoc_events", "preserved_nodes",
                "coverage", "miss_test", "findings"):
        assert key in report
    ranks = [("info", "warn", "error").index(f["severity"]) for f in report["findings"]]
    assert ranks == sorted(ranks, reverse=True)
    zeroed = {f["subject"]["id"] for f in report["findings"] if f["code"] == "reward_zeroed_miss_test"}
    verdicts = {p["participant"] for p in report["miss_test"]["participants"]
                if p["verdict"] == "zeroed_by_miss_test" and p["rewarded_coins"] == 0}
    assert zeroed == verdicts and STORY["victim"] in zeroed


@pytest.mark.parametrize("fmt", ["table", "json", "csv", "md"])
def test_output_file_for_every_format(store, tmp_path, fmt):
    out = tmp_path / "reports" / f"epoch.{fmt}"
    r = _cli("epoch", "403", "--offline", "--format", fmt, "--output", str(out), db=store)
    assert r.returncode == 0, r.stderr
    assert r.stdout == ""
    text = out.read_text(encoding="utf-8")
    # the table view shortens addresses as the gateway's logs do; the others keep them whole
    assert (f"gonka1…{STORY['victim'][-8:]}" if fmt == "table" else STORY["victim"]) in text
    assert [p.name for p in out.parent.iterdir()] == [out.name]  # no temp file left behind
    if fmt == "json":
        assert json.loads(text)["epoch"] == 403
    # the same report as on stdout (the table format is 250 columns wide off a terminal);
    # md and html also name the command that made them, which differs by the --output
    printed = _cli("epoch", "403", "--offline", "--format", fmt, db=store).stdout
    assert printed.split("Made by")[0] == text.split("Made by")[0]


def test_output_into_a_directory_is_a_usage_error(store, tmp_path):
    r = _cli("misstest", "403", "--offline", "--output", str(tmp_path), db=store)
    assert r.returncode == 2 and "is a directory" in r.stderr


@pytest.mark.parametrize("args", [
    ["epoch", "403", "--no-such-flag"],
    ["epoch", "403", "--fail-on", "fatal"],
    ["misstest", "x"],
    ["nosuchcommand"],
])
def test_usage_errors_are_one_plain_line(args, tmp_path):
    r = _cli(*args, db=tmp_path / "u.duckdb")
    assert r.returncode == 2
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("auditor: error: ")
    assert not any(ch in r.stderr for ch in "╭│╰") and "Traceback" not in r.stderr


@pytest.mark.parametrize("command", COMMANDS)
def test_every_command_has_an_example(command):
    r = run_cli(*command.split(), "--help")
    assert r.returncode == 0 and "Example:" in r.stdout and f"auditor {command}" in r.stdout


def test_collect_refuses_offline(tmp_path):
    r = _cli("collect", "--offline", db=tmp_path / "o.duckdb")
    assert r.returncode == 2 and "--offline" in r.stderr


def test_config_is_read_by_its_option_whatever_the_entry_point(tmp_path):
    """--config is the option's own doing (an eager callback), not a parse of sys.argv in
    main(): the app honours it when called in process too."""
    from typer.testing import CliRunner

    from auditor.cli import app
    from auditor.store import Store

    with Store(tmp_path / "x.duckdb"):
        pass
    cfg = tmp_path / "auditor.toml"
    cfg.write_text(f'db = "{tmp_path / "x.duckdb"}"\nformat = "json"\n')
    r = CliRunner().invoke(app, ["--config", str(cfg), "sql", "SELECT 1 AS one"])
    assert r.exit_code == 0, r.output
    assert json.loads(r.stdout)["rows"] == [{"one": 1}]


@pytest.mark.parametrize("args", [("epoch", "403"), ("misstest", "403"), ("poc-overload", "403"), ("targets", "403"),
                                  ("sql", "SELECT 1 AS one")], ids=lambda a: a[0])
def test_every_command_json_carries_its_schema_version(store, args):
    """The JSON contract is versioned (CHANGELOG.md): its first key, whatever the command."""
    from auditor.result import SCHEMA_VERSION

    r = _cli(*args, *(("--offline",) if args[0] != "sql" else ()), "--format", "json", db=store)
    out = json.loads(r.stdout)
    assert r.returncode in (0, 1, 3) and next(iter(out)) == "schema_version" and out["schema_version"] == SCHEMA_VERSION


def test_the_changelog_records_the_schema_version():
    from auditor.result import SCHEMA_VERSION

    text = (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")
    assert f"### schema_version {SCHEMA_VERSION}\n" in text and "## Unreleased" in text


# -- durations are bounded where they are parsed (issue 35: 20) --------------------------------------
@pytest.mark.parametrize("args, says", [
    (["collect", "-e", "403", "--replay", str(REC), "--timeout", "1e10"],
     "'--timeout': 10000000000.0 is not in the range 0.1<=x<=31622400"),
    (["poc-overload", "403", "--offline", "--lookback", "3e9"],
     "'--lookback': 3000000000.0 is not in the range 1<=x<=527040"),
    (["remints", "403", "--offline", "--peak-window", "99999999999"],
     "'--peak-window': 99999999999 is not in the range 1<=x<=527040"),
    (["watch", "--replay", str(FIXTURES / "watch" / "loop"), "--interval", "99999999999h"],
     "--interval '99999999999h': at most 8,784h (a year)"),
], ids=["timeout", "lookback", "peak-window", "interval"])
def test_a_duration_past_a_year_is_a_usage_error(tmp_path, args, says):
    """--timeout 1e10, --lookback 3e9 and --interval 99999999999h ended in "internal error:
    OverflowError" (exit 3), once the clock's arithmetic met them; every duration option is
    bounded at a year (times.MAX_SECONDS) where it is parsed: one line, exit 2, nothing run."""
    db = tmp_path / "a.duckdb"
    assert run_cli("collect", "-e", "403", "--replay", str(REC), "--gateway-log",
                   str(FIXTURES / "demo-epoch-403" / "gateway.log.gz"), db=db).returncode == 0
    r = run_cli(*args, db=db, timeout=60)
    lines = r.stderr.strip().splitlines()
    assert r.returncode == 2 and len(lines) == 1 and "Traceback" not in r.stderr, r.stderr
    assert says in lines[0], lines[0]
