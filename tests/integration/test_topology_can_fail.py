"""Prove the topology suite can fail: with the flavors' topology taken away, each gang that asks to land in
one rack (or prefers to) is not placed by Kueue; with every gang made to require one rack, the control
that shows a gang split without topology-aware scheduling fails.
"""

from __future__ import annotations

import pytest

from kbc.cluster.providers import Cluster
from tests.integration.suite_runner import expect_failure

pytestmark = pytest.mark.cluster

SUITE = "suites/test_topology.py"
SHORTER_WAITS = ["--timeout-scale", "0.25"]
WITHOUT_TOPOLOGY = {
    "test_a_gang_that_needs_one_rack_lands_in_one_rack": ["kbc.errors.WaitGaveUp", "Kueue cannot place it"],
    "test_a_gang_no_rack_can_hold_waits_whole_then_runs_when_a_rack_frees": [
        "AssertionError",
        "does not support TopologyAwareScheduling",
    ],
    "test_a_gang_that_prefers_one_rack_is_admitted_across_racks": [
        "kbc.errors.WaitGaveUp",
        "Kueue cannot place it",
    ],
    "test_each_replicated_job_of_a_jobset_lands_in_one_rack": [
        "kbc.errors.WaitGaveUp",
        "Kueue cannot place it",
    ],
}


@pytest.mark.sabotages(*(f"{SUITE}::{name}" for name in WITHOUT_TOPOLOGY))
@pytest.mark.parametrize("scenario", list(WITHOUT_TOPOLOGY))
def test_a_topology_scenario_fails_when_the_flavor_has_no_topology(cluster: Cluster, scenario: str) -> None:
    expect_failure(
        cluster,
        f"{SUITE}::{scenario}",
        sabotage="tas_flavor_without_topology",
        because=[*WITHOUT_TOPOLOGY[scenario], "does not support TopologyAwareScheduling"],
        extra=SHORTER_WAITS,
    )


@pytest.mark.sabotages(f"{SUITE}::test_without_topology_aware_scheduling_the_gang_is_split_across_racks")
def test_the_split_control_fails_when_every_gang_requires_one_rack(cluster: Cluster) -> None:
    expect_failure(
        cluster,
        f"{SUITE}::test_without_topology_aware_scheduling_the_gang_is_split_across_racks",
        sabotage="tas_gangs_required_in_one_rack",
        because=["kbc.errors.WaitTimeout", "Workload job-anywhere-", "to be admitted"],
        extra=SHORTER_WAITS,
    )
