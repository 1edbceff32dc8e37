"""Shared test helpers: run the real CLI in a subprocess, serve recordings on loopback."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tools.recording import write_recording  # noqa: F401  (tests import it from here)

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures"
SHARED = ROOT.parent / "shared"


def run_cli(*args: str, db: Path | None = None, env: dict[str, str] | None = None,
            stdin: str | bytes | None = None, timeout: float = 120) -> subprocess.CompletedProcess:
    """Run ``python -m auditor ARGS`` as a user would; stdout/stderr as text."""
    full_env = {k: v for k, v in os.environ.items() if not k.startswith("AUDITOR_")}
    full_env.update({"COLUMNS": "200", "NO_COLOR": "1"})
    if env:
        full_env.update(env)
    cmd = [sys.executable, "-m", "auditor"]
    if db is not None:
        cmd += ["--db", str(db)]
    cmd += list(args)
    return subprocess.run(cmd, input=stdin, capture_output=True, env=full_env, timeout=timeout,
                          text=not isinstance(stdin, bytes))


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

