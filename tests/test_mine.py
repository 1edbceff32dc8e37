"""`--mine` (issue 33): a host operator's own hosts, through the CLI on the demo store (epoch
403: the victim and one other host are zeroed by the miss test) and the watch's recordings.

Every finding says whether it is mine; --fail-on counts only mine; the reports show mine first;
the textfile's per-participant families carry mine="1"/"0" and the shipped alert rules, which
select mine!="0", fire for one's own hosts only (and for everyone without --mine)."""

from __future__ import annotations

import json
import subprocess

import pytest

from conftest import ROOT, run_cli
from test_cron import PROMTOOL, RULES, _metrics, _unit
from test_reports import STORY, _contrib_command, demo  # noqa: F401 (demo: the store of the bundled epoch 403)
from test_watch import HOST, _rule_expr, servers, sources  # noqa: F401 (servers: the watch's recordings)

from auditor.analyses import registry
from auditor.mine import mark
from auditor.result import Finding, Result

VICTIM, PASSER, OTHER = STORY["victim"], STORY["boundary_pass"], STORY["boundary_fail"]
NOWHERE = "gonka1" + "q" * 38          # a well-formed address of no participant


def daily(demo, tmp_path, *extra, env=None):
    """`report daily` of epoch 403 for cron: its run, its report.json and its textfile."""
    out, prom = tmp_path / "out", tmp_path / "auditor.prom"
    r = run_cli("report", "daily", "--offline", "--epoch", "403", "--out", str(out), "--fail-on", "error",
                "--prom-textfile", str(prom), *extra, db=demo, env=env)
    return r, json.loads((out / "2026-09-22" / "report.json").read_text()), prom.read_text(), out / "2026-09-22"


def findings_in(doc) -> list[dict]:
    """Every finding anywhere in a JSON document (a dict with a code, a severity and a subject)."""
    if isinstance(doc, dict):
        own = [doc] if {"code", "severity", "subject"} <= doc.keys() else []
        return own + [f for v in doc.values() for f in findings_in(v)]
    if isinstance(doc, list):
        return [f for v in doc for f in findings_in(v)]
    return []


# -- --fail-on counts only mine ----------------------------------------------------------------
def test_report_daily_fails_only_when_one_of_mine_failed(demo, tmp_path):
    """The demo's two other hosts fail the miss test: without --mine the job fails; with
    --mine a host that passed it exits 0; with --mine the victim (by its label) exits 1 and
    stderr names only the victim's findings."""
    r, _, _, _ = daily(demo, tmp_path / "all")
    assert r.returncode == 1 and OTHER in r.stderr

    r, report, _, _ = daily(demo, tmp_path / "passer", "--mine", PASSER)
    assert r.returncode == 0, r.stderr
    failed = [f for f in report["findings"] if f["severity"] == "error"]
    assert failed and all(f["mine"] is False for f in failed)      # still reported, not counted

    r, report, _, _ = daily(demo, tmp_path / "victim", "--mine", VICTIM[-8:])
    assert r.returncode == 1
    lines = [x for x in r.stderr.splitlines() if x.startswith("auditor: error ")]
    assert lines and all(VICTIM in x for x in lines) and OTHER not in r.stderr


def test_every_finding_of_the_epoch_says_whether_it_is_mine(demo):
    r = run_cli("epoch", "403", "--offline", "--format", "json", "--mine", VICTIM, db=demo)
    assert r.returncode == 0, r.stderr
    found = findings_in(json.loads(r.stdout))
    assert found and all(isinstance(f["mine"], bool) for f in found)
    mine = {(f["code"], f["subject"]["id"], f["evidence"].get("episode")) for f in found if f["mine"]}
    # its own, by subject; a model whose preserved hosts in cpoc:0 include it; not another host's
    assert ("reward_zeroed_miss_test", VICTIM, None) in mine
    assert ("preserved_capacity_short", "zai-org/GLM-5.3-Flash", "cpoc:0") in mine
    assert all(f["subject"]["id"] != OTHER for f in found if f["mine"])
    assert not any(f["mine"] for f in found if f["code"] == "preserved_capacity_short"
                   and f["evidence"]["episode"] != "cpoc:0")        # its nodes were not preserved then
    # without --mine the JSON is as it was: no finding has the key
    plain = run_cli("epoch", "403", "--offline", "--format", "json", db=demo)
    assert not any("mine" in f for f in findings_in(json.loads(plain.stdout)))


