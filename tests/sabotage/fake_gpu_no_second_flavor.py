"""Every ClusterQueue keeps only the first flavor of each resource group: there is nothing to fall back to.

When the first GPU flavor is full, a Job must be admitted on the second; with no second flavor it waits,
and the scenario must fail.
"""

from __future__ import annotations

from typing import Any

from kbc.kube import Kube


def pytest_kbc_mutate_object(obj: dict[str, Any], kube: Kube) -> None:
    if obj["kind"] != "ClusterQueue":
        return
    for group in obj["spec"].get("resourceGroups") or []:
        group["flavors"] = group["flavors"][:1]
