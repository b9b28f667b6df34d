"""KubeRay's RayJob through Kueue: a Ray job and the RayCluster it runs on (a head, workers and the
submitter) are one Workload, admitted whole or not at all.

Kueue's webhook suspends a RayJob submitted to a LocalQueue; suspended, KubeRay makes no RayCluster, so no
pod exists. Admitted, Kueue writes the flavor's node selectors and tolerations into the head's, the
workers' and the submitter's pod templates and resumes it, and KubeRay makes the whole cluster at once.
The negative control shows what that prevents: without Kueue, two RayJobs contending for too few GPUs end
each with part of their workers placed, for good, where a Ray job waiting for its workers never starts.

Where pods run (kind), they run Ray, from the image the harness builds of PyPI's wheels: an admitted
RayJob's workers join its head and run a GPU task each, and the job succeeds; partly placed without Kueue,
no cluster gets ready and KubeRay never submits the job. On kwok's nodes no Ray runs (the pods are the
toolbox's): those two skip, and the RayJobs stay ``Running`` once their clusters are up. Of Kueue's
``waitForPodsReady`` only the eviction of a cluster never placed is proven: the readiness it waits for is a
cluster status KubeRay copies from the head's dashboard (``kbc.components.kuberay``).
"""

from __future__ import annotations

import allure
import pytest

from kbc import apis, timeouts
from kbc.components.kuberay import (
    JOB_LABEL,
    NODE_TYPE_LABEL,
    RAY_CLUSTER,
    RAY_JOB,
    RayRuntime,
    hold_suspended,
    joined,
    joins,
    ran_gpu_tasks_on,
    ray_job,
    submitter_pods,
    wait_running,
    wait_succeeded,
    wait_suspended,
)
from kbc.flavors import gpu_products, node_products
from kbc.gpu import has_gpu_toleration, wait_gpus_left_free
from kbc.jobs import (
    ARRIVAL_GATE,
    Contenders,
    describe_pods,
    hold_deadlocked,
    node_of,
    pod_logs,
    release_in_turn,
)
from kbc.kube import Kube, Obj, condition, is_true, wait_for_list, wait_until_exists
from kbc.kueue import (
    QueueFactory,
    Queues,
    wait_admitted,
    wait_finished,
    wait_pending,
    wait_preempted,
    wait_usage,
    wait_workload_of,
)
from kbc.kueue.settings import PODS_READY_SHORT
from kbc.labels import GPU, PRODUCT_LABEL
from kbc.workloads import GPU_TOLERATION
from suites._pods_ready import StuckJob, evicted_at_timeout_and_next_admitted, pods_made_unbound

pytestmark = [
    pytest.mark.rayjob,
    pytest.mark.kuberay,
    allure.epic("KubeRay"),
    allure.feature("rayjob"),
]

WORKERS = 4
"""Workers per RayJob, one GPU each, beside the head (CPU only) and the submitter (CPU only)."""
CLUSTER_PODS = WORKERS + 1
"""The pods of a RayJob's RayCluster: the head and the workers (the submitter is a Job's pod)."""


@pytest.fixture
def ray_runs(ray_runtime: RayRuntime | None) -> RayRuntime:
    """The pinned Ray, skipping where no pod runs a process (kwok's nodes): no Ray cluster can form there."""
    if ray_runtime is None:
        pytest.skip(
            "the GPU nodes here are kwok's fake nodes, whose pods run no process, so no Ray cluster can "
            "form: run it where pods really run (--provider kind)"
        )
    return ray_runtime


@pytest.fixture
def six_gpus(make_kueue_queues: QueueFactory) -> Queues:
    """A ClusterQueue with room for 6 GPUs: one RayJob of 4 GPU workers fits, two do not."""
    return make_kueue_queues({"cpu": "16", GPU: "6"})


