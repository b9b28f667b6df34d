"""Volcano's actions and plugins, as platform teams choose between them: preempt, proportion's guarantee,
a gang's minAvailable below its replicas, and binpack against the chart's spreading.

Against the real vc-scheduler with the chart's tiers of plugins (and the preempt and reclaim actions the
harness adds to the chart's enqueue, allocate and backfill; ``docs/suites.md`` says which configuration each
scenario ran on), these scenarios prove that

- **preempt** evicts a pod of a lower-priority vcjob in the *same* Queue for a higher-priority one (the pod
  gets Volcano's ``Evict`` event "because of preempt", its PodGroup an ``Evict`` "preempt"), and never
  takes from another Queue: there the higher-priority job waits whole while the other Queue's pods run on;
- a Queue's **guarantee** (proportion) is held back from every other Queue: a job asking for every GPU
  of the cluster in another Queue gets all but the guaranteed GPUs, which stay free; once the guarantee is
  removed the same job takes them;
- **minAvailable below replicas** starts a vcjob at its minimum where only that much fits, its PodGroup
  Running, and adds the other pods as room appears;
- the chart's scheduler **spreads** one-GPU jobs (asking for CPU and memory) over two equal nodes, and
  **binpack** weighted for GPUs fills one node before the next.
"""

from __future__ import annotations

import math
from collections import Counter

import allure
import pytest
from kubernetes.utils.quantity import parse_quantity

from kbc import apis, timeouts
from kbc.errors import NotEnoughGpus, ScenarioFailure
from kbc.events import involved, wait_events
from kbc.gpu import Filler, GpuNode, all_gpus_free, gpu_nodes, wait_gpus_left_free
from kbc.jobs import bound, describe_pods, gpus_held, holding, node_of, uids
from kbc.kube import Kube, Obj, hold_list, wait_for_list
from kbc.labels import GPU, PRODUCT_LABEL
from kbc.volcano import (
    EVICT,
    EVICTED_BY_PREEMPT,
    INQUEUE,
    JOB_NAME_LABEL,
    RUNNING,
    PodPriorityFactory,
    VolcanoQueueFactory,
    create_vcjob,
    describe_podgroup,
    hold_nothing_taken,
    job_pods,
    phase,
    set_guarantee,
    wait_podgroup,
    wait_podgroup_of,
    wait_vcjob_pods_running,
)
from kbc.volcano.settings import BINPACK_GPUS, PREEMPT_AND_RECLAIM
from kbc.workloads import vcjob

pytestmark = [pytest.mark.volcano, allure.epic("Volcano")]

SMALL_CPU = "100m"
PRIORITIES = {"low": 100, "high": 1000}
# GPUs a Queue's guarantee holds back from the others.
GUARANTEED = 2
# One-GPU jobs placed one after another on two equal nodes (binpack against spreading).
PLACED = 4
# Each of those pods asks for this share of its node's CPU, so that the chart's spreading terms
# (leastrequested, balancedresource) see each pod; a few millicores would leave them tied.
CPU_SHARE = 8
# And for a little memory: binpack scores only the resources a pod asks for, so a pod asking for CPU alone
# gets binpack's whole weight on CPU, which ties it with the spreading terms to within a point
# (docs/suites.md); with memory asked for, the spreading terms win by several.
PLACED_MEMORY = "64Mi"


# The preempt scenarios' two vcjobs: low holds both GPUs left free (one of its pods may be taken, its gang
# is one), high asks for one.
_PREEMPT_JOBS = {"low": (2, True), "high": (1, False)}


def _preempt_job(key: str, queue: str, filler: Filler, priorities: dict[str, str]) -> Obj:
    replicas, preemptable = _PREEMPT_JOBS[key]
    return vcjob(
        key,
        queue,
        replicas=replicas,
        min_available=1,
        cpu=SMALL_CPU,
        node_selector=filler.node.selector,
        preemptable=preemptable,
        priority_class=priorities[key],
    )


# -- preempt ----------------------------------------------------------------------------------------


