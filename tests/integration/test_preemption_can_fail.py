"""Prove that each fair-sharing strategy's scenario can fail: run under the other strategy (its sabotage
swaps what the scenario needs, so the inner run reuses this test's cluster), it must name the Workload
Kueue preempted instead.
"""

from __future__ import annotations

import pytest

from kbc.cluster.providers import Cluster
from kbc.kueue.settings import FAIR_SHARING, FAIR_SHARING_INITIAL_SHARE
from tests.integration.suite_runner import expect_failure

pytestmark = pytest.mark.cluster

SUITE = "suites/test_preemption.py"
FINAL_SHARE = f"{SUITE}::test_fair_sharing_final_share_preempts_the_workload_that_keeps_the_imbalance_away"
INITIAL_SHARE = (
    f"{SUITE}::test_fair_sharing_initial_share_preempts_the_lower_priority_workload_even_if_larger"
)
OTHER_VICTIM = "the strategy in force chose another victim"


@pytest.mark.needs(FAIR_SHARING_INITIAL_SHARE)
@pytest.mark.sabotages(FINAL_SHARE)
def test_the_final_share_scenario_fails_under_less_than_initial_share(cluster: Cluster) -> None:
    expect_failure(
        cluster,
        FINAL_SHARE,
        sabotage="fair_sharing_strategies_swapped",
        because=["AssertionError", "Kueue preempted ['job-b-low-", OTHER_VICTIM],
    )


@pytest.mark.needs(FAIR_SHARING)
@pytest.mark.sabotages(INITIAL_SHARE)
def test_the_initial_share_scenario_fails_under_kueues_default_strategies(cluster: Cluster) -> None:
    expect_failure(
        cluster,
        INITIAL_SHARE,
        sabotage="fair_sharing_strategies_swapped",
        because=["AssertionError", "Kueue preempted ['job-b-high-", OTHER_VICTIM],
    )
