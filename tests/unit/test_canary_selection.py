"""Which scenarios a session runs with and without the upgrade canary (collection only, no cluster)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
CANARY = "suites/test_upgrade.py::test_an_upgrade_keeps_every_queue_quota_and_running_workload"


def collected(*args: str) -> list[str]:
    """The node ids ``pytest suites --collect-only`` selects with *args*."""
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "suites", "--collect-only", "-q", "-p", "no:cacheprovider", *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return [line for line in proc.stdout.splitlines() if "::" in line]


def test_without_the_canary_the_upgrade_scenario_is_left_out() -> None:
    ids = collected()
    assert ids and CANARY not in ids
    assert CANARY not in collected("-m", "not upgrade")


@pytest.mark.parametrize("args", [("-m", "upgrade"), ("--upgrade-from", "previous")])
def test_the_canary_upgrades_first_and_every_suite_follows(args: tuple[str, ...]) -> None:
    ids = collected(*args)
    assert ids[0] == CANARY, ids[:3]
    assert len(ids) == len(collected()) + 1, "every other suite runs after the upgrade"


def test_a_capability_selection_keeps_the_upgrade_in_front() -> None:
    ids = collected("-m", "upgrade and gang")
    assert ids[0] == CANARY
    assert ids[1:] == collected("-m", "gang")
