"""Start-up stays light (issue 21): help imports none of the heavy libraries, and an --offline
run sets up no network client. Each check runs the real entry point, ``python -m auditor``, in
a process of its own under ``-X importtime``, which lists every module the run imported."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest

from conftest import FIXTURES, run_cli

HEAVY = ("duckdb", "polars", "pyarrow", "httpx", "rich")     # each costs tens of milliseconds to import


def imported(*args: str) -> tuple[subprocess.CompletedProcess, set[str]]:
    """Run ``auditor ARGS``: its result, and the top-level package of every module it imported."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("AUDITOR_")} | {"COLUMNS": "200"}
    r = subprocess.run([sys.executable, "-X", "importtime", "-m", "auditor", *args], capture_output=True,
                       text=True, env=env, timeout=120)
    names = set(re.findall(r"^import time:\s+\d+ \|\s+\d+ \|\s*([\w.]+)\s*$", r.stderr, re.M))
    assert "auditor.cli" in names, r.stderr[-2000:]         # the listing was read
    return r, {n.split(".")[0] for n in names}


@pytest.mark.parametrize("args", [["--help"], ["epoch", "--help"], ["report", "daily", "--help"]],
                         ids=" ".join)
def test_help_imports_no_heavy_library(args):
    r, packages = imported(*args)
    assert r.returncode == 0 and "Usage:" in r.stdout, r.stderr[-2000:]
    assert not packages & set(HEAVY), f"auditor {' '.join(args)} imported {sorted(packages & set(HEAVY))}"


def test_an_offline_run_sets_up_no_network_client(tmp_path):
    db = tmp_path / "auditor.duckdb"
    c = run_cli("collect", "--epoch", "403", "--replay", str(FIXTURES / "chain" / "epoch-403"), db=db)
    assert c.returncode == 0, c.stderr
    r, packages = imported("--db", str(db), "epoch", "403", "--offline", "--format", "json")
    assert r.returncode in (0, 1) and '"epoch": 403' in r.stdout, r.stderr[-2000:]
    assert "duckdb" in packages                     # the run read the store
    assert "httpx" not in packages
