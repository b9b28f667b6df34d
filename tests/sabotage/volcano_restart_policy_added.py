"""Every vcjob gets the policy PodEvicted -> RestartJob: the control's eviction then restarts the whole
gang, and the control must fail saying the pods the eviction did not touch were removed too.
"""

from __future__ import annotations

from typing import Any

from kbc.kube import Kube
from tests.sabotage import Expect, vcjob_policies


def pytest_kbc_mutate_object(obj: dict[str, Any], kube: Kube) -> None:
    for spec in vcjob_policies(obj):
        spec["policies"] = [{"event": "PodEvicted", "action": "RestartJob"}]
        break  # the job's own policies


EXPECT = Expect(
    scenario="suites/test_volcano_lifecycle.py::test_without_a_policy_an_evicted_pod_is_replaced_alone",
    because=("kbc.errors.WaitGaveUp", "pods the eviction did not touch were removed too"),
    or_because=(("kbc.errors.ConsistencyViolation", "pods the eviction did not touch were removed too"),),
)
