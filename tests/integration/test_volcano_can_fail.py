"""Prove that the binpack scenario can fail: run on the chart's configuration (its sabotage drops what the
scenario needs, so the inner run reuses this test's cluster), it must find its one-GPU vcjobs spread.
"""

from __future__ import annotations

import pytest

from kbc.cluster.providers import Cluster
from tests.integration.suite_runner import expect_failure

pytestmark = pytest.mark.cluster

BINPACK = "suites/test_volcano_policies.py::test_binpack_fills_one_node_before_the_next"


@pytest.mark.sabotages(BINPACK)
def test_the_binpack_scenario_fails_under_the_charts_configuration(cluster: Cluster) -> None:
    expect_failure(
        cluster,
        BINPACK,
        sabotage="volcano_binpack_dropped",
        because=["ScenarioFailure", "landed on", "should fill one node"],
    )
