"""Prove the suites can fail: each capability's scenario, run against a deliberately broken setup,
fails with a message that names the broken behaviour.

Each test runs one suite scenario in a separate pytest process against this
session's cluster, with one plugin from ``tests/sabotage`` loaded.
"""

from __future__ import annotations

import pytest

from kbc.providers import Cluster
from tests.integration.suite_runner import run_scenario

pytestmark = pytest.mark.cluster


def test_gang_fails_when_the_quota_is_far_too_high(cluster: Cluster) -> None:
    run = run_scenario(
        cluster,
        "suites/test_gang.py::test_two_job_gangs_one_runs_whole_the_other_waits_whole",
        sabotage="quota_far_too_high",
    )
    assert run.returncode == 1, run.explain()
    assert "1 failed" in run.output, run.explain()
    assert "Kueue reserved quota for it instead (Quota reserved in ClusterQueue" in run.output, run.explain()
    assert "so it was not held back as this scenario requires" in run.output, run.explain()
