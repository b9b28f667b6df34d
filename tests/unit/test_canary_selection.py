"""Which scenarios a session runs with and without the upgrade canary (collection only, no cluster)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from kbc.plugins.canary import selects

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
    # A scenario that needs a cluster of its own configuration is not run twice: it is skipped (the
    # canary upgrades one cluster), after the rest, with the other scenarios of its configuration.
    own = [nodeid for nodeid in plain if nodeid.endswith("[kueue-fair-sharing]")]
    shared = [nodeid for nodeid in plain if nodeid not in own]
    assert own, "no scenario with a configuration of its own collected"
    assert ids == [*on_pins(shared, "old"), CANARY, *on_pins(shared, "new"), *own]


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


@pytest.mark.parametrize(
    "expression, on",
    [
        ("upgrade", True),
        ("upgrade and gang", True),
        ("(upgrade)", True),
        ("gang or upgrade", True),
        ("upgrade  and  kueue", True),
        ("upgrade(kind=local)", True),
        ("not upgrade", False),
        ("not (upgrade)", False),
        ("not  upgrade", False),
        ("gang", False),
        ("gang and not upgrade", False),
        ("upgrade or not upgrade", False),
        ("upgrade_extra", False),
        ("not (gang and not upgrade)", True),
    ],
)
def test_the_canary_is_on_only_when_the_expression_selects_the_upgrade_marker(
    expression: str, on: bool
) -> None:
    assert selects(expression, "upgrade") is on


def test_a_scenario_that_needs_a_cluster_of_its_own_is_skipped_by_the_canary_with_the_reason() -> None:
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "suites",
            "-m",
            "upgrade",
            "--collect-only",
            "-q",
            "-rs",
            "-p",
            "no:cacheprovider",
            "-k",
            "fair",
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=False,
    )
    assert "[kueue-fair-sharing]" in proc.stdout, proc.stdout + proc.stderr
