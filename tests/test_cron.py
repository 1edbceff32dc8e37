"""The operator's morning (issue 20, items 4 and 5), through the CLI: a quiet cron run prints
nothing, exit 1 puts the failing findings on stderr, a failed run still writes the textfile,
the miss test's metrics (requests, verdict, an excluded host not a pass), the shipped
Prometheus rules (promtool, where installed) and Grafana dashboard against the registry's
metrics, `report daily` choosing a settled epoch, and the basics: --version, completion,
--participant by label, --offline with a source flag, a node that is not a chain API."""

from __future__ import annotations

import http.server
import json
import re
import shutil
import subprocess
import threading

import pytest

from conftest import ROOT, run_cli, run_json
from test_reports import DEMO, REC, STORY, demo  # noqa: F401 (demo: the store of the bundled epoch 403)

RULES = ROOT / "contrib" / "prometheus" / "auditor.rules.yml"
DASHBOARD = ROOT / "contrib" / "grafana" / "auditor-dashboard.json"
PROMTOOL = shutil.which("promtool")
RUN_METRICS = ("auditor_report_complete", "auditor_report_timestamp_seconds", "auditor_report_epoch")


@pytest.fixture(scope="module")
def cron_run(demo, tmp_path_factory):
    """The crontab line of contrib/ as written (its paths pointed here), on the demo store."""
    tmp = tmp_path_factory.mktemp("cron")
    line = next(x for x in (ROOT / "contrib" / "crontab").read_text().splitlines()
                if x and not x.startswith("#")).split(None, 5)[5]
    config, out, prom = tmp / "auditor.toml", tmp / "out", tmp / "auditor.prom"
    config.write_text("offline = true\n")
    line = (line.replace("/etc/auditor/auditor.toml", str(config)).replace("/srv/auditor/reports", str(out))
            .replace("/var/lib/node_exporter/textfile/auditor.prom", str(prom)))
    args = [a for a in line.split() if not a.startswith("AUDITOR_DB=")]
    assert args[0] == "/usr/local/bin/auditor" and "--quiet" in args
    r = run_cli(*args[1:], env={"AUDITOR_DB": str(demo)}, stdin="")
    return r, json.loads((out / "2026-09-22" / "report.json").read_text()), prom.read_text()


def _metrics(text: str) -> dict:
    from prometheus_client.parser import text_string_to_metric_families

    return {f.name: f.samples for f in text_string_to_metric_families(text)}


def _by(samples, *labels):
    return {tuple(s.labels[k] for k in labels): s.value for s in samples}


# -- cron: quiet, loud on failure, the textfile every time --------------------------------------
def test_a_quiet_cron_run_that_succeeds_prints_nothing_and_reports_the_latest_settled_epoch(tmp_path):
    """With a node (the recording: its /v1/epochs/latest says 405 in Inference, but it holds no
    root group of 405, so 404 is not settled there) and no --epoch: 403, complete, silent."""
    out, prom = tmp_path / "out", tmp_path / "auditor.prom"
    r = run_cli("--quiet", "report", "daily", "--out", str(out), "--prom-textfile", str(prom), *DEMO,
                db=tmp_path / "a.duckdb", stdin="")
    assert (r.returncode, r.stdout, r.stderr) == (0, "", "")
    report = json.loads((out / "2026-09-22" / "report.json").read_text())
    assert report["epoch"] == 403 and report["findings"]
    m = _metrics(prom.read_text())
    assert [s.value for s in m["auditor_report_complete"]] == [1]
    assert [s.value for s in m["auditor_report_epoch"]] == [403]
    # complete, and yet the demo's log covers 1.5 h of the epoch: its wasted seconds are a part's;
    # the textfile says which windows the logs cover whole (cpoc:0 they do, the epoch they do not)
    assert _by(m["auditor_gateway_log_window_covered"], "epoch", "window") == {("403", "epoch"): 0, ("403", "cpoc:0"): 1}


def test_exit_1_puts_each_failing_finding_on_stderr(cron_run):
    r, report, _ = cron_run
    assert r.returncode == 1 and r.stdout == ""
    errors = [f for f in report["findings"] if f["severity"] == "error"]
    lines = r.stderr.splitlines()
    assert len(lines) == len(errors) >= 2, r.stderr
    said = set()
    for line in lines:
        m = re.fullmatch(r"auditor: error ([a-z_]+) (gonka1\w+): (\S.*)", line)
        assert m, line
        said.add(m.groups())
    assert said == {(f["code"], f["subject"]["id"], f["summary"]) for f in errors}


