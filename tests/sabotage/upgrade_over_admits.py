"""The upgrade over-admits: the lender's pending gang gets its quota reserved, as Kueue's admission writes
it, as soon as the new Kueue's webhooks answer after the upgrade, while the cohort's 8 GPUs are all in use:
what Kueue's first scheduling cycle after a restart sometimes does, and a moment late, as it can be
(docs/findings/kueue-over-admission-after-restart.md).

The canary must report it as the finding (``kbc.errors.OverAdmitted``, "over-admitted: …", the cohort's
use before and after and the Workload admitted since), not as a snapshot difference.
"""

from __future__ import annotations

import sys
import threading
import time
from decimal import Decimal
from typing import Any

from kbc import apis
from kbc.errors import KubeApiError
from kbc.kube import Kube
from kbc.labels import GPU
from tests.sabotage import ADMISSION_MANAGER, quota_reserved

GANG_JOB = "gang"


def pytest_kbc_upgrade_objects(component: str, objects: list[dict[str, Any]], kube: Kube) -> None:
    if component != "kueue":
        return
    for workload in kube.list(apis.WORKLOAD):
        owners = workload["metadata"].get("ownerReferences") or []
        if any(o.get("kind") == "Job" and o.get("name") == GANG_JOB for o in owners):
            # Kueue's old webhooks are gone by now (a status write fails calling them): written once the new
            # ones answer, in the background, while the upgrade waits for Kueue.
            wanted = reservation(kube, workload)
            writer = threading.Thread(target=reserve, args=(kube, wanted), name="sabotage-over-admit")
            writer.daemon = True
            writer.start()


def reserve(kube: Kube, wanted: dict[str, Any]) -> None:
    """Write *wanted* (a Workload's reservation) as soon as Kueue's webhooks answer again."""
    deadline = time.monotonic() + 180
    while True:
        try:
            kube.apply(wanted, subresource="status", field_manager=ADMISSION_MANAGER)
        except KubeApiError as exc:
            if exc.status == 500 and time.monotonic() < deadline:  # no webhook answering yet
                time.sleep(0.2)
                continue
            print(f"[sabotage] the reservation was refused: {exc}", file=sys.stderr, flush=True)
            return
        name = wanted["metadata"]["name"]
        print(f"[sabotage] after the upgrade: quota reserved for {name}", file=sys.stderr, flush=True)
        return


def reservation(kube: Kube, workload: dict[str, Any]) -> dict[str, Any]:
    """Quota reserved for *workload* in its LocalQueue's ClusterQueue, in that queue's first flavor."""
    local = kube.get(apis.LOCAL_QUEUE, workload["spec"]["queueName"], workload["metadata"]["namespace"])
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
    return quota_reserved(workload, cluster_queue, assignments)
