"""Gang (all-or-nothing) admission: a multi-pod workload gets every pod or none.

Kueue admits a Workload only when all its pods fit the ClusterQueue's quota; a second
gang that does not fit waits suspended with zero pods (never half-started, which is
the deadlock this suite exists to catch) and runs whole once the first one finishes.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import allure
import pytest
from lightkube import Client
from lightkube.resources.batch_v1 import Job
from lightkube.resources.core_v1 import Pod

from kbc.kube import CONSISTENCY_WINDOW_S, hold_list, load, wait_for_list, wait_job_complete
from kbc.kueue import (
    QUEUE_LABEL,
    Queues,
    hold_suspended,
    make_queues,
    wait_admitted,
    wait_pending,
    workload_of,
)

pytestmark = [pytest.mark.gang, pytest.mark.kueue, allure.feature("gang")]

GPU = "nvidia.com/gpu"
GPU_TOLERATION = {"key": GPU, "operator": "Exists", "effect": "NoSchedule"}
COMPLETE_AFTER = "conformance.kbatch.dev/complete-after"


def gpu_pod_template(run_for: str) -> dict[str, Any]:
    return {
        "metadata": {"annotations": {COMPLETE_AFTER: run_for}},
        "spec": {
            "restartPolicy": "Never",
            "tolerations": [GPU_TOLERATION],
            "containers": [
                {
                    "name": "worker",
                    "image": "registry.invalid/train:1",
                    "resources": {"requests": {"cpu": "1", GPU: "1"}, "limits": {GPU: "1"}},
                }
            ],
        },
    }


def gang_job(name: str, queue: str, pods: int, run_for: str) -> Any:
    return load(
        {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": {"name": name, "labels": {QUEUE_LABEL: queue}},
            "spec": {
                "parallelism": pods,
                "completions": pods,
                "backoffLimit": 0,
                "template": gpu_pod_template(run_for),
            },
        }
    )


def running_pods(kube: Client, namespace: str, labels: dict[str, str], count: int, what: str) -> list[Any]:
    return wait_for_list(
        kube,
        Pod,
        namespace=namespace,
        labels=labels,
        timeout=60,
        what=what,
        until=lambda pods: (
            len(pods) == count and all(p.spec.nodeName and p.status.phase == "Running" for p in pods)
        ),
    )


@pytest.fixture
def six_gpus(kube: Client, namespace: str, unique: str) -> Iterator[Queues]:
    """A ClusterQueue with room for 6 GPUs: one 4-GPU gang fits, two do not."""
    yield from make_queues(kube, namespace, unique, {"cpu": "16", GPU: "6"})


@allure.epic("Kueue")
@allure.story("of two 4-GPU Job gangs on 6 GPUs of quota, one runs whole and the other waits with zero pods")
def test_two_job_gangs_one_runs_whole_the_other_waits_whole(
    kube: Client, namespace: str, six_gpus: Queues
) -> None:
    with allure.step("submit gang A (4 x 1 GPU, finishes after 8 s), then gang B (4 x 1 GPU)"):
        a = kube.create(gang_job("gang-a", six_gpus.local_queue, 4, "8s"), namespace=namespace)
        wl_a = workload_of(kube, a, namespace)
        wait_admitted(kube, wl_a.metadata.name, namespace, timeout=30)
        b = kube.create(gang_job("gang-b", six_gpus.local_queue, 4, "2s"), namespace=namespace)
        wl_b = workload_of(kube, b, namespace)
    with allure.step("gang A runs all 4 pods"):
        running_pods(kube, namespace, {"job-name": "gang-a"}, 4, "all 4 pods of gang A running")
    with allure.step("gang B stays suspended with zero pods for the consistency window"):
        wait_pending(kube, wl_b.metadata.name, namespace, timeout=30)
        hold_suspended(kube, namespace, "gang-b", wl_b.metadata.name)
    with allure.step("when gang A completes, gang B is admitted and runs whole"):
        wait_job_complete(kube, "gang-a", namespace, timeout=60)
        wait_admitted(kube, wl_b.metadata.name, namespace, timeout=60)
        pods = wait_for_list(
            kube,
            Pod,
            namespace=namespace,
            labels={"job-name": "gang-b"},
            timeout=60,
            what="gang B's 4 pods",
            until=lambda ps: len(ps) == 4,
        )
        assert all(p.spec.tolerations for p in pods)
        wait_job_complete(kube, "gang-b", namespace, timeout=60)


@pytest.mark.jobset
@allure.epic("JobSet")
@allure.story(
    "a JobSet is one Workload admitted whole; a second JobSet that does not fit stays fully suspended"
)
def test_jobset_is_admitted_whole_and_a_second_one_waits_whole(
    kube: Client, namespace: str, six_gpus: Queues
) -> None:
    def jobset(name: str, run_for: str) -> Any:
        # 2 replicated Jobs x 2 pods x 1 GPU = 4 GPUs, one Workload with one PodSet per replicated Job.
        template = {
            "spec": {
                "parallelism": 2,
                "completions": 2,
                "backoffLimit": 0,
                "template": gpu_pod_template(run_for),
            }
        }
        return load(
            {
                "apiVersion": "jobset.x-k8s.io/v1alpha2",
                "kind": "JobSet",
                "metadata": {
                    "name": name,
                    "namespace": namespace,
                    "labels": {QUEUE_LABEL: six_gpus.local_queue},
                },
                "spec": {"replicatedJobs": [{"name": "workers", "replicas": 2, "template": template}]},
            }
        )

    first = kube.create(jobset("first", "8s"))
    assert first.to_dict()["spec"].get("suspend") is True, "Kueue's JobSet webhook suspends a queued JobSet"
    wl_first = workload_of(kube, first, namespace)
    assert len(wl_first.to_dict()["spec"]["podSets"]) == 1
    assert wl_first.to_dict()["spec"]["podSets"][0]["count"] == 4
    wait_admitted(kube, wl_first.metadata.name, namespace, timeout=30)
    running_pods(
        kube, namespace, {"jobset.sigs.k8s.io/jobset-name": "first"}, 4, "all 4 pods of the first JobSet"
    )

    second = kube.create(jobset("second", "2s"))
    wl_second = workload_of(kube, second, namespace)
    wait_pending(kube, wl_second.metadata.name, namespace, timeout=30)
    hold_list(
        kube,
        Pod,
        namespace=namespace,
        labels={"jobset.sigs.k8s.io/jobset-name": "second"},
        holds=lambda pods: not pods,
        window=CONSISTENCY_WINDOW_S,
        what="zero pods of the second JobSet",
    )
    assert not [
        j
        for j in kube.list(Job, namespace=namespace)
        if j.metadata.labels.get("jobset.sigs.k8s.io/jobset-name") == "second" and not j.spec.suspend
    ], "no child Job of the waiting JobSet may be unsuspended"