def test_a_failed_run_writes_the_textfile(demo, tmp_path):
    """A good run's textfile, then two failed runs over it: one that knew its epoch (404 is
    not in the recording: exit 3, what was obtained) and one that never did (no chain there)."""
    out, prom = tmp_path / "out", tmp_path / "auditor.prom"
    assert run_cli("report", "daily", "--out", str(out), "--offline", "--prom-textfile", str(prom),
                   db=demo).returncode == 0
    before = _metrics(prom.read_text())
    assert [s.value for s in before["auditor_report_complete"]] == [1]

    r = run_cli("--quiet", "report", "daily", "--out", str(out), "--epoch", "404", "--replay", str(REC),
                "--prom-textfile", str(prom), db=tmp_path / "b.duckdb", stdin="")
    assert r.returncode == 3 and "MISSING" in r.stderr and "loaded" not in r.stderr, r.stderr
    m = _metrics(prom.read_text())
    assert [s.value for s in m["auditor_report_complete"]] == [0]
    assert [s.value for s in m["auditor_report_epoch"]] == [404]
    assert m["auditor_findings_by_severity"]          # what was obtained is there
    # offline, nothing collected prints MISSING: the run still says, in one line, why it is 3
    r = run_cli("--quiet", "report", "daily", "--out", str(out), "--epoch", "404", "--offline",
                db=tmp_path / "b.duckdb", stdin="")
    # (and a line per missing item, issue 33: what, and what completes it)
    assert r.returncode == 3 and "is incomplete" in r.stderr.splitlines()[-1], r.stderr
    assert [line.split(": ")[1] for line in r.stderr.splitlines()[:-1]] == ["incomplete", "incomplete"], r.stderr
    assert "Miss test: epoch 404 is not settled yet" in r.stderr

    with not_a_chain() as url:
        r = run_cli("--quiet", "report", "daily", "--out", str(out), "--node", url, "--prom-textfile", str(prom),
                    db=tmp_path / "c.duckdb", stdin="")
    assert r.returncode == 3 and r.stderr.count("\n") == 1 and "is not a Gonka chain API" in r.stderr, r.stderr
    m = _metrics(prom.read_text())
    assert [s.value for s in m["auditor_report_complete"]] == [0]
    assert m["auditor_report_timestamp_seconds"][0].value > before["auditor_report_timestamp_seconds"][0].value
    assert "auditor_report_epoch" not in m                       # unknown, not 0
    assert not m["auditor_findings_by_severity"] and not m["auditor_miss_test_passed"]


# -- the metrics --------------------------------------------------------------------------------
def test_miss_test_metrics_requests_verdicts_and_an_excluded_host_is_no_pass(cron_run):
    _, report, text = cron_run
    m = _metrics(text)
    participants = {p["participant"]: p for p in report["miss_test"]["participants"]}
    assert _by(m["auditor_miss_test_requests"], "participant") == {(a,): p["total"] for a, p in participants.items()}
    verdicts = _by(m["auditor_miss_test_verdict"], "participant", "verdict")
    for a, p in participants.items():
        assert [v for (who, v), x in verdicts.items() if who == a and x == 1] == [p["verdict"]]
    passed = _by(m["auditor_miss_test_passed"], "participant")
    excluded = STORY["excluded"]
    assert participants[excluded]["passed"] is True and participants[excluded]["verdict"] == "zero_for_other_reason"
    assert passed[(excluded,)] == 0 and passed[(STORY["victim"],)] == 0 and passed[(STORY["boundary_pass"],)] == 1
    # the run's own metrics carry no epoch; the epoch's facts do, and auditor_report_epoch says it
    for name in RUN_METRICS:
        assert [s.labels for s in m[name]] == [{}], name
    assert [s.value for s in m["auditor_report_epoch"]] == [403]
    assert {s.labels["epoch"] for s in m["auditor_miss_test_verdict"] + m["auditor_findings"]} == {"403"}


# -- the rules and the dashboard ----------------------------------------------------------------
def _registry_metrics() -> set[str]:
    from auditor.analyses import registry

    return {m.name for m in registry.metrics()}


