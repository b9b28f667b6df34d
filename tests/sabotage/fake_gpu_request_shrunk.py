"""Every pod asks for at most one GPU, whatever the scenario asked for.

A pod asking for more GPUs than any node has must stay unschedulable; shrunk to one, it runs, and the
scenario must fail.
"""

from __future__ import annotations

from typing import Any

from kbc.kube import Kube
from kbc.labels import GPU


def pytest_kbc_mutate_object(obj: dict[str, Any], kube: Kube) -> None:
    if obj["kind"] != "Pod":
        return
    for container in obj["spec"]["containers"]:
        for part in ("requests", "limits"):
            amounts = (container.get("resources") or {}).get(part) or {}
            if GPU in amounts:
                amounts[GPU] = "1"
