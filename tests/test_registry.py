"""The registry of analyses (auditor/analyses/registry.py): the README's tables are what it
generates, every CLI command is documented, every finding code an analysis emits is
declared, a renamed data key breaks a chart or a metric loudly, a new kind of subject needs
no edit outside the registry, and an analysis is called with the run only when it takes one."""

from __future__ import annotations

import re
import subprocess
import sys
import types
from pathlib import Path

import pytest

from conftest import ROOT

from auditor.analyses import registry
from auditor.analyses.registry import Analysis, Code


def test_readme_tables_are_the_generated_ones():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert readme.count("<!-- registry:") == 4          # commands, codes, codes hedging, metrics
    assert registry.generate(readme) == readme, "run: python -m auditor.analyses.registry --readme"


def test_generate_rewrites_a_stale_table():
    stale = "x\n<!-- registry:codes hedging -->\n| old |\n<!-- /registry -->\ny\n"
    new = registry.generate(stale)
    assert "| old |" not in new and "`suppressed_loser_waste` | warn | participant |" in new
    assert new.startswith("x\n") and new.endswith("<!-- /registry -->\ny\n")


def test_check_mode_says_when_the_readme_is_stale(tmp_path):
    path = tmp_path / "README.md"
    path.write_text("<!-- registry:metrics -->\n<!-- /registry -->\n")
    assert registry.main(["--check", str(path)]) == 1
    assert registry.main(["--readme", str(path)]) == 0 and registry.main(["--check", str(path)]) == 0
    assert "`auditor_remint_deactivations` | `epoch, classification` |" in path.read_text()


def _cli_commands() -> list[str]:
    """Every leaf command of the CLI, walking click's commands (as sqlite-utils' tests/test_docs.py does)."""
    from test_cli_frame import COMMANDS

    return COMMANDS


@pytest.mark.parametrize("command", _cli_commands())
def test_every_command_is_documented(command):
    table = "\n".join(registry.commands_table())
    assert re.search(rf"^\| `auditor {re.escape(command)}( |`)", table, re.M), command
    assert table in (ROOT / "README.md").read_text(encoding="utf-8")


def _click_command(name: str):
    import typer

    from auditor.cli import app

    cmd = typer.main.get_command(app)
    for word in name.split():
        cmd = cmd.commands[word]
    return cmd


@pytest.mark.parametrize("command", _cli_commands())
def test_every_documented_usage_is_the_real_parameters(command):
    """The README's usage of each command names exactly its flags (the source and output
    flags as ``[source flags] [output flags]``), and its help's examples use only real flags:
    the hand-written usages missed --lookback, --cap-span, --rotation-target, --peak-window."""
    from auditor import cli

    table = "\n".join(registry.commands_table())
    usage = re.search(rf"^\| `(auditor {re.escape(command)}(?: [^`]*)?)` \|", table, re.M).group(1)
    documented = set(re.findall(r"(?<![\w-])--[a-z0-9-]+", usage))
    cmd = _click_command(command)
    long = {p.name: max(o for o in p.opts if o.startswith("--")) for p in cmd.params
            if p.param_type_name == "option" and any(o.startswith("--") for o in p.opts)}
    real = set(long.values()) - {"--help"}
    groups = {"[source flags]": cli.SOURCES, "[output flags]": cli.OUTPUT}
    for words, group in groups.items():
        flags = {long[p.name] for p in group.params if p.name in long}
        if words in usage:
            documented |= flags & real
        assert not (flags & real) - documented, f"{command}: {usage!r} leaves out {words}"
    assert documented == real, f"{command}: the README's usage {usage!r} differs from its flags {sorted(real)}"
    lines = re.split(r"\n\s*(?=auditor )", (cmd.help or "").split("Example:")[-1])      # an example and its continuations
    own = "\n".join(line for line in lines if line.startswith(f"auditor {command} "))
    examples = set(re.findall(r"(?<![\w-])--[a-z0-9-]+", own))
    assert examples <= real | {"--db", "--quiet", "--debug", "--config"}, f"{command}'s examples use {examples - real}"


def test_every_registry_command_is_a_cli_command():
    from auditor import cli

    assert {a.command.name for a in registry.commands()} <= set(_cli_commands())
    assert not hasattr(cli, "FLAGS")        # an analysis's flags are its Options class's, nowhere else


