"""Every vcjob's network topology is made hard: with one pod's room in each rack the soft gang then waits,
and the scenario that proves it spans the racks must fail waiting for its pods.
"""

from __future__ import annotations

from typing import Any

from kbc.kube import Kube
from kbc.volcano.settings import NETWORK_TOPOLOGY
from tests.sabotage import Expect


def pytest_kbc_mutate_object(obj: dict[str, Any], kube: Kube) -> None:
    if obj["kind"] == "Job" and "networkTopology" in obj.get("spec", {}):
        obj["spec"]["networkTopology"]["mode"] = "hard"


EXPECT = Expect(
    needs=(NETWORK_TOPOLOGY,),
    scenario="suites/test_volcano_topology.py::test_a_soft_gang_spans_the_racks_when_no_rack_holds_it",
    because=("kbc.errors.WaitTimeout", "pods of vcjob gang"),
    # The pods' wait runs out: a quarter of it is far beyond the second vc-scheduler takes to bind them.
    timeout_scale=0.25,
)
