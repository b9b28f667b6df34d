"""Every ClusterQueue the scenario makes queues StrictFIFO, whatever strategy it asks for.

The BestEffortFIFO scenario's small Job then waits behind the head that does not fit, although the free
GPUs would take it: the scenario must fail saying it was not admitted past the head.
"""

from __future__ import annotations

from typing import Any

from kbc.kube import Kube
from tests.sabotage import Expect


def pytest_kbc_mutate_object(obj: dict[str, Any], kube: Kube) -> None:
    if obj["kind"] == "ClusterQueue":
        obj["spec"]["queueingStrategy"] = "StrictFIFO"


EXPECT = Expect(
    scenario="suites/test_queueing.py::test_best_effort_fifo_admits_a_fitting_job_past_a_head_that_does_not_fit",
    because=("kbc.errors.ScenarioFailure", "was not admitted past the head", "as StrictFIFO does"),
    # The small Job's admission wait runs out: a quarter of it is still far beyond Kueue's admission time.
    timeout_scale=0.25,
)
