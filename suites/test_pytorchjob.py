"""The training operator's PyTorchJob through Kueue: a master and its workers are one Workload, admitted
whole or not at all.

Kueue's webhook suspends a PyTorchJob submitted to a LocalQueue (``spec.runPolicy.suspend``); suspended, the
training operator makes no pod. Admitted, Kueue writes the flavor's node selectors and tolerations into
each replica's pod template and resumes it, and the operator makes every pod at once. Kueue's default
configuration leaves its ``kubeflow.org/pytorchjob`` integration out; the harness turns it on, as a platform
that runs PyTorchJobs must. The negative control shows what gang admission prevents: without Kueue, two
PyTorchJobs contending for too few GPUs end each partly placed, for good.

Where pods really run (kind), the nodes run the toolbox's ``/bin/meet`` and meet over the network at the
address the operator wired into them, as torchrun would: admitted whole, all of them meet and the job
succeeds; placed in part without Kueue, the placed ones hang there. That proves the operator's wiring, not
only its pods.
"""

from __future__ import annotations

import allure
import pytest

from kbc import apis, timeouts
from kbc.components.trainingoperator import (
    JOB_NAME_LABEL,
    PYTORCH_JOB,
    hold_suspended,
    pytorch_job,
    wait_running,
    wait_succeeded,
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
    pytest.mark.pytorchjob,
    pytest.mark.trainingoperator,
    allure.epic("Kubeflow training operator"),
    allure.feature("pytorchjob"),
]

WORKERS = 3
"""Workers per PyTorchJob, beside its master: 4 pods, one GPU each."""
PODS = WORKERS + 1


@pytest.fixture
def six_gpus(make_kueue_queues: QueueFactory) -> Queues:
    """A ClusterQueue with room for 6 GPUs: one 4-pod PyTorchJob fits, two do not."""
    return make_kueue_queues({"cpu": "16", GPU: "6"})


@pytest.mark.kueue
@allure.story(
    "of two PyTorchJobs of a master and 3 workers (1 GPU each) on 6 GPUs of quota, one runs whole and the "
    "other stays suspended without a single pod until the first is deleted"
)
def test_a_pytorchjob_is_admitted_whole_and_a_second_waits_without_a_pod(
    kube: Kube, namespace: str, six_gpus: Queues
) -> None:
    with allure.step("submit PyTorchJob first (a master and 3 workers, 1 GPU each)"):
        first = kube.create(
            pytorch_job("first", workers=WORKERS, gpus=1, queue=six_gpus.local_queue), namespace=namespace
        )
        (wl_first,) = wait_workload_of(kube, namespace, first)
        sets = {p["name"]: p["count"] for p in wl_first["spec"]["podSets"]}
        assert sets == {"master": 1, "worker": WORKERS}, (
            f"the PyTorchJob's Workload holds its master and all {WORKERS} workers: {sets}"
        )
        wait_admitted(kube, namespace, wl_first["metadata"]["name"])
        wait_running(kube, namespace, "first", PODS)
    with allure.step("submit PyTorchJob second: its Workload is pending, the job suspended with no pod"):
        second = kube.create(
            pytorch_job("second", workers=WORKERS, gpus=1, queue=six_gpus.local_queue), namespace=namespace
        )
        wl_second = wait_workload_of(kube, namespace, second)[0]["metadata"]["name"]
        wait_pending(kube, namespace, wl_second)
        hold_suspended(kube, namespace, "second")
    with allure.step("delete the first: the second is admitted and all its pods run"):
        kube.delete(PYTORCH_JOB, "first", namespace=namespace)
        wait_admitted(kube, namespace, wl_second)
        wait_running(kube, namespace, "second", PODS)


