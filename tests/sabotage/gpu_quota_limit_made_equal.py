"""Every pod's GPU limit is set equal to its GPU request, whatever the scenario asked for.

A GPU request without a matching limit must be refused by the API server's validation; made valid on its
way, it is admitted, and the scenario must fail.
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
        requested = (resources.get("requests") or {}).get(GPU)
        if requested is not None:
            resources.setdefault("limits", {})[GPU] = requested
