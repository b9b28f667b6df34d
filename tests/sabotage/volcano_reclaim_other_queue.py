"""The starving vcjob goes to the idle Queue beside its own: reclaim then serves it from the holder's Queue,
and the scenario that proves reclaim never takes within one Queue must fail on the eviction."""

from __future__ import annotations

from typing import Any

from kbc.kube import Kube
from tests.sabotage import Expect

_idle: list[str] = []


def pytest_kbc_mutate_object(obj: dict[str, Any], kube: Kube) -> None:
    name = obj["metadata"].get("name", "")
    if obj["kind"] == "Queue" and name.startswith("vc-idle-"):
        _idle.append(name)
    elif obj["kind"] == "Job" and obj["apiVersion"].startswith("batch.volcano.sh/") and name == "starving":
        obj["spec"]["queue"] = _idle[-1]


EXPECT = Expect(
    scenario="suites/test_volcano_reclaim.py::test_reclaim_never_takes_within_one_queue",
    because=("kbc.errors.ConsistencyViolation",),
    pattern=r"keeping both its pods|unbound while its own Queue|no Evict event",
)
