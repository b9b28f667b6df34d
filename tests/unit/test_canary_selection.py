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


def on_pins(ids: list[str], pins: str) -> list[str]:
    return [f"{nodeid}[{pins}-pins]" for nodeid in ids]


@pytest.mark.parametrize("args", [("-m", "upgrade"), ("--upgrade-from", "previous")])
def test_every_suite_runs_on_the_old_pins_then_the_canary_upgrades_then_every_suite_again(
    args: tuple[str, ...],
) -> None:
    ids, plain = collected(*args), collected()
    assert ids == [*on_pins(plain, "old"), CANARY, *on_pins(plain, "new")]


def test_a_capability_selection_keeps_the_upgrade_between_the_two_runs() -> None:
    gang = collected("-m", "gang")
    assert gang, "no gang scenario collected"
    assert collected("-m", "upgrade and gang") == [*on_pins(gang, "old"), CANARY, *on_pins(gang, "new")]


def test_kbc_canary_hands_the_options_it_does_not_know_to_pytest() -> None:
    """``kbc canary --from previous --provider local -m 'upgrade and gang'``, as the README shows it."""
    command = [sys.executable, "-m", "kbc.cli", "canary", "--from", "previous", "--provider", "local"]
    proc = subprocess.run(
        [*command, "-m", "upgrade and gang", "--collect-only", "-q", "-p", "no:cacheprovider"],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    ids = [line for line in proc.stdout.splitlines() if "::" in line]
    gang = collected("-m", "gang")
    assert ids == [*on_pins(gang, "old"), CANARY, *on_pins(gang, "new")]
