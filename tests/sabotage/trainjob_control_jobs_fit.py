"""The negative control's two TrainJobs ask for no GPU (train-a and train-b: their nodes' GPU requests and
limits are dropped).

Both then fit on the node whole and nothing is deadlocked: the control, which shows the default scheduler
leaving two contending TrainJobs partly placed, must fail.
"""

from __future__ import annotations

from typing import Any

from kbc.kube import Kube
from kbc.labels import GPU
from tests.sabotage import Expect


def pytest_kbc_mutate_object(obj: dict[str, Any], kube: Kube) -> None:
    if obj["kind"] != "TrainJob" or obj["metadata"]["name"] not in ("train-a", "train-b"):
        return
    resources = obj["spec"]["trainer"].get("resourcesPerNode") or {}
    for part in ("requests", "limits"):
        (resources.get(part) or {}).pop(GPU, None)


EXPECT = Expect(
    scenario="suites/test_trainjob.py::test_without_kueue_two_trainjobs_on_six_gpus_end_partly_placed",
    because=(
        "kbc.errors.WaitTimeout",
        "waiting for both TrainJobs to be partially placed",
        "train-a: 4 of 4 pods bound; train-b: 4 of 4 pods bound",
    ),
    # The failure is the wait for the deadlock running out: half of it proves the same, sooner (the pods
    # still have their whole, halved, wait to appear: they do in a few seconds).
    timeout_scale=0.5,
)
