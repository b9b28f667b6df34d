"""Every vcjob with a network topology is pinned to the rack of the first node its pods may use: the gang
then runs in one rack, and the scenario that proves the chart's configuration splits it must fail.
"""

from __future__ import annotations

from typing import Any

from kbc import apis
from kbc.kube import Kube
from kbc.labels import RACK_LABEL
from tests.sabotage import Expect


def pytest_kbc_mutate_object(obj: dict[str, Any], kube: Kube) -> None:
    if obj["kind"] != "Job" or "networkTopology" not in obj.get("spec", {}):
        return
    for task in obj["spec"]["tasks"]:
        selector = task["template"]["spec"].setdefault("nodeSelector", {})
        nodes = kube.list(apis.NODE, labels=dict(selector))
        racks = sorted(
            n["metadata"]["labels"][RACK_LABEL] for n in nodes if RACK_LABEL in n["metadata"]["labels"]
        )
        selector[RACK_LABEL] = racks[0]


EXPECT = Expect(
    scenario="suites/test_volcano_topology.py::test_the_chart_s_configuration_splits_a_hard_gang_across_racks",
    because=("kbc.errors.ScenarioFailure", "the hard gang ran in one rack", "on the chart's configuration"),
)
