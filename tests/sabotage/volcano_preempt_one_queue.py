"""Every vcjob the scenario makes goes to the Queue of its first vcjob: the high-priority job joins the
low-priority one's Queue.

There preempt may take from the low job, and does: the cross-Queue scenario must fail saying the low job
lost a pod.
"""

from __future__ import annotations

from typing import Any

from kbc.kube import Kube
from tests.sabotage import Expect

_first: list[str] = []


def pytest_kbc_mutate_object(obj: dict[str, Any], kube: Kube) -> None:
    if obj["kind"] == "Job" and obj["apiVersion"].startswith("batch.volcano.sh/"):
        if not _first:
            _first.append(obj["spec"]["queue"])
        obj["spec"]["queue"] = _first[0]


EXPECT = Expect(
    scenario="suites/test_volcano_policies.py::test_preempt_never_takes_from_another_queue",
    because=("kbc.errors.ConsistencyViolation",),
    pattern=r"keeping both its pods|unbound while the other Queue|no Evict event",
)
