"""Every ClusterQueue the scenario makes that preempts lower priorities also preempts newer workloads of
equal priority (``withinClusterQueue: LowerOrNewerEqualPriority``).

The negative control's older Job then evicts the newer one: "the newer Job keeps its admission" cannot
hold, and the control must fail saying so.
"""

from __future__ import annotations

from typing import Any

from kbc.kube import Kube
from tests.sabotage import Expect


def pytest_kbc_mutate_object(obj: dict[str, Any], kube: Kube) -> None:
    preemption = obj["spec"].get("preemption") if obj["kind"] == "ClusterQueue" else None
    if preemption and preemption.get("withinClusterQueue") == "LowerPriority":
        preemption["withinClusterQueue"] = "LowerOrNewerEqualPriority"


EXPECT = Expect(
    scenario="suites/test_preemption.py::test_with_lower_priority_an_older_job_waits_behind_a_newer_one_of_"
    "equal_priority",
    because=("kbc.errors.ConsistencyViolation", "Workload job-newer-", "admitted"),
)