def _names(expr: str) -> set[str]:
    return set(re.findall(r"\bauditor_[a-z0-9_]+", expr))


def test_the_rules_and_the_dashboard_use_only_declared_metrics():
    """Without promtool: the rules file's three alerts, and every metric either file names is
    one the registry declares (a renamed metric fails here)."""
    text = RULES.read_text()
    assert {"AuditorMissTestFailed", "AuditorReportIncomplete", "AuditorReportStale"} <= \
        set(re.findall(r"- alert: (\w+)", text))
    code = "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("#"))
    assert _names(code) and _names(code) <= _registry_metrics(), _names(code) - _registry_metrics()
    exprs = _dashboard_exprs()
    assert len(exprs) >= 8 and all(_names(e) for e in exprs)
    assert set().union(*map(_names, exprs)) <= _registry_metrics()


def _dashboard_exprs() -> list[str]:
    dash = json.loads(DASHBOARD.read_text())
    return [t["expr"] for p in dash["panels"] for t in p["targets"]]


@pytest.mark.skipif(PROMTOOL is None, reason="promtool not installed (Debian: apt-get install prometheus)")
def test_promtool_checks_the_rules_and_the_dashboard_queries(tmp_path):
    r = subprocess.run([PROMTOOL, "check", "rules", str(RULES)], capture_output=True, text=True)
    assert r.returncode == 0 and "SUCCESS" in r.stdout, r.stdout + r.stderr
    # each dashboard query is valid PromQL: as a recording rule, promtool parses it
    rules = {"groups": [{"name": "dashboard", "rules": [{"record": f"auditor:dashboard_{i}", "expr": e}
                                                         for i, e in enumerate(_dashboard_exprs())]}]}
    (tmp_path / "dashboard.rules.yml").write_text(json.dumps(rules))
    r = subprocess.run([PROMTOOL, "check", "rules", str(tmp_path / "dashboard.rules.yml")], capture_output=True,
                       text=True)
    assert r.returncode == 0, r.stdout + r.stderr


