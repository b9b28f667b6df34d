"""LeaderWorkerSet through Kueue: each group of a LeaderWorkerSet (a leader and its workers, the unit of
multi-host inference) is one Workload, admitted whole or not at all.

LeaderWorkerSet's StatefulSets create a group's pods at once; Kueue holds every one of them at its
admission gate until the group's Workload fits the ClusterQueue, so a group that does not fit has pods
but none of them bound (never half a group on the GPUs). The negative control shows what the gate
prevents: without Kueue, two groups contending for too few GPUs end each partly placed, for good.
"""

from __future__ import annotations

import allure
import pytest

from kbc import apis
from kbc.components.lws import (
    LEADER_WORKER_SET,
    NAME_LABEL,
    hold_gated,
    leader_worker_set,
    wait_gated,
    wait_group_running,
    wait_ungated,
)
from kbc.flavors import gpu_products, node_products
from kbc.gpu import has_gpu_toleration, wait_gpus_left_free
from kbc.jobs import ARRIVAL_GATE, Contenders, hold_deadlocked, node_of, release_in_turn
from kbc.kube import Kube, condition
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
from suites._pods_ready import StuckJob, evicted_at_timeout_and_next_admitted

pytestmark = [
    pytest.mark.leaderworkerset,
    pytest.mark.lws,
    allure.epic("LeaderWorkerSet"),
    allure.feature("leaderworkerset"),
]

SIZE = 4
"""Pods per group: a leader and three workers, one GPU each."""


@pytest.fixture
def six_gpus(make_kueue_queues: QueueFactory) -> Queues:
    """A ClusterQueue with room for 6 GPUs: one 4-GPU group fits, two do not."""
    return make_kueue_queues({"cpu": "16", GPU: "6"})


@pytest.mark.kueue
@allure.story(
    "of two LeaderWorkerSets of one 4-GPU group on 6 GPUs of quota, one runs whole and the other's pods all "
    "wait at Kueue's gate, unbound, until the first is deleted"
)
def test_a_group_is_admitted_whole_and_a_second_waits_with_every_pod_gated(
    kube: Kube, namespace: str, six_gpus: Queues
) -> None:
    with allure.step("submit LeaderWorkerSet first (one group: a leader and 3 workers, 1 GPU each)"):
        first = kube.create(
            leader_worker_set("first", size=SIZE, gpus=1, queue=six_gpus.local_queue), namespace=namespace
        )
        (wl_first,) = wait_workload_of(kube, namespace, first)
        counts = sorted(p["count"] for p in wl_first["spec"]["podSets"])
        assert sum(counts) == SIZE, (
            f"the group's Workload holds all {SIZE} pods: {wl_first['spec']['podSets']}"
        )
        wait_admitted(kube, namespace, wl_first["metadata"]["name"])
        wait_group_running(kube, namespace, "first", SIZE)
    with allure.step("submit LeaderWorkerSet second: its Workload is pending, every pod gated and unbound"):
        second = kube.create(
            leader_worker_set("second", size=SIZE, gpus=1, queue=six_gpus.local_queue), namespace=namespace
        )
        wl_second = wait_workload_of(kube, namespace, second)[0]["metadata"]["name"]
        wait_pending(kube, namespace, wl_second)
        hold_gated(kube, namespace, "second", SIZE)
    with allure.step("delete the first: the second's group is admitted and all its pods run"):
        kube.delete(LEADER_WORKER_SET, "first", namespace=namespace)
        wait_admitted(kube, namespace, wl_second)
        wait_group_running(kube, namespace, "second", SIZE)


