"""The negative control's two PyTorchJobs ask for no GPU (torch-a and torch-b: every replica's GPU requests
and limits are dropped).

Both then fit on the node whole and nothing is deadlocked: the control, which shows the default scheduler
leaving two contending PyTorchJobs partly placed, must fail.
"""

from __future__ import annotations

from typing import Any

from kbc.kube import Kube
from kbc.labels import GPU
from tests.sabotage import Expect


def pytest_kbc_mutate_object(obj: dict[str, Any], kube: Kube) -> None:
    if obj["kind"] != "PyTorchJob" or obj["metadata"]["name"] not in ("torch-a", "torch-b"):
        return
    for replica in obj["spec"]["pytorchReplicaSpecs"].values():
        for container in replica["template"]["spec"]["containers"]:
            for part in ("requests", "limits"):
                (container.get("resources", {}).get(part) or {}).pop(GPU, None)


EXPECT = Expect(
    scenario="suites/test_pytorchjob.py::test_without_kueue_two_pytorchjobs_on_six_gpus_end_partly_placed",
    because=(
        "kbc.errors.WaitTimeout",
        "waiting for both PyTorchJobs to be partially placed",
        "torch-a: 4 of 4 pods bound; torch-b: 4 of 4 pods bound",
    ),
    # The failure is the wait for the deadlock running out: half of it proves the same, sooner.
    timeout_scale=0.5,
)
