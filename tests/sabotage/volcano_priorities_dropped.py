"""Every vcjob the scenario makes loses its ``priorityClassName``: the two jobs are of equal priority.

The priority plugin then names no victim, so preempt leaves the low job's pods where they are and the
high job's pod never binds: the preempt scenario must fail waiting for it to run.
"""

from __future__ import annotations

from typing import Any

from kbc.kube import Kube
from tests.sabotage import Expect


def pytest_kbc_mutate_object(obj: dict[str, Any], kube: Kube) -> None:
    if obj["kind"] == "Job" and obj["apiVersion"].startswith("batch.volcano.sh/"):
        obj["spec"].pop("priorityClassName", None)


EXPECT = Expect(
    scenario="suites/test_volcano_policies.py::test_preempt_evicts_a_lower_priority_job_in_its_own_queue",
    because=("kbc.errors.WaitTimeout", "all 1 pods of vcjob high bound to"),
    # A quarter of the pod-start wait is still many scheduling sessions (one a second).
    timeout_scale=0.25,
)
