"""Every ClusterQueue the scenario makes gets 100 times the nominal quota it asks for.

A gang scenario then has room for both gangs, so "the second gang waits with zero
pods" cannot hold; the scenario must fail and say the second gang was admitted.
"""

from __future__ import annotations

from typing import Any

from kubernetes.utils.quantity import parse_quantity

from kbc.kube import Kube
from tests.sabotage import quotas


def pytest_kbc_mutate_object(obj: dict[str, Any], kube: Kube) -> None:
    for resource in quotas(obj):
        resource["nominalQuota"] = str(int(parse_quantity(resource["nominalQuota"]) * 100))
