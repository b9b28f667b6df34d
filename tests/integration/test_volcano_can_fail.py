"""Prove the Volcano suite can fail: its scenarios, run against a deliberately broken setup, fail with
a message that names the broken behaviour.

Each test runs one scenario of ``suites/test_volcano.py`` in a separate pytest process
against this session's cluster, with one ``tests/sabotage/volcano_*`` plugin loaded.
"""

from __future__ import annotations

import re

import pytest

from kbc.cluster.providers import Cluster
from tests.integration.suite_runner import expect_failure

pytestmark = pytest.mark.cluster

SUITE = "suites/test_volcano.py"


@pytest.mark.sabotages("suites/test_volcano.py::test_gang_binds_no_pod_until_the_whole_gang_fits")
def test_gang_fails_when_the_gang_is_a_gang_of_one(cluster: Cluster) -> None:
    expect_failure(
        cluster,
        f"{SUITE}::test_gang_binds_no_pod_until_the_whole_gang_fits",
        sabotage="volcano_gang_min_one",
        because=[
            "kbc.errors.WaitGaveUp",
            "while only 3 GPUs were free on",
            # With minAvailable 1 vc-scheduler binds the 3 pods that fit beside the filler.
            "gang has 3 of 4 pods bound",
            "partial placement",
        ],
    )


@pytest.mark.sabotages("suites/test_volcano.py::test_queue_capability_zero_holds_the_job_until_raised")
def test_queue_quota_fails_when_the_queue_has_no_capability(cluster: Cluster) -> None:
    expect_failure(
        cluster,
        f"{SUITE}::test_queue_capability_zero_holds_the_job_until_raised",
        sabotage="volcano_queue_uncapped",
        because=[
            "kbc.errors.WaitGaveUp",
            "although its queue's capability allows 0 GPUs: the queue quota was not enforced",
        ],
    )


@pytest.mark.slow  # the equal split is only wrong once the scenario's wait for the weighted split ends
@pytest.mark.sabotages("suites/test_volcano.py::test_reclaim_between_queues_follows_their_weights")
def test_reclaim_fails_when_the_queue_weights_are_ignored(cluster: Cluster) -> None:
    run = expect_failure(
        cluster,
        f"{SUITE}::test_reclaim_between_queues_follows_their_weights",
        sabotage="volcano_equal_weights",
        # 36 s instead of 120: reclaim reaches the equal split in about 10 s; the wait then only runs out.
        extra=["--timeout-scale", "0.3"],
        because=["kbc.errors.WaitTimeout", "waiting for the queues to hold their weighted shares"],
    )
    # Equal weights split the cluster's GPUs in halves: each queue ends on the same number.
    assert re.search(
        r"weight-1 queue holds (\d+) GPUs \(its share: \d+\), weight-3 queue holds \1 \(its share: \d+\) of",
        run.failures[0],
    ), run.explain()
