"""Every vcjob the scenario makes asks for a gang of one (``minAvailable: 1``).

The gang scenario's 4-pod job then fits "enough" with one pod, so vc-scheduler binds
the 3 pods that fit beside the filler: the scenario must fail and say pods were bound
while the gang did not fit (partial placement).
"""

from __future__ import annotations

from typing import Any

from kbc.kube import Kube
from tests.sabotage import Expect


def pytest_kbc_mutate_object(obj: dict[str, Any], kube: Kube) -> None:
    if obj["kind"] == "Job" and obj["apiVersion"].startswith("batch.volcano.sh/"):
        obj["spec"]["minAvailable"] = 1
        for task in obj["spec"]["tasks"]:
            task["minAvailable"] = 1


EXPECT = Expect(
    scenario="suites/test_volcano.py::test_gang_binds_no_pod_until_the_whole_gang_fits",
    because=(
        "kbc.errors.WaitGaveUp",
        "while only 3 GPUs were free on",
        # With minAvailable 1 vc-scheduler binds the 3 pods that fit beside the filler.
        "gang has 3 of 4 pods bound",
        "partial placement",
    ),
)
