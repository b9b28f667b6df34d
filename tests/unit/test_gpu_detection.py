"""Telling real GPU nodes from harness-made ones: the decision behind the nvidia_gpu suite's skip.

Nodes are built in code in the shapes each provider makes them: the local provider's kwok nodes,
the kind provider's patched workers (manifests/nodes labels plus the pool label, no kwok marks),
and a node as the NVIDIA device plugin and GPU feature discovery leave it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kbc.cluster.pools import NodePool, kwok_nodes
from kbc.cluster.providers.kind import kind_config
from kbc.gpu import classify_gpu_nodes, harness_made, repelling_taints
from kbc.labels import GPU, POOL_LABEL, PRODUCT_LABEL, REAL_NODE_LABEL

Node = dict[str, Any]
GPU_TAINT = {"key": GPU, "value": "present", "effect": "NoSchedule"}


def node(
    name: str,
    *,
    gpus: int = 8,
    labels: dict[str, str] | None = None,
    annotations: dict[str, str] | None = None,
    ready: bool = True,
) -> Node:
    allocatable = {"cpu": "64", GPU: str(gpus)} if gpus else {"cpu": "64"}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": labels or {}, "annotations": annotations or {}},
        "spec": {"taints": [GPU_TAINT]},
        "status": {
            "capacity": dict(allocatable),
            "allocatable": allocatable,
            "conditions": [{"type": "Ready", "status": "True" if ready else "False"}],
        },
    }


GPU_POOL = NodePool(
    name="gpu-a100",
    replicas=1,
    template={
        "metadata": {"labels": {PRODUCT_LABEL: "NVIDIA-A100-SXM4-80GB", "nvidia.com/gpu.present": "true"}},
        "status": {"allocatable": {GPU: "8"}, "capacity": {GPU: "8"}},
    },
    source=Path(__file__),
)


def local_provider_node() -> Node:
    """A node exactly as the local provider creates it from a pool (kwok then keeps it Ready)."""
    made = kwok_nodes([GPU_POOL])[0]
    made["status"]["conditions"] = [{"type": "Ready", "status": "True"}]
    return made


def kind_worker() -> Node:
    """A kind worker as the kind provider leaves it: its config labels, GPUs patched into its status."""
    worker = next(n for n in kind_config([GPU_POOL])["nodes"] if n["role"] == "worker")
    return node("kbc-worker", labels={"kubernetes.io/hostname": "kbc-worker", **worker["labels"]})


def real_node() -> Node:
    """A node whose GPUs the NVIDIA device plugin advertises (GFD labels, no harness marks)."""
    return node(
        "ip-10-0-1-17",
        labels={
            "kubernetes.io/hostname": "ip-10-0-1-17",
            PRODUCT_LABEL: "NVIDIA-H100-80GB-HBM3",
            "nvidia.com/gpu.present": "true",
            "node.kubernetes.io/instance-type": "p5.48xlarge",
        },
        annotations={"nfd.node.kubernetes.io/feature-labels": "nvidia.com/gpu.product"},
    )


def test_kwok_node_is_excluded() -> None:
    fake = node("gpu-h100-0", annotations={"kwok.x-k8s.io/node": "fake"})
    assert "kwok.x-k8s.io/node=fake" in (harness_made(fake) or "")
    typed = node("kwok-node-1", labels={"type": "kwok"})
    assert "type=kwok" in (harness_made(typed) or "")
    found = classify_gpu_nodes([fake, typed])
    assert not found and found.names == []
    assert set(found.excluded) == {"gpu-h100-0", "kwok-node-1"}


def test_local_provider_node_is_excluded() -> None:
    made = local_provider_node()
    assert made["status"]["allocatable"][GPU] == "8"
    found = classify_gpu_nodes([made])
    assert found.names == [] and list(found.excluded) == ["gpu-a100-0"]


def test_harness_pool_node_is_excluded() -> None:
    pooled = node("gpu-pool-3", labels={POOL_LABEL: "gpu-h100"})
    why = harness_made(pooled)
    assert why is not None and "gpu-h100" in why and "conformance.kbatch.dev/pool" in why
    assert classify_gpu_nodes([pooled]).names == []


def test_kind_patched_worker_is_excluded() -> None:
    worker = kind_worker()
    # No kwok marks: only the pool label the kind provider puts on the workers it patches.
    assert "kwok.x-k8s.io/node" not in worker["metadata"]["annotations"]
    assert worker["metadata"]["labels"].get("type") != "kwok"
    why = harness_made(worker)
    assert why is not None and "gpu-a100" in why
    assert classify_gpu_nodes([worker]).excluded == {"kbc-worker": why}


def test_real_node_is_included() -> None:
    real = real_node()
    assert harness_made(real) is None
    found = classify_gpu_nodes([real])
    assert found and found.names == ["ip-10-0-1-17"] and found.excluded == {}


def test_nodes_without_gpus_or_not_ready_are_neither() -> None:
    found = classify_gpu_nodes([node("cpu-0", gpus=0), node("broken-gpu", ready=False)])
    assert found.names == [] and found.excluded == {}
    assert found.why_none() == (
        f"no node advertises {GPU} from a device plugin; no Ready node has allocatable {GPU} at all"
    )


def test_mixed_cluster_keeps_only_the_real_node_and_the_skip_reason_names_the_fakes() -> None:
    nodes = [
        local_provider_node(),
        node("gpu-h100-0", labels={"type": "kwok"}, annotations={"kwok.x-k8s.io/node": "fake"}),
        kind_worker(),
        node("cpu-0", gpus=0),
    ]
    without_real = classify_gpu_nodes(nodes)
    assert without_real.why_none() == (
        f"no node advertises {GPU} from a device plugin; harness-made fake GPU nodes excluded: "
        "gpu-a100-0, gpu-h100-0, kbc-worker"
    )
    with_real = classify_gpu_nodes([*nodes, real_node()])
    assert with_real.names == ["ip-10-0-1-17"]
    assert set(with_real.excluded) == {"gpu-a100-0", "gpu-h100-0", "kbc-worker"}


def test_a_node_tainted_against_the_harness_gpu_pods_is_not_offered_to_gpu_scenarios() -> None:
    pool_node = node("gpu-a100-0")
    assert repelling_taints(pool_node) == [], "harness GPU pods tolerate the GPU pools' own taint"
    real = node("kbc-real-1", gpus=1)
    real["spec"]["taints"] = [{"key": REAL_NODE_LABEL, "value": "true", "effect": "NoSchedule"}]
    assert repelling_taints(real) == [f"{REAL_NODE_LABEL}=true:NoSchedule"]
    # Its own pods tolerate it; PreferNoSchedule never keeps a pod off.
    own = {"key": REAL_NODE_LABEL, "operator": "Exists", "effect": "NoSchedule"}
    assert repelling_taints(real, [own]) == []
    soft = node("soft", gpus=1)
    soft["spec"]["taints"] = [{"key": "x", "value": "y", "effect": "PreferNoSchedule"}]
    assert repelling_taints(soft) == []
    wrong_value = node("v", gpus=1)
    wrong_value["spec"]["taints"] = [{"key": GPU, "value": "present", "effect": "NoExecute"}]
    assert repelling_taints(wrong_value) == [f"{GPU}=present:NoExecute"], (
        "the toleration names NoSchedule only"
    )