def finding_codes(source: str, name: str) -> tuple[set[str], list[str]]:
    """The codes the ``Finding(...)`` calls of one module's ``source`` make, and what is wrong
    with any of them, a line each: a code no record declares, or one that is neither a text
    nor a module constant (a copy of a finding made elsewhere, ``Finding(f.code, ...)``, is fine)."""
    import ast

    tree = ast.parse(source)
    constants = {t.id: node.value.value for node in tree.body if isinstance(node, ast.Assign)
                 and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str)
                 for t in node.targets if isinstance(t, ast.Name)}
    made, problems = set(), []
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and getattr(node.func, "id", None) == "Finding"):
            continue
        arg = node.args[0] if node.args else next((k.value for k in node.keywords if k.arg == "code"), None)
        if isinstance(arg, ast.Attribute):
            continue
        code = arg.value if isinstance(arg, ast.Constant) else constants.get(getattr(arg, "id", None))
        if not isinstance(code, str):
            problems.append(f"{name}:{node.lineno}: a Finding whose code is neither a text nor a module constant")
        elif registry.undeclared(code):
            problems.append(f"{name}:{node.lineno}: {registry.undeclared(code)}")
        else:
            made.add(code)
    return made, problems


def test_every_finding_code_is_declared_in_the_registry_and_every_declared_code_made():
    made, problems = set(), []
    for path in sorted((ROOT / "auditor" / "analyses").glob("*.py")):
        codes, wrong = finding_codes(path.read_text(encoding="utf-8"), path.name)
        made |= codes
        problems += wrong
    problems += [f"{c}: declared in auditor/analyses/registry.py, and no analysis makes a Finding with it"
                 for c in sorted(set(registry.codes()) - made)]
    assert not problems, "\n".join(problems)


def test_the_code_check_reads_constants_and_says_what_is_wrong():
    """The old check was a regex over ``Finding("literal"``: ``Finding(CODE, ...)`` failed it
    with a bare set difference."""
    made, problems = finding_codes('CODE = "mint_peak"\nOTHER = "mint_peek"\n'
                                   'def f(x):\n    return [Finding(CODE, "warn", {}, ""), Finding(OTHER, "warn", {}, ""),\n'
                                   '            Finding(x.code, "warn", {}, ""), Finding(code_of(x), "info", {}, "")]\n',
                                   "slot_balance.py")
    assert made == {"mint_peak"}
    assert problems == ["slot_balance.py:4: finding code 'mint_peek' is not declared: add Code('mint_peek', "
                        "severities, subject kind, meaning, action) to the codes of its analysis's record in "
                        "auditor/analyses/registry.py",
                        "slot_balance.py:5: a Finding whose code is neither a text nor a module constant"]


def test_records_are_consistent():
    keys = [a.key for a in registry.ANALYSES]
    assert len(keys) == len(set(keys))
    for a in registry.ANALYSES:
        assert set(a.sources) <= set(registry.SOURCES), f"{a.key} reads an unknown source {a.sources}"
        module = a.load()
        assert callable(getattr(module, a.function))
        assert getattr(module, "KEY", a.key) == a.key or a.function != "run"
        assert not a.charts or callable(module.charts)
        assert not a.metrics or callable(module.metrics)
        assert a.options_class()        # the named Options subclass exists
        for c in a.codes:
            assert set(c.severity) <= {"info", "warn", "error"} and c.subject and c.meaning


def test_the_header_says_what_a_missing_source_leaves_unknown_by_the_registry():
    """``no accounting: ... unknown`` lists every analysis whose record reads the accounting,
    poc_overload too, whose own result names only chain and gateway_log (it read its
    accounting rows, and found none)."""
    from auditor.analyses import epoch_report
    from auditor.result import Result

    parts = {a.key: Result(a.key, a.title, [] if a.key in ("heights", "models", "cpoc_events") else {},
                           coverage={"sources": ["chain", "gateway_log"] if a.key == "poc_overload" else ["chain"]})
             for a in registry.ANALYSES}
    parts["coverage"] = Result("coverage", "Coverage", {"chain": {"collected": True},
                                                        "accounting": {"collected": False},
                                                        "host": {"collected": False}})
    lines = dict(epoch_report._header(parts, True, True))
    assert lines["no accounting"] == "poc_overload, preserved_targets, remints: unknown, not zero"
    assert lines["no host"] == "not collected; nothing in this report relies on it alone"


