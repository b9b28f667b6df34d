"""Every vcjob's network topology is made soft: the hard gang then runs across the racks at once, and the
scenario that proves it waits whole must fail.
"""

from __future__ import annotations

from typing import Any

from kbc.kube import Kube
from kbc.volcano.settings import NETWORK_TOPOLOGY
from tests.sabotage import Expect


def pytest_kbc_mutate_object(obj: dict[str, Any], kube: Kube) -> None:
    if obj["kind"] == "Job" and "networkTopology" in obj.get("spec", {}):
        obj["spec"]["networkTopology"]["mode"] = "soft"


EXPECT = Expect(
    needs=(NETWORK_TOPOLOGY,),
    scenario="suites/test_volcano_topology.py::test_a_hard_gang_waits_whole_while_no_rack_holds_it_then_runs_in_"
    "the_rack_that_frees",
    because=("kbc.errors.WaitGaveUp", "while no rack holds the hard gang"),
    or_because=(("kbc.errors.ConsistencyViolation", "no pod of the hard gang bound"),),
)