@pytest.mark.skipif(PROMTOOL is None, reason="promtool not installed (Debian: apt-get install prometheus)")
def test_the_alerts_fire_on_the_textfiles_auditor_writes(cron_run, tmp_path):
    """promtool's rule unit test, fed the demo run's textfile: the miss-test alert fires for
    exactly the participants the report says were zeroed by the miss test, and no other alert;
    a failed run's textfile fires AuditorReportIncomplete; no textfile at all, AuditorReportStale."""
    _, report, text = cron_run
    zeroed = sorted(p["participant"] for p in report["miss_test"]["participants"] if p["verdict"] == "zeroed_by_miss_test")
    assert STORY["victim"] in zeroed
    fired = [{"labels": f'ALERTS{{alertname="AuditorMissTestFailed",alertstate="firing",severity="critical",'
                        f'epoch="403",participant="{p}",verdict="zeroed_by_miss_test"}}', "value": 1} for p in zeroed]
    failed = text.replace("auditor_report_complete 1.0", "auditor_report_complete 0.0")
    assert failed != text
    tests = [
        _unit(text, [('ALERTS{alertname="AuditorMissTestFailed"}', fired),
                     ('ALERTS{alertname=~"AuditorReport.*"}', [])]),
        _unit(failed, [('ALERTS{alertname="AuditorReportIncomplete"}',
                        [{"labels": 'ALERTS{alertname="AuditorReportIncomplete",alertstate="firing",'
                                    'severity="warning"}', "value": 1}])]),
        _unit("", [('ALERTS{alertname="AuditorReportStale"}',
                    [{"labels": 'ALERTS{alertname="AuditorReportStale",alertstate="firing",severity="warning"}',
                      "value": 1}])], at="2h"),
    ]
    spec = tmp_path / "auditor.rules.test.yml"
    spec.write_text(json.dumps({"rule_files": [str(RULES)], "evaluation_interval": "1m", "tests": tests}))
    r = subprocess.run([PROMTOOL, "test", "rules", str(spec)], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr


def _unit(textfile: str, checks: list[tuple[str, list]], at: str = "10m") -> dict:
    """One promtool test: the textfile's samples as constant series, ``checks`` at ``at``."""
    series = []
    for fam in _metrics(textfile).values() if textfile else []:
        for s in fam:
            labels = ",".join(f'{k}="{v}"' for k, v in sorted(s.labels.items()))
            series.append({"series": f"{s.name}{{{labels}}}", "values": f"{s.value:f}x200"})
    return {"interval": "1m", "input_series": series,
            "promql_expr_test": [{"expr": e, "eval_time": at, "exp_samples": exp} for e, exp in checks]}


# -- the basics ---------------------------------------------------------------------------------
def test_version_and_shell_completion():
    from auditor import __version__

    r = run_cli("--version")
    assert (r.returncode, r.stdout.strip()) == (0, f"auditor {__version__}")
    r = run_cli("--show-completion", "bash", env={"SHELL": "/bin/bash"})
    assert r.returncode == 0 and "_AUDITOR_COMPLETE" in r.stdout, r.stdout + r.stderr
    r = run_cli(env={"_AUDITOR_COMPLETE": "complete_bash", "COMP_WORDS": "auditor report daily --prom",
                     "COMP_CWORD": "3"})
    assert r.returncode == 0 and "--prom-textfile" in r.stdout, r.stdout + r.stderr


@pytest.mark.parametrize("form", ["full", "label", "short", "ascii"])
def test_participant_by_full_address_label_or_short_form(demo, form):
    victim = STORY["victim"]
    given = {"full": victim, "label": victim[-8:], "short": f"gonka1…{victim[-8:]}",
             "ascii": f"gonka1...{victim[-8:]}"}[form]
    r = run_cli("misstest", "403", "--offline", "--participant", given, "--format", "json", db=demo)
    assert r.returncode == 0, r.stderr
    assert [p["participant"] for p in json.loads(r.stdout)["participants"]] == [victim]


def test_participant_unknown_or_ambiguous_is_one_usage_line(demo):
    r = run_cli("misstest", "403", "--offline", "--participant", "zzzzzzzz", db=demo)
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "matches no participant" in r.stderr, r.stderr
    addresses = [p["participant"] for p in run_json("misstest", "403", "--offline", "--format", "json",
                                                      db=demo)["participants"]]
    tail = next(a[-1] for a in addresses if sum(b.endswith(a[-1]) for b in addresses) > 1)
    r = run_cli("misstest", "403", "--offline", "--participant", f"gonka1…{tail}", db=demo)
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "give the full" in r.stderr, r.stderr
    assert "matches gonka1" in r.stderr and "Traceback" not in r.stderr


def test_offline_with_a_typed_source_flag_is_a_usage_error(demo):
    r = run_cli("misstest", "403", "--offline", "--gateway-log", "x.log", "--node", "http://127.0.0.1:9", db=demo)
    assert r.returncode == 2 and r.stderr.count("\n") == 1, r.stderr
    assert "--offline" in r.stderr and "--node and --gateway-log" in r.stderr
    # a source from the environment (or auditor.toml) is what --offline leaves unused
    r = run_cli("misstest", "403", "--offline", "--format", "csv", db=demo, env={"AUDITOR_NODE": "http://127.0.0.1:9"})
    assert r.returncode == 0 and r.stderr == "", r.stderr


class _NotFound(http.server.BaseHTTPRequestHandler):
    def do_GET(self):      # noqa: N802 (the stdlib's name)
        self.send_error(404)

    def log_message(self, *args):
        pass


class not_a_chain:
    """A web server on loopback that answers 404 to everything: a wrong --node URL."""

    def __enter__(self) -> str:
        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _NotFound)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()


def test_a_node_that_answers_404_to_everything_is_not_a_chain_api(tmp_path):
    with not_a_chain() as url:
        r = run_cli("--quiet", "epoch", "403", "--node", url, db=tmp_path / "a.duckdb")
    assert r.returncode == 3 and r.stderr.count("\n") == 1, r.stderr
    assert "is not a Gonka chain API" in r.stderr and "does not exist" not in r.stderr