@pytest.mark.preemption
@pytest.mark.serial
@pytest.mark.needs(PREEMPT_AND_RECLAIM)
@allure.feature("preemption")
@allure.story("preempt evicts a lower-priority vcjob's pod in the same Queue for a higher-priority vcjob")
def test_preempt_evicts_a_lower_priority_job_in_its_own_queue(
    kube: Kube,
    namespace: str,
    make_volcano_queue: VolcanoQueueFactory,
    make_pod_priority_classes: PodPriorityFactory,
) -> None:
    priorities = make_pod_priority_classes(PRIORITIES)
    queue = make_volcano_queue("vc-preempt")
    with allure.step("leave exactly 2 GPUs free on one GPU node; a low-priority vcjob takes both"):
        filler = wait_gpus_left_free(kube, namespace, free=2)
        node = filler.node.name
        low = _preempt_job("low", queue, filler, priorities)
        low_pg = wait_podgroup_of(kube, namespace, create_vcjob(kube, namespace, low))["metadata"]["name"]
        before = uids(wait_vcjob_pods_running(kube, namespace, "low", 2, node=node))
    with allure.step("a high-priority vcjob of 1 GPU in the same Queue: preempt makes room for it"):
        high = _preempt_job("high", queue, filler, priorities)
        create_vcjob(kube, namespace, high)
        wait_vcjob_pods_running(kube, namespace, "high", 1, node=node)
    with allure.step("the victim is one pod of low, evicted by preempt; low runs on at its minimum"):
        events = wait_events(
            kube,
            namespace,
            reason=EVICT,
            kind="Pod",
            until=lambda es: any(involved(e).get("uid") in before for e in es),
            what="Volcano's Evict event on a pod of the low-priority vcjob",
        )
        victims = {str(involved(e).get("name")) for e in events}
        messages = {e.get("message") for e in events}
        assert messages == {EVICTED_BY_PREEMPT}, f"evictions other than preempt's: {messages}"
        assert len(victims) == 1, f"preempt needed 1 GPU and evicted {sorted(victims)}"
        assert all(v.startswith("low-") for v in victims), f"not low's pods: {sorted(victims)}"
        wait_events(
            kube,
            namespace,
            reason=EVICT,
            kind="PodGroup",
            name=low_pg,
            until=lambda es: any((e.get("message") or "").endswith("preempt") for e in es),
            timeout=timeouts.SHORT,
            what=f"a Normal {EVICT} event (preempt) on PodGroup {low_pg}",
        )
        running = holding(job_pods(kube, namespace, "low"))
        assert len(running) == 1 and uids(running) <= before, (
            "low should keep exactly one of its first pods on the one GPU left to it:\n"
            + describe_pods(running)
        )


@pytest.mark.preemption
@pytest.mark.serial
@pytest.mark.needs(PREEMPT_AND_RECLAIM)
@allure.feature("preemption")
@allure.story("preempt never takes from another Queue: a higher-priority vcjob there waits whole")
def test_preempt_never_takes_from_another_queue(
    kube: Kube,
    namespace: str,
    make_volcano_queue: VolcanoQueueFactory,
    make_pod_priority_classes: PodPriorityFactory,
) -> None:
    priorities = make_pod_priority_classes(PRIORITIES)
    # Not reclaimable, so that the reclaim action (also on) may not take from it either: whatever leaves
    # it, only preempt could have taken.
    held = make_volcano_queue("vc-held", reclaimable=False)
    other = make_volcano_queue("vc-other")
    with allure.step(
        "leave exactly 2 GPUs free on one GPU node; a low-priority vcjob of Queue held takes both"
    ):
        filler = wait_gpus_left_free(kube, namespace, free=2)
        node = filler.node.name
        low = _preempt_job("low", held, filler, priorities)
        create_vcjob(kube, namespace, low)
        before = uids(wait_vcjob_pods_running(kube, namespace, "low", 2, node=node))
    with allure.step("a high-priority vcjob of 1 GPU in another Queue: enqueued, a preemptor, unplaced"):
        high = _preempt_job("high", other, filler, priorities)
        high_pg = wait_podgroup_of(kube, namespace, create_vcjob(kube, namespace, high))["metadata"]["name"]
        # Inqueue is what makes it a candidate of the preempt action (actions/preempt/preempt.go:116).
        wait_podgroup(
            kube,
            namespace,
            high_pg,
            until=lambda pg: phase(pg) == INQUEUE,
            what=f"PodGroup {high_pg} to be {INQUEUE} (a preemptor the preempt action considers)",
        )

    with allure.step("for the consistency window: low's 2 pods run on, high's pod stays unbound, no Evict"):
        hold_nothing_taken(
            kube,
            namespace,
            holder="low",
            kept=before,
            holder_keeps=(
                "the low-priority vcjob of another Queue keeping both its pods (preempt stays in one)"
            ),
            waiter="high",
            waiter_waits="the high-priority vcjob's pod unbound while the other Queue holds the GPUs",
        )


# -- proportion: guarantee --------------------------------------------------------------------------


