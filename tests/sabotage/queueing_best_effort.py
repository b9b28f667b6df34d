"""Every ClusterQueue the scenario makes queues BestEffortFIFO, whatever strategy it asks for.

The StrictFIFO scenario's small Job is then tried past the head that does not fit and admitted on the free
GPUs: "it waits behind the head" cannot hold, and the scenario must fail saying its Workload was admitted.
"""

from __future__ import annotations

from typing import Any

from kbc.kube import Kube
from tests.sabotage import Expect


def pytest_kbc_mutate_object(obj: dict[str, Any], kube: Kube) -> None:
    if obj["kind"] == "ClusterQueue":
        obj["spec"]["queueingStrategy"] = "BestEffortFIFO"


EXPECT = Expect(
    scenario="suites/test_queueing.py::test_strict_fifo_holds_a_fitting_job_behind_a_head_that_does_not_fit",
    because=("kbc.errors.ConsistencyViolation", "Workload job-small-", "pending"),
)
