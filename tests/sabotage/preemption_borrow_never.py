"""Every ClusterQueue the scenario makes preempts while borrowing ``Never``, whatever policy it asks for.

Team high's high-priority Job must borrow, and ``reclaimWithinCohort`` does not apply to a preemptor beyond
its nominal quota: nothing may evict the low-priority borrower, and the borrowWithinCohort scenario must
fail saying it was not evicted while team high waits for quota.
"""

from __future__ import annotations

from typing import Any

from kbc.kube import Kube
from tests.sabotage import Expect


def pytest_kbc_mutate_object(obj: dict[str, Any], kube: Kube) -> None:
    if obj["kind"] == "ClusterQueue" and "preemption" in obj["spec"]:
        obj["spec"]["preemption"]["borrowWithinCohort"] = {"policy": "Never"}


EXPECT = Expect(
    scenario="suites/test_preemption.py::test_borrow_within_cohort_lets_a_high_priority_borrower_evict_a_lower_"
    "priority_borrower",
    because=(
        "kbc.errors.ScenarioFailure",
        "the low-priority borrower was not evicted",
        "insufficient unused quota",
    ),
    # The eviction wait runs out: a quarter of it is far beyond the second Kueue takes to preempt.
    timeout_scale=0.25,
)
