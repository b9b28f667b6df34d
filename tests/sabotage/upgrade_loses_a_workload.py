"""The upgrade loses state: just before Kueue's new chart is applied, the Workload of the running
borrower Job is deleted (as a botched migration or a manual cleanup during an upgrade would).

Kueue makes the Job a new Workload, so the snapshot taken after the upgrade differs: the canary
must fail and name that Workload and what changed.
"""

from __future__ import annotations

from typing import Any

from kbc import apis
from kbc.kube import Kube

VICTIM_JOB = "borrows"


def pytest_kbc_upgrade_objects(component: str, objects: list[dict[str, Any]], kube: Kube) -> None:
    if component != "kueue":
        return
    for workload in kube.list(apis.WORKLOAD):
        owners = workload["metadata"].get("ownerReferences") or []
        if any(o.get("kind") == "Job" and o.get("name") == VICTIM_JOB for o in owners):
            kube.delete(
                apis.WORKLOAD, workload["metadata"]["name"], namespace=workload["metadata"]["namespace"]
            )
