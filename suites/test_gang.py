"""Gang (all-or-nothing) admission: a multi-pod workload gets every pod or none.

Kueue admits a Workload only when all its pods fit the ClusterQueue's quota; a second
gang that does not fit waits suspended with zero pods (never half-started, which is
the deadlock this suite exists to catch) and runs whole once the first one finishes.
The negative control shows that deadlock under the default scheduler alone, so a
passing Kueue scenario means something.
"""

from __future__ import annotations

import allure
import pytest

from kbc import apis, timeouts
from kbc.gpu import wait_gpus_left_free
from kbc.jobs import (
    ARRIVAL_GATE,
    Contenders,
    describe_pods,
    hold_deadlocked,
    node_of,
    release_in_turn,
    wait_job_complete,
    wait_pods_running,
)
from kbc.kube import Kube, Obj, condition, hold_list, is_true, wait_for_list
from kbc.kueue import (
    ADMISSION_GATE,
    POD_GROUP_LABEL,
    QueueFactory,
    Queues,
    hold_suspended,
    wait_admitted,
    wait_finished,
    wait_pending,
    wait_workload_of,
)
from kbc.labels import GPU, GPU_PRESENT_LABEL
from kbc.workloads import group_pod, job, jobset

pytestmark = [pytest.mark.gang, allure.feature("gang")]

GANG = 4
JOBSET_LABEL = "jobset.sigs.k8s.io/jobset-name"


@pytest.fixture
def six_gpus(make_kueue_queues: QueueFactory) -> Queues:
    """A ClusterQueue with room for 6 GPUs: one 4-GPU gang fits, two do not."""
    return make_kueue_queues({"cpu": "16", GPU: "6"})


@pytest.mark.kueue
@allure.epic("Kueue")
@allure.story("of two 4-GPU Job gangs on 6 GPUs of quota, one runs whole and the other waits with zero pods")
def test_two_job_gangs_one_runs_whole_the_other_waits_whole(
    kube: Kube, namespace: str, six_gpus: Queues
) -> None:
    with allure.step("submit gang A (4 x 1 GPU, finishes after 8 s), then gang B (4 x 1 GPU)"):
        a = kube.create(
            job("gang-a", pods=GANG, gpus=1, run_for="8s", queue=six_gpus.local_queue), namespace=namespace
        )
        wl_a = wait_workload_of(kube, namespace, a)[0]["metadata"]["name"]
        wait_admitted(kube, namespace, wl_a)
        b = kube.create(
            job("gang-b", pods=GANG, gpus=1, run_for="2s", queue=six_gpus.local_queue), namespace=namespace
        )
        wl_b = wait_workload_of(kube, namespace, b)[0]["metadata"]["name"]
    with allure.step("gang A runs all 4 pods"):
        wait_pods_running(kube, namespace, {"job-name": "gang-a"}, GANG, what="all 4 pods of gang A running")
    with allure.step("gang B stays suspended with zero pods for the consistency window"):
        wait_pending(kube, namespace, wl_b)
        hold_suspended(kube, namespace, "gang-b", wl_b)
    with allure.step("when gang A completes, gang B is admitted and runs whole"):
        wait_job_complete(kube, namespace, "gang-a")
        wait_admitted(kube, namespace, wl_b)
        wait_pods_running(kube, namespace, {"job-name": "gang-b"}, GANG, what="all 4 pods of gang B running")
        wait_job_complete(kube, namespace, "gang-b")


@pytest.mark.kueue
@pytest.mark.jobset
@allure.epic("JobSet")
@allure.story(
    "a JobSet is one Workload admitted whole; a second JobSet that does not fit stays fully suspended"
)
def test_jobset_is_admitted_whole_and_a_second_one_waits_whole(
    kube: Kube, namespace: str, six_gpus: Queues
) -> None:
    def four_gpu_jobset(name: str, run_for: str) -> Obj:
        # 2 child Jobs x 2 pods x 1 GPU = 4 GPUs: one Workload with one PodSet of 4.
        return jobset(
            name, replicated_jobs=2, pods_per_job=2, gpus=1, run_for=run_for, queue=six_gpus.local_queue
        )

    first = kube.create(four_gpu_jobset("first", "8s"), namespace=namespace)
    assert first["spec"].get("suspend") is True, (
        "Kueue's JobSet webhook suspends a JobSet that names a LocalQueue"
    )
    (wl_first,) = wait_workload_of(kube, namespace, first)
    pod_sets = wl_first["spec"]["podSets"]
    assert [p["count"] for p in pod_sets] == [GANG], f"one PodSet of all 4 pods: {pod_sets}"
    wait_admitted(kube, namespace, wl_first["metadata"]["name"])
    wait_pods_running(kube, namespace, {JOBSET_LABEL: "first"}, GANG, what="all 4 pods of the first JobSet")

    second = kube.create(four_gpu_jobset("second", "2s"), namespace=namespace)
    wl_second = wait_workload_of(kube, namespace, second)[0]["metadata"]["name"]
    wait_pending(kube, namespace, wl_second)

    def unsuspended_children(jobs: list[Obj]) -> list[str]:
        return [j["metadata"]["name"] for j in jobs if not (j.get("spec") or {}).get("suspend")]

    hold_list(
        kube,
        apis.POD,
        namespace=namespace,
        labels={JOBSET_LABEL: "second"},
        holds=lambda pods: not pods,
        describe=describe_pods,
        what="zero pods of the second JobSet",
    )
    children = kube.list(apis.JOB, namespace=namespace, labels={JOBSET_LABEL: "second"})
    assert not unsuspended_children(children), (
        f"no child Job of the waiting JobSet may be unsuspended: {unsuspended_children(children)}"
    )


