"""Every pod asks for no GPU (its GPU requests and limits are dropped) and every ClusterQueue quotes none.

On real GPU nodes a queued Job must see the GPU the device plugin gave it; without a GPU request it is
given none, nvidia-smi finds no GPU, and the scenario must fail.
"""

from __future__ import annotations

from typing import Any

from kbc.kube import Kube
from kbc.labels import GPU


def pytest_kbc_mutate_object(obj: dict[str, Any], kube: Kube) -> None:
    if obj["kind"] == "Job":
        containers = obj["spec"]["template"]["spec"]["containers"]
    elif obj["kind"] == "Pod":
        containers = obj["spec"]["containers"]
    else:
        return
    for container in containers:
        for part in ("requests", "limits"):
            (container.get("resources") or {}).get(part, {}).pop(GPU, None)
