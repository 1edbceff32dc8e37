"""No credential given in a source URL (flag, environment or auditor.toml) leaks: not to
stderr, not to any column of any table of the store, not to any report format or the
daily report's files, not to a --record directory.

The sources are the bundled recordings served on loopback, reached through URLs that
carry a password (userinfo) or a token (query parameter); some of them fail on purpose,
so the secrets also pass through error messages and missing-coverage details."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import duckdb
import pytest

from auditor.redact import redact_text, redact_url
from conftest import FIXTURES, run_cli

USER, PASSWORD, TOKEN = "alice-SECRET-user", "hunter2-SECRET-pw", "tok-SECRET-42"
SECRETS = (USER, PASSWORD, TOKEN)


def with_userinfo(url: str) -> str:
    return url.replace("http://", f"http://{USER}:{PASSWORD}@")


def assert_clean(where: str, text: str) -> None:
    for s in SECRETS:
        assert s not in text, f"{s} leaks in {where}: ...{text[max(0, text.find(s) - 200):text.find(s) + 50]}..."


def store_dump(db: Path) -> str:
    """Every row of every table, every column as text."""
    out = []
    with duckdb.connect(str(db), read_only=True) as con:
        tables = [t for (t,) in con.execute(
            "SELECT table_name FROM information_schema.tables WHERE table_type = 'BASE TABLE'").fetchall()]
        for t in tables:
            cols = [c for (c,) in con.execute(
                "SELECT column_name FROM information_schema.columns WHERE table_name = ?", [t]).fetchall()]
            select = ", ".join(f'CAST("{c}" AS VARCHAR)' for c in cols)
            out.extend(f"{t}: {row}" for row in con.execute(f'SELECT {select} FROM "{t}"').fetchall())
    assert len(tables) > 10 and len(out) > 1000, (len(tables), len(out))
    return "\n".join(out)


@pytest.fixture
def server(tmp_path, record_server):
    """One loopback server for chain, accounting and metrics; /metrics also answers
    with the token in its query."""
    metrics = tmp_path / "metrics"
    shutil.copytree(FIXTURES / "metrics" / "scrape1", metrics)
    for f in list(metrics.glob("*.json")):
        e = json.loads(f.read_text())
        e["query"] = f"access_token={TOKEN}"
        (metrics / f"token-{f.name}").write_text(json.dumps(e))
    return record_server([FIXTURES / "chain" / "epoch-403", FIXTURES / "accounting" / "v5", metrics])


def test_no_secret_leaks_anywhere(tmp_path, db, server):
    record = tmp_path / "recorded"
    node, acct = with_userinfo(server.url), with_userinfo(server.url)
    down = with_userinfo("http://127.0.0.1:9") + f"?token={TOKEN}"
    stderr = []

    r = run_cli("collect", "-e", "403", "--node", down, "--node", node, "--accounting", acct,
                "--metrics", with_userinfo(server.url + "/metrics"),
                "--metrics", f"{server.url}/metrics?access_token={TOKEN}",
                "--metrics", f"{with_userinfo('http://127.0.0.1:9')}/metrics?api_key={TOKEN}",
                "--gateway-log", str(FIXTURES / "demo-epoch-403" / "gateway.log.gz"),
                "--record", str(record), "--timeout", "2", db=db)
    stderr.append(r.stderr)
    assert r.returncode == 3, r.stderr  # the unreachable metrics URL is missing
    assert "***@127.0.0.1:9" in r.stderr  # the URLs are there, redacted
    # failures whose messages carry the URL: every node down; an epoch the chain lacks
    for args in (["collect", "-e", "404", "--node", down], ["collect", "-e", "999", "--node", node],
                 ["collect", "--accounting", down], ["--debug", "collect", "-e", "404", "--node", down]):
        r = run_cli(*args, "--timeout", "2", db=db)
        assert r.returncode == 3 and "***" in r.stderr, r.stderr
        stderr.append(r.stderr)

    # the same URLs from a config file and from the environment
    config = tmp_path / "auditor.toml"
    config.write_text(f'node = ["{node}"]\n')
    r = run_cli("collect", "-e", "403", "--refresh", "--config", str(config), env={"AUDITOR_ACCOUNTING": acct},
                db=db)
    assert r.returncode == 0, r.stderr
    stderr.append(r.stderr)

    outputs = []
    for fmt in ("json", "md", "table", "csv", "html"):
        r = run_cli("epoch", "403", "--offline", "--format", fmt, db=db)
        assert r.returncode in (0, 1, 3) and r.stdout, r.stderr
        outputs.append(r.stdout + r.stderr)
    r = run_cli("misstest", "403", "--offline", "--format", "csv", db=db)
    assert r.returncode in (0, 1) and r.stdout, r.stderr
    outputs.append(r.stdout + r.stderr)
    # collecting through the report commands prints the same way
    r = run_cli("epoch", "403", "--node", node, "--accounting", acct, "--format", "json", db=db)
    outputs.append(r.stdout + r.stderr)
    daily, prom = tmp_path / "daily", tmp_path / "auditor.prom"
    r = run_cli("report", "daily", "--out", str(daily), "--epoch", "403", "--offline",
                "--prom-textfile", str(prom), db=db)
    assert r.returncode in (0, 1, 3) and prom.is_file(), r.stderr
    outputs += [r.stderr, prom.read_text()] + [f.read_text() for f in daily.rglob("*") if f.is_file()]

    assert_clean("stderr", "\n".join(stderr))
    assert_clean("a report", "\n".join(outputs))
    dump = store_dump(db)
    assert "***@127.0.0.1" in dump and "access_token=***" in dump
    assert_clean("the store", dump)
    recorded = list(record.rglob("*"))
    assert len([f for f in recorded if f.is_file()]) > 30
    assert_clean("the --record directory",
                 "\n".join(f.read_text(errors="replace") for f in recorded if f.is_file()))


@pytest.mark.parametrize("url, shown", [
    ("http://user:pw@host:8000/x?y=1", "http://***@host:8000/x?y=1"),
    ("https://user@host/x", "https://***@host/x"),
    ("http://host/m?token=abc&n=2", "http://host/m?token=***&n=2"),
    ("http://host/m?API_KEY=abc", "http://host/m?API_KEY=***"),
    ("http://host/m?X-Amz-Signature=abc&X-Amz-Credential=def", "http://host/m?X-Amz-Signature=***&X-Amz-Credential=***"),
    ("http://host/m?refresh_token=a&Password=b&secret=c&auth=d&sig=e&apikey=f&key=g",
     "http://host/m?refresh_token=***&Password=***&secret=***&auth=***&sig=***&apikey=***&key=***"),
    ("http://host/x?pagination.key=abc&height=5", "http://host/x?pagination.key=abc&height=5"),
    ("http://host:8000/chain-api/x", "http://host:8000/chain-api/x"),
    ("user:pw@host:8000/x?token=t", "***@host:8000/x?token=***"),  # typed without a scheme
    ("user:pw@host:8000", "***@host:8000"),
    ("http://host/a@b", "http://host/a@b"),
])
def test_redact_url(url, shown):
    assert redact_url(url) == shown


@pytest.mark.parametrize("url", ["http://u:pw-SECRET@h:port", "u:pw-SECRET@127.0.0.1:9", "ftp://u:pw-SECRET@h"])
def test_an_unusable_node_url_is_a_usage_error_without_the_secret(db, url):
    r = run_cli("collect", "-e", "403", "--node", url, db=db)
    assert r.returncode == 2, r.stderr
    assert "not a usable URL: " in r.stderr and "***" in r.stderr and "SECRET" not in r.stderr


def test_redact_text():
    msg = "no node answered /x (http://u:p@a:1/x?token=t: unreachable; http://b/x: HTTP 503)"
    assert redact_text(msg) == "no node answered /x (http://***@a:1/x?token=***: unreachable; http://b/x: HTTP 503)"


def test_a_url_given_where_a_value_belongs_is_masked_in_the_usage_error(db):
    """click's own usage errors quote the bad value: masked like every other error."""
    url = f"http://{USER}:{PASSWORD}@node:8000"
    for args in (["epoch", url], ["collect", "--rate", url], ["hedging", "--since", url]):
        r = run_cli(*args, db=db)
        assert r.returncode == 2 and "***@node:8000" in r.stderr, r.stderr
        assert not any(s in r.stderr for s in SECRETS), r.stderr