@pytest.mark.kueue
@allure.story(
    "of two RayJobs of 4 GPU workers on 6 GPUs of quota, one runs its whole cluster and the other stays "
    "suspended without a RayCluster or a pod until the first is deleted"
)
def test_a_rayjob_is_admitted_whole_and_a_second_waits_without_a_pod(
    kube: Kube, namespace: str, six_gpus: Queues, ray_runtime: RayRuntime | None
) -> None:
    with allure.step("submit RayJob first (a head and 4 workers of 1 GPU each, and its submitter)"):
        first = kube.create(
            ray_job("first", workers=WORKERS, gpus=1, queue=six_gpus.local_queue, runtime=ray_runtime),
            namespace=namespace,
        )
        (wl_first,) = wait_workload_of(kube, namespace, first)
        sets = {p["name"]: p["count"] for p in wl_first["spec"]["podSets"]}
        assert sets == {"head": 1, "workers": WORKERS, "submitter": 1}, (
            f"the RayJob's Workload holds its head, all {WORKERS} workers and its submitter: {sets}"
        )
        wait_admitted(kube, namespace, wl_first["metadata"]["name"])
        wait_running(kube, namespace, "first", CLUSTER_PODS)
    with allure.step("submit RayJob second: its Workload is pending, the job suspended with no pod"):
        second = kube.create(
            ray_job("second", workers=WORKERS, gpus=1, queue=six_gpus.local_queue, runtime=ray_runtime),
            namespace=namespace,
        )
        wl_second = wait_workload_of(kube, namespace, second)[0]["metadata"]["name"]
        wait_pending(kube, namespace, wl_second)
        hold_suspended(kube, namespace, "second")
    with allure.step("delete the first: the second is admitted and its whole cluster runs"):
        kube.delete(RAY_JOB, "first", namespace=namespace)
        wait_admitted(kube, namespace, wl_second)
        wait_running(kube, namespace, "second", CLUSTER_PODS)


