"""A host operator's path (issue 33): a mistyped address, a missing log file, a bare
``auditor`` and an exit 3 each say what is wrong, in one line, before any work."""

from __future__ import annotations

import pytest

from conftest import FIXTURES, run_cli
from test_reports import DEMO, STORY, demo  # noqa: F401  (demo: the store of every bundled source)

VICTIM = STORY["victim"]


@pytest.mark.parametrize("command", ["epoch", "misstest", "poc-overload", "hedging"])
def test_a_mistyped_full_address_is_a_usage_error_naming_the_closest(demo, command):
    typo = VICTIM[:-1] + ("q" if VICTIM[-1] != "q" else "p")
    r = run_cli(command, "403", "--offline", "--participant", typo, db=demo)
    assert r.returncode == 2, r.stdout[-500:]
    (line,) = r.stderr.strip().splitlines()[-1:]
    assert f"--participant {typo} is no participant of epoch 403" in line
    assert f"the closest stored address is {VICTIM}" in line
    assert r.stdout == ""


def test_an_address_nothing_near_is_said_so_and_a_right_one_runs(demo):
    r = run_cli("misstest", "403", "--offline", "--participant", "gonka1" + "a" * 38, db=demo)
    assert r.returncode == 2 and "no stored address is near it" in r.stderr
    r = run_cli("misstest", "403", "--offline", "--participant", VICTIM, "--format", "json", db=demo)
    assert r.returncode == 0, r.stderr