def test_options_keep_the_shared_fields():
    """The epoch report's options reach every analysis with participant, since and until
    (targets used to drop since/until)."""
    from datetime import datetime, timezone

    from auditor.analyses.frame import Options

    base = Options(participant="gonka1x", since=datetime(2026, 1, 1, tzinfo=timezone.utc))
    for a in registry.ANALYSES:
        own = a.options_from(base)
        assert isinstance(own, a.options_class())
        assert (own.participant, own.since, own.until) == (base.participant, base.since, base.until)
    from auditor.analyses import targets

    assert targets._opts(base).since == base.since          # called directly, too


def test_a_renamed_data_key_breaks_the_chart_and_the_metric_loudly():
    from auditor.report import figures, promfile
    from auditor.result import Result

    good = {"participants": [{"participant": "gonka1abcdefgh", "total": 10, "missed": 2, "critical_misses": 3,
                              "passed": True, "verdict": "passed", "rewarded_coins": 5}]}
    (chart,) = figures.charts(Result("miss_test", "Miss test", good))
    assert [s["points"] for s in chart.series] == [[], [["abcdefgh", 2 / 3]]]     # failed, within: missed/allowed
    text = promfile.registry(Result("epoch", "e", {}, parts=[Result("miss_test", "Miss test", good)]), 1)
    assert [s.value for m in text.collect() if m.name == "auditor_miss_test_missed_requests" for s in m.samples] == [2]
    renamed = {"participant_rows": good["participants"]}
    with pytest.raises(KeyError):
        figures.charts(Result("miss_test", "Miss test", renamed))
    with pytest.raises(KeyError):
        promfile.registry(Result("epoch", "e", {}, parts=[Result("miss_test", "Miss test", renamed)]), 1)


def test_a_new_subject_kind_comes_from_the_registry(monkeypatch):
    from auditor.result import Finding

    with pytest.raises(ValueError):
        Finding("gateway_slow", "info", {"kind": "gateway", "id": "gw1"}, "slow")
    monkeypatch.setattr(registry, "ANALYSES", [*registry.ANALYSES, Analysis(
        "gateways", "Gateways", "nowhere", codes=(Code("gateway_slow", ("info",), "gateway", "slow"),))])
    assert Finding("gateway_slow", "info", {"kind": "gateway", "id": "gw1"}, "slow").subject["kind"] == "gateway"


def test_the_run_is_passed_only_to_an_analysis_that_takes_it(monkeypatch):
    from auditor.analyses.context import Run

    seen = {}
    module = types.ModuleType("fake_analyses")
    module.old = lambda store, epoch, options: seen.setdefault("old", options)
    module.new = lambda store, epoch, options, ctx=None: seen.setdefault("new", ctx)
    monkeypatch.setitem(sys.modules, "fake_analyses", module)
    run = Run(None, 1)
    Analysis("old", "Old", "fake_analyses", function="old").run(None, 1, None, ctx=run)
    Analysis("new", "New", "fake_analyses", function="new").run(None, 1, None, ctx=run)
    assert seen["new"] is run and seen["old"] is not None


