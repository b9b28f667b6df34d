"""Every ClusterQueue the scenario makes that preempts newer workloads of equal priority preempts only lower
priorities (``withinClusterQueue: LowerPriority``).

The older Job then cannot evict the newer one of its own priority: the LowerOrNewerEqualPriority scenario
must fail saying the newer Job was not evicted while the older waits for quota.
"""

from __future__ import annotations

from typing import Any

from kbc.kube import Kube
from tests.sabotage import Expect


def pytest_kbc_mutate_object(obj: dict[str, Any], kube: Kube) -> None:
    preemption = obj["spec"].get("preemption") if obj["kind"] == "ClusterQueue" else None
    if preemption and preemption.get("withinClusterQueue") == "LowerOrNewerEqualPriority":
        preemption["withinClusterQueue"] = "LowerPriority"


EXPECT = Expect(
    scenario="suites/test_preemption.py::test_lower_or_newer_equal_priority_lets_an_older_job_evict_a_newer_one_"
    "of_equal_priority",
    because=("kbc.errors.ScenarioFailure", "the newer Job was not evicted", "insufficient unused quota"),
    # The eviction wait runs out: a quarter of it is far beyond the second Kueue takes to preempt.
    timeout_scale=0.25,
)
