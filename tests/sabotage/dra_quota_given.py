"""Every ClusterQueue that quotes no DRA devices (example.com/gpu: 0) quotes eight.

A quota-zero DRA ClusterQueue must hold its claim-bearing workload; with quota it admits it, and the
scenario must fail saying Kueue reserved quota for it.
"""

from __future__ import annotations

from typing import Any

from kbc.kube import Kube
from kbc.kueue.settings import DRA_QUOTA
from tests.sabotage import quotas


def pytest_kbc_mutate_object(obj: dict[str, Any], kube: Kube) -> None:
    for resource in quotas(obj):
        if resource["name"] == DRA_QUOTA and str(resource["nominalQuota"]) == "0":
            resource["nominalQuota"] = "8"
