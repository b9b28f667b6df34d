"""Every scenario the suites run has a sabotage: a test of the harness's own that runs it against a broken
setup and sees it fail (``@pytest.mark.sabotages(<node id>)``). A scenario without one could pass whatever
the components did; this test lists them and fails on any.
"""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

from kbc.supply import paths
from tests.sabotage import declared

ROOT = paths.repo_root()


def scenarios() -> set[str]:
    """``suites/<module>::<test function>`` of every scenario the suites define."""
    found = set()
    for path in sorted((ROOT / "suites").glob("test_*.py")):
        tree = ast.parse(path.read_text())
        for node in tree.body:
            if isinstance(node, ast.FunctionDef) and node.name.startswith("test_"):
                found.add(f"suites/{path.name}::{node.name}")
    return found


def sabotaged() -> dict[str, list[str]]:
    """Scenario node id -> the harness's tests that sabotage it (their ``sabotages`` markers, and the
    sabotages that declare their scenario, which tests/integration/test_sabotages.py runs)."""
    found: dict[str, list[str]] = {}
    for plugin, expect in declared().items():
        found.setdefault(expect.scenario, []).append(
            f"test_sabotages.py::test_the_scenario_fails_with_its_sabotage[{plugin}]"
        )
    for path in sorted((ROOT / "tests" / "integration").glob("test_*.py")):
        module = importlib.import_module(f"tests.integration.{path.stem}")
        for name, function in vars(module).items():
            if not name.startswith("test_") or not callable(function):
                continue
            marks = list(getattr(function, "pytestmark", []))
            # A parametrized test's cases may each sabotage a scenario of their own (their params' marks).
            for mark in [m for m in marks if m.name == "parametrize"]:
                marks += [m for case in mark.args[1] if hasattr(case, "marks") for m in case.marks]
            for mark in marks:
                if mark.name == "sabotages":
                    for scenario in mark.args:
                        found.setdefault(str(scenario), []).append(f"{path.name}::{name}")
    return found


def test_every_scenario_of_the_suites_has_a_sabotage_that_turns_it_red() -> None:
    defined, covered = scenarios(), sabotaged()
    missing = sorted(defined - set(covered))
    assert not missing, (
        f"{len(defined) - len(missing)} of {len(defined)} scenarios have a sabotage; these have none (add a "
        "tests/sabotage plugin that declares EXPECT = Expect(scenario=<node id>, because=...), or an "
        "explicit test marked @pytest.mark.sabotages(<node id>) that sees the scenario fail with it):\n  "
        + "\n  ".join(missing)
    )


def test_every_sabotage_names_a_scenario_that_exists() -> None:
    stale = {scenario: tests for scenario, tests in sabotaged().items() if scenario not in scenarios()}
    assert not stale, f"sabotages naming no scenario of the suites (renamed or removed?): {stale}"


@pytest.mark.parametrize("plugin", sorted(p.stem for p in (ROOT / "tests" / "sabotage").glob("[a-z]*.py")))
def test_every_sabotage_plugin_is_used_by_a_test(plugin: str) -> None:
    if plugin in declared():
        return  # tests/integration/test_sabotages.py runs it
    used = [
        p.name
        for p in (ROOT / "tests" / "integration").glob("*.py")
        if f'"{plugin}"' in p.read_text() or f"tests.sabotage.{plugin}" in p.read_text()
    ]
    assert used, f"tests/sabotage/{plugin}.py is loaded by no test: remove it or use it"


def test_the_count_of_scenarios_and_sabotages_is_what_the_docs_say() -> None:
    defined, covered = scenarios(), sabotaged()
    said = f"{len(set(covered) & defined)} of {len(defined)} scenarios"
    suites_doc = (ROOT / "docs" / "suites.md").read_text()
    assert said in suites_doc, f"docs/suites.md should say the sabotage coverage as it is: {said}"


def test_a_scenario_is_found_in_every_suite_module() -> None:
    modules = {s.split("::")[0] for s in scenarios()}
    assert modules == {f"suites/{p.name}" for p in Path(ROOT / "suites").glob("test_*.py")}
