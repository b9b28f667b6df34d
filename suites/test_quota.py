"""Quota-zero and quota-capped queuing with Kueue.

A workload that does not fit its ClusterQueue's quota must wait suspended with zero
pods, for as long as it does not fit (a consistency window, not a single look), and
run once quota appears.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import allure
import pytest
from lightkube import Client
from lightkube.resources.batch_v1 import Job
from lightkube.resources.core_v1 import Pod

from kbc.kube import hold_list, load, wait_for_list, wait_for_object
from kbc.kueue import (
    PENDING_REASONS,
    QUEUE_LABEL,
    ClusterQueue,
    Queues,
    Workload,
    condition,
    is_pending,
    is_true,
    make_queues,
    workload_of,
)

pytestmark = [pytest.mark.quota, pytest.mark.kueue, allure.epic("Kueue"), allure.feature("quota")]

WINDOW_S = 5.0
GPU = "nvidia.com/gpu"
COMPLETE_AFTER = "conformance.kbatch.dev/complete-after"


def job(name: str, queue: str, *, pods: int = 1, cpu: str = "1", gpus: int = 0, run_for: str = "") -> Any:
    resources: dict[str, Any] = {"requests": {"cpu": cpu}}
    spec: dict[str, Any] = {
        "restartPolicy": "Never",
        "containers": [{"name": "main", "image": "registry.invalid/train:1"}],
    }
    if gpus:
        resources["requests"][GPU] = str(gpus)
        resources["limits"] = {GPU: str(gpus)}
        spec["tolerations"] = [{"key": GPU, "operator": "Exists", "effect": "NoSchedule"}]
    spec["containers"][0]["resources"] = resources
    template: dict[str, Any] = {"spec": spec}
    if run_for:
        template["metadata"] = {"annotations": {COMPLETE_AFTER: run_for}}
    return load(
        {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": {"name": name, "labels": {QUEUE_LABEL: queue}},
            "spec": {"parallelism": pods, "completions": pods, "backoffLimit": 0, "template": template},
        }
    )


def assert_waits_suspended(kube: Client, namespace: str, job_name: str, workload: str) -> dict[str, Any]:
    """The Job stays suspended with zero pods and its Workload pending, for the whole window."""
    hold_list(
        kube,
        Pod,
        namespace=namespace,
        labels={"job-name": job_name},
        holds=lambda pods: not pods,
        window=WINDOW_S,
        what=f"zero pods for Job {job_name}",
    )
    current = kube.get(Job, job_name, namespace=namespace)
    assert current.spec.suspend is True, "the Job must stay suspended while its Workload is pending"
    held = kube.get(Workload, workload, namespace=namespace)
    assert is_pending(held), condition(held, "QuotaReserved")
    assert not is_true(held, "Admitted")
    cond = condition(held, "QuotaReserved")
    assert cond is not None
    return cond


@pytest.fixture
def zero_cpu_queues(kube: Client, namespace: str, unique: str) -> Iterator[Queues]:
    yield from make_queues(kube, namespace, unique, {"cpu": "0"})


@allure.story("a Job in a quota-zero ClusterQueue waits suspended with no pods until quota appears")
def test_quota_zero_waits_then_runs_when_quota_is_raised(
    kube: Client, namespace: str, zero_cpu_queues: Queues
) -> None:
    queues = zero_cpu_queues
    with allure.step("submit a 2-pod Job to a ClusterQueue with nominalQuota 0"):
        created = kube.create(job("waits", queues.local_queue, pods=2, run_for="2s"), namespace=namespace)
        assert created.spec.suspend is True, "Kueue's webhook suspends a Job that names a LocalQueue"
        workload = workload_of(kube, created, namespace)
        name = workload.metadata.name
        wait_for_object(
            kube,
            Workload,
            name,
            namespace=namespace,
            until=is_pending,
            timeout=30,
            what="the Workload's QuotaReserved=False condition",
        )
    with allure.step("it stays suspended with zero pods for the consistency window"):
        cond = assert_waits_suspended(kube, namespace, "waits", name)
        assert cond["reason"] in PENDING_REASONS
        assert "couldn't assign flavors to pod set main" in cond["message"], cond["message"]
        assert "insufficient quota for cpu in flavor" in cond["message"], cond["message"]
    with allure.step("raise nominalQuota to 2 CPUs: the Workload is admitted and its pods run"):
        cq = kube.get(ClusterQueue, queues.cluster_queue).to_dict()
        cq["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0]["nominalQuota"] = "2"
        kube.replace(load(cq))
        admitted = wait_for_object(
            kube,
            Workload,
            name,
            namespace=namespace,
            timeout=30,
            what="the Workload to be admitted",
            until=lambda w: is_true(w, "Admitted"),
        )
        assert admitted.to_dict()["status"]["admission"]["clusterQueue"] == queues.cluster_queue
        pods = wait_for_list(
            kube,
            Pod,
            namespace=namespace,
            labels={"job-name": "waits"},
            timeout=30,
            until=lambda ps: len(ps) == 2,
            what="the Job's 2 pods",
        )
        for pod in pods:  # Kueue labels the pods it admitted with their queues
            assert pod.metadata.labels.get("kueue.x-k8s.io/cluster-queue-name") == queues.cluster_queue
            assert pod.metadata.labels.get("kueue.x-k8s.io/local-queue-name") == queues.local_queue
        wait_for_object(
            kube,
            Job,
            "waits",
            namespace=namespace,
            timeout=60,
            what="the Job to complete",
            until=lambda j: is_true(j, "Complete"),
            fail=lambda j: "Failed" if is_true(j, "Failed") else None,
        )


@allure.story("a GPU quota keeps an over-quota Job suspended while a Job within quota runs")
def test_gpu_quota_admits_what_fits_and_holds_what_does_not(
    kube: Client, namespace: str, unique: str
) -> None:
    queues_iter = make_queues(kube, namespace, unique, {"cpu": "32", GPU: "4"})
    queues = next(queues_iter)
    try:
        small = kube.create(job("fits", queues.local_queue, pods=1, gpus=4), namespace=namespace)
        large = kube.create(job("too-big", queues.local_queue, pods=1, gpus=8), namespace=namespace)
        fits = workload_of(kube, small, namespace)
        too_big = workload_of(kube, large, namespace)
        wait_for_object(
            kube,
            Workload,
            fits.metadata.name,
            namespace=namespace,
            timeout=30,
            what="the 4-GPU Workload to be admitted",
            until=lambda w: is_true(w, "Admitted"),
        )
        wait_for_object(
            kube,
            Workload,
            too_big.metadata.name,
            namespace=namespace,
            until=is_pending,
            timeout=30,
            what="the 8-GPU Workload to be pending",
        )
        cond = assert_waits_suspended(kube, namespace, "too-big", too_big.metadata.name)
        assert f"insufficient quota for {GPU}" in cond["message"] or "exceeds" in cond["message"].lower(), (
            cond
        )
        pods = wait_for_list(
            kube,
            Pod,
            namespace=namespace,
            labels={"job-name": "fits"},
            timeout=30,
            until=lambda ps: len(ps) == 1 and ps[0].spec.nodeName,
            what="the 4-GPU pod bound",
        )
        assert pods[0].spec.nodeName.startswith("gpu-")
    finally:
        next(queues_iter, None)


@allure.story("a Job naming a LocalQueue that does not exist stays suspended and says why")
def test_job_naming_a_missing_local_queue_stays_suspended(kube: Client, namespace: str) -> None:
    created = kube.create(job("orphan", "no-such-queue"), namespace=namespace)
    assert created.spec.suspend is True
    workload = workload_of(kube, created, namespace)
    name = workload.metadata.name
    pending = wait_for_object(
        kube,
        Workload,
        name,
        namespace=namespace,
        until=is_pending,
        timeout=30,
        what="the Workload to report why it is not admitted",
    )
    cond = condition(pending, "QuotaReserved")
    assert cond is not None and cond["reason"] in {"Misconfigured", "Inadmissible", "Pending"}, cond
    assert "LocalQueue no-such-queue doesn't exist" in cond["message"], cond["message"]
    assert_waits_suspended(kube, namespace, "orphan", name)
