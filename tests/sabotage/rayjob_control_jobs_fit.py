"""The negative control's two RayJobs ask for no GPU (ray-a and ray-b: their workers' GPU requests and
limits are dropped).

Both then fit on the node whole and nothing is deadlocked: the control, which shows the default scheduler
leaving two contending RayJobs partly placed, must fail.
"""

from __future__ import annotations

from typing import Any

from kbc.kube import Kube
from kbc.labels import GPU
from tests.sabotage import Expect


def pytest_kbc_mutate_object(obj: dict[str, Any], kube: Kube) -> None:
    if obj["kind"] != "RayJob" or obj["metadata"]["name"] not in ("ray-a", "ray-b"):
        return
    for group in obj["spec"]["rayClusterSpec"]["workerGroupSpecs"]:
        for container in group["template"]["spec"]["containers"]:
            for part in ("requests", "limits"):
                (container.get("resources", {}).get(part) or {}).pop(GPU, None)


EXPECT = Expect(
    scenario="suites/test_rayjob.py::test_without_kueue_two_rayjobs_on_six_gpus_end_partly_placed",
    because=(
        "kbc.errors.WaitTimeout",
        "waiting for both RayJobs' clusters to be partially placed",
        "ray-a: 5 of 5 pods bound; ray-b: 5 of 5 pods bound",
    ),
    # The failure is the wait for the deadlock running out: half of it proves the same, sooner.
    timeout_scale=0.5,
)
