"""Every Volcano Queue the scenario makes is created without its ``capability``.

The quota scenario's queue then caps nothing, so proportion enqueues the GPU job at
once: the scenario must fail and say the PodGroup went Inqueue although its queue's
capability allows 0 GPUs.
"""

from __future__ import annotations

from typing import Any

from kbc.kube import Kube
from tests.sabotage import Expect


def pytest_kbc_mutate_object(obj: dict[str, Any], kube: Kube) -> None:
    if obj["kind"] == "Queue" and obj["apiVersion"].startswith("scheduling.volcano.sh/"):
        obj["spec"].pop("capability", None)


EXPECT = Expect(
    scenario="suites/test_volcano.py::test_queue_capability_zero_holds_the_job_until_raised",
    because=(
        "kbc.errors.WaitGaveUp",
        "although its queue's capability allows 0 GPUs: the queue quota was not enforced",
    ),
)
