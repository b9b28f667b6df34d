"""Prove the Volcano suite can fail: its scenarios, run against a deliberately broken setup, fail with
a message that names the broken behaviour.

Each test runs one scenario of ``suites/test_volcano.py`` in a separate pytest process
against this session's cluster, with one ``tests/sabotage/volcano_*`` plugin loaded.
"""

from __future__ import annotations

import re

import pytest

from kbc.providers import Cluster
from tests.integration.suite_runner import run_scenario

pytestmark = pytest.mark.cluster

SUITE = "suites/test_volcano.py"


def test_gang_fails_when_the_gang_is_a_gang_of_one(cluster: Cluster) -> None:
    run = run_scenario(
        cluster,
        f"{SUITE}::test_gang_binds_no_pod_until_the_whole_gang_fits",
        sabotage="volcano_gang_min_one",
    )
    assert run.returncode == 1, run.explain()
    assert "1 failed" in run.output, run.explain()
    assert "while only 3 GPUs were free on" in run.output, run.explain()
    assert "gang has 3 of 4 pods bound" in run.output, run.explain()
    assert "partial placement" in run.output, run.explain()


def test_queue_quota_fails_when_the_queue_has_no_capability(cluster: Cluster) -> None:
    run = run_scenario(
        cluster,
        f"{SUITE}::test_queue_capability_zero_holds_the_job_until_raised",
        sabotage="volcano_queue_uncapped",
    )
    assert run.returncode == 1, run.explain()
    assert "1 failed" in run.output, run.explain()
    assert "although its queue's capability allows 0 GPUs: the queue quota was not enforced" in run.output, (
        run.explain()
    )


def test_reclaim_fails_when_the_queue_weights_are_ignored(cluster: Cluster) -> None:
    run = run_scenario(
        cluster,
        f"{SUITE}::test_reclaim_between_queues_follows_their_weights",
        sabotage="volcano_equal_weights",
    )
    assert run.returncode == 1, run.explain()
    assert "1 failed" in run.output, run.explain()
    assert "waiting for the queues to hold their weighted shares" in run.output, run.explain()
    # Equal weights split the cluster's GPUs in halves: each queue ends on half of them.
    assert re.search(
        r"weight-1 queue holds (\d+) GPUs \(its share: \d+\), weight-3 queue holds \1 \(its share: \d+\) of",
        run.output,
    ), run.explain()
