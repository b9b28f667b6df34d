"""A pod asking for the DRA-backed extended resource asks for ``nvidia.com/gpu`` instead, which the GPU
nodes advertise.

Without DRAExtendedResource, a pod asking for the extended resource must stay unschedulable; one asking
for a GPU the nodes have is bound, and the negative control must fail saying the scheduler bound it.
"""

from __future__ import annotations

from typing import Any

from kbc.dra import EXTENDED_RESOURCE
from kbc.kube import Kube
from kbc.labels import GPU


def pytest_kbc_mutate_object(obj: dict[str, Any], kube: Kube) -> None:
    if obj["kind"] != "Pod":
        return
    for container in obj["spec"]["containers"]:
        for part in ("requests", "limits"):
            asked = (container.get("resources") or {}).get(part) or {}
            if EXTENDED_RESOURCE in asked:
                asked[GPU] = asked.pop(EXTENDED_RESOURCE)
