"""Every GPU pod is bound straight to a node without GPUs (its nodeName set, so no scheduler decides).

kwok runs what is bound to its nodes; the scenario, which proves GPU pods land only on nodes with
allocatable GPUs, must fail and name the node.
"""

from __future__ import annotations

from typing import Any

from kbc import apis
from kbc.gpu import allocatable_gpus
from kbc.kube import Kube
from kbc.labels import GPU


def pytest_kbc_mutate_object(obj: dict[str, Any], kube: Kube) -> None:
    if obj["kind"] != "Pod":
        return
    asks = any(GPU in ((c.get("resources") or {}).get("requests") or {}) for c in obj["spec"]["containers"])
    if not asks:
        return
    cpu_nodes = sorted(n["metadata"]["name"] for n in kube.list(apis.NODE) if not allocatable_gpus(n))
    if not cpu_nodes:
        raise RuntimeError("sabotage: the cluster has no node without GPUs to bind the GPU pods to")
    obj["spec"]["nodeName"] = cpu_nodes[0]
