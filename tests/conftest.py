"""Shared test helpers: run the real CLI (in this process, or in one of its own), serve
recordings on loopback."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from tools.recording import write_recording  # noqa: F401  (tests import it from here)

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures"
SHARED = ROOT.parent / "shared"


# what this process cannot give a run of its own, so that run_cli starts one for it: environment
# variables read once at import or start-up (PYTHON* too), arguments naming the real descriptors
READ_AT_IMPORT = {"TZ", "AUDITOR_NO_COMPILED"}
OWN_DESCRIPTORS = ("/dev/stdin", "/dev/stdout", "/dev/stderr", "/dev/fd/", "/proc/self/fd/")


def ctrl_c_able() -> None:
    """``preexec_fn`` of a child a test sends SIGINT: SIGINT at its default action, as a
    terminal's Ctrl-C finds it. A shell's background job (``cmd &``, the way a CI script may
    run the suite) ignores SIGINT, its children inherit that, and Python then installs no
    handler: the SIGINT would be lost and the test would wait forever."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _needs_a_process(argv: list[str], env: dict[str, str]) -> bool:
    return (any(k in READ_AT_IMPORT or k.startswith("PYTHON") for k in env)
            or any(a.startswith(OWN_DESCRIPTORS) for a in argv))


def run_cli(*args: str, db: Path | None = None, env: dict[str, str] | None = None,
            stdin: str | bytes | None = None, timeout: float = 120, process: bool = False,
            cwd: Path | None = None) -> subprocess.CompletedProcess:
    """Run ``auditor ARGS`` as a user would: exit code, stdout and stderr (text, or bytes when
    ``stdin`` is bytes), under the environment less AUDITOR_* plus COLUMNS=200, NO_COLOR=1
    and ``env``.

    In this process by default (the entry point ``auditor.cli.main``, as ``python -m auditor``
    calls it, with its streams, environment, argv and cwd swapped in); with ``process=True``
    (or, by itself, for an ``env`` or argument of _needs_a_process) as ``python -m auditor``
    in a subprocess, for what needs a process of its own: signals, a lock this process holds,
    the real file descriptors, another interpreter setting. In process, ``timeout`` is a
    SIGALRM that ends the run with subprocess.TimeoutExpired, as the subprocess's would.
    tests/test_run_cli.py checks that both give the same answer."""
    argv = (["--db", str(db)] if db is not None else []) + [str(a) for a in args]
    full_env = {k: v for k, v in os.environ.items() if not k.startswith("AUDITOR_")}
    full_env.update({"COLUMNS": "200", "NO_COLOR": "1"})
    full_env.update(env or {})
    if process or _needs_a_process(argv, env or {}):
        return subprocess.run([sys.executable, "-m", "auditor", *argv], input=stdin, capture_output=True,
                              env=full_env, timeout=timeout, text=not isinstance(stdin, bytes), cwd=cwd)
    return _in_process(argv, full_env, stdin, timeout, cwd)


class _Routed:
    """A standard stream during an in-process run: the running command's thread uses the
    run's stream, every other thread the one it had. The test's loopback servers print their
    handlers' tracebacks to stderr from threads of their own, which a process of the CLI's own
    would never have seen. (The CLI's own threads, which print nothing, would go there too.)"""

    def __init__(self, mine, was) -> None:
        self._mine, self._was, self._owner = mine, was, threading.get_ident()

    def __getattr__(self, name: str):
        return getattr(self._mine if threading.get_ident() == self._owner else self._was, name)


class _Hung(BaseException):
    """Raised in an in-process run at its timeout (no handler of the CLI's catches it)."""


def _hung(signum, frame):
    raise _Hung


