"""Every test of the harness's own runs in exactly one tier: ``make test`` (the gate) or ``make test-e2e``.

The selections are the Makefile's own (``make tiers`` prints them), collected as pytest collects them; a
test that neither collects (a folder the Makefile does not name, a test both deselect) or both do fails
here with its node id.
"""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from _pytest.mark.expression import Expression

from kbc.supply import paths
from tests import tiers

ROOT = paths.repo_root()


# One collection of everything, each test with the marks it ends up with (the tiers' own included), so
# that each tier's selection is evaluated with pytest's own -m matcher instead of collecting three times.
_COLLECT = """
import json, sys
import pytest

class Marks:
    def pytest_collection_finish(self, session):
        for item in session.items:
            print("KBC-ITEM " + json.dumps([item.nodeid, sorted({m.name for m in item.iter_markers()})]))

sys.exit(pytest.main(sys.argv[1:], plugins=[Marks()]))
"""


def _collect(args: list[str]) -> dict[str, set[str]]:
    """Every test *args* collects → its marks' names."""
    proc = subprocess.run(
        [sys.executable, "-c", _COLLECT, "--collect-only", "-q", "-p", "no:cacheprovider", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert proc.returncode == 0, f"pytest {' '.join(args)} did not collect:\n{proc.stdout}{proc.stderr}"
    found: dict[str, set[str]] = {}
    for line in proc.stdout.splitlines():
        if line.startswith("KBC-ITEM "):
            nodeid, marks = json.loads(line.removeprefix("KBC-ITEM "))
            found[nodeid] = set(marks)
    return found


class _Marks:
    """pytest's -m matcher of one test: a name matches when the test carries that mark."""

    def __init__(self, marks: set[str]) -> None:
        self.marks = marks

    def __call__(self, name: str, /, **kwargs: str | int | bool | None) -> bool:
        return name in self.marks


def _select(selection: list[str], collected: dict[str, set[str]]) -> set[str]:
    """What ``pytest *selection*`` runs of *collected*: its paths, then its ``-m`` expression."""
    roots: list[str] = []
    expression = None
    words = iter(selection)
    for word in words:
        if word == "-m":
            expression = Expression.compile(next(words))
        elif word.startswith("-"):
            pytest.fail(f"make tiers gives an option this test does not read: {word} (teach _select it)")
        else:
            roots.append(word.rstrip("/"))
    chosen = set()
    for nodeid, marks in collected.items():
        path = nodeid.partition("::")[0]
        if not any(path == root or path.startswith(f"{root}/") for root in roots):
            continue
        if expression is None or expression.evaluate(_Marks(marks)):
            chosen.add(nodeid)
    return chosen


@pytest.fixture(scope="module")
def selections() -> dict[str, list[str]]:
    """The tiers' pytest arguments, as the Makefile passes them."""
    proc = subprocess.run(
        ["make", "-s", "--no-print-directory", "tiers"], cwd=ROOT, capture_output=True, text=True, check=True
    )
    gate, e2e = proc.stdout.splitlines()
    return {tiers.GATE: shlex.split(gate), tiers.E2E: shlex.split(e2e)}


@pytest.fixture(scope="module")
def collected() -> dict[str, set[str]]:
    """Every test of ``tests`` and ``suites``, whatever its tier, with its marks."""
    return _collect(["tests", "suites"])


@pytest.fixture(scope="module")
def everything(collected: dict[str, set[str]]) -> set[str]:
    return set(collected)


def test_every_test_runs_in_exactly_one_tier(
    selections: dict[str, list[str]], collected: dict[str, set[str]], everything: set[str]
) -> None:
    gate, e2e = _select(selections[tiers.GATE], collected), _select(selections[tiers.E2E], collected)
    neither = sorted(everything - gate - e2e)
    both = sorted(gate & e2e)
    assert not neither, "tests that neither make test nor make test-e2e runs:\n  " + "\n  ".join(neither)
    assert not both, "tests that both tiers run:\n  " + "\n  ".join(both)
    assert gate and e2e, "a tier that selects nothing: read the Makefile's GATE and E2E"


def test_the_selection_reads_a_tier_as_pytest_does() -> None:
    """The matcher can fail: a path outside the roots, or a mark the expression excludes, is left out."""
    sample = {
        "tests/unit/test_a.py::t": {"e2e"},
        "tests/unit/test_b.py::t": set(),
        "suites/test_c.py::t": set(),
    }
    assert _select(["tests", "-m", "e2e"], sample) == {"tests/unit/test_a.py::t"}
    assert _select(["tests", "suites", "-m", "not e2e"], sample) == {
        "tests/unit/test_b.py::t",
        "suites/test_c.py::t",
    }
    assert _select(["suites"], sample) == {"suites/test_c.py::t"}


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
