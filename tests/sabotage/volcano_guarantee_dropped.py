"""Every Volcano Queue the scenario makes loses its ``guarantee``.

Nothing is then held back from the other Queue, so the job asking for every GPU takes them all: the
guarantee scenario must fail saying it holds more than the guarantee leaves to other Queues.
"""

from __future__ import annotations

from typing import Any

from kbc.kube import Kube
from tests.sabotage import Expect


def pytest_kbc_mutate_object(obj: dict[str, Any], kube: Kube) -> None:
    if obj["kind"] == "Queue" and obj["apiVersion"].startswith("scheduling.volcano.sh/"):
        obj["spec"].pop("guarantee", None)


EXPECT = Expect(
    scenario="suites/test_volcano_policies.py::test_a_queue_guarantee_is_held_back_from_other_queues",
    because=("kbc.errors.WaitGaveUp", "more than the", "leave to other Queues"),
    # Where the pods bind in more than one scheduling session, the wait may see the guarantee's count on
    # the way up; the window then ends it.
    or_because=(("kbc.errors.ConsistencyViolation", "more than the", "leave to other Queues"),),
)
