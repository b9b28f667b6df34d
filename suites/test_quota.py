"""Quota-zero and quota-capped queuing with Kueue.

A workload that does not fit its ClusterQueue's quota must wait suspended with zero
pods, for as long as it does not fit (a consistency window, not a single look), and
run once quota appears.
"""

from __future__ import annotations

from collections.abc import Iterator

import allure
import pytest
from lightkube import Client
from lightkube.resources.core_v1 import Pod

from kbc.gpu import GPU
from kbc.kube import load, wait_for_list, wait_job_complete
from kbc.kueue import (
    PENDING_REASONS,
    ClusterQueue,
    Queues,
    condition,
    hold_suspended,
    make_queues,
    queued_job,
    wait_admitted,
    wait_pending,
    workload_of,
)

pytestmark = [pytest.mark.quota, pytest.mark.kueue, allure.epic("Kueue"), allure.feature("quota")]


@pytest.fixture
def zero_cpu_queues(kube: Client, namespace: str, unique: str) -> Iterator[Queues]:
    yield from make_queues(kube, namespace, unique, {"cpu": "0"})


@allure.story("a Job in a quota-zero ClusterQueue waits suspended with no pods until quota appears")
def test_quota_zero_waits_then_runs_when_quota_is_raised(
    kube: Client, namespace: str, zero_cpu_queues: Queues
) -> None:
    queues = zero_cpu_queues
    with allure.step("submit a 2-pod Job to a ClusterQueue with nominalQuota 0"):
        created = kube.create(
            queued_job("waits", queues.local_queue, pods=2, run_for="2s"), namespace=namespace
        )
        assert created.spec.suspend is True, "Kueue's webhook suspends a Job that names a LocalQueue"
        workload = workload_of(kube, created, namespace)
        name = workload.metadata.name
        wait_pending(kube, name, namespace)
    with allure.step("it stays suspended with zero pods for the consistency window"):
        cond = hold_suspended(kube, namespace, "waits", name)
        assert cond["reason"] in PENDING_REASONS
        assert "couldn't assign flavors to pod set main" in cond["message"], cond["message"]
        assert "insufficient quota for cpu in flavor" in cond["message"], cond["message"]
        # Kueue's max-capacity wording (flavorassigner): nothing can ever fit a quota of zero.
        assert "> maximum capacity (0)" in cond["message"], cond["message"]
    with allure.step("raise nominalQuota to 2 CPUs: the Workload is admitted and its pods run"):
        cq = kube.get(ClusterQueue, queues.cluster_queue).to_dict()
        cq["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0]["nominalQuota"] = "2"
        kube.replace(load(cq))
        admitted = wait_admitted(kube, name, namespace, timeout=30)
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
        wait_job_complete(kube, "waits", namespace)


@allure.story("a GPU quota keeps an over-quota Job suspended while a Job within quota runs")
def test_gpu_quota_admits_what_fits_and_holds_what_does_not(
    kube: Client, namespace: str, unique: str
) -> None:
    queues_iter = make_queues(kube, namespace, unique, {"cpu": "32", GPU: "4"})
    queues = next(queues_iter)
    try:
        small = kube.create(queued_job("fits", queues.local_queue, pods=1, gpus=4), namespace=namespace)
        large = kube.create(queued_job("too-big", queues.local_queue, pods=1, gpus=8), namespace=namespace)
        fits = workload_of(kube, small, namespace)
        too_big = workload_of(kube, large, namespace)
        wait_admitted(kube, fits.metadata.name, namespace, timeout=30)
        wait_pending(kube, too_big.metadata.name, namespace, timeout=30)
        cond = hold_suspended(kube, namespace, "too-big", too_big.metadata.name)
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
    created = kube.create(queued_job("orphan", "no-such-queue"), namespace=namespace)
    assert created.spec.suspend is True
    workload = workload_of(kube, created, namespace)
    name = workload.metadata.name
    pending = wait_pending(kube, name, namespace, timeout=30)
    cond = condition(pending, "QuotaReserved")
    assert cond is not None and cond["reason"] in {"Misconfigured", "Inadmissible", "Pending"}, cond
    assert "LocalQueue no-such-queue doesn't exist" in cond["message"], cond["message"]
    hold_suspended(kube, namespace, "orphan", name)
