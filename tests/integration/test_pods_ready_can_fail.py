"""Prove the waitForPodsReady suite can fail: each scenario runs on a cluster whose Kueue is configured
otherwise (the timeout flattened to Kueue's default, blockAdmission off, waitForPodsReady left on) and
must fail saying what Kueue did instead.

The sabotage plugin changes what the scenario needs (``pytest_kbc_needs``) to what this test's cluster
has, so the inner run reuses this test's cluster and its check of the running configuration passes.
"""

from __future__ import annotations

import pytest

from kbc.cluster.providers import Cluster
from kbc.kueue.settings import PODS_READY_SHORT
from tests.integration.suite_runner import expect_failure
from tests.sabotage.pods_ready_admission_unblocked import UNBLOCKED
from tests.sabotage.pods_ready_timeout_flattened import FLATTENED

pytestmark = pytest.mark.cluster

SUITE = "suites/test_pods_ready.py"
SHORTER_WAITS = ["--timeout-scale", "0.5"]
# The TrainJob's and the LeaderWorkerSet's eviction: every wait before it is for something that comes in
# seconds, so a quarter of the eviction's wait proves it never comes, sooner.
QUARTER_WAITS = ["--timeout-scale", "0.25"]
EVICTION = (
    f"{SUITE}::test_a_gang_whose_pods_never_get_ready_is_evicted_and_requeued_and_its_quota_admits_the_next"
)
BLOCKING = f"{SUITE}::test_block_admission_holds_the_next_workload_until_the_admitted_gang_is_ready"
CONTROL = f"{SUITE}::test_without_wait_for_pods_ready_a_stuck_gang_keeps_its_quota"
TRAINJOB_EVICTION = (
    "suites/test_trainjob.py::"
    "test_a_trainjob_whose_pods_never_get_ready_is_evicted_and_its_quota_admits_the_next"
)


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


# The component markers make the profile's cluster install what the inner scenario exercises.
@pytest.mark.trainer
@pytest.mark.jobset
@pytest.mark.needs(FLATTENED)
@pytest.mark.sabotages(TRAINJOB_EVICTION)
def test_the_trainjob_eviction_fails_when_the_timeout_is_flattened_to_kueues_default(
    cluster: Cluster,
) -> None:
    expect_failure(
        cluster,
        TRAINJOB_EVICTION,
        sabotage="pods_ready_timeout_flattened",
        because=["kbc.errors.WaitTimeout", "Workload trainjob-stuck-", "at waitForPodsReady's timeout"],
        extra=QUARTER_WAITS,
    )


LWS_EVICTION = (
    "suites/test_leaderworkerset.py::"
    "test_a_group_whose_pods_never_get_ready_is_evicted_and_its_quota_admits_the_next"
)


@pytest.mark.lws
@pytest.mark.needs(FLATTENED)
@pytest.mark.sabotages(LWS_EVICTION)
def test_the_group_eviction_fails_when_the_timeout_is_flattened_to_kueues_default(cluster: Cluster) -> None:
    expect_failure(
        cluster,
        LWS_EVICTION,
        sabotage="pods_ready_timeout_flattened",
        because=[
            "kbc.errors.WaitTimeout",
            "Workload leaderworkerset-stuck-0-",
            "at waitForPodsReady's timeout",
        ],
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
