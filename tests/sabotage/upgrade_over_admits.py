"""The upgrade over-admits: just before Kueue's new chart is applied, the lender's pending gang gets its
quota reserved, as Kueue's admission writes it, while the cohort's 8 GPUs are all in use (what Kueue's
first scheduling cycle after a restart sometimes does, docs/findings/kueue-over-admission-after-restart.md).

The canary must report it as the finding (``kbc.errors.OverAdmitted``, "over-admitted: …", the cohort's
use before and after and the Workload admitted since), not as a snapshot difference.
"""

from __future__ import annotations

import time
from decimal import Decimal
from typing import Any

from kbc import apis
from kbc.kube import Kube
from kbc.labels import GPU

GANG_JOB = "gang"
ADMISSION_MANAGER = "kueue-admission"


def pytest_kbc_upgrade_objects(component: str, objects: list[dict[str, Any]], kube: Kube) -> None:
    if component != "kueue":
        return
    for workload in kube.list(apis.WORKLOAD):
        owners = workload["metadata"].get("ownerReferences") or []
        if any(o.get("kind") == "Job" and o.get("name") == GANG_JOB for o in owners):
            kube.apply(reservation(kube, workload), subresource="status", field_manager=ADMISSION_MANAGER)


def reservation(kube: Kube, workload: dict[str, Any]) -> dict[str, Any]:
    """Quota reserved for *workload* in its LocalQueue's ClusterQueue, in that queue's first flavor."""
    meta = workload["metadata"]
    local = kube.get(apis.LOCAL_QUEUE, workload["spec"]["queueName"], meta["namespace"])
    cluster_queue = local["spec"]["clusterQueue"]
    flavor = kube.get(apis.CLUSTER_QUEUE, cluster_queue)["spec"]["resourceGroups"][0]["flavors"][0]["name"]
    assignments = []
    for podset in workload["spec"]["podSets"]:
        per_pod = sum(
            Decimal(str((c.get("resources") or {}).get("requests", {}).get(GPU, 0)))
            for c in podset["template"]["spec"]["containers"]
        )
        assignments.append(
            {
                "name": podset["name"],
                "flavors": {GPU: flavor},
                "resourceUsage": {GPU: str(per_pod * podset["count"])},
                "count": podset["count"],
            }
        )
    return {
        "apiVersion": workload["apiVersion"],
        "kind": "Workload",
        "metadata": {"name": meta["name"], "namespace": meta["namespace"]},
        "status": {
            "admission": {"clusterQueue": cluster_queue, "podSetAssignments": assignments},
            "conditions": [
                {
                    "type": "QuotaReserved",
                    "status": "True",
                    "reason": "QuotaReserved",
                    "message": "reserved by the sabotage",
                    "lastTransitionTime": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                }
            ],
        },
    }
