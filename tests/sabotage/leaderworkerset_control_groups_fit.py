"""The negative control's two LeaderWorkerSets ask for no GPU (group-a and group-b: their pods' GPU requests
and limits are dropped).

Both groups then fit on the node whole and nothing is deadlocked: the control, which shows the default
scheduler leaving two contending groups partly placed, must fail.
"""

from __future__ import annotations

from typing import Any

from kbc.kube import Kube
from kbc.labels import GPU
from tests.sabotage import Expect


def pytest_kbc_mutate_object(obj: dict[str, Any], kube: Kube) -> None:
    if obj["kind"] != "LeaderWorkerSet" or obj["metadata"]["name"] not in ("group-a", "group-b"):
        return
    template = obj["spec"]["leaderWorkerTemplate"]["workerTemplate"]
    for container in template["spec"]["containers"]:
        for part in ("requests", "limits"):
            (container.get("resources") or {}).get(part, {}).pop(GPU, None)


EXPECT = Expect(
    scenario="suites/test_leaderworkerset.py::test_without_kueue_two_groups_on_six_gpus_end_partly_placed",
    because=(
        "kbc.errors.WaitTimeout",
        "waiting for both groups to be partially placed",
        "group-a: 4 of 4 pods bound; group-b: 4 of 4 pods bound",
    ),
    # The failure is the wait for the deadlock running out: half of it proves the same, sooner (the pods
    # still have their whole, halved, wait to appear: they do in a few seconds).
    timeout_scale=0.5,
)