@pytest.mark.quota
@pytest.mark.serial
@allure.feature("quota")
@allure.story(
    "a Queue's guarantee stays free of another Queue's job that asks for every GPU, until it is removed"
)
def test_a_queue_guarantee_is_held_back_from_other_queues(
    kube: Kube, namespace: str, make_volcano_queue: VolcanoQueueFactory
) -> None:
    with allure.step("count the cluster's GPUs; all must be free"):
        total = all_gpus_free(kube)
        if total <= GUARANTEED:
            raise NotEnoughGpus(GUARANTEED + 1, gpu_nodes(kube))
        others_get = total - GUARANTEED
    # Volcano's webhook refuses a guarantee above the Queue's deserved share, so the Queue deserves it too.
    reserved = make_volcano_queue(
        "vc-reserved", deserved={GPU: str(GUARANTEED)}, guarantee={GPU: str(GUARANTEED)}
    )
    open_queue = make_volcano_queue("vc-open")

    def beyond(pods: list[Obj]) -> str | None:
        if gpus_held(pods) > others_get:
            return (
                f"vcjob greedy holds {gpus_held(pods)} GPUs, more than the {others_get} the cluster's "
                f"{total} less Queue {reserved}'s guarantee of {GUARANTEED} leave to other Queues"
            )
        return None

    with allure.step(f"a vcjob of {total} one-GPU pods (minAvailable 1) in another Queue"):
        greedy = vcjob("greedy", open_queue, replicas=total, min_available=1, cpu=SMALL_CPU)
        create_vcjob(kube, namespace, greedy)
    with allure.step(f"it gets {others_get} GPUs: the guarantee's {GUARANTEED} stay free"):
        wait_for_list(
            kube,
            apis.POD,
            namespace=namespace,
            labels={JOB_NAME_LABEL: "greedy"},
            until=lambda pods: gpus_held(pods) == others_get,
            fail=beyond,
            describe=describe_pods,
            timeout=timeouts.POD_START,
            what=f"vcjob greedy to hold {others_get} of the cluster's {total} GPUs",
        )
        hold_list(
            kube,
            apis.POD,
            namespace=namespace,
            labels={JOB_NAME_LABEL: "greedy"},
            holds=lambda pods: gpus_held(pods) == others_get,
            describe=lambda pods: beyond(pods) or describe_pods(pods),
            what=f"vcjob greedy holding {others_get} GPUs with {GUARANTEED} free beside it",
        )
        free = sum(n.free for n in gpu_nodes(kube))
        assert free == GUARANTEED, f"{free} GPUs free beside greedy's {others_get}, expected {GUARANTEED}"
    with allure.step(f"remove Queue {reserved}'s guarantee: the same vcjob takes the other {GUARANTEED}"):
        set_guarantee(kube, reserved, None)
        wait_for_list(
            kube,
            apis.POD,
            namespace=namespace,
            labels={JOB_NAME_LABEL: "greedy"},
            until=lambda pods: gpus_held(pods) == total,
            describe=describe_pods,
            timeout=timeouts.POD_START,
            what=f"vcjob greedy to hold all {total} GPUs once no guarantee holds any back",
        )


# -- gang: minAvailable below replicas --------------------------------------------------------------


@pytest.mark.gang
@pytest.mark.serial
@allure.feature("gang")
@allure.story("a vcjob of 4 pods with minAvailable 2 starts its 2 where only 2 GPUs are free, then grows")
def test_min_available_below_replicas_starts_at_the_minimum_and_grows(
    kube: Kube, namespace: str, make_volcano_queue: VolcanoQueueFactory
) -> None:
    replicas, minimum = 4, 2
    queue = make_volcano_queue("vc-elastic")
    with allure.step(f"leave exactly {minimum} GPUs free on one GPU node"):
        filler = wait_gpus_left_free(kube, namespace, free=minimum, at_least=replicas)
        node = filler.node.name
    with allure.step(f"a vcjob of {replicas} x 1 GPU with minAvailable {minimum}, pinned there"):
        job = vcjob(
            "elastic",
            queue,
            replicas=replicas,
            min_available=minimum,
            cpu=SMALL_CPU,
            node_selector=filler.node.selector,
        )
        pg = wait_podgroup_of(kube, namespace, create_vcjob(kube, namespace, job))["metadata"]["name"]

    def over(pods: list[Obj]) -> str | None:
        placed = bound(pods)
        if len(placed) > minimum:
            return f"{len(placed)} pods bound with only {minimum} GPUs free on {node}"
        return None

    with allure.step(
        f"its {minimum} pods bound and Running, its PodGroup Running, the other {replicas - minimum} wait"
    ):
        wait_for_list(
            kube,
            apis.POD,
            namespace=namespace,
            labels={JOB_NAME_LABEL: "elastic"},
            until=lambda pods: len(pods) == replicas and len(holding(pods)) == minimum,
            fail=over,
            describe=describe_pods,
            timeout=timeouts.POD_START,
            what=f"{minimum} of the {replicas} pods of vcjob elastic bound (its minAvailable)",
        )
        wait_podgroup(
            kube,
            namespace,
            pg,
            until=lambda g: phase(g) == RUNNING,
            what=f"PodGroup {pg} to be {RUNNING} at its minimum",
        )
        hold_list(
            kube,
            apis.POD,
            namespace=namespace,
            labels={JOB_NAME_LABEL: "elastic"},
            holds=lambda pods: len(holding(pods)) == minimum,
            describe=describe_pods,
            what=f"vcjob elastic running at its minimum of {minimum} pods",
        )
    with allure.step(f"free the node: the other {replicas - minimum} pods are added"):
        filler.wait_released()
        wait_vcjob_pods_running(kube, namespace, "elastic", replicas, node=node)
        group = kube.get(apis.PODGROUP, pg, namespace)
        assert phase(group) == RUNNING, describe_podgroup(group)


