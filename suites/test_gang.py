"""Gang (all-or-nothing) admission: a multi-pod workload gets every pod or none.

Kueue admits a Workload only when all its pods fit the ClusterQueue's quota; a second
gang that does not fit waits suspended with zero pods (never half-started, which is
the deadlock this suite exists to catch) and runs whole once the first one finishes.
The negative control shows that deadlock under the default scheduler alone, so a
passing Kueue scenario means something.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import allure
import pytest
from lightkube import Client
from lightkube.models.core_v1 import PodSchedulingGate
from lightkube.resources.batch_v1 import Job
from lightkube.resources.core_v1 import Pod
from lightkube.types import PatchType

from kbc.gpu import COMPLETE_AFTER, GPU, leave_free, pod_spec, pod_template
from kbc.kube import (
    CONSISTENCY_WINDOW_S,
    condition,
    hold_list,
    load,
    wait_for_list,
    wait_for_object,
    wait_job_complete,
    wait_pods_running,
)
from kbc.kueue import (
    QUEUE_LABEL,
    Queues,
    Workload,
    hold_suspended,
    is_true,
    make_queues,
    wait_admitted,
    wait_pending,
    workload_of,
)

pytestmark = [pytest.mark.gang, allure.feature("gang")]


def gang_job(name: str, queue: str | None, pods: int, run_for: str = "", **shape: Any) -> Any:
    """A Job of *pods* pods, one GPU each; it goes through Kueue when *queue* names a LocalQueue."""
    template = pod_template(gpus=1, run_for=run_for, **shape)
    return load(
        {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": {"name": name, "labels": {QUEUE_LABEL: queue} if queue else {}},
            "spec": {"parallelism": pods, "completions": pods, "backoffLimit": 0, "template": template},
        }
    )


@pytest.fixture
def six_gpus(kube: Client, namespace: str, unique: str) -> Iterator[Queues]:
    """A ClusterQueue with room for 6 GPUs: one 4-GPU gang fits, two do not."""
    yield from make_queues(kube, namespace, unique, {"cpu": "16", GPU: "6"})


@pytest.mark.kueue
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
        wait_pods_running(kube, namespace, {"job-name": "gang-a"}, 4, what="all 4 pods of gang A running")
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


@pytest.mark.kueue
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
                "template": pod_template(gpus=1, run_for=run_for),
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
    wait_pods_running(
        kube, namespace, {"jobset.sigs.k8s.io/jobset-name": "first"}, 4, what="all 4 pods of the first JobSet"
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


ARRIVAL_GATE = "conformance.kbatch.dev/arrival-order"


def placed(pod: Any) -> bool:
    return bool(pod.spec.nodeName)


def gang_state(pods: list[Any]) -> str:
    bound = sum(1 for p in pods if placed(p))
    return f"{bound} of {len(pods)} pods bound"


@pytest.mark.serial
@allure.epic("Kubernetes")
@allure.story(
    "negative control without Kueue: two 4-GPU Job gangs on 6 free GPUs end partially placed "
    "under the default scheduler (the deadlock)"
)
def test_without_kueue_two_gangs_on_six_gpus_end_partially_placed(kube: Client, namespace: str) -> None:
    with allure.step("leave exactly 6 GPUs free on one GPU node"):
        filler = leave_free(kube, namespace, free=6)
        pin = filler.node.selector
    with allure.step("create gangs A and B (4 pods x 1 GPU each, no queue), their pods held at a gate"):
        # The gate lets the pods of both gangs reach the scheduler interleaved, A1 B1 A2 B2 ..., as
        # they do when two Job controllers create pods at once; the scheduler still decides placement.
        for name in ("gang-a", "gang-b"):
            job = gang_job(name, None, 4, node_selector=pin)
            job.spec.template.spec.schedulingGates = [PodSchedulingGate(name=ARRIVAL_GATE)]
            kube.create(job, namespace=namespace)
        pods = {
            name: wait_for_list(
                kube,
                Pod,
                namespace=namespace,
                labels={"job-name": name},
                until=lambda ps: len(ps) == 4,
                timeout=60,
                what=f"the Job controller to create the 4 gated pods of {name}",
            )
            for name in ("gang-a", "gang-b")
        }
    with allure.step("release the pods to the default scheduler in turn: A1, B1, A2, B2, ..."):
        for index in range(4):
            for name in ("gang-a", "gang-b"):
                pod_name = sorted(p.metadata.name for p in pods[name])[index]
                kube.patch(
                    Pod,
                    pod_name,
                    [{"op": "remove", "path": "/spec/schedulingGates"}],
                    namespace=namespace,
                    patch_type=PatchType.JSON,
                )
                # Wait for the scheduler's verdict on this pod before releasing the next one.
                wait_for_object(
                    kube,
                    Pod,
                    pod_name,
                    namespace=namespace,
                    timeout=60,
                    what=f"the scheduler to place or reject {pod_name}",
                    until=lambda p: (
                        p is not None
                        and (placed(p) or (condition(p, "PodScheduled") or {}).get("status") == "False")
                    ),
                )

    def deadlocked(all_pods: list[Any]) -> bool:
        by_gang = [
            [p for p in all_pods if p.metadata.labels.get("job-name") == n] for n in ("gang-a", "gang-b")
        ]
        return all(len(g) == 4 and 0 < sum(map(placed, g)) < 4 for g in by_gang)

    def describe(all_pods: list[Any]) -> str:
        return "; ".join(
            f"{n}: {gang_state([p for p in all_pods if p.metadata.labels.get('job-name') == n])}"
            for n in ("gang-a", "gang-b")
        )

    with allure.step("both gangs are partially placed, and stay so for the consistency window"):
        wait_for_list(
            kube,
            Pod,
            namespace=namespace,
            until=deadlocked,
            timeout=30,
            what="both gangs to be partially placed",
            describe=describe,
        )
        final = hold_list(
            kube,
            Pod,
            namespace=namespace,
            holds=deadlocked,
            window=CONSISTENCY_WINDOW_S,
            what="both gangs partially placed",
            describe=describe,
        )
    with allure.step("the unplaced pods are Unschedulable for want of GPUs"):
        waiting = [p for p in final if p.metadata.labels.get("job-name") and not placed(p)]
        for pod in waiting:
            cond = condition(pod, "PodScheduled") or {}
            assert cond.get("reason") == "Unschedulable", (pod.metadata.name, cond)
            assert f"Insufficient {GPU}" in cond.get("message", ""), (pod.metadata.name, cond)
        running = [p for p in final if p.metadata.labels.get("job-name") and placed(p)]
        assert all(p.status.phase == "Running" for p in running), describe(final)
        assert {p.spec.nodeName for p in running} == {filler.node.name}


ADMISSION_GATE = "kueue.x-k8s.io/admission"
GROUP_LABEL = "kueue.x-k8s.io/pod-group-name"
GROUP_TOTAL = "kueue.x-k8s.io/pod-group-total-count"
GPU_PRESENT = {"nvidia.com/gpu.present": "true"}


def group_pod(name: str, group: str, total: int, queue: str) -> Any:
    """A plain pod in Kueue pod group *group* of *total* pods, one GPU, finishing after 3 s."""
    return load(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": name,
                "labels": {QUEUE_LABEL: queue, GROUP_LABEL: group},
                "annotations": {GROUP_TOTAL: str(total), COMPLETE_AFTER: "3s"},
            },
            "spec": pod_spec(gpus=1),
        }
    )


def gated(pod: Any) -> bool:
    return any(g.name == ADMISSION_GATE for g in pod.spec.schedulingGates or [])


@pytest.fixture
def gpu_flavor_queues(kube: Client, namespace: str, unique: str) -> Iterator[Queues]:
    """Room for 4 GPUs in a flavor whose nodes are the GPU nodes (GFD's gpu.present label)."""
    yield from make_queues(kube, namespace, unique, {"cpu": "8", GPU: "4"}, flavor_labels=GPU_PRESENT)


@pytest.mark.kueue
@allure.epic("Kueue")
@allure.story("a plain-pod group stays gated while incomplete and is admitted whole once complete")
def test_plain_pod_group_is_admitted_only_when_complete(
    kube: Client, namespace: str, gpu_flavor_queues: Queues
) -> None:
    queue = gpu_flavor_queues.local_queue
    group = "trainers"
    with allure.step("create 2 of the group's 3 pods"):
        for index in range(2):
            created = kube.create(group_pod(f"trainer-{index}", group, 3, queue), namespace=namespace)
            assert gated(created), (
                f"Kueue's pod webhook must add the {ADMISSION_GATE} gate to {created.metadata.name}"
            )
    with allure.step("the incomplete group stays gated and unscheduled for the consistency window"):
        hold_list(
            kube,
            Pod,
            namespace=namespace,
            labels={GROUP_LABEL: group},
            holds=lambda pods: len(pods) == 2 and all(gated(p) and not p.spec.nodeName for p in pods),
            window=CONSISTENCY_WINDOW_S,
            what="the 2 pods of the incomplete group gated and unscheduled",
        )
        incomplete = [w for w in kube.list(Workload, namespace=namespace) if is_true(w, "QuotaReserved")]
        assert not incomplete, f"no Workload may hold quota for an incomplete group: {incomplete}"
    with allure.step("add the third pod: the group's Workload is admitted, gates go, pods run on GPU nodes"):
        kube.create(group_pod("trainer-2", group, 3, queue), namespace=namespace)
        wait_admitted(kube, group, namespace, timeout=60)
        pods = wait_for_list(
            kube,
            Pod,
            namespace=namespace,
            labels={GROUP_LABEL: group},
            timeout=60,
            what="all 3 pods ungated and bound",
            until=lambda ps: len(ps) == 3 and all(not gated(p) and p.spec.nodeName for p in ps),
        )
        for pod in pods:
            assert pod.spec.nodeSelector == GPU_PRESENT, (
                f"Kueue injects the flavor's nodeLabels into {pod.metadata.name}: {pod.spec.nodeSelector}"
            )
    with allure.step("the group's Workload finishes"):
        finished = wait_for_object(
            kube,
            Workload,
            group,
            namespace=namespace,
            timeout=60,
            what=f"Workload {group} to finish",
            until=lambda w: is_true(w, "Finished"),
        )
        assert (condition(finished, "Finished") or {}).get("reason") == "Succeeded", condition(
            finished, "Finished"
        )