@pytest.mark.kueue
@allure.story("a PyTorchJob in a quota-zero ClusterQueue stays suspended without a pod until quota appears")
def test_quota_zero_holds_the_pytorchjob_suspended_until_the_quota_is_raised(
    kube: Kube, namespace: str, make_kueue_queues: QueueFactory
) -> None:
    queues = make_kueue_queues({"cpu": "0"})
    with allure.step("submit a PyTorchJob of a master and a worker (100m CPU each) to a quota of zero"):
        created = kube.create(
            pytorch_job("waits", workers=1, cpu="100m", queue=queues.local_queue), namespace=namespace
        )
        name = wait_workload_of(kube, namespace, created)[0]["metadata"]["name"]
        wait_pending(kube, namespace, name)
    with allure.step("it stays suspended, without a pod, for the consistency window"):
        hold_suspended(kube, namespace, "waits")
    with allure.step("raise nominalQuota to 200m CPU: the PyTorchJob is admitted and both pods run"):
        cq = kube.get(apis.CLUSTER_QUEUE, queues.cluster_queue)
        cq["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0]["nominalQuota"] = "200m"
        kube.replace(cq)
        wait_admitted(kube, namespace, name)
        wait_running(kube, namespace, "waits", 2)


@pytest.mark.kueue
@allure.story(
    "a flavor's node labels and GPU toleration reach the master's and every worker's pod of a PyTorchJob "
    "that tolerates nothing itself"
)
def test_a_flavor_s_node_labels_and_toleration_reach_every_pod_of_a_pytorchjob(
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
        f"submit a PyTorchJob of a master and a worker (1 GPU each, no toleration of their own) to a flavor "
        f"selecting {product.product} and tolerating {GPU}"
    ):
        created = kube.create(
            pytorch_job("placed", workers=1, gpus=1, queue=queues.local_queue, tolerate_gpu=False),
            namespace=namespace,
        )
        name = wait_workload_of(kube, namespace, created)[0]["metadata"]["name"]
        wait_admitted(kube, namespace, name)
    with allure.step("Kueue resumes it with the flavor's nodeSelector and toleration in both replicas' pods"):
        admitted = wait_until_exists(
            kube,
            PYTORCH_JOB,
            "placed",
            namespace=namespace,
            until=lambda j: (j["spec"].get("runPolicy") or {}).get("suspend") is False,
            timeout=timeouts.LONG,
            what="Kueue to resume PyTorchJob placed",
        )
        for replica, spec in admitted["spec"]["pytorchReplicaSpecs"].items():
            pod = spec["template"]["spec"]
            assert (pod.get("nodeSelector") or {}).get(PRODUCT_LABEL) == product.product, (
                f"Kueue should give the {replica}'s pods the flavor's nodeLabels {selector}: {pod}"
            )
            assert has_gpu_toleration(pod.get("tolerations")), (
                f"Kueue should give the {replica}'s pods the flavor's toleration of {GPU}: "
                f"{pod.get('tolerations')}"
            )
    with allure.step(
        f"both pods carry the flavor's nodeSelector and toleration and run on {product.product}"
    ):
        pods = wait_running(kube, namespace, "placed", 2)
        on = node_products(kube)
        for pod in pods:
            pod_name, spec = pod["metadata"]["name"], pod["spec"]
            assert (spec.get("nodeSelector") or {}).get(PRODUCT_LABEL) == product.product, (pod_name, spec)
            assert has_gpu_toleration(spec.get("tolerations")), (pod_name, spec.get("tolerations"))
            assert on.get(node_of(pod) or "") == product.product, (pod_name, node_of(pod), on)


@pytest.mark.kueue
@pytest.mark.needs(PODS_READY_SHORT)
@allure.story(
    "with waitForPodsReady, a PyTorchJob admitted by quota whose pods cannot be placed is evicted at the "
    "timeout, suspended with every pod removed, and its quota admits the next PyTorchJob"
)
def test_a_pytorchjob_whose_pods_never_get_ready_is_evicted_and_its_quota_admits_the_next(
    kube: Kube, namespace: str, make_kueue_queues: QueueFactory
) -> None:
    job = StuckJob(
        one=f"a {PODS}-pod PyTorchJob",
        noun="PyTorchJob",
        build=lambda name, queue: pytorch_job(name, workers=WORKERS, gpus=1, queue=queue),
        made=f"all {PODS} pods are made, none can be bound",
        wait_made=pods_made_unbound("PyTorchJob", JOB_NAME_LABEL, PODS),
        after="is suspended with every pod removed",
        wait_after=wait_suspended,
    )
    evicted_at_timeout_and_next_admitted(kube, namespace, make_kueue_queues, job)


@pytest.mark.kueue
@allure.story(
    "a lender reclaims the GPUs a PyTorchJob borrowed: the whole job is evicted and suspended, the training "
    "operator removes every pod, and the lender's PyTorchJob runs whole"
)
def test_a_lender_reclaims_a_borrowing_pytorchjob_whole(
    kube: Kube, namespace: str, reclaiming_lender: Queues
) -> None:
    cohort = reclaiming_lender
    borrower_cq, lender_cq = cohort.cluster_queues["borrower"], cohort.cluster_queues["lender"]
    with allure.step("the borrower's PyTorchJob (4 pods x 1 GPU) runs on its own 2 GPUs and 2 borrowed"):
        borrower = kube.create(
            pytorch_job("borrower", workers=WORKERS, gpus=1, queue=cohort.local_queues["borrower"]),
            namespace=namespace,
        )
        wl_borrower = wait_workload_of(kube, namespace, borrower)[0]["metadata"]["name"]
        wait_admitted(kube, namespace, wl_borrower)
        wait_usage(kube, borrower_cq, cohort.flavor, GPU, total="4", borrowed="2")
        wait_running(kube, namespace, "borrower", PODS)
    with allure.step("the lender's PyTorchJob (4 pods x 1 GPU, its nominal quota) is submitted"):
        lender = kube.create(
            pytorch_job("lender", workers=WORKERS, gpus=1, queue=cohort.local_queues["lender"]),
            namespace=namespace,
        )
        wl_lender = wait_workload_of(kube, namespace, lender)[0]["metadata"]["name"]
    with allure.step("the borrower's Workload is evicted, Preempted with reason InCohortReclamation"):
        wait_preempted(kube, namespace, wl_borrower, reasons={"InCohortReclamation"})
    with allure.step("the lender's PyTorchJob is admitted on its own quota and all 4 of its pods run"):
        wait_admitted(kube, namespace, wl_lender)
        wait_running(kube, namespace, "lender", PODS)
        wait_usage(kube, lender_cq, cohort.flavor, GPU, total="4", borrowed="0")
    with allure.step("the borrower is suspended again, every pod gone, and stays so"):
        wait_pending(kube, namespace, wl_borrower)
        wait_suspended(kube, namespace, "borrower")
        hold_suspended(kube, namespace, "borrower")
        wait_usage(kube, borrower_cq, cohort.flavor, GPU, total="0", borrowed="0")


JOBS = Contenders(JOB_NAME_LABEL, ("torch-a", "torch-b"), PODS, noun="PyTorchJobs")


@pytest.mark.kueue
@allure.story(
    "where pods run, a PyTorchJob admitted whole by Kueue meets at the rendezvous its operator wires "
    "(PET_MASTER_ADDR, PET_MASTER_PORT, PET_NNODES, PET_NODE_RANK): its 4 nodes meet and it succeeds"
)
def test_an_admitted_pytorchjob_s_nodes_meet_at_the_rendezvous_its_operator_wires(
    kube: Kube, namespace: str, six_gpus: Queues, gpu_programs_run: None
) -> None:
    with allure.step(f"submit PyTorchJob meet (a master, {WORKERS} workers, 1 GPU each) running /bin/meet"):
        created = kube.create(
            pytorch_job("meet", workers=WORKERS, gpus=1, queue=six_gpus.local_queue, command=MEET),
            namespace=namespace,
        )
        (workload,) = wait_workload_of(kube, namespace, created)
        wait_admitted(kube, namespace, workload["metadata"]["name"])
    with allure.step("its nodes meet at the address the operator wired, and the PyTorchJob succeeds"):
        wait_succeeded(kube, namespace, "meet", timeout=timeouts.POD_START)
        pods = kube.list(apis.POD, namespace=namespace, labels={JOB_NAME_LABEL: "meet"})
        # The operator's address is its master's Service, named after the job (replicaName in v1's envvar.go).
        check_all_met(kube, namespace, pods, PODS, "meet-master-0:")


@pytest.mark.serial
@allure.story(
    "negative control without Kueue: two PyTorchJobs of a master and 3 workers on 6 free GPUs end each "
    "partly placed under the default scheduler (the deadlock)"
)
def test_without_kueue_two_pytorchjobs_on_six_gpus_end_partly_placed(kube: Kube, namespace: str) -> None:
    partly_placed(kube, namespace)


@pytest.mark.serial
@allure.story(
    "negative control without Kueue, where pods run: two PyTorchJobs partly placed on 6 free GPUs hang at "
    "their rendezvous, no node of either meeting the others, for the whole window"
)
def test_without_kueue_partly_placed_pytorchjobs_hang_at_their_rendezvous(
    kube: Kube, namespace: str, gpu_programs_run: None
) -> None:
    final = partly_placed(kube, namespace, command=MEET)
    with allure.step("every placed node is still waiting at the rendezvous: none met, neither job ended"):
        check_all_waiting(kube, namespace, [p for p in final if node_of(p)], PODS, "torch-")
        for name in JOBS.names:
            job = kube.get(PYTORCH_JOB, name, namespace)
            assert not is_true(job, "Succeeded"), (name, job.get("status"))


def partly_placed(kube: Kube, namespace: str, command: tuple[str, ...] = ()) -> list[Obj]:
    """Two PyTorchJobs without a queue, their pods released to the default scheduler in turn onto one node
    with 6 free GPUs, deadlocked for the window (each partly placed); the pods as they ended."""
    with allure.step("leave exactly 6 GPUs free on one GPU node"):
        filler = wait_gpus_left_free(kube, namespace, free=6)
    with allure.step("create PyTorchJobs A and B (4 pods, 1 GPU each, no queue), pods held at a gate"):
        # The gate lets both jobs' pods reach the scheduler interleaved, A1 B1 A2 B2 ..., as they do when the
        # operator makes two jobs' pods at once; the scheduler still decides placement.
        for name in JOBS.names:
            kube.create(
                pytorch_job(
                    name,
                    workers=WORKERS,
                    gpus=1,
                    node_selector=filler.node.selector,
                    gates=(ARRIVAL_GATE,),
                    command=command,
                ),
                namespace=namespace,
            )
    with allure.step("release the pods to the default scheduler in turn: A1, B1, A2, B2, ..."):
        release_in_turn(kube, namespace, JOBS, made_by="the training operator")
    with allure.step("both PyTorchJobs are partially placed, and stay so for the consistency window"):
        final = hold_deadlocked(kube, namespace, JOBS, running=bool(command))
    with allure.step("the scheduler says the unplaced pods are Unschedulable for want of GPUs"):
        for pod in (p for p in final if not node_of(p)):
            cond = condition(pod, "PodScheduled") or {}
            assert cond.get("reason") == "Unschedulable", (pod["metadata"]["name"], cond)
            assert f"Insufficient {GPU}" in cond.get("message", ""), (pod["metadata"]["name"], cond)
    return final
