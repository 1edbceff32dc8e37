"""Shared test helpers: run the real CLI in a subprocess, serve recordings on loopback."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

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


def write_recording(directory: Path, entries: list[dict]) -> Path:
    """Write replay entries (path, query, height, status, body) as a recording directory."""
    directory.mkdir(parents=True, exist_ok=True)
    for i, e in enumerate(entries, 1):
        entry = {"query": "", "height": None, "status": 200, "content_type": "application/json", **e}
        if not isinstance(entry["body"], str):
            entry["body"] = json.dumps(entry["body"])
        (directory / f"{i:06d}.json").write_text(json.dumps(entry), encoding="utf-8")
    return directory
