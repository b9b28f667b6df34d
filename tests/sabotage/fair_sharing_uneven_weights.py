"""The second team's ClusterQueue gets three times the fair-sharing weight of the first.

Where the scenario expects an even split (its negative control, equal weights), Kueue now splits the pool
1:3, and the scenario must fail and say where fair sharing settled.
"""

from __future__ import annotations

from typing import Any

from kbc.kube import Kube


def pytest_kbc_mutate_object(obj: dict[str, Any], kube: Kube) -> None:
    if obj["kind"] == "ClusterQueue" and "fairSharing" in obj["spec"] and "team-b" in obj["metadata"]["name"]:
        obj["spec"]["fairSharing"]["weight"] = "3"
