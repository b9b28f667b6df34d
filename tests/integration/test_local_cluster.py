"""The local provider's cluster, against the real control plane and kwok nodes."""

from __future__ import annotations

import pytest

from kbc import apis, timeouts
from kbc.cluster.providers import Cluster
from kbc.gpu import allocatable_gpus, node_ready
from kbc.jobs import phase_of, wait_job_complete
from kbc.kube import Kube, hold_list, is_true, labels_of, wait_until_exists
from kbc.labels import GPU, GPU_COUNT_LABEL, GPU_PRESENT_LABEL, PRODUCT_LABEL
from kbc.supply.pins import ChartsLock
from kbc.workloads import EXIT_CODE, FAIL_AFTER, job, pod

pytestmark = pytest.mark.cluster


def test_nodes_ready_with_gpu_capacity_and_labels(kube: Kube) -> None:
    nodes = kube.list(apis.NODE)
    gpu_nodes = [n for n in nodes if labels_of(n).get(GPU_PRESENT_LABEL) == "true"]
    cpu_nodes = [n for n in nodes if n not in gpu_nodes]
    assert len(gpu_nodes) >= 2 and cpu_nodes, [n["metadata"]["name"] for n in nodes]
    assert all(node_ready(n) for n in nodes), [n["metadata"]["name"] for n in nodes if not node_ready(n)]
    for node in gpu_nodes:
        labels = labels_of(node)
        assert node["status"]["capacity"][GPU] == "8" and allocatable_gpus(node) == 8
        assert labels[GPU_COUNT_LABEL] == "8"
        assert labels[PRODUCT_LABEL].startswith("NVIDIA-")
        taints = [(t["key"], t.get("value"), t["effect"]) for t in node["spec"].get("taints") or []]
        assert (GPU, "present", "NoSchedule") in taints
    assert not [n for n in cpu_nodes if allocatable_gpus(n)], "CPU nodes advertise no GPU"
    products = {labels_of(n)[PRODUCT_LABEL] for n in gpu_nodes}
    assert len(products) >= 2, "two GPU products are needed for flavor fallback scenarios"


def test_control_plane_reports_the_pinned_version(
    kube: Kube, charts_lock: ChartsLock, cluster: Cluster
) -> None:
    assert kube.get_path("/version")["gitVersion"] == charts_lock.kubernetes.version
    assert cluster.details["kubernetes"] == charts_lock.kubernetes.version


def test_job_whose_pods_ask_to_complete_reaches_complete(kube: Kube, namespace: str) -> None:
    kube.create(job("done", pods=3, run_for="2s"), namespace=namespace)
    finished = wait_job_complete(kube, namespace, "done")
    assert finished["status"]["succeeded"] == 3
    pods = kube.list(apis.POD, namespace=namespace, labels={"job-name": "done"})
    assert len(pods) == 3 and all(phase_of(p) == "Succeeded" for p in pods)


def test_pod_fails_on_request_with_its_exit_code(kube: Kube, namespace: str) -> None:
    kube.create(pod("crash", annotations={FAIL_AFTER: "1s", EXIT_CODE: "3"}), namespace=namespace)
    failed = wait_until_exists(
        kube,
        apis.POD,
        "crash",
        namespace=namespace,
        timeout=timeouts.SHORT,
        what="pod crash to fail",
        until=lambda p: phase_of(p) == "Failed",
    )
    terminated = failed["status"]["containerStatuses"][0]["state"]["terminated"]
    assert terminated["exitCode"] == 3 and terminated["reason"] == "Error"


def test_pod_without_annotation_keeps_running(kube: Kube, namespace: str) -> None:
    kube.create(pod("holder"), namespace=namespace)
    wait_until_exists(
        kube,
        apis.POD,
        "holder",
        namespace=namespace,
        until=lambda p: is_true(p, "Ready"),
        timeout=timeouts.SHORT,
        what="pod holder to be Ready",
    )
    hold_list(
        kube,
        apis.POD,
        namespace=namespace,
        holds=lambda pods: [phase_of(p) for p in pods] == ["Running"],
        what="the un-annotated pod Running (kwok must not complete it)",
    )
