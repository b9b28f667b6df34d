"""The TrainJob of the reconciliation scenario loses how long its pods run (the harness's runtime patch's
``complete-after`` annotation): on fake nodes they then run until deleted.

Its JobSet never succeeds, so "the TrainJob reaches Complete" cannot hold: the scenario must fail waiting
for the condition.
"""

from __future__ import annotations

from typing import Any

from kbc.kube import Kube
from kbc.workloads import COMPLETE_AFTER
from tests.sabotage import Expect


def pytest_kbc_mutate_object(obj: dict[str, Any], kube: Kube) -> None:
    if obj["kind"] != "TrainJob":
        return
    for patch in obj["spec"].get("runtimePatches") or []:
        for job in patch["trainingRuntimeSpec"]["template"]["spec"]["replicatedJobs"]:
            template = job["template"]["spec"]["template"]
            (template.get("metadata") or {}).get("annotations", {}).pop(COMPLETE_AFTER, None)


EXPECT = Expect(
    scenario="suites/test_controllers.py::test_a_trainjob_on_torch_distributed_reaches_complete",
    because=("kbc.errors.WaitTimeout", "waiting for TrainJob completes Complete"),
    # The failure is the wait running out: a quarter of it proves the same, sooner.
    timeout_scale=0.25,
)
