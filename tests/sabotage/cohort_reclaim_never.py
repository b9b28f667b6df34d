"""Every ClusterQueue the scenario makes refuses to reclaim lent quota (``reclaimWithinCohort: Never``).

A lender then waits for its own quota instead of taking it back, so the reclaim
scenario must fail and say the borrower was not evicted.
"""

from __future__ import annotations

from typing import Any

from kbc.kube import Kube


def pytest_kbc_mutate_object(obj: dict[str, Any], kube: Kube) -> None:
    if obj["kind"] == "ClusterQueue" and "preemption" in obj["spec"]:
        obj["spec"]["preemption"]["reclaimWithinCohort"] = "Never"