@pytest.mark.kueue
@allure.story("a LeaderWorkerSet in a quota-zero ClusterQueue waits with every pod gated until quota appears")
def test_quota_zero_holds_the_group_gated_until_the_quota_is_raised(
    kube: Kube, namespace: str, make_kueue_queues: QueueFactory
) -> None:
    queues = make_kueue_queues({"cpu": "0"})
    with allure.step("submit a LeaderWorkerSet of one 2-pod group (100m CPU each) to a quota of zero"):
        created = kube.create(
            leader_worker_set("waits", size=2, cpu="100m", queue=queues.local_queue), namespace=namespace
        )
        name = wait_workload_of(kube, namespace, created)[0]["metadata"]["name"]
        wait_pending(kube, namespace, name)
    with allure.step("its pods stay gated and unbound for the consistency window"):
        hold_gated(kube, namespace, "waits", 2)
    with allure.step("raise nominalQuota to 200m CPU: the group is admitted and both pods run"):
        cq = kube.get(apis.CLUSTER_QUEUE, queues.cluster_queue)
        cq["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0]["nominalQuota"] = "200m"
        kube.replace(cq)
        wait_admitted(kube, namespace, name)
        wait_group_running(kube, namespace, "waits", 2)


@pytest.mark.kueue
@allure.story(
    "a flavor's node labels and GPU toleration reach every pod of a LeaderWorkerSet's group that tolerates "
    "nothing itself, as Kueue ungates them"
)
def test_a_flavor_s_node_labels_and_toleration_reach_every_pod_of_the_group(
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
        f"submit a LeaderWorkerSet of one 2-pod group (1 GPU a pod, no toleration of its own) to a flavor "
        f"selecting {product.product} and tolerating {GPU}"
    ):
        created = kube.create(
            leader_worker_set("placed", size=2, gpus=1, queue=queues.local_queue, tolerate_gpu=False),
            namespace=namespace,
        )
        name = wait_workload_of(kube, namespace, created)[0]["metadata"]["name"]
        wait_admitted(kube, namespace, name)
    with allure.step(f"Kueue ungates both pods with the flavor's nodeSelector and its toleration of {GPU}"):
        pods = wait_ungated(kube, namespace, "placed", 2)
        for pod in pods:
            pod_name, spec = pod["metadata"]["name"], pod["spec"]
            assert (spec.get("nodeSelector") or {}).get(PRODUCT_LABEL) == product.product, (
                f"Kueue should select the flavor's nodeLabels {selector} for pod {pod_name}: "
                f"{spec.get('nodeSelector')}"
            )
            assert has_gpu_toleration(spec.get("tolerations")), (
                f"Kueue should add the flavor's toleration of {GPU} to pod {pod_name}: "
                f"{spec.get('tolerations')}"
            )
    with allure.step(f"both pods run on {product.product} nodes"):
        on = node_products(kube)
        for pod in wait_group_running(kube, namespace, "placed", 2):
            assert on.get(node_of(pod) or "") == product.product, (pod["metadata"]["name"], node_of(pod), on)


@pytest.mark.kueue
@pytest.mark.needs(PODS_READY_SHORT)
@allure.story(
    "with waitForPodsReady, a group admitted by quota whose pods cannot be placed is evicted at the timeout, "
    "its pods remade at Kueue's gate, and its quota admits the next group"
)
def test_a_group_whose_pods_never_get_ready_is_evicted_and_its_quota_admits_the_next(
    kube: Kube, namespace: str, make_kueue_queues: QueueFactory
) -> None:
    job = StuckJob(
        one=f"a LeaderWorkerSet's group of {SIZE} pods",
        noun="LeaderWorkerSet's group",
        build=lambda name, queue: leader_worker_set(name, size=SIZE, gpus=1, queue=queue),
        made="its pods are ungated, none can be bound",
        wait_made=lambda kube, namespace, name: wait_ungated(kube, namespace, name, SIZE, none_bound=True),
        after="has its pods remade at Kueue's gate",
        wait_after=lambda kube, namespace, name: wait_gated(kube, namespace, name, SIZE),
    )
    evicted_at_timeout_and_next_admitted(kube, namespace, make_kueue_queues, job)


@pytest.mark.kueue
@allure.story(
    "a lender reclaims the GPUs a LeaderWorkerSet's group borrowed: the whole group is evicted, its pods "
    "come back held at Kueue's gate, none bound, and the lender's group runs whole"
)
def test_a_lender_reclaims_a_borrowing_group_whole(
    kube: Kube, namespace: str, reclaiming_lender: Queues
) -> None:
    cohort = reclaiming_lender
    borrower_cq, lender_cq = cohort.cluster_queues["borrower"], cohort.cluster_queues["lender"]
    with allure.step("the borrower's group (4 pods x 1 GPU) runs on its own 2 GPUs and 2 borrowed"):
        borrower = kube.create(
            leader_worker_set("borrower", size=SIZE, gpus=1, queue=cohort.local_queues["borrower"]),
            namespace=namespace,
        )
        wl_borrower = wait_workload_of(kube, namespace, borrower)[0]["metadata"]["name"]
        wait_admitted(kube, namespace, wl_borrower)
        wait_usage(kube, borrower_cq, cohort.flavor, GPU, total="4", borrowed="2")
        wait_group_running(kube, namespace, "borrower", SIZE)
    with allure.step("the lender's group (4 pods x 1 GPU, its nominal quota) is submitted"):
        lender = kube.create(
            leader_worker_set("lender", size=SIZE, gpus=1, queue=cohort.local_queues["lender"]),
            namespace=namespace,
        )
        wl_lender = wait_workload_of(kube, namespace, lender)[0]["metadata"]["name"]
    with allure.step("the borrower's group Workload is evicted, Preempted with reason InCohortReclamation"):
        wait_preempted(kube, namespace, wl_borrower, reasons={"InCohortReclamation"})
    with allure.step("the lender's group is admitted on its own quota and all 4 of its pods run"):
        wait_admitted(kube, namespace, wl_lender)
        wait_group_running(kube, namespace, "lender", SIZE)
        wait_usage(kube, lender_cq, cohort.flavor, GPU, total="4", borrowed="0")
    with allure.step(
        "the borrower's group is remade whole at Kueue's gate: all 4 pods gated, none bound, and stay so"
    ):
        wait_gated(kube, namespace, "borrower", SIZE)
        hold_gated(kube, namespace, "borrower", SIZE)
        wait_usage(kube, borrower_cq, cohort.flavor, GPU, total="0", borrowed="0")


GROUPS = Contenders(NAME_LABEL, ("group-a", "group-b"), SIZE, noun="groups")


@pytest.mark.serial
@allure.story(
    "negative control without Kueue: two LeaderWorkerSets of one 4-GPU group on 6 free GPUs end each partly "
    "placed under the default scheduler (the deadlock)"
)
def test_without_kueue_two_groups_on_six_gpus_end_partly_placed(kube: Kube, namespace: str) -> None:
    with allure.step("leave exactly 6 GPUs free on one GPU node"):
        filler = wait_gpus_left_free(kube, namespace, free=6)
    with allure.step(
        "create groups A and B (a leader and 3 workers, 1 GPU each, no queue), pods held at a gate"
    ):
        # The gate lets both groups' pods reach the scheduler interleaved, A1 B1 A2 B2 ..., as they do when
        # two LeaderWorkerSets scale up at once; the scheduler still decides placement.
        for name in GROUPS.names:
            kube.create(
                leader_worker_set(
                    name, size=SIZE, gpus=1, node_selector=filler.node.selector, gates=(ARRIVAL_GATE,)
                ),
                namespace=namespace,
            )
    with allure.step("release the pods to the default scheduler in turn: A1, B1, A2, B2, ..."):
        release_in_turn(kube, namespace, GROUPS, made_by="LeaderWorkerSet's StatefulSets")
    with allure.step("both groups are partially placed, and stay so for the consistency window"):
        final = hold_deadlocked(kube, namespace, GROUPS)
    with allure.step("the scheduler says the unplaced pods are Unschedulable for want of GPUs"):
        for pod in (p for p in final if not node_of(p)):
            cond = condition(pod, "PodScheduled") or {}
            assert cond.get("reason") == "Unschedulable", (pod["metadata"]["name"], cond)
            assert f"Insufficient {GPU}" in cond.get("message", ""), (pod["metadata"]["name"], cond)
