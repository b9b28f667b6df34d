"""Every vcjob's pods ask for CPU and GPUs only: their memory request is dropped.

Volcano's binpack (weight 1 in the chart) scores only the resources a pod asks for, so it then puts its
whole weight on CPU and cancels nodeorder's spreading terms, which Kubernetes scores in whole points: the
chart's configuration packs the one-GPU vcjobs on one node, and the spreading scenario must fail.
"""

from __future__ import annotations

from typing import Any

from kbc.kube import Kube
from tests.sabotage import Expect


def pytest_kbc_mutate_object(obj: dict[str, Any], kube: Kube) -> None:
    if obj["kind"] == "Job" and obj["apiVersion"].startswith("batch.volcano.sh/"):
        for task in obj["spec"]["tasks"]:
            for container in task["template"]["spec"]["containers"]:
                container["resources"]["requests"].pop("memory", None)


EXPECT = Expect(
    scenario="suites/test_volcano_policies.py::test_the_chart_spreads_jobs_over_equal_nodes",
    because=("kbc.errors.ScenarioFailure", "one-GPU vcjobs on one node of", "should spread them"),
)
