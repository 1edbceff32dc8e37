"""A hostile node, over real HTTP on loopback: `auditor collect` against a threaded
http.server that answers one item of the epoch-403 recording badly (malformed,
truncated, dripped, oversized, rate limited with an unusable Retry-After, for the
wrong epoch, or redirected to another server) and every other item properly.

Whatever the node does, the run ends in bounded time with one clear line and the
documented exit code, the bad item is missing in coverage, and everything else is stored.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from auditor.sources import http
from auditor.sources.replay import _key, load_recording
from conftest import FIXTURES, one, q, run_cli

REC = FIXTURES / "chain" / "epoch-403"
API = "/chain-api/productscience/inference/inference"
SUMMARY = f"{API}/epoch_performance_summary/403"
TABLE = load_recording(REC)
LIMIT = 64 * 2**20  # the documented body limit
SERVE_AT_MOST = 20.0  # seconds any one hostile answer may take, whatever the client does

Behaviour = Callable[[BaseHTTPRequestHandler, dict], None]


def recorded(path_and_query: str, height: str | None) -> dict:
    parts = urlsplit(path_and_query)
    entries = TABLE.get(_key(parts.path, parts.query, height))
    assert entries, f"not in the recording: {path_and_query}"
    return entries[-1]


def send(h: BaseHTTPRequestHandler, status: int, body: bytes, headers: dict[str, str] | None = None) -> None:
    h.send_response(status)
    h.send_header("Content-Type", "application/json")
    h.send_header("Content-Length", str(len(body)))
    for k, v in (headers or {}).items():
        h.send_header(k, v)
    h.end_headers()
    h.wfile.write(body)


class HostileNode:
    """Serves the recording on 127.0.0.1, except the paths in ``behaviours`` (a key ending in
    ``*`` stands for every path that starts with what comes before it)."""

    def __init__(self, behaviours: dict[str, Behaviour]) -> None:
        self.hits: dict[str, int] = {}
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802
                path = urlsplit(self.path).path
                outer.hits[path] = outer.hits.get(path, 0) + 1
                path = next((k for k in behaviours if k.endswith("*") and path.startswith(k[:-1])), path)
                try:
                    entry = recorded(self.path, self.headers.get("x-cosmos-block-height"))
                except AssertionError:
                    if path not in behaviours:
                        raise
                    entry = None        # a behaviour may answer what the recording never asked
                try:
                    if path in behaviours:
                        behaviours[path](self, entry)
                    else:
                        send(self, entry["status"], entry["body"].encode())
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up: that is the point

            def log_message(self, *args: object) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def hostile():
    servers: list[HostileNode] = []

    def start(behaviours: dict[str, Behaviour]) -> HostileNode:
        servers.append(HostileNode(behaviours))
        return servers[-1]

    yield start
    for s in servers:
        s.close()


def collect(db: Path, url: str, *extra: str, timeout: float = 90) -> subprocess.CompletedProcess:
    return run_cli("collect", "-e", "403", "--node", url, "--rate", "0", *extra, db=db, timeout=timeout)


def assert_summary_missing(db: Path, r: subprocess.CompletedProcess, why: str) -> None:
    """Exit 3 with one clear line, the summary missing (one coverage row), the rest stored."""
    assert r.returncode == 3, r.stderr
    assert "Traceback" not in r.stderr and "internal error" not in r.stderr, r.stderr
    assert why in r.stderr, r.stderr
    assert q(db, "SELECT status, detail FROM coverage WHERE item = 'epoch_performance_summary'") == [
        ("missing", one(db, "SELECT detail FROM coverage WHERE item = 'epoch_performance_summary'"))]
    assert why in one(db, "SELECT detail FROM coverage WHERE item = 'epoch_performance_summary'")
    assert one(db, "SELECT count(*) FROM chain_performance") == 0
    assert one(db, "SELECT count(*) FROM chain_ml_nodes") == 172
    assert one(db, "SELECT complete FROM chain_epochs") is False


# -- behaviours ------------------------------------------------------------------
def malformed(h, entry):
    send(h, 200, b'{"epochPerformanceSummary": [{"participant_id": "gonka1')


def nested(h, entry):
    send(h, 200, b"[" * 200_000)


def truncated(h, entry):
    body = entry["body"].encode()
    h.send_response(200)
    h.send_header("Content-Length", str(len(body)))
    h.end_headers()
    h.wfile.write(body[: len(body) // 3])  # then the connection closes


def drip(what: str, every: float = 0.1) -> Behaviour:
    """Send the answer one byte at a time, each well within the per-read timeout."""
    def behaviour(h, entry):
        body = entry["body"].encode()
        head = f"HTTP/1.0 200 OK\r\nContent-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n".encode()
        if what == "body":
            h.wfile.write(head)
            h.wfile.flush()
            data = body
        else:
            data = head + body
        stop = time.monotonic() + SERVE_AT_MOST
        for i in range(len(data)):
            if time.monotonic() > stop:
                return
            h.wfile.write(data[i:i + 1])
            h.wfile.flush()
            time.sleep(every)
        h.close_connection = True
    return behaviour


def oversized(declared: bool, size: int) -> Behaviour:
    """A valid JSON answer padded past the limit, sent as fast as loopback goes."""
    def behaviour(h, entry):
        head, tail = b'{"epochPerformanceSummary": [], "pad": "', b'"}'
        chunk = b"x" * 2**20
        n = (size - len(head) - len(tail)) // len(chunk)
        h.send_response(200)
        h.send_header("Content-Type", "application/json")
        if declared:
            h.send_header("Content-Length", str(len(head) + n * len(chunk) + len(tail)))
        h.end_headers()
        h.wfile.write(head)
        stop = time.monotonic() + SERVE_AT_MOST
        for _ in range(n):
            if time.monotonic() > stop:
                return
            h.wfile.write(chunk)
        h.wfile.write(tail)
        h.close_connection = True
    return behaviour


def rate_limited(retry_after: str, times: int = 2) -> Behaviour:
    served = {"n": 0}

    def behaviour(h, entry):
        served["n"] += 1
        if served["n"] <= times:
            send(h, 429, b'{"code": 8, "message": "rate limited"}', {"Retry-After": retry_after})
        else:
            send(h, 200, entry["body"].encode())
    return behaviour


def of_epoch(key: str, epoch: int, only: str = "") -> Behaviour:
    """The recorded answer with the epoch_index of its ``key`` item(s) changed (for the
    requests whose path and query hold ``only``)."""
    def behaviour(h, entry):
        data = json.loads(entry["body"])
        if only in h.path:
            items = data[key] if isinstance(data[key], list) else [data[key]]
            for x in items:
                x["epoch_index"] = str(epoch)
        send(h, 200, json.dumps(data).encode())
    return behaviour


def no_summaries(h, entry):
    send(h, 200, b'{"epochPerformanceSummary": []}')


# -- tests -------------------------------------------------------------------------
@pytest.mark.parametrize("behaviour, why", [
    (malformed, "malformed JSON"),
    (nested, "malformed JSON (nested too deeply)"),
    (truncated, "unreachable (RemoteProtocolError)"),
], ids=["malformed", "nested", "truncated"])
def test_a_broken_answer_is_missing_and_the_rest_is_stored(db, hostile, behaviour, why):
    node = hostile({SUMMARY: behaviour})
    assert_summary_missing(db, collect(db, node.url), why)


@pytest.mark.parametrize("what", ["headers", "body"])
def test_a_dripped_answer_hits_the_total_deadline(db, hostile, what):
    """One byte every 0.1 s never trips the 0.3 s read timeout; the 12 × 0.3 = 3.6 s
    deadline ends the request, which is not retried."""
    node = hostile({SUMMARY: drip(what)})
    t0 = time.monotonic()
    r = collect(db, node.url, "--timeout", "0.3", timeout=60)
    took = time.monotonic() - t0
    assert_summary_missing(db, r, "no complete answer within the 3.6 s deadline")
    assert node.hits[SUMMARY] == 1
    assert took < 30, took


# Runs a command in a child of its own and writes that child's peak RSS (kB) to argv[1].
# The extra process matters: a child's ru_maxrss counts what it inherited at fork, and
# the pytest process is large; this small launcher is what the measured command forks from.
_LAUNCHER = """
import os, sys
pid = os.fork()
if pid == 0:
    os.execv(sys.argv[2], sys.argv[2:])
