"""Every vcjob loses its lifecycle policies: the chief's success then completes nothing while the workers
run, and the completion scenario must fail waiting for the job to be Completed.
"""

from __future__ import annotations

from typing import Any

from kbc.kube import Kube
from tests.sabotage import Expect, vcjob_policies


def pytest_kbc_mutate_object(obj: dict[str, Any], kube: Kube) -> None:
    for spec in vcjob_policies(obj):
        spec.pop("policies", None)


EXPECT = Expect(
    scenario="suites/test_volcano_lifecycle.py::test_a_completed_chief_completes_the_job",
    because=("kbc.errors.WaitTimeout", "vcjob gang to be Completed once its chief succeeded"),
    timeout_scale=0.25,
)
