"""Every pod asks for one GPU, also the one the scenario makes to ask for none.

The isolation scenario proves that a pod asking for no GPU sees none; given one, it sees it, and the
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
        resources = container.setdefault("resources", {})
        resources.setdefault("requests", {})[GPU] = "1"
        resources.setdefault("limits", {})[GPU] = "1"
