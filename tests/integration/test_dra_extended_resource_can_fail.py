"""Prove the extended-resource DRA scenarios can fail: each, run with one sabotage plugin in a separate
pytest process against this test's cluster (the one with ``DRAExtendedResource`` on, for the two that need
it; the session's, gate off, for the control), fails and says why."""

from __future__ import annotations

import pytest

from kbc.cluster.providers import Cluster
from kbc.dra import DRA_EXTENDED_RESOURCE
from kbc.kueue.settings import DRA_EXTENDED_DEVICES
from tests.integration.suite_runner import expect_failure

pytestmark = pytest.mark.cluster

SUITE = "suites/test_dra_extended_resource.py"
SHORTER_WAITS = ["--timeout-scale", "0.25"]
ALLOCATED = f"{SUITE}::test_an_extended_resource_a_device_class_backs_is_allocated_a_device"
COUNTED = f"{SUITE}::test_kueue_counts_an_extended_resource_a_device_class_backs_in_its_dra_quota"
CONTROL = f"{SUITE}::test_without_the_gate_a_pod_asking_for_the_extended_resource_is_unschedulable"


@pytest.mark.needs(DRA_EXTENDED_RESOURCE, DRA_EXTENDED_DEVICES)
@pytest.mark.sabotages(ALLOCATED)
def test_the_allocation_fails_when_the_class_selects_no_device(cluster: Cluster) -> None:
    expect_failure(
        cluster,
        ALLOCATED,
        sabotage="dra_extended_class_selects_nothing",
        because=["with {'app': 'asks-one'} placed with their claims allocated"],
        extra=SHORTER_WAITS,
    )


@pytest.mark.needs(DRA_EXTENDED_RESOURCE, DRA_EXTENDED_DEVICES)
@pytest.mark.sabotages(COUNTED)
def test_the_count_fails_when_the_quota_is_far_too_high(cluster: Cluster) -> None:
    expect_failure(
        cluster,
        COUNTED,
        sabotage="quota_far_too_high",
        because=["kbc.errors.WaitGaveUp", "Workload job-extended-b-", "Kueue reserved quota for it instead"],
        extra=SHORTER_WAITS,
    )


@pytest.mark.sabotages(CONTROL)
def test_the_control_fails_when_the_pod_asks_for_a_gpu_the_nodes_have(cluster: Cluster) -> None:
    expect_failure(
        cluster,
        CONTROL,
        sabotage="dra_extended_asks_a_gpu",
        because=["kbc.errors.WaitGaveUp", "the scheduler bound it"],
        extra=SHORTER_WAITS,
    )
