"""Quota-zero and quota-capped queuing with Kueue.

A workload that does not fit its ClusterQueue's quota must wait suspended with zero
pods, for as long as it does not fit (a consistency window, not a single look), and
run once quota appears.
"""

from __future__ import annotations

import allure
import pytest

from kbc import apis
from kbc.gpu import gpu_node_names
from kbc.jobs import node_of, wait_job_complete, wait_pods_running
from kbc.kube import Kube, condition, labels_of
from kbc.kueue import (
    CLUSTER_QUEUE_NAME_LABEL,
    LOCAL_QUEUE_NAME_LABEL,
    MISSING_QUEUE_REASONS,
    QueueFactory,
    Queues,
    hold_suspended,
    wait_admitted,
    wait_pending,
    wait_workload_of,
)
from kbc.labels import GPU
from kbc.workloads import job

pytestmark = [pytest.mark.quota, pytest.mark.kueue, allure.epic("Kueue"), allure.feature("quota")]


@pytest.fixture
def zero_cpu_queues(make_kueue_queues: QueueFactory) -> Queues:
    return make_kueue_queues({"cpu": "0"})


@allure.story("a Job in a quota-zero ClusterQueue waits suspended with no pods until quota appears")
def test_quota_zero_waits_then_runs_when_quota_is_raised(
    kube: Kube, namespace: str, zero_cpu_queues: Queues
) -> None:
    queues = zero_cpu_queues
    with allure.step("submit a 2-pod Job (100m CPU each) to a ClusterQueue with nominalQuota 0"):
        created = kube.create(
            job("waits", pods=2, cpu="100m", run_for="2s", queue=queues.local_queue), namespace=namespace
        )
        assert created["spec"]["suspend"] is True, "Kueue's webhook suspends a Job that names a LocalQueue"
        name = wait_workload_of(kube, namespace, created)[0]["metadata"]["name"]
        wait_pending(kube, namespace, name)
    with allure.step("it stays suspended with zero pods for the consistency window"):
        cond = hold_suspended(kube, namespace, "waits", name)
        # Kueue's max-capacity wording (flavorassigner): nothing can ever fit a quota of zero.
        expected = (
            f"couldn't assign flavors to pod set main: insufficient quota for cpu in flavor {queues.flavor}, "
            "previously considered podsets requests (0) + current podset request (200m) > "
            "maximum capacity (0)"
        )
        assert cond["message"] == expected, f"expected {expected!r}, got {cond['message']!r}"
    with allure.step("raise nominalQuota to 200m CPU: the Workload is admitted and its pods run"):
        cq = kube.get(apis.CLUSTER_QUEUE, queues.cluster_queue)
        cq["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0]["nominalQuota"] = "200m"
        kube.replace(cq)
        wait_admitted(kube, namespace, name)
        pods = wait_pods_running(kube, namespace, {"job-name": "waits"}, 2, what="the Job's 2 pods running")
        for pod in pods:  # Kueue labels the pods it admitted with their queues
            assert labels_of(pod).get(CLUSTER_QUEUE_NAME_LABEL) == queues.cluster_queue, labels_of(pod)
            assert labels_of(pod).get(LOCAL_QUEUE_NAME_LABEL) == queues.local_queue, labels_of(pod)
        wait_job_complete(kube, namespace, "waits")


@pytest.fixture
def four_gpu_queues(make_kueue_queues: QueueFactory) -> Queues:
    return make_kueue_queues({"cpu": "32", GPU: "4"})


@allure.story("a GPU quota keeps an over-quota Job suspended while a Job within quota runs")
def test_gpu_quota_admits_what_fits_and_holds_what_does_not(
    kube: Kube, namespace: str, four_gpu_queues: Queues
) -> None:
    queues = four_gpu_queues
    with allure.step("submit a 4-GPU Job and an 8-GPU Job to a ClusterQueue with 4 GPUs"):
        small = kube.create(job("fits", gpus=4, queue=queues.local_queue), namespace=namespace)
        large = kube.create(job("too-big", gpus=8, queue=queues.local_queue), namespace=namespace)
        fits = wait_workload_of(kube, namespace, small)[0]["metadata"]["name"]
        too_big = wait_workload_of(kube, namespace, large)[0]["metadata"]["name"]
    with allure.step("the 4-GPU Job is admitted and its pod runs on a node with allocatable GPUs"):
        wait_admitted(kube, namespace, fits)
        (pod,) = wait_pods_running(kube, namespace, {"job-name": "fits"}, 1, what="the 4-GPU pod running")
        assert node_of(pod) in gpu_node_names(kube), (
            f"the 4-GPU pod runs on {node_of(pod)}, a node without GPUs"
        )
    with allure.step("the 8-GPU Job waits suspended with zero pods: 8 exceeds the quota of 4"):
        wait_pending(kube, namespace, too_big)
        cond = hold_suspended(kube, namespace, "too-big", too_big)
        expected = (
            "couldn't assign flavors to pod set main: "
            f"insufficient quota for {GPU} in flavor {queues.flavor}, "
            "previously considered podsets requests (0) + current podset request (8) > maximum capacity (4)"
        )
        assert cond["message"] == expected, f"expected {expected!r}, got {cond['message']!r}"


@allure.story("a Job naming a LocalQueue that does not exist stays suspended and says why")
def test_job_naming_a_missing_local_queue_stays_suspended(kube: Kube, namespace: str) -> None:
    created = kube.create(job("orphan", queue="no-such-queue"), namespace=namespace)
    assert created["spec"]["suspend"] is True, "Kueue's webhook suspends a Job that names a LocalQueue"
    name = wait_workload_of(kube, namespace, created)[0]["metadata"]["name"]
    (pending,) = wait_pending(kube, namespace, name)
    cond = condition(pending, "QuotaReserved")
    assert cond is not None and cond["reason"] in MISSING_QUEUE_REASONS, cond
    assert "LocalQueue no-such-queue doesn't exist" in cond["message"], cond["message"]
    hold_suspended(kube, namespace, "orphan", name)