def test_mine_from_the_environment_and_auditor_toml(demo, tmp_path):
    """AUDITOR_MINE (space-separated) and `mine = [...]` in auditor.toml give the same answer as the flags."""
    def mine_of(r) -> set[str]:
        assert r.returncode == 1, r.stderr
        return {f["subject"]["id"] for f in json.loads(r.stdout)["findings"] if f["mine"]}

    args = ("misstest", "403", "--offline", "--format", "json", "--fail-on", "error")
    flags = mine_of(run_cli(*args, "--mine", VICTIM, "--mine", PASSER, db=demo))
    assert flags == {VICTIM}
    assert mine_of(run_cli(*args, db=demo, env={"AUDITOR_MINE": f"{VICTIM[-8:]} {PASSER}"})) == flags
    config = tmp_path / "auditor.toml"
    config.write_text(f'mine = ["{VICTIM}", "{PASSER[-8:]}"]\n')
    assert mine_of(run_cli("--config", str(config), *args, db=demo)) == flags


def test_an_address_of_mine_not_in_the_epoch_is_a_note_and_cron_goes_on(demo, tmp_path):
    r, report, _, _ = daily(demo, tmp_path, "--mine", NOWHERE)
    assert r.returncode == 0, r.stderr
    assert f"note: --mine {NOWHERE} is no participant of epoch 403" in r.stderr
    assert not any(f["mine"] for f in report["findings"])
    # a label no stored address fits is a usage error, as for --participant
    bad = run_cli("misstest", "403", "--offline", "--mine", "zzzzzzzz", db=demo)
    assert bad.returncode == 2 and "--mine zzzzzzzz matches no participant" in bad.stderr


def test_every_analysis_command_epoch_report_daily_and_watch_take_mine():
    for name in [a.command.name for a in registry.commands()] + ["report daily"]:
        r = run_cli(*name.split(), "--help")
        assert r.returncode == 0 and "--mine" in r.stdout, name


def test_the_documented_host_operator_cron_line_fails_for_mine_only(demo, tmp_path):
    """contrib/crontab's host-operator line (commented: the address is the operator's), as the
    README shows it, with a host that passed and then with the victim."""
    line = next(x for x in (ROOT / "contrib" / "crontab").read_text().splitlines()
                if x.startswith("# 15 6 ") and "--mine" in x)[2:]
    assert line in (ROOT / "README.md").read_text()
    for who, code in ((PASSER, 0), (VICTIM, 1)):
        folder = tmp_path / who
        config = folder / "auditor.toml"
        folder.mkdir()
        config.write_text("offline = true\n")
        args = _contrib_command(line.split(None, 5)[5].replace("gonka1...", who), config, folder / "out",
                                folder / "auditor.prom")
        r = run_cli(*args, env={"AUDITOR_DB": str(demo)}, stdin="")
        assert r.returncode == code, r.stderr
        assert 'mine="1"' in (folder / "auditor.prom").read_text()


