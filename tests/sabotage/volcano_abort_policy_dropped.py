"""Every vcjob loses its lifecycle policies: a failed pod then aborts nothing, and the abort scenario must
fail waiting for the job to be Aborted.
"""

from __future__ import annotations

from typing import Any

from kbc.kube import Kube
from tests.sabotage import Expect, vcjob_policies


def pytest_kbc_mutate_object(obj: dict[str, Any], kube: Kube) -> None:
    for spec in vcjob_policies(obj):
        spec.pop("policies", None)


EXPECT = Expect(
    scenario="suites/test_volcano_lifecycle.py::test_a_failed_pod_aborts_the_job",
    because=("kbc.errors.WaitTimeout", "vcjob gang to be Aborted after its pod failed"),
    timeout_scale=0.25,
)
