"""The real-node gang outgrows its node: each of its workers asks for 45 % of the node's CPU (two fit, the
third never does), and every ClusterQueue quotes a hundred times the CPU it asked for, so that Kueue still
admits the gang by quota.

Admitted whole by quota, the gang is placed in part by the node: two workers wait at the rendezvous for a
third that never starts, the Job never completes, and the scenario must fail.
"""

from __future__ import annotations

from typing import Any

from kubernetes.utils.quantity import parse_quantity

from kbc import apis
from kbc.kube import Kube
from kbc.labels import REAL_NODE_LABEL
from tests.sabotage import quotas


def pytest_kbc_mutate_object(obj: dict[str, Any], kube: Kube) -> None:
    for resource in quotas(obj):
        if resource["name"] == "cpu":
            resource["nominalQuota"] = str(int(parse_quantity(resource["nominalQuota"]) * 100))
    if obj["kind"] == "Job" and obj["metadata"]["name"] == "meet":
        nodes = kube.list(apis.NODE, labels={REAL_NODE_LABEL: "true"})
        millis = int(parse_quantity(nodes[0]["status"]["allocatable"]["cpu"]) * 1000) * 45 // 100
        for container in obj["spec"]["template"]["spec"]["containers"]:
            container["resources"] = {"requests": {"cpu": f"{millis}m"}, "limits": {"cpu": f"{millis}m"}}
