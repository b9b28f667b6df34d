"""Every ClusterQueue the scenario makes gets 100 times the nominal quota it asks for.

A gang scenario then has room for both gangs, so "the second gang waits with zero
pods" cannot hold; the scenario must fail and say the second gang was admitted.
"""

from __future__ import annotations

from typing import Any

from kubernetes.utils.quantity import parse_quantity

from kbc.kube import Kube


def pytest_kbc_mutate_object(obj: dict[str, Any], kube: Kube) -> None:
    if obj["kind"] != "ClusterQueue":
        return
    for group in obj["spec"]["resourceGroups"]:
        for flavor in group["flavors"]:
            for resource in flavor["resources"]:
                resource["nominalQuota"] = str(int(parse_quantity(resource["nominalQuota"]) * 100))
