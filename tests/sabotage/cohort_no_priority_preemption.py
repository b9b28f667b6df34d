"""Every ClusterQueue the scenario makes refuses preemption inside itself (``withinClusterQueue: Never``).

A higher-priority Job then waits behind a lower-priority one that holds the quota, so the
priority scenario must fail and say the low-priority Job was not evicted.
"""

from __future__ import annotations

from typing import Any

from kbc.kube import Kube


def pytest_kbc_mutate_object(obj: dict[str, Any], kube: Kube) -> None:
    if obj["kind"] == "ClusterQueue" and "preemption" in obj["spec"]:
        obj["spec"]["preemption"]["withinClusterQueue"] = "Never"
