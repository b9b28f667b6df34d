"""Every ClusterQueue the scenario makes names no cohort (and so may not carry borrowing or lending limits).

Each ClusterQueue then stands alone: nothing is lent, and a borrower can never use more
than its nominal quota. The borrowing scenario must fail and say the borrower was held
at its nominal quota.
"""

from __future__ import annotations

from typing import Any

from kbc.kube import Kube


def pytest_kbc_mutate_object(obj: dict[str, Any], kube: Kube) -> None:
    if obj["kind"] != "ClusterQueue":
        return
    obj["spec"].pop("cohortName", None)
    # Kueue refuses borrowingLimit/lendingLimit without a cohort; keep only the nominal quotas.
    for group in obj["spec"]["resourceGroups"]:
        for flavor in group["flavors"]:
            for resource in flavor["resources"]:
                resource.pop("borrowingLimit", None)
                resource.pop("lendingLimit", None)
