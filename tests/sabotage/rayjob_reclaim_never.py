"""Every ClusterQueue the RayJob reclaim scenario makes refuses to reclaim lent quota
(``reclaimWithinCohort: Never``, as ``cohort_reclaim_never`` does to the Job's).

The lender's RayJob then waits for its own quota instead of taking it back, so the scenario must fail
and say the borrower's RayJob was never preempted.
"""

from __future__ import annotations

from tests.sabotage import Expect
from tests.sabotage.cohort_reclaim_never import pytest_kbc_mutate_object

__all__ = ["EXPECT", "pytest_kbc_mutate_object"]

EXPECT = Expect(
    scenario="suites/test_rayjob.py::test_a_lender_reclaims_a_borrowing_rayjob_whole",
    because=(
        "kbc.errors.WaitTimeout",
        "waiting for Workload rayjob-borrower-",
        "to be evicted by preemption (InCohortReclamation)",
    ),
    # The failure is the preemption wait running out: a quarter of it proves the same, sooner.
    timeout_scale=0.25,
)
