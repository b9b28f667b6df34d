"""Which scenarios a session runs with and without the upgrade canary (collection only, no cluster)."""

from __future__ import annotations

import functools
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import cast

import pytest

from kbc.plugins import canary
from kbc.plugins.canary import selects
from kbc.plugins.cluster import session_key
from kbc.report.canary import Canary
from kbc.supply.lock import load_lock
from kbc.supply.upgrade_from import load_upgrade_source

REPO = Path(__file__).resolve().parents[2]
CANARY = "suites/test_upgrade.py::test_an_upgrade_keeps_every_queue_quota_and_running_workload"


def collect_only(*command: str) -> subprocess.CompletedProcess[str]:
    """``python -m *command* --collect-only -q`` (``pytest suites ...``, ``kbc.cli canary ...``) in the
    repository; the caller checks the exit code."""
    return subprocess.run(
        [sys.executable, "-m", *command, "--collect-only", "-q", "-p", "no:cacheprovider"],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=False,
    )


def collected(*args: str) -> list[str]:
    """The node ids ``pytest suites --collect-only`` selects with *args*."""
    return list(_collected(args))


@functools.cache  # the tree does not change during a run: each selection is collected once (~10 s each)
def _collected(args: tuple[str, ...]) -> tuple[str, ...]:
    proc = collect_only("pytest", "suites", *args)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return tuple(line for line in proc.stdout.splitlines() if "::" in line)


def test_without_the_canary_the_upgrade_scenario_is_left_out() -> None:
    ids = collected()
    assert ids and CANARY not in ids
    assert CANARY not in collected("-m", "not upgrade")


def on_pins(ids: list[str], pins: str) -> list[str]:
    return [f"{nodeid}[{pins}-pins]" for nodeid in ids]


def canary_order(plain: list[str]) -> list[str]:
    """The order a canary session runs *plain* (a session's scenarios without the canary) in: the shared
    cluster's scenarios on the old pins, the upgrade, the same on the new pins; then, per configuration of
    its own (the test id's parameter), its scenarios on the old pins and, that cluster upgraded, the new."""
    own: dict[str, list[str]] = {}
    for nodeid in plain:
        if "[" in nodeid:
            own.setdefault(nodeid.partition("[")[2].removesuffix("]"), []).append(nodeid)
    shared = [nodeid for nodeid in plain if "[" not in nodeid]
    per_profile = [
        f"{nodeid.partition('[')[0]}[{pins}-pins-{profile}]"
        for profile, nodeids in own.items()
        for pins in ("old", "new")
        for nodeid in nodeids
    ]
    return [*on_pins(shared, "old"), CANARY, *on_pins(shared, "new"), *per_profile]


@pytest.mark.parametrize("args", [("-m", "upgrade"), ("--upgrade-from", "previous")])
def test_every_suite_runs_on_the_old_pins_then_the_canary_upgrades_then_every_suite_again(
    args: tuple[str, ...],
) -> None:
    plain = collected()
    profiles = {nodeid.partition("[")[2] for nodeid in plain if "[" in nodeid}
    assert "kueue-fair-sharing]" in profiles and len(profiles) > 1, f"configurations collected: {profiles}"
    assert collected(*args) == canary_order(plain)


def test_a_capability_selection_keeps_the_upgrade_between_the_two_runs() -> None:
    gang = collected("-m", "gang")
    assert gang, "no gang scenario collected"
    assert collected("-m", "upgrade and gang") == canary_order(gang)


def test_kbc_canary_hands_the_options_it_does_not_know_to_pytest() -> None:
    """``kbc canary --from previous --provider local -m 'upgrade and gang'``, as the README shows it."""
    proc = collect_only(
        "kbc.cli", "canary", "--from", "previous", "--provider", "local", "-m", "upgrade and gang"
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    ids = [line for line in proc.stdout.splitlines() if "::" in line]
    assert ids == canary_order(collected("-m", "gang"))


SCALE = "suites/test_upgrade.py::test_kueues_performance_test_holds_from_old_pins_to_new"
SCALED = ("--scale", "baseline")


def test_the_scale_scenario_runs_only_in_a_canary_given_scale() -> None:
    assert SCALE not in collected("-m", "upgrade") and SCALE not in collected()
    with_scale = collected("-m", "upgrade", "--scale", "baseline")
    # First, before the canary's cluster starts: the performance runs have the machine to themselves.
    assert with_scale[0] == SCALE and with_scale[1:] == collected("-m", "upgrade")
    assert collected("-m", "upgrade and scale", "--scale", "baseline") == [SCALE]
    # kbc canary --scale hands it on, with its runs and settings.
    proc = collect_only(
        "kbc.cli", "canary", "--scale", "baseline", "--scale-runs", "2", "--scale-timeout", "200",
        "-m", "upgrade and scale",
    )  # fmt: skip
    assert proc.returncode == 0 and SCALE in proc.stdout, proc.stdout + proc.stderr


def test_scale_without_the_canary_is_refused_and_says_how_to_ask_for_it() -> None:
    proc = collect_only("pytest", "suites", *SCALED)
    assert proc.returncode == pytest.ExitCode.USAGE_ERROR, proc.stdout + proc.stderr
    assert "add -m upgrade" in proc.stderr and "kbc canary --scale CONFIG" in proc.stderr, proc.stderr


@pytest.mark.parametrize(
    "expression, on",
    [
        ("upgrade", True),
        ("upgrade and gang", True),
        ("(upgrade)", True),
        ("gang or upgrade", True),
        ("upgrade  and  kueue", True),
        ('upgrade(kind="local")', True),
        ("upgrade and my_team_marker", True),
        ("my_team_marker or (not upgrade and dra)", False),
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


def test_an_expression_pytest_cannot_read_is_refused_in_pytest_s_words() -> None:
    with pytest.raises(ValueError, match=r"-m 'upgrade\(kind=local\)': "):
        selects("upgrade(kind=local)", "upgrade")


def test_the_canary_starts_a_component_the_session_leaves_out_at_the_current_pins(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # kind's --kind-images build builds every pinned image: an old release of a component no one installs
    # made every kind canary of Kueue and JobSet alone fail, building a Volcano the module proxy refuses.
    lock = load_lock()
    old = load_upgrade_source("previous", lock)
    monkeypatch.setattr(canary, "get_provider", lambda *_: SimpleNamespace(unavailable=lambda changed: {}))
    session = SimpleNamespace(components=["kueue", "jobset"], provider_name="kind", options={})
    config = SimpleNamespace(stash={canary.canary_key: Canary("previous", lock, old), session_key: session})
    start = canary.pytest_kbc_start_lock(cast(pytest.Config, config))
    assert start is not None
    for name in ("kueue", "jobset"):
        assert start.components[name].app_version == old.components[name].app_version
    assert start.components["volcano"] == lock.components["volcano"]
    assert old.components["volcano"].app_version != lock.components["volcano"].app_version