@pytest.mark.kueue
@allure.story("a RayJob in a quota-zero ClusterQueue stays suspended without a pod until quota appears")
def test_quota_zero_holds_the_rayjob_suspended_until_the_quota_is_raised(
    kube: Kube, namespace: str, make_kueue_queues: QueueFactory, ray_runtime: RayRuntime | None
) -> None:
    queues = make_kueue_queues({"cpu": "0"})
    with allure.step(
        "submit a RayJob of a head and a worker (100m CPU each, and its submitter) to zero quota"
    ):
        created = kube.create(
            ray_job("waits", workers=1, cpu="100m", queue=queues.local_queue, runtime=ray_runtime),
            namespace=namespace,
        )
        name = wait_workload_of(kube, namespace, created)[0]["metadata"]["name"]
        wait_pending(kube, namespace, name)
    with allure.step("it stays suspended, without a RayCluster or a pod, for the consistency window"):
        hold_suspended(kube, namespace, "waits")
    with allure.step("raise nominalQuota to 300m CPU: the RayJob is admitted and its cluster runs"):
        cq = kube.get(apis.CLUSTER_QUEUE, queues.cluster_queue)
        cq["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0]["nominalQuota"] = "300m"
        kube.replace(cq)
        wait_admitted(kube, namespace, name)
        wait_running(kube, namespace, "waits", 2)


@pytest.mark.kueue
@allure.story(
    "a flavor's node labels and GPU toleration reach the head's and every worker's pod of a RayJob whose "
    "workers tolerate nothing themselves"
)
def test_a_flavor_s_node_labels_and_toleration_reach_every_pod_of_a_rayjob(
    kube: Kube, namespace: str, make_kueue_queues: QueueFactory, ray_runtime: RayRuntime | None
) -> None:
    product = gpu_products(kube)[0]
    selector = {PRODUCT_LABEL: product.product}
    queues = make_kueue_queues(
        {"cpu": "16", GPU: "2"},
        flavors={product.key: selector},
        tolerations={product.key: [GPU_TOLERATION]},
    )
    with allure.step(
        f"submit a RayJob of 2 workers (1 GPU each, no toleration of their own) to a flavor selecting "
        f"{product.product} and tolerating {GPU}"
    ):
        created = kube.create(
            ray_job(
                "placed",
                workers=2,
                gpus=1,
                queue=queues.local_queue,
                tolerate_gpu=False,
                runtime=ray_runtime,
            ),
            namespace=namespace,
        )
        name = wait_workload_of(kube, namespace, created)[0]["metadata"]["name"]
        wait_admitted(kube, namespace, name)
    with allure.step("Kueue resumes it with the flavor's nodeSelector and toleration in the workers' pods"):
        admitted = wait_until_exists(
            kube,
            RAY_JOB,
            "placed",
            namespace=namespace,
            # KubeRay's API leaves a false suspend out.
            until=lambda j: not j["spec"].get("suspend"),
            timeout=timeouts.LONG,
            what="Kueue to resume RayJob placed",
        )
        (group,) = admitted["spec"]["rayClusterSpec"]["workerGroupSpecs"]
        pod = group["template"]["spec"]
        assert (pod.get("nodeSelector") or {}).get(PRODUCT_LABEL) == product.product, (
            f"Kueue should give the workers' pods the flavor's nodeLabels {selector}: {pod}"
        )
        assert has_gpu_toleration(pod.get("tolerations")), (
            f"Kueue should give the workers' pods the flavor's toleration of {GPU}: {pod.get('tolerations')}"
        )
    with allure.step(f"every pod of its cluster carries both and runs on a {product.product} node"):
        pods = wait_running(kube, namespace, "placed", 3)
        on = node_products(kube)
        for p in pods:
            pod_name, spec = p["metadata"]["name"], p["spec"]
            assert (spec.get("nodeSelector") or {}).get(PRODUCT_LABEL) == product.product, (pod_name, spec)
            assert has_gpu_toleration(spec.get("tolerations")), (pod_name, spec.get("tolerations"))
            assert on.get(node_of(p) or "") == product.product, (pod_name, node_of(p), on)


@pytest.mark.kueue
@pytest.mark.needs(PODS_READY_SHORT)
@allure.story(
    "with waitForPodsReady, a RayJob admitted by quota whose cluster cannot be placed is evicted at the "
    "timeout, suspended with its cluster removed, and its quota admits the next RayJob"
)
def test_a_rayjob_whose_pods_never_get_ready_is_evicted_and_its_quota_admits_the_next(
    kube: Kube, namespace: str, make_kueue_queues: QueueFactory, ray_runtime: RayRuntime | None
) -> None:
    # Kueue reads a RayJob's readiness from the cluster state KubeRay copies from the head's dashboard: on
    # kwok's nodes that never comes, and on kind a Ray head takes longer than the 15 s timeout to start on
    # two cores (the next RayJob was evicted in turn, 2026-12-07); so only the eviction is proven here.
    job = StuckJob(
        one=f"a RayJob of {WORKERS} GPU workers",
        noun="RayJob",
        build=lambda name, queue: ray_job(name, workers=WORKERS, gpus=1, queue=queue, runtime=ray_runtime),
        made=f"its {CLUSTER_PODS} pods are made, none bound",
        wait_made=pods_made_unbound("RayJob", JOB_LABEL, CLUSTER_PODS),
        after="is suspended with its cluster removed",
        wait_after=wait_suspended,
    )
    evicted_at_timeout_and_next_admitted(kube, namespace, make_kueue_queues, job)


@pytest.mark.kueue
@allure.story(
    "a lender reclaims the GPUs a RayJob borrowed: the whole job is evicted and suspended, KubeRay removes "
    "its cluster and every pod, and the lender's RayJob runs whole"
)
def test_a_lender_reclaims_a_borrowing_rayjob_whole(
    kube: Kube, namespace: str, reclaiming_lender: Queues, ray_runtime: RayRuntime | None
) -> None:
    cohort = reclaiming_lender
    borrower_cq, lender_cq = cohort.cluster_queues["borrower"], cohort.cluster_queues["lender"]
    with allure.step("the borrower's RayJob (4 workers x 1 GPU) runs on its own 2 GPUs and 2 borrowed"):
        borrower = kube.create(
            ray_job(
                "borrower",
                workers=WORKERS,
                gpus=1,
                queue=cohort.local_queues["borrower"],
                runtime=ray_runtime,
            ),
            namespace=namespace,
        )
        wl_borrower = wait_workload_of(kube, namespace, borrower)[0]["metadata"]["name"]
        wait_admitted(kube, namespace, wl_borrower)
        wait_usage(kube, borrower_cq, cohort.flavor, GPU, total="4", borrowed="2")
        wait_running(kube, namespace, "borrower", CLUSTER_PODS)
    with allure.step("the lender's RayJob (4 workers x 1 GPU, its nominal quota) is submitted"):
        lender = kube.create(
            ray_job(
                "lender", workers=WORKERS, gpus=1, queue=cohort.local_queues["lender"], runtime=ray_runtime
            ),
            namespace=namespace,
        )
        wl_lender = wait_workload_of(kube, namespace, lender)[0]["metadata"]["name"]
    with allure.step("the borrower's Workload is evicted, Preempted with reason InCohortReclamation"):
        wait_preempted(kube, namespace, wl_borrower, reasons={"InCohortReclamation"})
    with allure.step("the lender's RayJob is admitted on its own quota and its whole cluster runs"):
        wait_admitted(kube, namespace, wl_lender)
        wait_running(kube, namespace, "lender", CLUSTER_PODS)
        wait_usage(kube, lender_cq, cohort.flavor, GPU, total="4", borrowed="0")
    with allure.step("the borrower is suspended again, its cluster and every pod gone, and stays so"):
        wait_pending(kube, namespace, wl_borrower)
        wait_suspended(kube, namespace, "borrower")
        hold_suspended(kube, namespace, "borrower")
        wait_usage(kube, borrower_cq, cohort.flavor, GPU, total="0", borrowed="0")


@pytest.mark.kueue
@allure.story(
    "where pods run Ray, a RayJob of 4 GPU workers admitted whole by Kueue forms its cluster: every worker "
    "joins the head KubeRay wired it to, Ray runs one GPU task on each worker, and the job succeeds"
)
def test_an_admitted_rayjob_s_workers_join_its_head_and_each_runs_a_gpu_task(
    kube: Kube, namespace: str, six_gpus: Queues, ray_runs: RayRuntime
) -> None:
    with allure.step(f"submit RayJob joins ({WORKERS} workers of 1 GPU) on {ray_runs.image}"):
        created = kube.create(
            ray_job(
                "joins",
                workers=WORKERS,
                gpus=1,
                queue=six_gpus.local_queue,
                runtime=ray_runs,
                entrypoint=joins(CLUSTER_PODS, WORKERS),
            ),
            namespace=namespace,
        )
        (workload,) = wait_workload_of(kube, namespace, created)
        wait_admitted(kube, namespace, workload["metadata"]["name"])
    with allure.step("its head and every worker run"):
        # The workers wait in an init container until the head's Ray answers: the runtime coming up.
        pods = wait_running(kube, namespace, "joins", CLUSTER_PODS, timeout=timeouts.RUNTIME_START)
        workers = sorted(
            p["metadata"]["name"] for p in pods if p["metadata"]["labels"][NODE_TYPE_LABEL] == "worker"
        )
    with allure.step("the job succeeds; its Workload finishes"):
        wait_succeeded(kube, namespace, "joins")
        wait_finished(kube, namespace, workload["metadata"]["name"])
    with allure.step(f"its log says all {CLUSTER_PODS} Ray nodes joined and a GPU task ran on each worker"):
        said = pod_logs(kube, namespace, submitter_pods(kube, namespace, "joins"))
        allure.attach("\n".join(f"--- {k}\n{v}" for k, v in said.items()), name="submitter log")
        log = "\n".join(said.values())
        assert joined(log, CLUSTER_PODS), f"all {CLUSTER_PODS} nodes should have joined the head: {said}"
        assert ran_gpu_tasks_on(log) == workers, (
            f"one GPU task should have run on each worker {workers}: {ran_gpu_tasks_on(log)}; {said}"
        )


JOBS = Contenders(JOB_LABEL, ("ray-a", "ray-b"), CLUSTER_PODS, noun="RayJobs' clusters")


@pytest.mark.serial
@allure.story(
    "negative control without Kueue: two RayJobs of 4 GPU workers on 6 free GPUs end each with their "
    "clusters partly placed under the default scheduler (the deadlock)"
)
def test_without_kueue_two_rayjobs_on_six_gpus_end_partly_placed(kube: Kube, namespace: str) -> None:
    partly_placed(kube, namespace)


@pytest.mark.serial
@allure.story(
    "negative control without Kueue, where pods run Ray: two RayJobs of 4 GPU workers partly placed on 6 "
    "free GPUs never run their entrypoint: each head runs Ray short of its workers, KubeRay never finds the "
    "cluster ready and makes no submitter"
)
def test_without_kueue_partly_placed_rayjobs_never_start_their_job(
    kube: Kube, namespace: str, ray_runs: RayRuntime
) -> None:
    final = partly_placed(kube, namespace, ray_runs)
    heads = [p["metadata"]["name"] for p in final if p["metadata"]["labels"][NODE_TYPE_LABEL] == "head"]
    assert len(heads) == len(JOBS.names) and all(
        node_of(p) for p in final if p["metadata"]["name"] in heads
    ), f"each RayJob's head is placed: {[(p['metadata']['name'], node_of(p)) for p in final]}"
    with allure.step("each head runs Ray: Ready by KubeRay's probe, which asks Ray's raylet and GCS"):
        wait_for_list(
            kube,
            apis.POD,
            namespace=namespace,
            labels={NODE_TYPE_LABEL: "head", JOB_LABEL: None},
            until=lambda pods: len(pods) == len(heads) and all(is_true(p, "Ready") for p in pods),
            timeout=timeouts.RUNTIME_START,
            what=f"both RayJobs' heads Ready ({', '.join(heads)})",
            describe=describe_pods,
        )
    with allure.step("neither cluster is ready, neither job got past Initializing nor has a submitter"):
        for name in JOBS.names:
            job = kube.get(RAY_JOB, name, namespace)
            status = job.get("status") or {}
            assert status.get("jobDeploymentStatus") == "Initializing", (name, status)
            assert not submitter_pods(kube, namespace, name), f"RayJob {name} has a submitter: {status}"
            (cluster,) = kube.list(
                RAY_CLUSTER, namespace=namespace, labels={"ray.io/originated-from-cr-name": name}
            )
            state = cluster.get("status") or {}
            assert state.get("state") != "ready", (name, state)
            assert state.get("readyWorkerReplicas", 0) < WORKERS, (name, state)


def partly_placed(kube: Kube, namespace: str, runtime: RayRuntime | None = None) -> list[Obj]:
    """Two RayJobs without a queue, their clusters' pods released to the default scheduler in turn onto one
    node with 6 free GPUs, deadlocked for the window (each partly placed); the pods as they ended."""
    with allure.step("leave exactly 6 GPUs free on one GPU node"):
        filler = wait_gpus_left_free(kube, namespace, free=6)
    with allure.step("create RayJobs A and B (a head and 4 workers of 1 GPU each, no queue), pods at a gate"):
        # The gate lets both clusters' pods reach the scheduler interleaved, A1 B1 A2 B2 ..., as they do when
        # KubeRay makes two clusters at once; the scheduler still decides placement.
        for name in JOBS.names:
            kube.create(
                ray_job(
                    name,
                    workers=WORKERS,
                    gpus=1,
                    node_selector=filler.node.selector,
                    gates=(ARRIVAL_GATE,),
                    runtime=runtime,
                ),
                namespace=namespace,
            )
    with allure.step("release the pods to the default scheduler in turn: A1, B1, A2, B2, ..."):
        release_in_turn(kube, namespace, JOBS, made_by="KubeRay")
    with allure.step("both clusters are partially placed, and stay so for the consistency window"):
        final = hold_deadlocked(kube, namespace, JOBS, running=runtime is not None)
    with allure.step("the scheduler says the unplaced workers are Unschedulable for want of GPUs"):
        for pod in (p for p in final if not node_of(p)):
            assert pod["metadata"]["labels"].get(NODE_TYPE_LABEL) == "worker", pod["metadata"]["name"]
            cond = condition(pod, "PodScheduled") or {}
            assert cond.get("reason") == "Unschedulable", (pod["metadata"]["name"], cond)
            assert f"Insufficient {GPU}" in cond.get("message", ""), (pod["metadata"]["name"], cond)
    return final
