"""Every test of the harness's own runs in exactly one tier: ``make test`` (the gate) or ``make test-e2e``.

The selections are the Makefile's own (``make tiers`` prints them), collected as pytest collects them; a
test that neither collects (a folder the Makefile does not name, a test both deselect) or both do fails
here with its node id.
"""

from __future__ import annotations

import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from kbc.supply import paths
from tests import tiers

ROOT = paths.repo_root()


def _collect(args: list[str]) -> set[str]:
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    # 5: nothing collected, which an empty tier may be; anything else is a collection error.
    assert proc.returncode in (0, 5), f"pytest {' '.join(args)} did not collect:\n{proc.stdout}{proc.stderr}"
    return {line for line in proc.stdout.splitlines() if "::" in line and not line.startswith(" ")}


@pytest.fixture(scope="module")
def selections() -> dict[str, list[str]]:
    """The tiers' pytest arguments, as the Makefile passes them."""
    proc = subprocess.run(
        ["make", "-s", "--no-print-directory", "tiers"], cwd=ROOT, capture_output=True, text=True, check=True
    )
    gate, e2e = proc.stdout.splitlines()
    return {tiers.GATE: shlex.split(gate), tiers.E2E: shlex.split(e2e)}


@pytest.fixture(scope="module")
def everything() -> set[str]:
    """Every test of ``tests`` and ``suites``, whatever its tier."""
    return _collect(["tests", "suites"])


def test_every_test_runs_in_exactly_one_tier(selections: dict[str, list[str]], everything: set[str]) -> None:
    gate, e2e = _collect(selections[tiers.GATE]), _collect(selections[tiers.E2E])
    neither = sorted(everything - gate - e2e)
    both = sorted(gate & e2e)
    assert not neither, "tests that neither make test nor make test-e2e runs:\n  " + "\n  ".join(neither)
    assert not both, "tests that both tiers run:\n  " + "\n  ".join(both)
    assert gate and e2e, "a tier that selects nothing: read the Makefile's GATE and E2E"


def test_every_test_module_is_under_a_folder_the_tiers_collect(selections: dict[str, list[str]]) -> None:
    roots = {Path(a) for args in selections.values() for a in args if (ROOT / a).is_dir()}
    skip = {".git", ".venv", "node_modules", "_data"}
    outside = sorted(
        str(path.relative_to(ROOT))
        for path in ROOT.rglob("test_*.py")
        if not skip & set(path.relative_to(ROOT).parts)
        and not any(path.relative_to(ROOT).is_relative_to(root) for root in roots)
    )
    assert not outside, (
        "test modules no tier collects (move them under tests/ or suites/):\n  " + "\n  ".join(outside)
    )


def test_each_named_heavy_test_exists(everything: set[str]) -> None:
    """A name in tests/tiers.py that matches no test (renamed, removed) would silently move it to the gate."""
    stale = [
        name
        for name in tiers.E2E_TESTS
        if not any(test == name or test.startswith((f"{name}::", f"{name}[")) for test in everything)
    ]
    assert not stale, f"tests/tiers.py names tests that do not exist: {stale}"
