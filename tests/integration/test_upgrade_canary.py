"""The upgrade canary for real on the local provider: Kueue and JobSet at their previous pins, live
state made, upgraded to the current pins, nothing lost; and a broken upgrade turns it red.

Each test runs the canary in a separate pytest process on a cluster of its own (a canary
starts from the old pins, so it cannot share this session's cluster), with Kueue and JobSet
only: the lock's previous Volcano cannot be built here. Where a test adds the reclaim
scenario, it runs on the old pins before the upgrade and on the new pins after it, and the
two runs are compared; a scenario that needs a Kueue configuration of its own runs on a second cluster,
also started from the old pins and upgraded between its two runs.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kbc.supply.lock import load_lock
from tests.integration.suite_runner import InnerRun, run_pytest, run_pytest_past_the_finding
from tests.locks import lock_with

pytestmark = pytest.mark.cluster

TARGET = "suites/test_upgrade.py"
UPGRADE_SCENARIO = f"{TARGET}::test_an_upgrade_keeps_every_queue_quota_and_running_workload"
RECLAIM = "suites/test_cohort.py::test_lender_reclaims_lent_quota_by_evicting_the_borrower"
RECLAIM_STORY = "a lender reclaims its lent GPUs"
BLOCKING = (
    "suites/test_pods_ready.py::test_block_admission_holds_the_next_workload_until_the_admitted_gang_is_ready"
)
BLOCKING_STORY = "with blockAdmission, a workload that fits its quota waits"
# Issue 27's scenarios the canary must carry from old pins to new: Kueue counting DRA devices in quota,
# and its topology-aware placement.
DRA_GANG = (
    "suites/test_dra.py::test_kueue_admits_a_claim_gang_whole_within_its_dra_quota_and_the_next_waits_whole"
)
DRA_STORY = "Kueue admits a gang of claim-bearing pods whole within its DRA quota"
ONE_RACK = "suites/test_topology.py::test_a_gang_that_needs_one_rack_lands_in_one_rack"
ONE_RACK_STORY = "a gang that must fit one rack is admitted into one rack"
CANARY_CLUSTER = "kbc-selftest-canary"


def run_canary(
    sabotage: str | None,
    *extra: str,
    targets: tuple[str, ...] = (TARGET,),
    components: str = "kueue,jobset",
    past_the_finding: bool = True,
) -> InnerRun:
    """The canary in an inner pytest; run again past Kueue's over-admission finding unless told not to."""
    args = [*targets, "-m", "upgrade", "--provider", "local", "--cluster-name", CANARY_CLUSTER]
    more = ["--components", components, "--node-naming", "kind", *extra]
    if not past_the_finding:
        return run_pytest(args, more, sabotage=sabotage, timeout=600)
    return run_pytest_past_the_finding(args, more, sabotage=sabotage, timeout=600)


def test_the_canary_upgrades_kueue_and_jobset_and_keeps_the_state(tmp_path: Path) -> None:
    lock = load_lock()
    allure, reports = tmp_path / "allure", tmp_path / "reports"
    run = run_canary(
        None,
        "--alluredir",
        str(allure),
        "--report-dir",
        str(reports),
        targets=(TARGET, RECLAIM, DRA_GANG, ONE_RACK, BLOCKING),
    )
    # The reclaim, DRA and one-rack scenarios on the old pins, the canary, the three on the new pins; then
    # the blocking scenario on its own cluster on the old pins, that cluster upgraded, and on the new pins.
    assert run.outcomes == {"passed": 9, "failed": 0, "errors": 0, "skipped": 0}, run.explain()
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
    # The live state carried a claim-bearing Workload and a topology-placed one through the upgrade: a
    # cluster of the harness always offers DRA devices and racks, so none of them may be missing.
    kept = json.loads((reports / "summary.json").read_text())["upgrade"]["kept"]
    assert kept["claims"] >= 1 and kept["placed"] >= 1, kept
    assert (
        f"{kept['claims']} DRA claims' allocations and {kept['placed']} topology assignments unchanged"
        in (run.output)
    ), run.explain()

    profile_line = next(
        (line for line in run.output.splitlines() if line.startswith("cluster of kueue-waitforpodsready-1m")),
        "",
    )
    for name in ("kueue", "jobset"):
        component = lock.components[name]
        upgraded = f"{name} {component.previous.app_version} → {component.app_version}"
        assert upgraded in profile_line, f"the blocking scenario's cluster: {upgraded}?\n" + run.explain()
    # Old against new, measured on both sides: the lender's reclaim preempted the borrower each time.
    comparison = json.loads((reports / "summary.json").read_text())["upgrade"]["comparison"]
    by_story = {
        story: next((c for c in comparison if c["scenario"].startswith(story)), None)
        for story in (RECLAIM_STORY, DRA_STORY, ONE_RACK_STORY, BLOCKING_STORY)
    }
    assert all(by_story.values()) and len(comparison) == 4, comparison
    for story in (DRA_STORY, ONE_RACK_STORY, BLOCKING_STORY):
        measured = by_story[story]
        assert measured is not None and measured["old"]["outcome"] == measured["new"]["outcome"] == "passed"
        assert measured["old"]["not_admitted"] == measured["new"]["not_admitted"] == 0, measured
    compared = by_story[RECLAIM_STORY]
    assert compared is not None
    for side in ("old", "new"):
        measured = compared[side]
        assert measured["outcome"] == "passed", compared
        assert len(measured["admission_seconds"]) == 2, compared  # the borrower's and the lender's
        assert measured["preemptions"] == 1, compared
        assert measured["preemption_reasons"] == ["InCohortReclamation"], compared
        assert measured["reclaim_seconds"] is not None and measured["reclaim_seconds"] > 0, compared
    assert "### Old pins against new pins" in summary, summary
    table = summary.split("### Old pins against new pins", 1)[1]
    row = next(line for line in table.splitlines() if line.startswith(f"| {RECLAIM_STORY}"))
    assert "| 1 (InCohortReclamation) → 1 (InCohortReclamation) |" in row, row
    assert "old pins against new pins" in run.output, run.explain()