# -- binpack against the chart's spreading ----------------------------------------------------------


def _equal_free_nodes(kube: Kube) -> list[GpuNode]:
    """GPU nodes of one product, all their GPUs free, at least two and each with room for every pod."""
    by_product: dict[str, list[GpuNode]] = {}
    for node in gpu_nodes(kube):
        if node.free == node.allocatable >= PLACED:
            by_product.setdefault(node.product, []).append(node)
    best = max(by_product.values(), key=len, default=[])
    if len(best) < 2:
        raise NotEnoughGpus(PLACED, gpu_nodes(kube))
    return best


def _place_one_at_a_time(kube: Kube, namespace: str, queue: str, nodes: list[GpuNode]) -> dict[str, str]:
    """Submit :data:`PLACED` one-GPU vcjobs to *nodes*' product, each once the one before is Running; the
    node each landed on, by job."""
    product = nodes[0].product
    cpus = [parse_quantity(kube.get(apis.NODE, n.name)["status"]["allocatable"]["cpu"]) for n in nodes]
    cpu = f"{int(min(cpus) * 1000 / CPU_SHARE)}m"
    allure.attach(
        f"nodes: {', '.join(n.name for n in nodes)} ({product}); each pod: 1 GPU, {cpu} CPU, "
        f"{PLACED_MEMORY} memory",
        name="placement",
        attachment_type=allure.attachment_type.TEXT,
    )
    placed: dict[str, str] = {}
    for index in range(PLACED):
        name = f"one-{index}"
        job = vcjob(
            name,
            queue,
            replicas=1,
            min_available=1,
            cpu=cpu,
            memory=PLACED_MEMORY,
            node_selector={PRODUCT_LABEL: product},
        )
        create_vcjob(kube, namespace, job)
        (pod,) = wait_vcjob_pods_running(kube, namespace, name, 1)
        placed[name] = str(node_of(pod))
    return placed


def _spread(placed: dict[str, str]) -> str:
    return ", ".join(f"{job} on {node}" for job, node in placed.items())


@pytest.mark.serial
@allure.feature("placement")
@allure.story("the chart's scheduler configuration spreads one-GPU vcjobs asking for memory over equal nodes")
def test_the_chart_spreads_jobs_over_equal_nodes(
    kube: Kube, namespace: str, make_volcano_queue: VolcanoQueueFactory
) -> None:
    nodes = _equal_free_nodes(kube)
    placed = _place_one_at_a_time(kube, namespace, make_volcano_queue("vc-spread"), nodes)
    most = max(Counter(placed.values()).values())
    fair = math.ceil(PLACED / len(nodes))
    if most > fair:
        raise ScenarioFailure(
            f"{most} of {PLACED} one-GPU vcjobs on one node of {len(nodes)} equal ones ({_spread(placed)}): "
            f"the chart's nodeorder should spread them, at most {fair} a node"
        )


@pytest.mark.serial
@pytest.mark.needs(BINPACK_GPUS)
@allure.feature("placement")
@allure.story("binpack weighted for GPUs fills one node with one-GPU vcjobs before the next")
def test_binpack_fills_one_node_before_the_next(
    kube: Kube, namespace: str, make_volcano_queue: VolcanoQueueFactory
) -> None:
    nodes = _equal_free_nodes(kube)
    placed = _place_one_at_a_time(kube, namespace, make_volcano_queue("vc-binpack"), nodes)
    used = set(placed.values())
    if len(used) != 1:
        raise ScenarioFailure(
            f"{PLACED} one-GPU vcjobs landed on {len(used)} nodes ({_spread(placed)}): binpack weighted for "
            f"GPUs should fill one node (room for {PLACED}) before the next"
        )