# -- the reports: mine first ---------------------------------------------------------------------
def test_md_html_and_table_show_your_hosts_first(demo, tmp_path):
    _, report, _, folder = daily(demo, tmp_path, "--mine", VICTIM)
    for name, head, rest in (("report.md", "## Your hosts", "## Findings: the rest of the network"),
                             ("report.html", '<h2 id="findings">Your hosts</h2>',
                              "<h2 id=\"findings-others\">Findings: the rest of the network</h2>")):
        text = (folder / name).read_text()
        assert text.index(head) < text.index(VICTIM) < text.index(rest) < text.index(OTHER), name
    table = run_cli("misstest", "403", "--offline", "--mine", VICTIM, db=demo).stdout
    assert table.index("Your hosts") < table.index("Findings: the rest of the network")
    # the html's summary at the top counts yours first, then the rest's, and links to both
    nav = (folder / "report.html").read_text().split('<nav class="summary">', 1)[1].split("</nav>", 1)[0]
    yours, rest = nav.split("<p>Your hosts: ", 1)[1].split("<p>Findings: the rest of the network: ", 1)
    for said, mine in ((yours, True), (rest, False)):
        for sev in ("error", "warn", "info"):
            n = sum(f["severity"] == sev and f["mine"] is mine for f in report["findings"])
            assert f">{n} {sev}<" in said.split("</p>", 1)[0], (mine, sev)
    assert '<a href="#findings">Your hosts</a>' in nav and '<a href="#findings-others">' in nav