GANGS = Contenders("job-name", ("gang-a", "gang-b"), GANG)


@pytest.mark.serial
@allure.epic("Kubernetes")
@allure.story(
    "negative control without Kueue: two 4-GPU Job gangs on 6 free GPUs end partially placed "
    "under the default scheduler (the deadlock)"
)
def test_without_kueue_two_gangs_on_six_gpus_end_partially_placed(kube: Kube, namespace: str) -> None:
    with allure.step("leave exactly 6 GPUs free on one GPU node"):
        filler = wait_gpus_left_free(kube, namespace, free=6)
    with allure.step("create gangs A and B (4 pods x 1 GPU each, no queue), their pods held at a gate"):
        # The gate lets the pods of both gangs reach the scheduler interleaved, A1 B1 A2 B2 ..., as
        # they do when two Job controllers create pods at once; the scheduler still decides placement.
        # What is proven is placement: a container that fails to start (a kind node starting seven at
        # once on a busy host did, once) restarts where it is rather than hand its GPU to the other gang.
        for name in GANGS.names:
            gated = job(
                name,
                pods=GANG,
                gpus=1,
                node_selector=filler.node.selector,
                gates=(ARRIVAL_GATE,),
                restart_in_place=True,
            )
            kube.create(gated, namespace=namespace)
    with allure.step("release the pods to the default scheduler in turn: A1, B1, A2, B2, ..."):
        release_in_turn(kube, namespace, GANGS, made_by="the Job controller")
    with allure.step("both gangs are partially placed, and stay so for the consistency window"):
        final = hold_deadlocked(kube, namespace, GANGS)
    with allure.step("the scheduler says the unplaced pods are Unschedulable for want of GPUs"):
        for pod in (p for p in final if not node_of(p)):
            cond = condition(pod, "PodScheduled") or {}
            assert cond.get("reason") == "Unschedulable", (pod["metadata"]["name"], cond)
            assert f"Insufficient {GPU}" in cond.get("message", ""), (pod["metadata"]["name"], cond)


@pytest.fixture
def gpu_flavor_queues(make_kueue_queues: QueueFactory) -> Queues:
    """Room for 4 GPUs in a flavor whose nodes are the GPU nodes (GFD's gpu.present label)."""
    return make_kueue_queues({"cpu": "8", GPU: "4"}, flavors={"gpu": {GPU_PRESENT_LABEL: "true"}})


def gated(pod: Obj) -> bool:
    return any(g.get("name") == ADMISSION_GATE for g in (pod.get("spec") or {}).get("schedulingGates") or [])


@pytest.mark.kueue
@allure.epic("Kueue")
@allure.story("a plain-pod group stays gated while incomplete and is admitted whole once complete")
def test_plain_pod_group_is_admitted_only_when_complete(
    kube: Kube, namespace: str, gpu_flavor_queues: Queues
) -> None:
    queue = gpu_flavor_queues.local_queue
    group = "trainers"
    with allure.step("create 2 of the group's 3 pods"):
        for index in range(2):
            created = kube.create(group_pod(f"trainer-{index}", group, 3, queue), namespace=namespace)
            assert gated(created), (
                f"Kueue's pod webhook must add the {ADMISSION_GATE} gate to trainer-{index}"
            )
    with allure.step("the incomplete group stays gated and unscheduled, and no Workload holds quota"):
        hold_list(
            kube,
            apis.POD,
            namespace=namespace,
            labels={POD_GROUP_LABEL: group},
            holds=lambda pods: len(pods) == 2 and all(gated(p) and not node_of(p) for p in pods),
            describe=describe_pods,
            what="the 2 pods of the incomplete group gated and unscheduled",
        )
        reserving = [
            w["metadata"]["name"]
            for w in kube.list(apis.WORKLOAD, namespace=namespace)
            if is_true(w, "QuotaReserved")
        ]
        assert not reserving, f"no Workload may hold quota for an incomplete group: {reserving}"
    with allure.step(
        "add the third pod: the group's Workload is admitted, gates go, pods run on the flavor's nodes"
    ):
        kube.create(group_pod("trainer-2", group, 3, queue), namespace=namespace)
        wait_admitted(kube, namespace, group)
        pods = wait_for_list(
            kube,
            apis.POD,
            namespace=namespace,
            labels={POD_GROUP_LABEL: group},
            timeout=timeouts.POD_START,
            what="all 3 pods ungated and bound",
            until=lambda ps: len(ps) == 3 and all(not gated(p) and node_of(p) for p in ps),
            describe=describe_pods,
        )
        for pod in pods:
            selector = (pod.get("spec") or {}).get("nodeSelector")
            assert selector == {GPU_PRESENT_LABEL: "true"}, (
                f"Kueue injects the flavor's nodeLabels into {pod['metadata']['name']}: {selector}"
            )
    with allure.step("the group's Workload finishes Succeeded"):
        (finished,) = wait_finished(kube, namespace, group)
        assert (condition(finished, "Finished") or {}).get("reason") == "Succeeded", condition(
            finished, "Finished"
        )
