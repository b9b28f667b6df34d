"""Every ClusterQueue the scenario makes has no borrowingLimit: a borrower may use all the idle quota.

A workload larger than nominal + the limit the scenario asked for then fits the idle
lender's quota, so the borrowingLimit scenario must fail and say Kueue reserved quota for it.
"""

from __future__ import annotations

from typing import Any

from kbc.kube import Kube
from tests.sabotage import quotas


def pytest_kbc_mutate_object(obj: dict[str, Any], kube: Kube) -> None:
    for resource in quotas(obj):
        resource.pop("borrowingLimit", None)
