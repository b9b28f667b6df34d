"""GPU ResourceQuota: a namespace cap on ``requests.nvidia.com/gpu`` is enforced by the API server.

Platform teams give each tenant namespace a GPU budget with a ResourceQuota. These
scenarios prove the cap refuses what exceeds it (HTTP 403, ``exceeded quota``), admits
what fits, keeps ``status.used`` current, makes a Job that exceeds it report
``FailedCreate``, and that a GPU request without a matching limit never gets that far.
"""

from __future__ import annotations

import allure
import pytest

from kbc import apis, timeouts
from kbc.events import wait_event
from kbc.kube import Kube, wait_until_exists
from kbc.resource_quota import BUDGET, GPU_QUOTA_KEY, expect_refused, used_gpus, wait_gpus_capped
from kbc.workloads import job, pod

pytestmark = [pytest.mark.gpu_quota, allure.epic("Kubernetes"), allure.feature("gpu_quota")]


def wait_used(kube: Kube, namespace: str, gpus: int) -> None:
    wait_until_exists(
        kube,
        apis.RESOURCE_QUOTA,
        BUDGET,
        namespace=namespace,
        timeout=timeouts.LONG,
        what=f"status.used of {BUDGET} to count {gpus} GPUs",
        until=lambda q: used_gpus(q) == str(gpus),
    )


@allure.story("a pod over the namespace GPU cap is refused with 403; one within it is admitted")
def test_pod_over_the_gpu_cap_is_refused_and_one_within_is_admitted(kube: Kube, namespace: str) -> None:
    with allure.step("cap the namespace at 4 GPUs"):
        wait_gpus_capped(kube, namespace, 4)
    with allure.step("a 6-GPU pod is refused"):
        refusal = expect_refused(kube, pod("greedy", gpus=6), namespace, "6 GPUs in a namespace capped at 4")
        assert (refusal.status, refusal.reason) == (403, "Forbidden"), refusal
        assert f"exceeded quota: {BUDGET}" in refusal.message, refusal.message
        assert (
            f"requested: {GPU_QUOTA_KEY}=6, used: {GPU_QUOTA_KEY}=0, limited: {GPU_QUOTA_KEY}=4"
            in refusal.message
        ), refusal.message
    with allure.step("a 3-GPU pod is admitted and status.used follows"):
        kube.create(pod("fits", gpus=3), namespace=namespace)
        wait_used(kube, namespace, 3)
    with allure.step("a second 3-GPU pod would make 6 of 4: refused"):
        second = expect_refused(kube, pod("second", gpus=3), namespace, "3 more GPUs with 3 of 4 used")
        assert second.status == 403, second
        assert (
            f"requested: {GPU_QUOTA_KEY}=3, used: {GPU_QUOTA_KEY}=3, limited: {GPU_QUOTA_KEY}=4"
            in second.message
        ), second.message
    with allure.step("deleting the admitted pod gives its GPUs back"):
        kube.delete(apis.POD, "fits", namespace=namespace, grace_period=0)
        wait_used(kube, namespace, 0)


@allure.story("a Job whose pods exceed the GPU cap reports FailedCreate with the quota message")
def test_job_over_the_gpu_cap_reports_failed_create(kube: Kube, namespace: str) -> None:
    wait_gpus_capped(kube, namespace, 2)
    kube.create(job("trainer", gpus=4), namespace=namespace)
    event = wait_event(
        kube,
        namespace,
        kind="Job",
        name="trainer",
        reason="FailedCreate",
        contains=f"exceeded quota: {BUDGET}",
        timeout=timeouts.LONG,
    )
    assert f"requested: {GPU_QUOTA_KEY}=4" in event["message"], event["message"]
    assert event["type"] == "Warning", event
    assert not kube.list(apis.POD, namespace=namespace), "no pod of the Job may exist"
    status = kube.get(apis.JOB, "trainer", namespace).get("status") or {}
    assert not status.get("active"), f"the Job may have no active pod: {status}"


@allure.story("a GPU request without a matching limit is refused by validation")
def test_gpu_request_without_a_matching_limit_is_invalid(kube: Kube, namespace: str) -> None:
    cases = (
        (
            pod("no-limit", gpus=1, gpu_limit=0),
            "spec.containers[0].resources.limits: Required value: Limit must be set for "
            "non overcommitable resources",
        ),
        (
            pod("mismatch", gpus=1, gpu_limit=2),
            'spec.containers[0].resources.requests: Invalid value: "1": '
            "must be equal to nvidia.com/gpu limit of 2",
        ),
    )
    for manifest, expected in cases:
        refusal = expect_refused(
            kube, manifest, namespace, "an extended resource needs a limit equal to its request"
        )
        assert (refusal.status, refusal.reason) == (422, "Invalid"), refusal
        assert expected in refusal.message, refusal.message
    assert not kube.list(apis.POD, namespace=namespace)
