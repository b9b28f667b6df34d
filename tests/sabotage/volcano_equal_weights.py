"""Every Volcano Queue the scenario makes gets weight 1, whatever weight it asks for.

The reclaim scenario's queues (asked for with weights 1 and 3) then deserve equal
halves of the cluster, so the weight-3 queue stops reclaiming at half the GPUs: the
scenario must fail and report how many GPUs each queue holds against its weighted share.
"""

from __future__ import annotations

from typing import Any

from kbc.kube import Kube


def pytest_kbc_mutate_object(obj: dict[str, Any], kube: Kube) -> None:
    if obj["kind"] == "Queue" and obj["apiVersion"].startswith("scheduling.volcano.sh/"):
        obj["spec"]["weight"] = 1
