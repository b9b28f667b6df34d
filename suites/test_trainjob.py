"""Kubeflow Trainer's TrainJob through Kueue: a distributed training job is one Workload, admitted whole
or not at all.

Kueue's webhook suspends a TrainJob submitted to a LocalQueue; suspended, Trainer keeps its JobSet
suspended and no pod of any node exists. Admitted, Kueue resumes it and Trainer's JobSet makes every node's
pod at once. The negative control shows what that prevents: without Kueue, two TrainJobs contending for
too few GPUs end each partly placed, for good.

Where pods really run (kind), the nodes run the toolbox's ``/bin/meet`` and meet over the network at the
address Trainer's torch plugin wired into them, as torchrun would: admitted whole, all of them meet and the
TrainJob completes; placed in part without Kueue, the placed ones hang there. That proves Trainer's wiring,
not only its pods.
"""

from __future__ import annotations

import allure
import pytest

from kbc import apis, timeouts
from kbc.components.trainer import (
    JOBSET_NAME_LABEL,
    KUEUE_PATCH,
    TRAIN_JOB,
    hold_suspended,
    runtime_patch,
    train_job,
    wait_complete,
    wait_nodes_running,
    wait_suspended,
)
from kbc.flavors import gpu_products, node_products
from kbc.gpu import has_gpu_toleration, wait_gpus_left_free
from kbc.jobs import (
    ARRIVAL_GATE,
    MEET,
    Contenders,
    hold_deadlocked,
    node_of,
    release_in_turn,
)
from kbc.kube import Kube, Obj, condition, is_true, wait_until_exists
from kbc.kueue import (
    QueueFactory,
    Queues,
    wait_admitted,
    wait_pending,
    wait_preempted,
    wait_usage,
    wait_workload_of,
)
from kbc.kueue.settings import PODS_READY_SHORT
from kbc.labels import GPU, PRODUCT_LABEL
from kbc.workloads import GPU_TOLERATION
from suites._pods_ready import StuckJob, evicted_at_timeout_and_next_admitted, pods_made_unbound
from suites._rendezvous import check_all_met, check_all_waiting

pytestmark = [
    pytest.mark.trainjob,
    pytest.mark.trainer,
    allure.epic("Kubeflow Trainer"),
    allure.feature("trainjob"),
]

NODES = 4
"""Nodes per TrainJob: a pod each, one GPU each."""


@pytest.fixture
def six_gpus(make_kueue_queues: QueueFactory) -> Queues:
    """A ClusterQueue with room for 6 GPUs: one 4-node TrainJob fits, two do not."""
    return make_kueue_queues({"cpu": "16", GPU: "6"})


@pytest.mark.kueue
@pytest.mark.jobset
@allure.story(
    "of two 4-node TrainJobs (1 GPU a node) on 6 GPUs of quota, one runs whole and the other stays "
    "suspended without a single pod until the first is deleted"
)
def test_a_trainjob_is_admitted_whole_and_a_second_waits_without_a_pod(
    kube: Kube, namespace: str, six_gpus: Queues
) -> None:
    with allure.step("submit TrainJob first (4 nodes on torch-distributed, 1 GPU each)"):
        first = kube.create(
            train_job("first", nodes=NODES, gpus=1, queue=six_gpus.local_queue), namespace=namespace
        )
        (wl_first,) = wait_workload_of(kube, namespace, first)
        counts = [p["count"] for p in wl_first["spec"]["podSets"]]
        assert sum(counts) == NODES, (
            f"the TrainJob's Workload holds all {NODES} nodes' pods: {wl_first['spec']['podSets']}"
        )
        wait_admitted(kube, namespace, wl_first["metadata"]["name"])
        wait_nodes_running(kube, namespace, "first", NODES)
    with allure.step("submit TrainJob second: its Workload is pending, the job suspended with no pod"):
        second = kube.create(
            train_job("second", nodes=NODES, gpus=1, queue=six_gpus.local_queue), namespace=namespace
        )
        wl_second = wait_workload_of(kube, namespace, second)[0]["metadata"]["name"]
        wait_pending(kube, namespace, wl_second)
        hold_suspended(kube, namespace, "second")
    with allure.step("delete the first: the second is admitted and all its nodes' pods run"):
        kube.delete(TRAIN_JOB, "first", namespace=namespace)
        wait_admitted(kube, namespace, wl_second)
        wait_nodes_running(kube, namespace, "second", NODES)


