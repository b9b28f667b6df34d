"""Prove the waitForPodsReady suite can fail: each scenario runs on a cluster whose Kueue is configured
otherwise (the timeout flattened to Kueue's default, blockAdmission off, waitForPodsReady left on) and
must fail saying what Kueue did instead.

The sabotage plugin changes what the scenario needs (``pytest_kbc_needs``) to what this test's cluster
has, so the inner run reuses this test's cluster and its check of the running configuration passes.
"""

from __future__ import annotations

from typing import Any

import pytest

from kbc.cluster.providers import Cluster
from kbc.kueue.settings import PODS_READY_SHORT
from tests.integration.suite_runner import expect_failure
from tests.sabotage.pods_ready_admission_unblocked import UNBLOCKED
from tests.sabotage.pods_ready_timeout_flattened import FLATTENED

pytestmark = pytest.mark.cluster

SUITE = "suites/test_pods_ready.py"
SHORTER_WAITS = ["--timeout-scale", "0.5"]
# The operators' evictions (a TrainJob's, a LeaderWorkerSet group's, a PyTorchJob's): every wait before it
# is for something that comes in seconds, so a quarter of the eviction's wait proves it never comes, sooner.
QUARTER_WAITS = ["--timeout-scale", "0.25"]
EVICTION = (
    f"{SUITE}::test_a_gang_whose_pods_never_get_ready_is_evicted_and_requeued_and_its_quota_admits_the_next"
)
BLOCKING = f"{SUITE}::test_block_admission_holds_the_next_workload_until_the_admitted_gang_is_ready"
CONTROL = f"{SUITE}::test_without_wait_for_pods_ready_a_stuck_gang_keeps_its_quota"


@pytest.mark.needs(FLATTENED)
@pytest.mark.sabotages(EVICTION)
def test_the_eviction_fails_when_the_timeout_is_flattened_to_kueues_default(cluster: Cluster) -> None:
    expect_failure(
        cluster,
        EVICTION,
        sabotage="pods_ready_timeout_flattened",
        because=["kbc.errors.WaitTimeout", "to be evicted by Kueue at waitForPodsReady's timeout"],
        extra=SHORTER_WAITS,
    )


def _operator(scenario: str, workload: str, *components: str) -> Any:
    """One operator's eviction scenario; the component markers make the profile's cluster install what the
    inner scenario exercises."""
    marks = [getattr(pytest.mark, c) for c in components] + [pytest.mark.sabotages(scenario)]
    return pytest.param(scenario, workload, marks=marks, id=workload.split("-", 1)[0])


OPERATOR_EVICTIONS = [
    _operator(
        "suites/test_trainjob.py::"
        "test_a_trainjob_whose_pods_never_get_ready_is_evicted_and_its_quota_admits_the_next",
        "trainjob-stuck-",
        "trainer",
        "jobset",
    ),
    _operator(
        "suites/test_leaderworkerset.py::"
        "test_a_group_whose_pods_never_get_ready_is_evicted_and_its_quota_admits_the_next",
        "leaderworkerset-stuck-0-",
        "lws",
    ),
    _operator(
        "suites/test_pytorchjob.py::"
        "test_a_pytorchjob_whose_pods_never_get_ready_is_evicted_and_its_quota_admits_the_next",
        "pytorchjob-stuck-",
        "trainingoperator",
    ),
    _operator(
        "suites/test_rayjob.py::test_a_rayjob_whose_pods_never_get_ready_is_evicted_and_its_quota_admits_the_next",
        "rayjob-stuck-",
        "kuberay",
    ),
]


@pytest.mark.needs(FLATTENED)
@pytest.mark.parametrize("scenario, workload", OPERATOR_EVICTIONS)
def test_an_operator_s_eviction_fails_when_the_timeout_is_flattened_to_kueues_default(
    cluster: Cluster, scenario: str, workload: str
) -> None:
    expect_failure(
        cluster,
        scenario,
        sabotage="pods_ready_timeout_flattened",
        because=["kbc.errors.WaitTimeout", f"Workload {workload}", "at waitForPodsReady's timeout"],
        extra=QUARTER_WAITS,
    )


@pytest.mark.needs(UNBLOCKED)
@pytest.mark.sabotages(BLOCKING)
def test_the_block_fails_when_admission_is_not_blocked(cluster: Cluster) -> None:
    expect_failure(
        cluster,
        BLOCKING,
        sabotage="pods_ready_admission_unblocked",
        because=["kbc.errors.WaitGaveUp", "Workload job-second-", "to report why it is pending"],
        extra=SHORTER_WAITS,
    )


@pytest.mark.needs(PODS_READY_SHORT)
@pytest.mark.sabotages(CONTROL)
def test_the_control_fails_when_wait_for_pods_ready_is_left_on(cluster: Cluster) -> None:
    expect_failure(
        cluster,
        CONTROL,
        sabotage="pods_ready_left_on",
        because=["kbc.errors.ConsistencyViolation", "admitted, keeping its quota", "PodsReadyTimeout"],
        # Kueue may already have set the PodsReady condition when the admission is seen: the control's
        # own check that waitForPodsReady is off then fails first.
        or_because=[["waitForPodsReady is meant to be off, but Kueue tracks PodsReady", "WaitForStart"]],
    )