# -- the README -----------------------------------------------------------------------------------
def test_the_readme_shows_the_alert_rules_the_dashboard_and_the_install_path():
    readme = (ROOT / "README.md").read_text()
    folded = " ".join(" ".join(f.read_text().split()) for f in sorted(RULES.parent.glob("*.rules.yml")))
    shown = re.findall(r"- alert: (\w+)[^\n]*\n\s+expr: (.+)", readme)
    assert {"AuditorMissTestFailed", "AuditorReportIncomplete", "AuditorReportStale"} <= {a for a, _ in shown}
    for alert, expr in shown:             # as the rules file has it (its folded lines joined)
        assert f"- alert: {alert}" in folded and " ".join(expr.split("#")[0].split()) in folded, alert
    for path in ("contrib/prometheus/auditor.rules.yml", "contrib/grafana/auditor-dashboard.json", "Dockerfile"):
        assert f"`{path}`" in readme and (ROOT / path).is_file(), path
    assert "pipx install ." in readme and "uv tool install ." in readme and "--install-completion" in readme


def test_the_readme_and_the_default_cap_note_cite_only_documents_in_the_repository(cron_run):
    """(The note on the default per-10000 setting cited gateway-logs.md, which is not here.)"""
    _, report, _ = cron_run
    note = report["poc_overload"]["per_10000_source"]
    assert "gonka-ai/gonka" in note
    text = (ROOT / "README.md").read_text() + note
    cited = set(re.findall(r"[\w./-]*[\w-]\.md\b", text)) - {"report.md"}      # report.md: what daily writes
    assert cited and all((ROOT / c).is_file() for c in cited), [c for c in cited if not (ROOT / c).is_file()]


def test_the_textfile_on_a_fifo_is_written_in_place(demo, tmp_path):
    """--prom-textfile on a FIFO (a collector that reads a pipe) replaced it with a regular
    file (prometheus_client's temp file, then the rename): now it is written in place and
    stays a FIFO."""
    import os
    import stat

    from test_faults_local import _read_fifo

    fifo = tmp_path / "auditor.prom"
    os.mkfifo(fifo)
    reader, got = _read_fifo(fifo)
    r = run_cli("--quiet", "report", "daily", "--offline", "--epoch", "403", "--out", str(tmp_path / "out"),
                "--prom-textfile", str(fifo), db=demo, timeout=60)
    reader.join(30)
    assert r.returncode == 0, r.stderr
    assert _metrics(got[0].decode())["auditor_report_epoch"][0].value == 403
    assert stat.S_ISFIFO(os.stat(fifo).st_mode)


# -- the lock of report daily (issue 35 #4, #32) --------------------------------------------------
def test_the_lock_file_is_never_followed(demo, tmp_path):
    """`OUT/.auditor-report.lock -> /etc/x` truncated /etc/x and wrote the PID into it. The
    lock is opened with O_NOFOLLOW: one line, exit 2, the file the link names as it was."""
    out, victim = tmp_path / "out", tmp_path / "victim"
    out.mkdir()
    victim.write_text("precious\n")
    (out / ".auditor-report.lock").symlink_to(victim)
    r = run_cli("--quiet", "report", "daily", "--offline", "--epoch", "403", "--out", str(out), db=demo)
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert "is a symbolic link; a lock file is never followed" in r.stderr
    assert victim.read_text() == "precious\n" and [p.name for p in out.iterdir()] == [".auditor-report.lock"]


def test_only_the_jobs_user_can_open_the_lock(demo, tmp_path):
    """The lock was 0644: anyone who could read the reports folder could open it and hold it,
    and report daily then said another run held it. Now 0600 (an older 0644 lock is made 0600),
    and a lock file another user owns is refused, one line, exit 2."""
    import os
    import stat

    out = tmp_path / "out"
    out.mkdir()
    lock = out / ".auditor-report.lock"
    lock.write_text("")
    lock.chmod(0o644)                   # as an older auditor left it
    args = ("--quiet", "report", "daily", "--offline", "--epoch", "403", "--out", str(out))
    r = run_cli(*args, db=demo)
    assert r.returncode == 0, r.stderr
    assert stat.S_IMODE(lock.stat().st_mode) == 0o600
    fresh = tmp_path / "fresh"
    assert run_cli(*args[:-1], str(fresh), db=demo).returncode == 0
    assert stat.S_IMODE((fresh / ".auditor-report.lock").stat().st_mode) == 0o600
    if os.geteuid() == 0:               # root can give the lock to another user
        os.chown(lock, 65534, 65534)
        r = run_cli(*args, db=demo)
        assert r.returncode == 2 and "is owned by user 65534; the lock file is this user's own" in r.stderr, r.stderr