_, status, usage = os.wait4(pid, 0)
open(sys.argv[1], "w").write(str(usage.ru_maxrss))
sys.exit(os.waitstatus_to_exitcode(status))
"""


def run_measured(*args: str, db: Path, tmp_path: Path, timeout: float = 120) -> tuple[subprocess.CompletedProcess, int]:
    """Run the CLI as run_cli does; also return its peak RSS in bytes."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("AUDITOR_")} | {"NO_COLOR": "1"}
    rss = tmp_path / "rss"
    cmd = [sys.executable, "-c", _LAUNCHER, str(rss), sys.executable, "-m", "auditor", "--db", str(db), *args]
    done = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=timeout)
    return done, int(rss.read_text()) * 1024  # Linux: kilobytes


def assert_rss_within(rss: int, baseline: int, most: float, what: str, capsys) -> None:
    """Memory bounds are ratios: ``rss`` may be at most ``most`` times ``baseline``, the peak
    RSS of the same command on ordinary input measured in the same run (an absolute bound
    held here and failed on a CI machine with more cores)."""
    with capsys.disabled():
        print(f"\n  peak RSS of {what}: {rss / 2**20:.0f} MiB, {rss / baseline:.2f}x the "
              f"{baseline / 2**20:.0f} MiB of the same command on ordinary input")
    assert rss < most * baseline, (rss, baseline)


