"""The local provider's cluster, against the real control plane and kwok nodes."""

from __future__ import annotations

import threading
from typing import Any

import pytest
from lightkube import ApiError, Client
from lightkube.resources.batch_v1 import Job
from lightkube.resources.core_v1 import Node, Pod, ResourceQuota

from kbc.kube import CONSISTENCY_WINDOW_S, ConsistencyViolation, api_get, hold_list, load, wait_for_object
from kbc.lockfile import ChartsLock
from kbc.providers import Cluster

pytestmark = pytest.mark.cluster

GPU = "nvidia.com/gpu"
GPU_TOLERATION = {"key": GPU, "operator": "Exists", "effect": "NoSchedule"}
COMPLETE_AFTER = "conformance.kbatch.dev/complete-after"
FAIL_AFTER = "conformance.kbatch.dev/fail-after"
EXIT_CODE = "conformance.kbatch.dev/exit-code"


def pod(
    name: str,
    *,
    gpus: int = 0,
    tolerate_gpu: bool = False,
    annotations: dict[str, str] | None = None,
    restart_policy: str = "Never",
) -> Any:
    resources = {"limits": {GPU: str(gpus)}, "requests": {GPU: str(gpus)}} if gpus else {}
    spec: dict[str, Any] = {
        "restartPolicy": restart_policy,
        "containers": [{"name": "main", "image": "registry.invalid/fake:1", "resources": resources}],
    }
    if tolerate_gpu:
        spec["tolerations"] = [GPU_TOLERATION]
    return load(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": name, "annotations": annotations or {}},
            "spec": spec,
        }
    )


def is_ready(p: Any) -> bool:
    conditions = (p.status.conditions if p and p.status else None) or []
    return any(c.type == "Ready" and c.status == "True" for c in conditions)


def test_nodes_ready_with_gpu_capacity_and_labels(kube: Client) -> None:
    nodes = list(kube.list(Node))
    gpu_nodes = [n for n in nodes if n.metadata.labels.get("nvidia.com/gpu.present") == "true"]
    cpu_nodes = [n for n in nodes if n not in gpu_nodes]
    assert len(gpu_nodes) >= 2 and cpu_nodes, [n.metadata.name for n in nodes]
    for node in nodes:
        assert any(c.type == "Ready" and c.status == "True" for c in node.status.conditions), (
            node.metadata.name
        )
    for node in gpu_nodes:
        labels = node.metadata.labels
        assert node.status.capacity[GPU] == "8" and node.status.allocatable[GPU] == "8"
        assert labels["nvidia.com/gpu.count"] == "8"
        assert labels["nvidia.com/gpu.product"].startswith("NVIDIA-")
        taints = [(t.key, t.value, t.effect) for t in node.spec.taints or []]
        assert (GPU, "present", "NoSchedule") in taints
    for node in cpu_nodes:
        assert GPU not in (node.status.allocatable or {})
    products = {n.metadata.labels["nvidia.com/gpu.product"] for n in gpu_nodes}
    assert len(products) >= 2, "two GPU products are needed for flavor fallback scenarios"


def test_control_plane_reports_the_pinned_version(
    kube: Client, charts_lock: ChartsLock, cluster: Cluster
) -> None:
    version = api_get(kube, "/version")
    assert version["gitVersion"] == charts_lock.kubernetes.version
    assert cluster.details["kubernetes"] == charts_lock.kubernetes.version


def test_gpu_pod_with_toleration_binds_to_a_gpu_node(kube: Client, namespace: str) -> None:
    kube.create(pod("gpu", gpus=1, tolerate_gpu=True), namespace=namespace)
    running = wait_for_object(
        kube, Pod, "gpu", namespace=namespace, until=is_ready, timeout=30, what="the GPU pod to be Ready"
    )
    node = kube.get(Node, running.spec.nodeName)
    assert node.metadata.labels.get("nvidia.com/gpu.present") == "true"
    assert running.status.phase == "Running"


def test_gpu_pod_without_toleration_never_binds(kube: Client, namespace: str) -> None:
    kube.create(pod("untolerated", gpus=1), namespace=namespace)

    def unschedulable(p: Any) -> bool:
        conditions = (p.status.conditions if p and p.status else None) or []
        return any(
            c.type == "PodScheduled" and c.status == "False" and c.reason == "Unschedulable"
            for c in conditions
        )

    pending = wait_for_object(
        kube,
        Pod,
        "untolerated",
        namespace=namespace,
        until=unschedulable,
        timeout=30,
        what="the scheduler to report the pod Unschedulable",
    )
    message = next(c.message for c in pending.status.conditions if c.type == "PodScheduled")
    assert "untolerated taint" in message and GPU in message, message
    assert "Insufficient nvidia.com/gpu" in message, message
    hold_list(
        kube,
        Pod,
        namespace=namespace,
        holds=lambda pods: all(not p.spec.nodeName and p.status.phase == "Pending" for p in pods),
        window=CONSISTENCY_WINDOW_S,
        what="the GPU pod without the toleration unbound and Pending",
    )


