"""Every vcjob's pods ask for a tenth of a CPU: the job that was CPU-heavy then has the lower dominant share
(one GPU against two), drf serves it first, and the scenario that proves drf serves the GPU job must fail
naming the job that got the GPU.
"""

from __future__ import annotations

from typing import Any

from kbc.kube import Kube
from tests.sabotage import Expect


def pytest_kbc_mutate_object(obj: dict[str, Any], kube: Kube) -> None:
    if obj["kind"] == "Job" and obj["apiVersion"].startswith("batch.volcano.sh/"):
        for task in obj["spec"]["tasks"]:
            for container in task["template"]["spec"]["containers"]:
                container["resources"]["requests"]["cpu"] = "100m"


EXPECT = Expect(
    scenario="suites/test_volcano_drf.py::test_drf_serves_the_job_with_the_lower_dominant_share_first",
    because=("kbc.errors.ScenarioFailure", "job cpus got the free GPU", "drf should serve job gpus first"),
)
