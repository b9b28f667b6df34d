"""Every vcjob the scenario makes asks for all its pods as its gang (``minAvailable`` = replicas).

The elastic scenario's job of 4 then does not fit where 2 GPUs are free, and binds nothing: the scenario
must fail waiting for its minimum of 2 to run.
"""

from __future__ import annotations

from typing import Any

from kbc.kube import Kube
from tests.sabotage import Expect


def pytest_kbc_mutate_object(obj: dict[str, Any], kube: Kube) -> None:
    if obj["kind"] == "Job" and obj["apiVersion"].startswith("batch.volcano.sh/"):
        replicas = sum(task["replicas"] for task in obj["spec"]["tasks"])
        obj["spec"]["minAvailable"] = replicas
        for task in obj["spec"]["tasks"]:
            task["minAvailable"] = task["replicas"]


EXPECT = Expect(
    scenario=(
        "suites/test_volcano_policies.py::test_min_available_below_replicas_starts_at_the_minimum_and_grows"
    ),
    because=("kbc.errors.WaitTimeout", "2 of the 4 pods of vcjob elastic bound"),
    timeout_scale=0.25,
)
