"""GPU ResourceQuota: a namespace cap on ``requests.nvidia.com/gpu`` is enforced by the API server.

Platform teams give each tenant namespace a GPU budget with a ResourceQuota. These
scenarios prove the cap refuses what exceeds it (HTTP 403, ``exceeded quota``), admits
what fits, keeps ``status.used`` current, makes a Job that exceeds it report
``FailedCreate``, and that a GPU request without a matching limit never gets that far.
"""

from __future__ import annotations

from typing import Any

import allure
import pytest
from lightkube import Client
from lightkube.resources.batch_v1 import Job
from lightkube.resources.core_v1 import Event, Pod, ResourceQuota

from kbc.gpu import GPU, GPU_TOLERATION, pod_template
from kbc.kube import load, wait_for_list, wait_for_object
from kbc.quota import GPU_QUOTA_KEY, cap_gpus, refused, used_gpus

pytestmark = [pytest.mark.gpu_quota, allure.epic("Kubernetes"), allure.feature("gpu_quota")]


def gpu_pod(name: str, requests: int, limits: int | None = None) -> Any:
    resources: dict[str, Any] = {"requests": {GPU: str(requests)}}
    if limits is not None:
        resources["limits"] = {GPU: str(limits)}
    return load(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": name},
            "spec": {
                "restartPolicy": "Never",
                "tolerations": [GPU_TOLERATION],
                "containers": [{"name": "main", "image": "registry.invalid/cuda:1", "resources": resources}],
            },
        }
    )


@allure.story("a pod over the namespace GPU cap is refused with 403; one within it is admitted")
def test_pod_over_the_gpu_cap_is_refused_and_one_within_is_admitted(kube: Client, namespace: str) -> None:
    with allure.step("cap the namespace at 4 GPUs"):
        cap_gpus(kube, namespace, 4)
    with allure.step("a 6-GPU pod is refused"):
        status = refused(kube, gpu_pod("greedy", 6, 6), namespace, "6 GPUs in a namespace capped at 4")
        assert status.code == 403, status
        assert status.reason == "Forbidden"
        assert "exceeded quota: gpu-budget" in status.message
        assert (
            f"requested: {GPU_QUOTA_KEY}=6, used: {GPU_QUOTA_KEY}=0, limited: {GPU_QUOTA_KEY}=4"
            in status.message
        )
    with allure.step("a 3-GPU pod is admitted and status.used follows"):
        kube.create(gpu_pod("fits", 3, 3), namespace=namespace)
        wait_for_object(
            kube,
            ResourceQuota,
            "gpu-budget",
            namespace=namespace,
            timeout=30,
            what="status.used to count 3 GPUs",
            until=lambda q: used_gpus(q) == "3",
        )
    with allure.step("a second 3-GPU pod would make 6 of 4: refused"):
        second = refused(kube, gpu_pod("second", 3, 3), namespace, "3 more GPUs with 3 of 4 used")
        assert second.code == 403, second
        assert f"used: {GPU_QUOTA_KEY}=3" in second.message, second.message
    with allure.step("deleting the admitted pod gives its GPUs back"):
        kube.delete(Pod, "fits", namespace=namespace, grace_period=0)
        wait_for_object(
            kube,
            ResourceQuota,
            "gpu-budget",
            namespace=namespace,
            timeout=60,
            what="status.used to return to 0",
            until=lambda q: used_gpus(q) == "0",
        )


@allure.story("a Job whose pods exceed the GPU cap reports FailedCreate with the quota message")
def test_job_over_the_gpu_cap_reports_failed_create(kube: Client, namespace: str) -> None:
    cap_gpus(kube, namespace, 2)
    job = load(
        {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": {"name": "trainer"},
            "spec": {"backoffLimit": 0, "template": pod_template(gpus=4)},
        }
    )
    kube.create(job, namespace=namespace)

    def failed_create(events: list[Any]) -> bool:
        return any(e.reason == "FailedCreate" and e.involvedObject.name == "trainer" for e in events)

    events = wait_for_list(
        kube,
        Event,
        namespace=namespace,
        until=failed_create,
        timeout=60,
        what="the Job controller to report FailedCreate",
    )
    event = next(e for e in events if e.reason == "FailedCreate")
    assert event.involvedObject.kind == "Job"
    assert "exceeded quota: gpu-budget" in event.message
    assert f"requested: {GPU_QUOTA_KEY}=4" in event.message
    assert not list(kube.list(Pod, namespace=namespace)), "no pod of the Job may exist"
    assert kube.get(Job, "trainer", namespace=namespace).status.active in (None, 0)


@allure.story("a GPU request without a matching limit is refused by validation")
def test_gpu_request_without_a_matching_limit_is_invalid(kube: Client, namespace: str) -> None:
    cases = (
        (
            gpu_pod("no-limit", 1),
            "spec.containers[0].resources.limits: Required value: Limit must be set for "
            "non overcommitable resources",
        ),
        (
            gpu_pod("mismatch", 1, 2),
            f'spec.containers[0].resources.requests: Invalid value: "1": must be equal to {GPU} limit of 2',
        ),
    )
    for pod, expected in cases:
        status = refused(kube, pod, namespace, "an extended resource needs a limit equal to its request")
        assert status.code == 422 and status.reason == "Invalid", status
        assert expected in status.message, status.message
    assert not list(kube.list(Pod, namespace=namespace))
