"""Every ClusterQueue the scenario makes has no borrowingLimit: a borrower may use all the idle quota.

A workload larger than nominal + the limit the scenario asked for then fits the idle
lender's quota, so the borrowingLimit scenario must fail and say Kueue reserved quota for it.
"""

from __future__ import annotations

from typing import Any

from kbc.kube import Kube


def pytest_kbc_mutate_object(obj: dict[str, Any], kube: Kube) -> None:
    if obj["kind"] != "ClusterQueue":
        return
    for group in obj["spec"]["resourceGroups"]:
        for flavor in group["flavors"]:
            for resource in flavor["resources"]:
                resource.pop("borrowingLimit", None)
