"""Every vcjob loses its lifecycle policies: an evicted pod is then made again alone (the job controller's
default, SyncJob), and the restart scenario must fail waiting for the job to count a restart.
"""

from __future__ import annotations

from typing import Any

from kbc.kube import Kube
from tests.sabotage import Expect, vcjob_policies


def pytest_kbc_mutate_object(obj: dict[str, Any], kube: Kube) -> None:
    for spec in vcjob_policies(obj):
        spec.pop("policies", None)


EXPECT = Expect(
    scenario="suites/test_volcano_lifecycle.py::test_an_evicted_pod_restarts_the_whole_gang",
    because=("kbc.errors.WaitTimeout", "to be restarted for the eviction of", "retryCount"),
    timeout_scale=0.25,
)
