"""Every Volcano Queue the scenario makes gets weight 1, whatever weight it asks for.

The reclaim scenario's queues (asked for with weights 1 and 3) then deserve equal
halves of the cluster, so the weight-3 queue stops reclaiming at half the GPUs: the
scenario must fail and report how many GPUs each queue holds against its weighted share.
"""

from __future__ import annotations

from typing import Any

from kbc.kube import Kube
from tests.sabotage import Expect


def pytest_kbc_mutate_object(obj: dict[str, Any], kube: Kube) -> None:
    if obj["kind"] == "Queue" and obj["apiVersion"].startswith("scheduling.volcano.sh/"):
        obj["spec"]["weight"] = 1


EXPECT = Expect(
    scenario="suites/test_volcano_reclaim.py::test_reclaim_between_queues_follows_their_weights",
    because=("kbc.errors.WaitTimeout", "waiting for the queues to hold their weighted shares"),
    # 36 s instead of 120: reclaim reaches the equal split in about 10 s; the wait then only runs out.
    timeout_scale=0.3,
    # Equal weights split the cluster's GPUs in halves: each queue ends on the same number.
    pattern=(
        r"weight-1 queue holds (\d+) GPUs \(its share: \d+\), "
        r"weight-3 queue holds \1 \(its share: \d+\) of"
    ),
    # The equal split is only wrong once the scenario's wait for the weighted split ends.
    slow=True,
)