def test_job_whose_pods_ask_to_complete_reaches_complete(kube: Client, namespace: str) -> None:
    job = load(
        {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": {"name": "done"},
            "spec": {
                "completions": 3,
                "parallelism": 3,
                "backoffLimit": 0,
                "template": {
                    "metadata": {"annotations": {COMPLETE_AFTER: "2s"}},
                    "spec": {
                        "restartPolicy": "Never",
                        "containers": [{"name": "main", "image": "registry.invalid/fake:1"}],
                    },
                },
            },
        }
    )
    kube.create(job, namespace=namespace)

    def complete(j: Any) -> bool:
        return (
            any(c.type == "Complete" and c.status == "True" for c in (j.status.conditions or []))
            if (j and j.status)
            else False
        )

    def failed(j: Any) -> str | None:
        for c in (j.status.conditions or []) if j and j.status else []:
            if c.type == "Failed" and c.status == "True":
                return f"Job failed: {c.reason}: {c.message}"
        return None

    finished = wait_for_object(
        kube,
        Job,
        "done",
        namespace=namespace,
        until=complete,
        fail=failed,
        timeout=60,
        what="Job done to be Complete",
    )
    assert finished.status.succeeded == 3
    pods = list(kube.list(Pod, namespace=namespace, labels={"job-name": "done"}))
    assert len(pods) == 3 and all(p.status.phase == "Succeeded" for p in pods)


def test_pod_fails_on_request_with_its_exit_code(kube: Client, namespace: str) -> None:
    kube.create(pod("crash", annotations={FAIL_AFTER: "1s", EXIT_CODE: "3"}), namespace=namespace)
    failed = wait_for_object(
        kube,
        Pod,
        "crash",
        namespace=namespace,
        timeout=30,
        what="pod crash to fail",
        until=lambda p: p is not None and p.status.phase == "Failed",
    )
    terminated = failed.status.containerStatuses[0].state.terminated
    assert terminated.exitCode == 3 and terminated.reason == "Error"


def test_pod_without_annotation_keeps_running(kube: Client, namespace: str) -> None:
    kube.create(pod("holder"), namespace=namespace)
    wait_for_object(
        kube, Pod, "holder", namespace=namespace, until=is_ready, timeout=30, what="pod holder to be Ready"
    )
    hold_list(
        kube,
        Pod,
        namespace=namespace,
        holds=lambda pods: [p.status.phase for p in pods] == ["Running"],
        window=CONSISTENCY_WINDOW_S,
        what="the un-annotated pod Running (kwok must not complete it)",
    )


def test_gpu_resource_quota_rejects_pods_over_the_cap(kube: Client, namespace: str) -> None:
    quota = load(
        {
            "apiVersion": "v1",
            "kind": "ResourceQuota",
            "metadata": {"name": "gpus"},
            "spec": {"hard": {f"requests.{GPU}": "2"}},
        }
    )
    kube.create(quota, namespace=namespace)
    # The quota controller must have computed status.hard before admission enforces it.
    wait_for_object(
        kube,
        ResourceQuota,
        "gpus",
        namespace=namespace,
        timeout=30,
        what="quota status",
        until=lambda q: q is not None and q.status is not None and bool(q.status.hard),
    )
    with pytest.raises(ApiError) as rejected:
        kube.create(pod("too-many", gpus=3, tolerate_gpu=True), namespace=namespace)
    assert rejected.value.status.code == 403
    assert "exceeded quota: gpus" in rejected.value.status.message
    assert f"requested: requests.{GPU}=3" in rejected.value.status.message

    kube.create(pod("fits", gpus=2, tolerate_gpu=True), namespace=namespace)
    used = wait_for_object(
        kube,
        ResourceQuota,
        "gpus",
        namespace=namespace,
        timeout=30,
        what="quota status.used to count the admitted pod",
        until=lambda q: (q.status.used or {}).get(f"requests.{GPU}") == "2",
    )
    assert used.status.hard[f"requests.{GPU}"] == "2"
    with pytest.raises(ApiError) as missing:
        kube.get(Pod, "too-many", namespace=namespace)
    assert missing.value.status.code == 404, "a pod refused by the quota must not exist"


def test_a_consistency_window_catches_a_change_inside_it(kube: Client, namespace: str) -> None:
    """hold_list watches the whole window: a pod that appears after 1 s of 5 fails it at once."""
    timer = threading.Timer(1.0, lambda: kube.create(pod("intruder"), namespace=namespace))
    timer.start()
    try:
        with pytest.raises(ConsistencyViolation) as info:
            hold_list(
                kube,
                Pod,
                namespace=namespace,
                holds=lambda pods: not pods,
                window=CONSISTENCY_WINDOW_S,
                what="no pods in the namespace",
            )
    finally:
        timer.join()
    assert 0.9 <= info.value.after < CONSISTENCY_WINDOW_S, info.value.after
    assert "intruder" in str(info.value)
