"""Every vcjob's pod must run beside the others: a required pod affinity on the node's hostname.

Volcano's predicates plugin runs Kubernetes' InterPodAffinity filter (on in the chart), so the first pod
lands where the spreading terms put it and every later one on the same node: the one-GPU vcjobs pile onto
one node, and the spreading scenario must fail. A pod affinity is a filter, not a score, so the result
does not hang on how close the chart's scores are (docs/suites.md: a pod asking for CPU alone ties them
to within a point).
"""

from __future__ import annotations

from typing import Any

from kbc.kube import Kube
from tests.sabotage import Expect

_LABEL = "kbc-sabotage/together"


def pytest_kbc_mutate_object(obj: dict[str, Any], kube: Kube) -> None:
    if obj["kind"] == "Job" and obj["apiVersion"].startswith("batch.volcano.sh/"):
        for task in obj["spec"]["tasks"]:
            template = task["template"]
            template.setdefault("metadata", {}).setdefault("labels", {})[_LABEL] = "yes"
            template["spec"]["affinity"] = {
                "podAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": [
                        {
                            "labelSelector": {"matchLabels": {_LABEL: "yes"}},
                            "topologyKey": "kubernetes.io/hostname",
                        }
                    ]
                }
            }


EXPECT = Expect(
    scenario="suites/test_volcano_policies.py::test_the_chart_spreads_jobs_over_equal_nodes",
    because=("kbc.errors.ScenarioFailure", "one-GPU vcjobs on one node of", "should spread them"),
)
