"""Kueue or Volcano, from what ran: the table's rows name real scenarios, outcomes become cells, the plugin
writes it where the report is."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest

from kbc.report.ai_conformance import BROKEN, FAILED, PASSED, SKIPPED, Outcome
from kbc.report.schedulers import (
    CAPABILITIES,
    KUEUE,
    VOLCANO,
    Absent,
    Proven,
    Unproven,
    collected,
    rows,
    short,
    table,
    verdict,
)

pytest_plugins = ["pytester"]

REPO = Path(__file__).resolve().parents[2]
PLUGIN = ("-p", "kbc.plugin", "-p", "no:cacheprovider")
GANG = "suites.test_gang.test_two_job_gangs_one_runs_whole_the_other_waits_whole"
VOLCANO_GANG = "suites.test_volcano.test_gang_binds_no_pod_until_the_whole_gang_fits"
BINPACK = "suites.test_volcano_policies.test_binpack_fills_one_node_before_the_next"


def _proven() -> list[str]:
    return list(
        dict.fromkeys(
            test
            for row in CAPABILITIES
            for cell in (row.kueue, row.volcano)
            if isinstance(cell, Proven)
            for test in cell.tests
        )
    )


def test_every_row_names_scenarios_of_the_suites_and_says_why_where_it_has_none() -> None:
    """A renamed or moved scenario must not leave the table pointing at nothing."""
    for test in _proven():
        module, _, function = test.rpartition(".")
        path = REPO / Path(*module.split(".")).with_suffix(".py")
        assert path.is_file(), f"{test}: no {path}"
        defined = {n.name for n in ast.parse(path.read_text()).body if isinstance(n, ast.FunctionDef)}
        assert function in defined, f"{test}: no function {function} in {path}"
    for row in CAPABILITIES:
        cells = (row.kueue, row.volcano)
        assert any(isinstance(c, Proven) for c in cells), f"{row.name}: neither scheduler is proven"
        for cell in cells:
            if isinstance(cell, Proven):
                assert cell.tests, row.name
            elif isinstance(cell, Absent):
                assert ".go:" in cell.why, f"{row.name}: an absent feature cites the source: {cell.why}"
            else:
                assert cell.note, row.name
    assert len({row.name for row in CAPABILITIES}) == len(CAPABILITIES)


def test_a_cell_cites_what_passed_and_names_what_failed() -> None:
    cell = Proven((GANG, VOLCANO_GANG))
    assert verdict(cell, {GANG: Outcome(PASSED), VOLCANO_GANG: Outcome(PASSED)}) == (
        "proved: test_two_job_gangs_one_runs_whole_the_other_waits_whole, "
        "test_gang_binds_no_pod_until_the_whole_gang_fits"
    )
    # One failure makes the capability failed, whatever else passed.
    said = verdict(cell, {GANG: Outcome(PASSED), VOLCANO_GANG: Outcome(FAILED, "bound in part")})
    assert said == "**failed**: test_gang_binds_no_pod_until_the_whole_gang_fits"
    # Proved only where every scenario of the cell passed.
    assert verdict(cell, {GANG: Outcome(PASSED)}) == (
        "in part: proved test_two_job_gangs_one_runs_whole_the_other_waits_whole; "
        "not test_gang_binds_no_pod_until_the_whole_gang_fits (not run)"
    )
    assert verdict(cell, {GANG: Outcome(PASSED), VOLCANO_GANG: Outcome(SKIPPED, "no Volcano")}) == (
        "in part: proved test_two_job_gangs_one_runs_whole_the_other_waits_whole; "
        "not test_gang_binds_no_pod_until_the_whole_gang_fits (skipped: no Volcano)"
    )


def test_a_harness_failure_is_never_a_verdict_and_a_skip_says_why() -> None:
    cell = Proven((GANG,))
    assert verdict(cell, {GANG: Outcome(BROKEN, "ClusterError")}).startswith("no verdict")
    assert verdict(cell, {GANG: Outcome(SKIPPED, "needs Kueue")}) == "skipped: needs Kueue"
    assert verdict(cell, {}) == "not run"
    assert verdict(Absent("x.go:1"), {}) == "no such feature: x.go:1"
    assert verdict(Unproven("partial admission"), {}) == "not proven here: partial admission"


def test_parametrized_runs_and_the_junit_prefix_are_read() -> None:
    outcomes = {f"nightly.{BINPACK}[binpack]": Outcome(PASSED)}
    assert verdict(Proven((BINPACK,)), outcomes, junit_prefix="nightly") == (
        "proved: test_binpack_fills_one_node_before_the_next"
    )
    assert collected([f"nightly.{BINPACK}[binpack]"], junit_prefix="nightly")
    assert not collected(["tests.unit.test_x.test_y"])


def test_the_table_has_a_row_per_capability_and_short_words_for_allure() -> None:
    lines = table({GANG: Outcome(PASSED)})
    assert lines[0] == f"| capability | {KUEUE} | {VOLCANO} |"
    assert len(lines) == 2 + len(CAPABILITIES)
    kueue_gangs = CAPABILITIES[0].kueue
    assert isinstance(kueue_gangs, Proven)
    first = rows({test: Outcome(PASSED) for test in kueue_gangs.tests})[0]
    assert (short(first[KUEUE]), short(first[VOLCANO])) == ("proved", "not run")
    assert short("**failed**: x") == "failed"
    assert short("no such feature: y") == "no such feature"
    assert short("in part: proved a; not b (not run)") == "in part"


def test_the_docs_carry_the_table_of_a_run() -> None:
    text = (REPO / "docs" / "suites.md").read_text()
    assert "## Kueue or Volcano" in text
    for row in CAPABILITIES:
        assert f"| {row.name} |" in text, f"docs/suites.md lacks the row {row.name!r}"


# -- the plugin -------------------------------------------------------------------------------------------


def _make_suites(pytester: pytest.Pytester) -> None:
    """Stand-ins for the table's scenarios: Volcano's gang fails, the binpack scenario skips."""
    modules: dict[str, list[str]] = {}
    for test in _proven():
        module, _, function = test.rpartition(".")
        modules.setdefault(module, []).append(function)
    for module, functions in modules.items():
        body = ["import pytest", ""]
        for function in functions:
            name = f"{module}.{function}"
            if name == VOLCANO_GANG:
                body += [f"def {function}():", "    assert False, 'gang bound in part'", ""]
            elif name == BINPACK:
                body += [f"def {function}():", "    pytest.skip('needs binpack')", ""]
            else:
                body += [f"def {function}():", "    pass", ""]
        path = pytester.path / Path(*module.split(".")).with_suffix(".py")
        path.parent.mkdir(exist_ok=True)
        path.write_text("\n".join(body))


def test_the_plugin_writes_the_table_into_the_report(pytester: pytest.Pytester) -> None:
    _make_suites(pytester)
    reports, allure = pytester.path / "reports", pytester.path / "allure-results"
    result = pytester.runpytest_inprocess(
        *PLUGIN, "--report-dir", str(reports), "--alluredir", str(allure), "suites"
    )
    result.assert_outcomes(passed=len(_proven()) - 2, failed=1, skipped=1)
    written = (reports / "kueue-or-volcano.md").read_text()
    assert "| a gang gets all its pods or none | proved: " in written
    assert "**failed**: test_gang_binds_no_pod_until_the_whole_gang_fits" in written
    assert "in part: proved test_the_chart_spreads_jobs_over_equal_nodes; not " in written
    assert "(skipped: needs binpack)" in written
    assert "no such feature: preempt takes victims in the preemptor's own Queue only" in written
    assert written.strip() in (reports / "summary.md").read_text()
    data = json.loads((reports / "summary.json").read_text())
    assert data["kueue_or_volcano"][0] == {
        "capability": "a gang gets all its pods or none",
        KUEUE: "proved: test_two_job_gangs_one_runs_whole_the_other_waits_whole, "
        "test_jobset_is_admitted_whole_and_a_second_one_waits_whole, "
        "test_plain_pod_group_is_admitted_only_when_complete",
        VOLCANO: "**failed**: test_gang_binds_no_pod_until_the_whole_gang_fits",
    }
    environment = (allure / "environment.properties").read_text().splitlines()
    assert "kueue-or-volcano.a-gang-gets-all-its-pods-or-none=Kueue proved, Volcano failed" in environment
    assert f"→ {reports / 'kueue-or-volcano.md'}" in result.stdout.str()


def test_the_plugin_writes_nothing_for_tests_outside_the_table(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_own="def test_harness():\n    pass\n")
    reports = pytester.path / "reports"
    pytester.runpytest_inprocess(*PLUGIN, "--report-dir", str(reports)).assert_outcomes(passed=1)
    assert not (reports / "kueue-or-volcano.md").exists()