def _in_process(argv: list[str], env: dict[str, str], stdin: str | bytes | None, timeout: float,
                cwd: Path | None) -> subprocess.CompletedProcess:
    """``auditor.cli.main(argv)`` with everything a process would have had of its own."""
    import io
    import signal
    import warnings

    from auditor import cli

    data = stdin.encode() if isinstance(stdin, str) else (stdin or b"")
    out, err = io.BytesIO(), io.BytesIO()
    streams = (io.TextIOWrapper(io.BytesIO(data), encoding="utf-8"),
               io.TextIOWrapper(out, encoding="utf-8", write_through=True),
               io.TextIOWrapper(err, encoding="utf-8", errors="backslashreplace", write_through=True))
    saved_env, saved_argv, saved_streams, saved_cwd = dict(os.environ), sys.argv, (sys.stdin, sys.stdout,
                                                                                  sys.stderr), os.getcwd()
    handlers = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGALRM)}
    os.environ.clear()
    os.environ.update(env)
    sys.argv = ["auditor", *argv]                   # command_line() reads it, for the md and html reports
    sys.stdin, sys.stdout, sys.stderr = (_Routed(mine, was) for mine, was in zip(streams, saved_streams))
    vars(cli.state).clear()                         # --db, --quiet, --debug of the last run: the defaults again
    signal.signal(signal.SIGALRM, _hung)            # a hung run (serve, a FIFO) fails instead of the suite hanging
    signal.setitimer(signal.ITIMER_REAL, timeout)
    hung = False
    try:
        if cwd is not None:
            os.chdir(cwd)
        with warnings.catch_warnings():             # as a fresh interpreter shows them: on stderr
            warnings.resetwarnings()
            for category in (DeprecationWarning, PendingDeprecationWarning, ImportWarning, ResourceWarning):
                warnings.simplefilter("ignore", category)
            warnings.showwarning = lambda m, c, f, n, file=None, line=None: sys.stderr.write(
                warnings.formatwarning(m, c, f, n, line))
            cli.main(argv)
        code = 0
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 0 if exc.code is None else 1
        if not isinstance(exc.code, (int, type(None))):
            print(exc.code, file=sys.stderr)
    except _Hung:
        hung = True
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        for s in streams[1:]:
            s.flush()
        sys.stdin, sys.stdout, sys.stderr = saved_streams
        sys.argv = saved_argv
        os.environ.clear()
        os.environ.update(saved_env)
        os.chdir(saved_cwd)
        for s, h in handlers.items():
            signal.signal(s, h)
    if hung:
        raise subprocess.TimeoutExpired(["auditor", *argv], timeout)
    stdout, stderr = out.getvalue(), err.getvalue()
    if not isinstance(stdin, bytes):                # as subprocess.run(text=True) decodes: universal newlines
        stdout, stderr = (b.decode().replace("\r\n", "\n").replace("\r", "\n") for b in (stdout, stderr))
    return subprocess.CompletedProcess(["auditor", *argv], code % 256, stdout, stderr)


def run_json(*args: str, **kw) -> object:
    r = run_cli(*args, **kw)
    assert r.returncode in (0, 1), f"exit {r.returncode}: {r.stderr}"
    return json.loads(r.stdout)


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return tmp_path / "auditor.duckdb"


@pytest.fixture
def record_server():
    """``record_server(dir)`` starts a loopback replay server for a recording directory."""
    from auditor.sources.replay import ReplayServer

    servers = []

    def start(directory: Path) -> "ReplayServer":
        s = ReplayServer(directory).__enter__()
        servers.append(s)
        return s

    yield start
    for s in servers:
        s.__exit__(None, None, None)


@contextmanager
def loopback(answer: Callable[[str, dict[str, str]], tuple[int, bytes, str]]) -> Iterator[str]:
    """An HTTP server on 127.0.0.1 for the block, every GET answered by ``answer(path and
    query, request headers) -> (status, body, content type)``; yields its base URL."""
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802
            status, body, ctype = answer(self.path, dict(self.headers.items()))
            self.send_response(status)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    httpd.daemon_threads = True
    threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()
        httpd.server_close()


def q(db: Path, sql: str, params: list | None = None) -> list[tuple]:
    """Rows of a query against a store file, opened read-only (as another process would)."""
    import duckdb

    with duckdb.connect(str(db), read_only=True) as con:
        return con.execute(sql, params or []).fetchall()


def one(db: Path, sql: str, params: list | None = None):
    """The single row of a query: its value when it has one column, else the tuple."""
    rows = q(db, sql, params)
    assert len(rows) == 1, rows
    return rows[0] if len(rows[0]) > 1 else rows[0][0]


OLD_STORE = FIXTURES / "stores" / "demo-403-schema016.duckdb.gz"


def old_store(folder: Path, name: str = "old.duckdb") -> Path:
    """The demo's store as the auditor at 9c64b57 wrote it (schema 001..016; fixtures/stores/README.md),
    unpacked into ``folder``: a store in the layout before issue 37, to convert."""
    import gzip
    import shutil

    path = folder / name
    with gzip.open(OLD_STORE, "rb") as src, open(path, "wb") as dst:
        shutil.copyfileobj(src, dst)
    return path
