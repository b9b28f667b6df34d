"""Every object a webhook scenario sends is made valid on its way: a ClusterQueue's lendingLimit is held to
its nominal quota, a JobSet's success policy names its own replicated jobs, a vcjob's minAvailable is held
to its replicas, a TrainJob sets no variable of torchrun's.

What the component's webhook had to refuse is then accepted, and each refusal scenario must fail.
"""

from __future__ import annotations

from typing import Any

from kbc.kube import Kube
from tests.sabotage import quotas


def pytest_kbc_mutate_object(obj: dict[str, Any], kube: Kube) -> None:
    spec = obj.get("spec") or {}
    for resource in quotas(obj):
        if "lendingLimit" in resource:
            resource["lendingLimit"] = resource["nominalQuota"]
    if obj["kind"] == "JobSet" and "successPolicy" in spec:
        spec["successPolicy"]["targetReplicatedJobs"] = [r["name"] for r in spec["replicatedJobs"]]
    if obj["kind"] == "TrainJob":
        spec["trainer"].pop("env", None)
    if obj["kind"] == "Job" and obj["apiVersion"].startswith("batch.volcano.sh/"):
        spec["minAvailable"] = min(spec["minAvailable"], sum(t["replicas"] for t in spec["tasks"]))
        for task in spec["tasks"]:
            if "minAvailable" in task:
                task["minAvailable"] = min(task["minAvailable"], task["replicas"])
