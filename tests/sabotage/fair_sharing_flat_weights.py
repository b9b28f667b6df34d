"""Every ClusterQueue the scenario makes gets the same fair-sharing weight (its weight is flattened to 1).

Kueue then shares the contended pool evenly, so the scenario that expects the weighted split (1:3)
must fail and say that fair sharing settled at the even split.
"""

from __future__ import annotations

from typing import Any

from kbc.kube import Kube


def pytest_kbc_mutate_object(obj: dict[str, Any], kube: Kube) -> None:
    if obj["kind"] == "ClusterQueue" and "fairSharing" in obj["spec"]:
        obj["spec"]["fairSharing"]["weight"] = "1"