def test_a_baseline_that_fails_on_the_old_pins_is_an_expected_failure_and_marked(tmp_path: Path) -> None:
    """The canary judges the new pins: a scenario failing on the old ones does not fail the session,
    but the report says so and marks the change of outcome."""
    reports = tmp_path / "reports"
    run = run_canary("upgrade_baseline_fails", "--report-dir", str(reports), targets=(TARGET, RECLAIM))
    assert run.outcomes == {"passed": 2, "failed": 0, "errors": 0, "skipped": 1}, run.explain()
    assert run.returncode == 0, run.explain()
    assert "failed on the old pins (the baseline the canary compares with" in run.output, run.explain()
    (compared,) = json.loads((reports / "summary.json").read_text())["upgrade"]["comparison"]
    assert compared["old"]["outcome"] == "failed" and compared["new"]["outcome"] == "passed", compared
    assert "failed → passed" in compared["changes"], compared


@pytest.mark.sabotages(UPGRADE_SCENARIO)
def test_the_canary_fails_and_names_a_workload_lost_in_the_upgrade() -> None:
    run = run_canary("upgrade_loses_a_workload")
    assert run.outcomes == {"passed": 0, "failed": 1, "errors": 0, "skipped": 0}, run.explain()
    (failure,) = run.failures
    for words in ("the upgrade changed what the cluster held (before → after)", "Workload ", "job-borrows-"):
        assert words in failure, f"the failure should say {words!r}:\n{failure}"


@pytest.mark.sabotages(UPGRADE_SCENARIO)
def test_the_canary_reports_an_over_admission_as_the_finding() -> None:
    """The pending gang's quota reserved during the upgrade, beyond the cohort's: the finding, in its words
    (run once: it is the over-admission the other canaries run again past)."""
    run = run_canary("upgrade_over_admits", past_the_finding=False)
    assert run.outcomes == {"passed": 0, "failed": 1, "errors": 0, "skipped": 0}, run.explain()
    (failure,) = run.failures
    for words in (
        "kbc.errors.OverAdmitted",
        "over-admitted: after the upgrade the cohort holds 10 of 8",
        "6 of 6",  # the lender, its own quota full
        "4 of 2",  # the borrower, 2 borrowed
        "Admitted since: Workload job-gang-",
    ):
        assert words in failure, f"the failure should say {words!r}:\n{failure}"
    since = failure.split("Admitted since: ", 1)[1].split(". A component finding", 1)[0]
    assert since.count("Workload ") == 1, f"only the gang was admitted since the snapshot: {since}"


@pytest.mark.sabotages(UPGRADE_SCENARIO)
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


@pytest.mark.sabotages(UPGRADE_SCENARIO)
def test_the_canary_fails_when_a_stored_version_stops_being_served() -> None:
    run = run_canary("upgrade_drops_a_stored_version")
    assert run.outcomes == {"passed": 0, "failed": 1, "errors": 0, "skipped": 0}, run.explain()
    (failure,) = run.failures
    for words in ("status.storedVersions", "workloads.kueue.x-k8s.io", "migrate them before upgrading"):
        assert words in failure, f"the failure should say {words!r}:\n{failure}"


@pytest.mark.sabotages(UPGRADE_SCENARIO)
def test_the_canary_fails_naming_an_integration_the_new_kueue_configuration_drops() -> None:
    """Kueue upgraded with a configuration without kubeflow.org/pytorchjob (as its default values have
    it), the training operator's PyTorchJobs on the cluster."""
    run = run_canary("upgrade_drops_an_integration", components="kueue,jobset,trainingoperator")
    assert run.outcomes == {"passed": 0, "failed": 1, "errors": 0, "skipped": 0}, run.explain()
    (failure,) = run.failures
    for words in (
        "after the upgrade Kueue no longer manages PyTorchJobs",
        "Its integration 'kubeflow.org/pytorchjob' is not in the new Kueue configuration",
    ):
        assert words in failure, f"the failure should say {words!r}:\n{failure}"


def test_a_canary_from_trainer_v2_1_0_records_kueue_s_words_as_a_finding_and_goes_on(tmp_path: Path) -> None:
    """Trainer v2.1.0 under the pinned Kueue: Kueue admits the canary's TrainJob and never starts it (its
    TrainJob has no spec.runtimePatches, where Kueue's integration writes; kubernetes-sigs/kueue#14722). The
    canary says so as a finding in Kueue's words, goes on without that TrainJob, and passes once the new pins
    run one: a component finding, never a harness failure."""
    lock = lock_with(load_lock(), tmp_path, "trainer", "2.1.0")
    reports = tmp_path / "reports"
    run = run_canary(
        None, "--upgrade-from", str(lock), "--report-dir", str(reports), components="kueue,jobset,trainer"
    )
    assert run.outcomes == {"passed": 1, "failed": 0, "errors": 0, "skipped": 0}, run.explain()
    (finding,) = json.loads((reports / "summary.json").read_text())["upgrade"]["findings"]
    for words in ("Kueue admitted TrainJob training", "never started it", "kueue runtime patch not found"):
        assert words in finding, f"the finding should say {words!r}: {finding}"
    assert f"FINDING: {finding}" in run.output, run.explain()