def collect_baseline(hostile, tmp_path: Path) -> int:
    """Peak RSS of a collect of the recording, answered as recorded, into a store of its own."""
    (tmp_path / "baseline").mkdir()
    r, rss = run_measured("collect", "-e", "403", "--node", hostile({}).url, "--rate", "0",
                          db=tmp_path / "baseline" / "a.duckdb", tmp_path=tmp_path / "baseline")
    assert r.returncode == 0, r.stderr
    return rss


@pytest.mark.parametrize("declared, size, why", [
    (True, 512 * 2**20, "bytes refused (limit 64 MiB)"),
    (False, LIMIT + 16 * 2**20, "body larger than 64 MiB refused"),
], ids=["content-length-512MiB", "streamed-80MiB"])
def test_an_oversized_answer_is_refused_in_bounded_memory(db, tmp_path, hostile, declared, size, why, capsys):
    assert http.MAX_BODY == LIMIT
    node = hostile({SUMMARY: oversized(declared, size)})
    r, rss = run_measured("collect", "-e", "403", "--node", node.url, "--rate", "0", db=db, tmp_path=tmp_path)
    assert_summary_missing(db, r, why)
    assert_rss_within(rss, collect_baseline(hostile, tmp_path), 2.5, f"collect with a {size / 2**20:.0f} MiB answer",
                      capsys)


@pytest.mark.parametrize("value", ["-5", "nan", "inf", "-inf", "soon", "1e999", ""])
def test_an_unusable_retry_after_counts_as_absent(db, hostile, value):
    node = hostile({SUMMARY: rate_limited(value)})
    r = collect(db, node.url)
    assert r.returncode == 0, r.stderr
    assert node.hits[SUMMARY] == 3  # 429, 429, 200: backoff instead of the header
    assert one(db, "SELECT count(*) FROM chain_performance") == 27


def test_a_retry_after_date_is_honoured(db, hostile):
    node = hostile({SUMMARY: rate_limited("Wed, 21 Oct 2015 07:28:00 GMT", times=1)})  # in the past: now
    r = collect(db, node.url)
    assert r.returncode == 0, r.stderr
    assert one(db, "SELECT count(*) FROM chain_performance") == 27


