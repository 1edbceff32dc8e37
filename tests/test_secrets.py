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


def store_dump(db: Path, at_least: int = 1000) -> str:
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
    assert len(tables) > 10 and len(out) > at_least, (len(tables), len(out))
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
    ("http://user:pw@host:8000/x?y=1", "http://***@host:8000/x?y=***"),
    ("https://user@host/x", "https://***@host/x"),
    ("http://host/m?token=abc&n=2", "http://host/m?token=***&n=***"),
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


# -- URLs as people write them (issue 35: 14, 15) --------------------------------------------------
KEY = "Q2x9aZ7pLm3kW8vB4nT6yR1c"        # a provider's key in the URL's path
PROJECT = "proj-SECRET-7"                  # a query value under a name that says nothing


@pytest.fixture
def provider(server):
    """A node provider on loopback, in front of the recordings: it answers only requests under
    ``/KEY/`` that carry ``?api_key=TOKEN&project=PROJECT`` (401 otherwise), and passes them on
    to the replay server without the key."""
    from types import SimpleNamespace
    from urllib.parse import parse_qsl, urlencode, urlsplit

    import httpx

    from conftest import loopback

    asked: list[str] = []

    def answer(path: str, headers: dict[str, str]) -> tuple[int, bytes, str]:
        asked.append(path)
        parts = urlsplit(path)
        query = parse_qsl(parts.query, keep_blank_values=True)
        own = [(k, v) for k, v in query if k not in ("api_key", "project")]
        if not parts.path.startswith(f"/{KEY}/") or ("api_key", TOKEN) not in query \
                or ("project", PROJECT) not in query:
            return 401, b'{"error": "no key"}', "application/json"
        r = httpx.get(server.url + parts.path[len(KEY) + 1:] + (f"?{urlencode(own)}" if own else ""),
                      headers={k: v for k, v in headers.items() if k.lower().startswith("x-cosmos")})
        return r.status_code, r.content, r.headers.get("content-type", "application/json")

    with loopback(answer) as base:
        yield SimpleNamespace(asked=asked, url=f"{base}/{KEY}/?api_key={TOKEN}&project={PROJECT}")


def test_the_path_prefix_and_query_of_a_node_and_accounting_url_are_kept(db, tmp_path, provider):
    """``--node http://h/?api_key=K`` sent every request to ``/`` (the key's query first, the
    request's path after it): the epoch "is not a Gonka chain API"."""
    record = tmp_path / "rec"
    r = run_cli("collect", "-e", "403", "--node", provider.url, "--accounting", provider.url, "--rate", "0",
                "--record", str(record), db=db)
    assert r.returncode == 0, r.stderr
    with duckdb.connect(str(db), read_only=True) as con:
        assert con.execute("SELECT count(*) FROM chain_epochs WHERE complete").fetchone() == (1,)
        assert con.execute("SELECT count(*) FROM acct_participants").fetchone()[0] > 0
    assert all(p.startswith(f"/{KEY}/") and f"api_key={TOKEN}" in p for p in provider.asked)
    assert any("pagination.limit=1000" in p for p in provider.asked)      # the request's own parameters too
    # the recording holds the request, not the provider's key: it replays anywhere
    recorded = "\n".join(f.read_text() for f in record.rglob("*.json"))
    assert KEY not in recorded and TOKEN not in recorded and PROJECT not in recorded
    assert run_cli("collect", "-e", "403", "--replay", str(record / "chain"), "--refresh", db=db).returncode == 0


def test_a_key_in_a_node_url_is_shown_as_host_and_mask_everywhere(db, tmp_path, provider):
    """A key in the URL's path was printed whole in the md and html reports' "Made by" line and
    on stderr; a query value under a plain name (``project=``) too."""
    secrets = (KEY, TOKEN, PROJECT)
    host = provider.url.split("/")[2]
    texts = []
    r = run_cli("collect", "-e", "403", "--node", provider.url, "--accounting", provider.url, "--rate", "0", db=db)
    assert r.returncode == 0, r.stderr
    texts.append(r.stderr)
    for fmt in ("md", "html"):
        r = run_cli("epoch", "403", "--node", provider.url, "--rate", "0", "--refresh", "--format", fmt, db=db)
        assert r.returncode in (0, 1), r.stderr
        assert f"{host}/***/?api_key=***&amp;project=***" in r.stdout or f"{host}/***/?api_key=***&project=***" \
            in r.stdout, r.stdout[-600:]
        texts.append(r.stdout + r.stderr)
    # errors: an epoch the node lacks, a node that is down (its URL in the message), a bad URL
    down = f"http://127.0.0.1:9/{KEY}/?project={PROJECT}"
    for args in (["collect", "-e", "999", "--node", provider.url], ["collect", "-e", "403", "--refresh", "--node", down],
                 ["--debug", "collect", "-e", "403", "--refresh", "--node", down, "--timeout", "1"],
                 ["collect", "-e", "403", "--node", f"http://127.0.0.1:x/{KEY}/"]):
        r = run_cli(*args, db=db)
        assert r.returncode in (2, 3) and "/***" in r.stderr, r.stderr
        texts.append(r.stderr)
    text = "\n".join(texts) + store_dump(db, 400)
    for s in secrets:
        assert s not in text, f"{s} leaks: ...{text[max(0, text.find(s) - 200):text.find(s) + 50]}..."
    assert "/chain-api/productscience/inference/inference/" in text     # API paths stay whole


@pytest.mark.parametrize("url, shown", [
    ("https://x.provider.example/Q2x9aZ7pLm3kW8vB4nT6/", "https://x.provider.example/***/"),
    ("https://x.provider.example/v2/abcdefghijklmnopqrstuvwxyz/", "https://x.provider.example/v2/***/"),
    ("http://h/?api_key=K&project=p", "http://h/?api_key=***&project=***"),
    ("http://h:8000/chain-api/productscience/inference/inference/epoch_performance_summary/403",
     "http://h:8000/chain-api/productscience/inference/inference/epoch_performance_summary/403"),
    ("http://h:8000/devshard/v1/stats/shards/18446744073709551615", "http://h:8000/devshard/v1/stats/shards/18446744073709551615"),
    ("http://h/KEY0123456789abcdef/chain-api/x?pagination.limit=1000&pagination.key=AbC123==&height=5",
     "http://h/***/chain-api/x?pagination.limit=1000&pagination.key=AbC123==&height=5"),
])
def test_redact_url_masks_keys_in_the_path_and_every_query_value(url, shown):
    assert redact_url(url) == shown
