"""Every ClusterQueue the scenario makes that may reclaim also preempts while borrowing ``LowerPriority``.

(Kueue refuses ``borrowWithinCohort`` on a ClusterQueue that may not reclaim, so those are left alone.)
The negative control's high-priority Job then evicts the low-priority borrower: "the borrower keeps its
admission" cannot hold, and the control must fail saying so.
"""

from __future__ import annotations

from typing import Any

from kbc.kube import Kube
from tests.sabotage import Expect


def pytest_kbc_mutate_object(obj: dict[str, Any], kube: Kube) -> None:
    preemption = obj["spec"].get("preemption") if obj["kind"] == "ClusterQueue" else None
    if preemption and preemption.get("reclaimWithinCohort", "Never") != "Never":
        preemption["borrowWithinCohort"] = {"policy": "LowerPriority"}


EXPECT = Expect(
    scenario="suites/test_preemption.py::test_without_borrow_within_cohort_a_high_priority_borrower_waits",
    because=("kbc.errors.ConsistencyViolation", "Workload job-low-", "admitted"),
)