@pytest.mark.parametrize("path, behaviour, item, why", [
    (SUMMARY, of_epoch("epochPerformanceSummary", 402), "epoch_performance_summary",
     "summaries of epoch 402, not 403"),
    (f"{API}/epoch_group_data/404", of_epoch("epoch_group_data", 403), "epoch_group_data (N+1)",
     "epoch group data of epoch 403, not 404"),
    (f"{API}/epoch_group_data/403", of_epoch("epoch_group_data", 402, "model_id=zai-org"),
     "epoch_group_data model=zai-org/GLM-5.3-Flash", "epoch group data of epoch 402, not 403"),
    (f"{API}/excluded_participants/403", of_epoch("items", 402), "excluded_participants",
     "exclusions of epoch 402, not 403"),
    (f"{API}/confirmation_poc_events/403", of_epoch("events", 402), "confirmation_poc_events",
     "events of epoch 402, not 403"),
], ids=["summaries", "next-group", "model-group", "exclusions", "cpoc-events"])
def test_an_answer_for_another_epoch_is_a_shape_error_and_the_epoch_not_complete(db, hostile, path, behaviour,
                                                                                  item, why):
    node = hostile({path: behaviour})
    r = collect(db, node.url)
    assert r.returncode == 3 and "Traceback" not in r.stderr and why in r.stderr, r.stderr
    (status, detail, url), = q(db, "SELECT status, detail, source_url FROM coverage WHERE item = ?", [item])
    assert status == "missing" and why in detail and (node.url + path) in (url or detail)
    assert one(db, "SELECT complete FROM chain_epochs") is False
    if item == "epoch_performance_summary":
        assert_summary_missing(db, r, why)
    # not cached as finished: a later collect asks again and, from a good node, completes
    good = hostile({})
    r = collect(db, good.url)
    assert r.returncode == 0, r.stderr
    assert one(db, "SELECT count(*) FROM chain_performance") == 27
    assert one(db, "SELECT complete FROM chain_epochs") is True


def test_a_root_group_of_another_epoch_stores_nothing(db, hostile):
    node = hostile({f"{API}/epoch_group_data/403": of_epoch("epoch_group_data", 402)})
    r = collect(db, node.url)
    assert r.returncode == 3 and "Traceback" not in r.stderr, r.stderr
    assert r.stderr.strip().splitlines()[-1].endswith("epoch group data of epoch 402, not 403")
    assert one(db, "SELECT count(*) FROM chain_epochs") == 0


def test_an_empty_summary_of_a_settled_epoch_is_one_missing_row(db, hostile):
    node = hostile({SUMMARY: no_summaries})
    assert_summary_missing(db, collect(db, node.url), "the node returned no rows for a settled epoch")


def test_a_cross_host_redirect_records_the_final_url(db, hostile):
    """Redirects are followed, to another host too; provenance is where the answer came
    from. The other host is the name localhost (the test serves on 127.0.0.1 only)."""
    target = hostile({})
    elsewhere = target.url.replace("127.0.0.1", "localhost")

    def moved(h, entry):
        h.send_response(307)
        h.send_header("Location", elsewhere + h.path)
        h.send_header("Content-Length", "0")
        h.end_headers()

    front = hostile({SUMMARY: moved})
    r = collect(db, front.url)
    assert r.returncode == 0, r.stderr
    assert target.hits[SUMMARY] == 1
    assert one(db, "SELECT DISTINCT source_url FROM chain_performance") == elsewhere + SUMMARY
    assert one(db, "SELECT source_url FROM coverage WHERE item = 'epoch_performance_summary'") == elsewhere + SUMMARY
    assert one(db, "SELECT count(*) FROM chain_ml_nodes WHERE source_url LIKE ?", [front.url + "%"]) == 172


def test_a_cut_string_is_said_once(db, hostile):
    """Python's message for a cut string ends in "at": it read "starting at at char 6"."""
    node = hostile({SUMMARY: lambda h, entry: send(h, 200, b'{"a": "abc')})
    assert_summary_missing(db, collect(db, node.url), "malformed JSON (Unterminated string starting at char 6)")
