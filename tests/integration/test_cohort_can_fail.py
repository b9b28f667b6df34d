"""Prove the cohort suite can fail: each scenario, run against a cohort that is broken in one way,
fails with a message that names the broken behaviour.

Each test runs one scenario of ``suites/test_cohort.py`` in a separate pytest process
against this session's cluster, with one ``tests/sabotage/cohort_*`` plugin loaded.
"""

from __future__ import annotations

import pytest

from kbc.cluster.providers import Cluster
from tests.integration.suite_runner import expect_failure

pytestmark = pytest.mark.cluster

SUITE = "suites/test_cohort.py"
# Eviction never comes in these broken setups, so the scenario waits out its deadline: a quarter of it,
# 15 s, is still fifteen times what Kueue takes to preempt (and the admissions before it take well
# under a second on the local provider).
SHORTER_WAITS = ["--timeout-scale", "0.25"]


@pytest.mark.sabotages("suites/test_cohort.py::test_borrower_runs_on_idle_quota_lent_by_its_cohort")
def test_borrowing_fails_when_the_queues_share_no_cohort(cluster: Cluster) -> None:
    expect_failure(
        cluster,
        f"{SUITE}::test_borrower_runs_on_idle_quota_lent_by_its_cohort",
        sabotage="cohort_no_cohort_name",
        because=[
            "kbc.errors.WaitGaveUp",
            "the borrower was held at its nominal quota",
            # Alone, the borrower's maximum is its nominal 2 GPUs: Kueue's own words say so.
            "current podset request (4) > maximum capacity (2)",
        ],
    )


@pytest.mark.sabotages("suites/test_cohort.py::test_borrowing_limit_holds_back_what_exceeds_it")
def test_borrowing_limit_fails_when_the_limit_is_lifted(cluster: Cluster) -> None:
    expect_failure(
        cluster,
        f"{SUITE}::test_borrowing_limit_holds_back_what_exceeds_it",
        sabotage="cohort_no_borrowing_limit",
        because=[
            "kbc.errors.WaitGaveUp",
            "Kueue reserved quota for it instead (Quota reserved in ClusterQueue borrower-",
            "so it was not held back as this scenario requires",
        ],
    )


@pytest.mark.slow  # waits out the scenario's eviction deadline
@pytest.mark.sabotages("suites/test_cohort.py::test_lender_reclaims_lent_quota_by_evicting_the_borrower")
def test_reclaim_fails_when_the_lender_may_not_reclaim(cluster: Cluster) -> None:
    expect_failure(
        cluster,
        f"{SUITE}::test_lender_reclaims_lent_quota_by_evicting_the_borrower",
        sabotage="cohort_reclaim_never",
        extra=SHORTER_WAITS,
        because=[
            "kbc.errors.ScenarioFailure",
            "the borrower was not evicted",
            # The lender's Workload waits for quota it could have reclaimed.
            "insufficient unused quota for nvidia.com/gpu",
        ],
    )


@pytest.mark.slow  # waits out the scenario's eviction deadline
@pytest.mark.sabotages(
    "suites/test_cohort.py::test_higher_priority_preempts_lower_priority_within_a_cluster_queue"
)
def test_priority_preemption_fails_when_the_queue_may_not_preempt(cluster: Cluster) -> None:
    expect_failure(
        cluster,
        f"{SUITE}::test_higher_priority_preempts_lower_priority_within_a_cluster_queue",
        sabotage="cohort_no_priority_preemption",
        extra=SHORTER_WAITS,
        because=[
            "kbc.errors.ScenarioFailure",
            "the low-priority Job was not evicted",
        ],
    )