# -- the textfile and the alert rules --------------------------------------------------------------
def test_the_textfile_carries_mine_and_the_rules_fire_for_mine_only(demo, tmp_path):
    _, _, plain, _ = daily(demo, tmp_path / "plain")
    _, _, text, _ = daily(demo, tmp_path / "mine", "--mine", VICTIM)
    with_label = [s for fam in _metrics(text).values() for s in fam if "participant" in s.labels]
    assert with_label and all(s.labels["mine"] == ("1" if s.labels["participant"] == VICTIM else "0")
                              for s in with_label)
    assert not any("mine" in s.labels for fam in _metrics(plain).values() for s in fam)
    assert not any("mine" in s.labels for fam in _metrics(text).values() for s in fam
                   if "participant" not in s.labels)
    if PROMTOOL is None:
        pytest.skip("promtool not installed (Debian: apt-get install prometheus)")

    def fired(p: str, mine: str) -> dict:
        return {"labels": 'ALERTS{alertname="AuditorMissTestFailed",alertstate="firing",severity="critical",'
                          f'epoch="403",{mine}participant="{p}",verdict="zeroed_by_miss_test"}}', "value": 1}

    _, _, passer, _ = daily(demo, tmp_path / "passer", "--mine", PASSER)
    check = 'ALERTS{alertname="AuditorMissTestFailed"}'
    tests = [_unit(text, [(check, [fired(VICTIM, 'mine="1",')])]),
             _unit(passer, [(check, [])]),
             _unit(plain, [(check, [fired(p, "") for p in sorted((VICTIM, OTHER))])])]
    spec = tmp_path / "auditor.rules.test.yml"
    spec.write_text(json.dumps({"rule_files": [str(RULES)], "evaluation_interval": "1m", "tests": tests}))
    r = subprocess.run([PROMTOOL, "test", "rules", str(spec)], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr


def test_watch_marks_mine_and_its_rules_fire_for_mine_only(servers, tmp_path):
    """`watch --once --mine`: its findings say mine, its rows put mine first, its textfile
    carries mine; the watch's alert rules fire for mine only, and for all without --mine."""
    db = tmp_path / "w.duckdb"

    def once(*extra: str) -> tuple[dict, str]:
        prom = tmp_path / f"watch{len(extra)}.prom"
        r = run_cli("watch", "--once", "--format", "json", *sources(servers["h3"]), "--prom-textfile", str(prom),
                    "--fail-on", "warn", *extra, db=db)
        assert r.returncode in (0, 1), r.stderr
        return {"out": json.loads(r.stdout), "code": r.returncode, "stdout": r.stdout}, prom.read_text()

    plain, plain_text = once()
    run, text = once("--mine", HOST["healthy"])
    assert plain["code"] == 1 and run["code"] == 0                  # the others' warnings no longer fail it
    assert run["out"]["findings"] and all(f["mine"] is False for f in run["out"]["findings"])
    assert run["out"]["participants"][0]["participant"] == HOST["healthy"]
    samples = [s for fam in _metrics(text).values() for s in fam]
    assert samples and all(s.labels["mine"] == ("1" if s.labels["participant"] == HOST["healthy"] else "0")
                           for s in samples)
    unsettled, unsettled_text = once("--mine", HOST["unsettled"], "--mine", "zzzzzzzz")
    assert unsettled["code"] == 1
    assert "--mine zzzzzzzz is not in this reading" in unsettled["stdout"]     # a note: the watch goes on
    if PROMTOOL is None:
        pytest.skip("promtool not installed")
    rules = RULES.parent / "auditor-watch.rules.yml"
    expr = _rule_expr(rules, "GonkaMissTestProjectedFail")

    def series(textfile: str) -> list[dict]:
        return [{"series": "%s{%s}" % (s.name, ",".join(f'{k}="{v}"' for k, v in sorted(s.labels.items()))),
                 "values": f"{s.value:g}x60"} for fam in _metrics(textfile).values() for s in fam]

    def case(textfile: str, exp: list[dict]) -> dict:
        return {"interval": "1m", "input_series": series(textfile),
                "promql_expr_test": [{"expr": expr, "eval_time": "40m", "exp_samples": exp}]}

    def failing(mine: str) -> dict:
        return {"labels": f'auditor_miss_test_projected_pass{{epoch="500", {mine}participant="{HOST["unsettled"]}"}}',
                "value": 0}

    spec = {"evaluation_interval": "1m", "tests": [
        case(plain_text, [failing("")]), case(text, []), case(unsettled_text, [failing('mine="1", ')])]}
    (tmp_path / "t.yml").write_text(json.dumps(spec))
    r = subprocess.run([PROMTOOL, "test", "rules", str(tmp_path / "t.yml")], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr


# -- which findings are mine ------------------------------------------------------------------------
def test_a_remint_is_mine_only_when_its_evidence_names_one_of_mine():
    def remint(evidence: dict) -> Finding:
        return Finding("spurious_remint", "warn", {"kind": "escrow", "id": "77"}, "retired early", evidence)

    named = remint({"epoch": 403, "request": {"host": VICTIM, "reservation": 5}})
    listed = remint({"epoch": 403, "hosts": [OTHER, VICTIM]})
    gateway = remint({"epoch": 403, "request": {"reservation": 5}, "creator": VICTIM})    # not a host
    result = mark(Result("remints", "Remints", {}, findings=[named, listed, gateway]), [VICTIM])
    assert [f.mine for f in result.findings] == [True, True, False]
    assert result.mine == {VICTIM}
    assert "mine" in named.to_dict() and "mine" not in remint({}).to_dict()


def test_the_dashboard_shows_your_hosts_by_default_and_the_watch_metrics():
    """contrib/grafana: a `participant` variable over the hosts of `scope`, whose default
    (mine=~"1|") is yours with --mine and everyone's without; every per-participant query is
    narrowed to it; the watch's metrics have panels (promtool parses them: test_cron.py)."""
    dash = json.loads((ROOT / "contrib" / "grafana" / "auditor-dashboard.json").read_text())
    var = {v["name"]: v for v in dash["templating"]["list"]}
    assert var["scope"]["current"]["value"] == "1|" and '{mine=~"$scope"}' in var["participant"]["definition"]
    assert var["participant"]["includeAll"] and var["participant"]["current"]["value"] == "$__all"
    exprs = [t["expr"] for p in dash["panels"] for t in p["targets"]]
    per_participant = {m.name for m in registry.metrics() if m.per_participant}
    for e in exprs:
        for name in per_participant:
            assert f"{name} " not in e + " " and f"{name})" not in e, (name, e)     # each one narrowed
    watch = {m.name for m in registry.WATCH.metrics}
    assert all(any(f'{name}{{participant=~"$participant"}}' in e for e in exprs) for name in watch)