@pytest.mark.kueue
@pytest.mark.jobset
@allure.story("a TrainJob in a quota-zero ClusterQueue stays suspended without a pod until quota appears")
def test_quota_zero_holds_the_trainjob_suspended_until_the_quota_is_raised(
    kube: Kube, namespace: str, make_kueue_queues: QueueFactory
) -> None:
    queues = make_kueue_queues({"cpu": "0"})
    with allure.step("submit a 2-node TrainJob (100m CPU a node) to a quota of zero"):
        created = kube.create(
            train_job("waits", nodes=2, cpu="100m", queue=queues.local_queue), namespace=namespace
        )
        name = wait_workload_of(kube, namespace, created)[0]["metadata"]["name"]
        wait_pending(kube, namespace, name)
    with allure.step("it stays suspended, without a pod, for the consistency window"):
        hold_suspended(kube, namespace, "waits")
    with allure.step("raise nominalQuota to 200m CPU: the TrainJob is admitted and both nodes' pods run"):
        cq = kube.get(apis.CLUSTER_QUEUE, queues.cluster_queue)
        cq["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0]["nominalQuota"] = "200m"
        kube.replace(cq)
        wait_admitted(kube, namespace, name)
        wait_nodes_running(kube, namespace, "waits", 2)


@pytest.mark.kueue
@pytest.mark.jobset
@allure.story(
    "a flavor's node labels and GPU toleration reach every pod of a TrainJob that tolerates nothing itself, "
    "through the runtime patch Kueue writes on admission"
)
def test_a_flavor_s_node_labels_and_toleration_reach_every_pod_through_kueue_s_runtime_patch(
    kube: Kube, namespace: str, make_kueue_queues: QueueFactory
) -> None:
    product = gpu_products(kube)[0]
    selector = {PRODUCT_LABEL: product.product}
    queues = make_kueue_queues(
        {"cpu": "16", GPU: "2"},
        flavors={product.key: selector},
        tolerations={product.key: [GPU_TOLERATION]},
    )
    with allure.step(
        f"submit a 2-node TrainJob (1 GPU a node, no toleration of its own) to a flavor selecting "
        f"{product.product} and tolerating {GPU}"
    ):
        created = kube.create(
            train_job("placed", nodes=2, gpus=1, queue=queues.local_queue, tolerate_gpu=False),
            namespace=namespace,
        )
        patches = created["spec"].get("runtimePatches")
        managers = [p.get("manager") for p in patches or []]
        # Kueue's webhook adds its own patch, empty until admission fills it; the harness adds none here.
        assert managers == [KUEUE_PATCH], f"the TrainJob as created: runtimePatches {patches}"
        assert runtime_patch(created, KUEUE_PATCH) is None, f"Kueue's patch before admission: {patches}"
        name = wait_workload_of(kube, namespace, created)[0]["metadata"]["name"]
        wait_admitted(kube, namespace, name)
    with allure.step("Kueue's runtime patch gives the node job the flavor's nodeSelector and toleration"):
        admitted = wait_until_exists(
            kube,
            TRAIN_JOB,
            "placed",
            namespace=namespace,
            until=lambda j: runtime_patch(j, KUEUE_PATCH) is not None and j["spec"].get("suspend") is False,
            timeout=timeouts.LONG,
            what=f"Kueue to resume TrainJob placed with a runtime patch of manager {KUEUE_PATCH}",
        )
        patch = runtime_patch(admitted, KUEUE_PATCH) or {}
        allure.attach(repr(admitted["spec"]["runtimePatches"]), name="spec.runtimePatches")
        assert patch.get("nodeSelector") == selector, (
            f"Kueue's runtime patch should select the flavor's nodeLabels {selector}: {patch}"
        )
        assert has_gpu_toleration(patch.get("tolerations")), (
            f"Kueue's runtime patch should carry the flavor's toleration of {GPU}: {patch}"
        )
    with allure.step(f"every pod carries both and runs on a {product.product} node"):
        pods = wait_nodes_running(kube, namespace, "placed", 2)
        on = node_products(kube)
        for pod in pods:
            pod_name, spec = pod["metadata"]["name"], pod["spec"]
            assert (spec.get("nodeSelector") or {}).get(PRODUCT_LABEL) == product.product, (pod_name, spec)
            assert has_gpu_toleration(spec.get("tolerations")), (pod_name, spec.get("tolerations"))
            assert on.get(node_of(pod) or "") == product.product, (pod_name, node_of(pod), on)


@pytest.mark.kueue
@pytest.mark.jobset
@pytest.mark.needs(PODS_READY_SHORT)
@allure.story(
    "with waitForPodsReady, a TrainJob admitted by quota whose pods cannot be placed is evicted at the "
    "timeout, suspended with every pod removed, and its quota admits the next TrainJob"
)
def test_a_trainjob_whose_pods_never_get_ready_is_evicted_and_its_quota_admits_the_next(
    kube: Kube, namespace: str, make_kueue_queues: QueueFactory
) -> None:
    job = StuckJob(
        one=f"a {NODES}-node TrainJob",
        noun="TrainJob",
        build=lambda name, queue: train_job(name, nodes=NODES, gpus=1, queue=queue),
        made=f"all {NODES} pods are made, none can be bound",
        wait_made=pods_made_unbound("TrainJob", JOBSET_NAME_LABEL, NODES),
        after="is suspended with every pod removed",
        wait_after=wait_suspended,
    )
    evicted_at_timeout_and_next_admitted(kube, namespace, make_kueue_queues, job)


@pytest.mark.kueue
@pytest.mark.jobset
@allure.story(
    "a lender reclaims the GPUs a TrainJob borrowed: the whole job is evicted and suspended, Trainer removes "
    "every pod, and the lender's TrainJob runs whole"
)
def test_a_lender_reclaims_a_borrowing_trainjob_whole(
    kube: Kube, namespace: str, reclaiming_lender: Queues
) -> None:
    cohort = reclaiming_lender
    borrower_cq, lender_cq = cohort.cluster_queues["borrower"], cohort.cluster_queues["lender"]
    with allure.step("the borrower's TrainJob (4 nodes x 1 GPU) runs on its own 2 GPUs and 2 borrowed"):
        borrower = kube.create(
            train_job("borrower", nodes=NODES, gpus=1, queue=cohort.local_queues["borrower"]),
            namespace=namespace,
        )
        wl_borrower = wait_workload_of(kube, namespace, borrower)[0]["metadata"]["name"]
        wait_admitted(kube, namespace, wl_borrower)
        wait_usage(kube, borrower_cq, cohort.flavor, GPU, total="4", borrowed="2")
        wait_nodes_running(kube, namespace, "borrower", NODES)
    with allure.step("the lender's TrainJob (4 nodes x 1 GPU, its nominal quota) is submitted"):
        lender = kube.create(
            train_job("lender", nodes=NODES, gpus=1, queue=cohort.local_queues["lender"]),
            namespace=namespace,
        )
        wl_lender = wait_workload_of(kube, namespace, lender)[0]["metadata"]["name"]
    with allure.step("the borrower's Workload is evicted, Preempted with reason InCohortReclamation"):
        wait_preempted(kube, namespace, wl_borrower, reasons={"InCohortReclamation"})
    with allure.step("the lender's TrainJob is admitted on its own quota and all 4 of its pods run"):
        wait_admitted(kube, namespace, wl_lender)
        wait_nodes_running(kube, namespace, "lender", NODES)
        wait_usage(kube, lender_cq, cohort.flavor, GPU, total="4", borrowed="0")
    with allure.step("the borrower is suspended again, every pod gone, and stays so"):
        wait_pending(kube, namespace, wl_borrower)
        # Where pods really run (kind), the evicted ones take a moment to terminate.
        wait_suspended(kube, namespace, "borrower")
        hold_suspended(kube, namespace, "borrower")
        wait_usage(kube, borrower_cq, cohort.flavor, GPU, total="0", borrowed="0")


JOBS = Contenders(JOBSET_NAME_LABEL, ("train-a", "train-b"), NODES, noun="TrainJobs")


@pytest.mark.kueue
@pytest.mark.jobset
@allure.story(
    "where pods run, a 4-node TrainJob admitted whole by Kueue meets at the rendezvous Trainer's torch "
    "plugin wires (PET_MASTER_ADDR, PET_MASTER_PORT, PET_NNODES, PET_NODE_RANK): its nodes meet and it "
    "completes"
)
def test_an_admitted_trainjob_s_nodes_meet_at_the_rendezvous_trainer_wires(
    kube: Kube, namespace: str, six_gpus: Queues, gpu_programs_run: None
) -> None:
    with allure.step(f"submit TrainJob meet ({NODES} nodes, 1 GPU each) running /bin/meet"):
        created = kube.create(
            train_job("meet", nodes=NODES, gpus=1, queue=six_gpus.local_queue, command=MEET),
            namespace=namespace,
        )
        (workload,) = wait_workload_of(kube, namespace, created)
        wait_admitted(kube, namespace, workload["metadata"]["name"])
    with allure.step("its nodes meet at the address Trainer wired, and the TrainJob completes"):
        wait_complete(kube, namespace, "meet", timeout=timeouts.POD_START)
        pods = kube.list(apis.POD, namespace=namespace, labels={JOBSET_NAME_LABEL: "meet"})
        # Trainer's address is node 0's pod under the JobSet's headless Service (its torch plugin).
        check_all_met(kube, namespace, pods, NODES, "meet-node-0-0.meet:")


@pytest.mark.serial
@pytest.mark.jobset
@allure.story(
    "negative control without Kueue: two 4-node TrainJobs on 6 free GPUs end each partly placed under the "
    "default scheduler (the deadlock)"
)
def test_without_kueue_two_trainjobs_on_six_gpus_end_partly_placed(kube: Kube, namespace: str) -> None:
    partly_placed(kube, namespace)


@pytest.mark.serial
@pytest.mark.jobset
@allure.story(
    "negative control without Kueue, where pods run: two 4-node TrainJobs partly placed on 6 free GPUs hang "
    "at their rendezvous, no node of either meeting the others, for the whole window"
)
def test_without_kueue_partly_placed_trainjobs_hang_at_their_rendezvous(
    kube: Kube, namespace: str, gpu_programs_run: None
) -> None:
    final = partly_placed(kube, namespace, command=MEET)
    with allure.step("every placed node is still waiting at the rendezvous: none met, neither job ended"):
        check_all_waiting(kube, namespace, [p for p in final if node_of(p)], NODES, "train-")
        for name in JOBS.names:
            job = kube.get(TRAIN_JOB, name, namespace)
            assert not is_true(job, "Complete"), (name, job.get("status"))


def partly_placed(kube: Kube, namespace: str, command: tuple[str, ...] = ()) -> list[Obj]:
    """Two TrainJobs without a queue, their pods released to the default scheduler in turn onto one node
    with 6 free GPUs, deadlocked for the window (each partly placed); the pods as they ended."""
    with allure.step("leave exactly 6 GPUs free on one GPU node"):
        filler = wait_gpus_left_free(kube, namespace, free=6)
    with allure.step("create TrainJobs A and B (4 nodes, 1 GPU each, no queue), pods held at a gate"):
        # The gate lets both jobs' pods reach the scheduler interleaved, A1 B1 A2 B2 ..., as they do when two
        # JobSets' Jobs make their pods at once; the scheduler still decides placement.
        for name in JOBS.names:
            kube.create(
                train_job(
                    name,
                    nodes=NODES,
                    gpus=1,
                    node_selector=filler.node.selector,
                    gates=(ARRIVAL_GATE,),
                    command=command,
                ),
                namespace=namespace,
            )
    with allure.step("release the pods to the default scheduler in turn: A1, B1, A2, B2, ..."):
        release_in_turn(kube, namespace, JOBS, made_by="the TrainJobs' JobSets")
    with allure.step("both TrainJobs are partially placed, and stay so for the consistency window"):
        final = hold_deadlocked(kube, namespace, JOBS, running=bool(command))
    with allure.step("the scheduler says the unplaced pods are Unschedulable for want of GPUs"):
        for pod in (p for p in final if not node_of(p)):
            cond = condition(pod, "PodScheduled") or {}
            assert cond.get("reason") == "Unschedulable", (pod["metadata"]["name"], cond)
            assert f"Insufficient {GPU}" in cond.get("message", ""), (pod["metadata"]["name"], cond)
    return final
