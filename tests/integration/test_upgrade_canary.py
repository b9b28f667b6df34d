"""The upgrade canary for real on the local provider: Kueue and JobSet at their previous pins, live
state made, upgraded to the current pins, nothing lost; and a broken upgrade turns it red.

Each test runs the canary in a separate pytest process on a cluster of its own (a canary
starts from the old pins, so it cannot share this session's cluster), with Kueue and JobSet
only: the lock's previous Volcano cannot be built here.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from kbc.lockfile import load_lock
from tests.integration.suite_runner import InnerRun, run_pytest

pytestmark = pytest.mark.cluster

TARGET = "suites/test_upgrade.py"
CANARY_CLUSTER = "kbc-selftest-canary"


def run_canary(sabotage: str | None, *extra: str) -> InnerRun:
    return run_pytest(
        [TARGET, "-m", "upgrade", "--provider", "local", "--cluster-name", CANARY_CLUSTER],
        ["--components", "kueue,jobset", "--node-naming", "kind", *extra],
        sabotage=sabotage,
        timeout=600,
    )


def test_the_canary_upgrades_kueue_and_jobset_and_keeps_the_state(tmp_path: Path) -> None:
    lock = load_lock()
    allure, reports = tmp_path / "allure", tmp_path / "reports"
    run = run_canary(None, "--alluredir", str(allure), "--report-dir", str(reports))
    assert run.outcomes == {"passed": 1, "failed": 0, "errors": 0, "skipped": 0}, run.explain()
    environment = (allure / "environment.properties").read_text().splitlines()
    summary = (reports / "summary.md").read_text()
    assert "upgrade.from=previous" in environment, environment
    for name in ("kueue", "jobset"):
        component = lock.components[name]
        old, new = component.previous.app_version, component.app_version
        line = f"upgrade {name} {old} → {new}: "
        assert line in run.output, f"the terminal summary should say {line!r}:\n" + run.explain()
        assert f"- {line}" in summary, summary
        assert f"upgrade.from.{name}.appVersion={old}" in environment, environment
        assert any(e.startswith(f"upgrade.{name}={old} → {new} in ") for e in environment), environment
    assert "objects kept" in run.output and "0 objects kept" not in run.output, run.explain()


def test_the_canary_fails_and_names_a_workload_lost_in_the_upgrade() -> None:
    run = run_canary("upgrade_loses_a_workload")
    assert run.outcomes == {"passed": 0, "failed": 1, "errors": 0, "skipped": 0}, run.explain()
    (failure,) = run.failures
    for words in ("the upgrade changed what the cluster held (before → after)", "Workload ", "job-borrows-"):
        assert words in failure, f"the failure should say {words!r}:\n{failure}"


def test_the_canary_fails_when_the_crds_are_not_upgraded() -> None:
    """Helm's crds/ trap: everything of the new charts applied but their CRDs."""
    run = run_canary("upgrade_skips_crds")
    assert run.outcomes == {"passed": 0, "failed": 1, "errors": 0, "skipped": 0}, run.explain()
    (failure,) = run.failures
    for words in (
        "kbc.errors.CrdsNotUpgraded",
        "Helm installs a chart's crds/ once",
        "CRD jobsets.jobset.x-k8s.io",
    ):
        assert words in failure, f"the failure should say {words!r}:\n{failure}"


def test_the_canary_fails_when_a_stored_version_stops_being_served() -> None:
    run = run_canary("upgrade_drops_a_stored_version")
    assert run.outcomes == {"passed": 0, "failed": 1, "errors": 0, "skipped": 0}, run.explain()
    (failure,) = run.failures
    for words in ("status.storedVersions", "workloads.kueue.x-k8s.io", "migrate them before upgrading"):
        assert words in failure, f"the failure should say {words!r}:\n{failure}"