def test_help_imports_no_analysis():
    """The CLI reads the registry at start-up; the analyses (and DuckDB) load only when one runs.
    analyses/frame.py, the contract they share (no analysis; it imports nothing but errors),
    declares --mine, which `report daily` takes too (issue 33)."""
    code = ("import sys, auditor.cli, typer; typer.main.get_command(auditor.cli.app); "
            "print(sorted(m for m in sys.modules if m == 'duckdb' or m.startswith('auditor.analyses.')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "['auditor.analyses.frame', 'auditor.analyses.registry']"


# -- the README's worked example, run ------------------------------------------------------------
def _worked_example() -> tuple[str, str, str]:
    """The SQL, the module and the registry line of the README's "Adding an analysis"."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme[readme.index("## Adding an analysis"):]
    section = section[:section.index("\n## ")]
    blocks = re.findall(r"```(\w+)\n(.*?)```", section, re.S)
    assert [lang for lang, _ in blocks] == ["sql", "python", "python"]
    (_, sql), (_, module), (_, line) = blocks
    return sql, module, line


def test_the_worked_example_adds_an_analysis_with_one_module_its_sql_and_one_record(tmp_path):
    """The README's worked example, an analysis with a command, one option, a finding and a
    metric, added to a copy of the tool as its module, its SQL and one registry record:
    its command and option in --help, the option reaching the analysis, auditor epoch N in
    every format, the textfile and the README's tables."""
    import json
    import shutil

    from conftest import FIXTURES, run_cli

    sql, module, line = _worked_example()
    dotted = re.search(r'Analysis\("(\w+)", "([^"]+)", "([\w.]+)"', line)
    assert dotted, line
    key, title, module_path = dotted.groups()
    query = re.search(r'store\.query\("(\w+)"', module).group(1)
    code = re.search(r'Code\("(\w+)"', line).group(1)
    metric = re.search(r'Metric\("(\w+)"', line).group(1)

    src = tmp_path / "src"                                 # a copy of the tool, and the example added to it
    shutil.copytree(ROOT / "auditor", src / "auditor", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(ROOT / "queries", src / "queries")
    shutil.copy(ROOT / "README.md", src / "README.md")
    (src / "queries" / f"{query}.sql").write_text(sql)
    (src / Path(*module_path.split("."))).with_suffix(".py").write_text(module)
    reg = src / "auditor" / "analyses" / "registry.py"
    marker = "    # a new analysis: one record here, above this line"
    assert reg.read_text().count(marker) == 1
    reg.write_text(reg.read_text().replace(marker, line.rstrip("\n") + "\n" + marker))
    env = {"PYTHONPATH": str(src), "PYTHONSAFEPATH": "1"}      # not the working directory's auditor

    def cli(*args):
        r = run_cli(*args, db=tmp_path / "auditor.duckdb", env=env)
        assert r.returncode in (0, 1), r.stderr
        return r.stdout

    where = subprocess.run([sys.executable, "-c", "import auditor; print(auditor.__file__)"], env={**env},
                           capture_output=True, text=True, check=True).stdout
    assert where.startswith(str(src)), where            # the copy runs, not the tree under test
    cli("collect", "--epoch", "403", "--replay", str(FIXTURES / "chain" / "epoch-403"))

    report = json.loads(cli("epoch", "403", "--offline", "--format", "json"))
    rows = report[key]["models"]
    assert len(rows) == 3 and all(0 < r["share"] <= 1 for r in rows)
    flagged = [f for f in report["findings"] if f["code"] == code]
    assert flagged and {f["subject"]["kind"] for f in flagged} == {"ml_node"}

    command = re.search(r'Command\("([\w-]+)"', line).group(1)       # its command, and its option
    flag, metavar = re.search(r'option\([^,]+, "(--[\w-]+)",.*?metavar="(\w+)"', module, re.S).groups()
    assert re.search(rf"^\s+{flag} {metavar}\s", cli(command, "--help"), re.M)
    alone = json.loads(cli(command, "403", "--offline", "--format", "json"))
    assert alone["models"] == rows and [f["code"] for f in alone["findings"]] == [code] * len(flagged)
    everyone = json.loads(cli(command, "403", "--offline", "--format", "json", flag, "0"))
    assert len(everyone["findings"]) == len(rows) > len(flagged)         # the option reaches the analysis
    assert cli("epoch", "403", "--offline", "--format", "csv").count(code) == len(flagged)
    for fmt in ("table", "md", "html"):
        out = cli("epoch", "403", "--offline", "--format", fmt, "--wide")
        assert title in out and code in out, fmt

    r = subprocess.run([sys.executable, "-m", "auditor.analyses.registry", "--readme"], env={**env}, check=True)
    readme = (src / "README.md").read_text()
    assert f"| `{code}` | info | ml_node |" in readme and f"| `{metric}` | `epoch, model` |" in readme
    # the base Options' flags (--participant, --mine: issue 33), then its own
    assert f"| `auditor {command} N [--participant ADDR] [--mine ADDR]... [{flag} {metavar}] [source flags] [output flags]` |" \
        in readme
    assert readme != (ROOT / "README.md").read_text()

    prom = tmp_path / "auditor.prom"
    cli("report", "daily", "--out", str(tmp_path / "reports"), "--epoch", "403", "--offline",
        "--prom-textfile", str(prom))
    samples = [s for s in prom.read_text().splitlines() if s.startswith(metric + "{")]
    assert len(samples) == len(rows) and f'code="{code}"' in prom.read_text()


def test_a_metric_name_means_one_thing():
    """Two records may export one family (report daily's and watch's textfiles both carry
    auditor_miss_test_requests) only by declaring the same Metric: two declarations of one name
    gave the daily textfile the running epoch's HELP line."""
    from auditor.analyses import registry

    by_name: dict = {}
    for a in [*registry.ANALYSES, *registry.LIVE]:
        for m in a.metrics:
            assert by_name.setdefault(m.name, m) is m, m.name
    assert len({m.name for m in registry.metrics()}) == len(registry.metrics())
