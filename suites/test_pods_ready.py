"""The gang's physical half: Kueue's ``waitForPodsReady`` (on by default in the pinned Kueue, with a
30-minute timeout). Quota admitted the gang, but only Ready pods prove it runs whole: a workload whose pods
are not all Ready in time is evicted (``PodsReadyTimeout``), its quota freed for the next, and requeued
with a backoff; with ``blockAdmission`` nothing else is admitted while an admitted workload's pods are
not all Ready.

Each scenario runs on a cluster whose Kueue has a short timeout (through the configuration seam,
``@pytest.mark.needs``). The pods cannot become Ready because the scenario cordons the nodes of the
flavor's GPU product after admission is possible and before any pod is bound, as a platform team takes
nodes out for maintenance: kube-scheduler then binds none of them, while Kueue's quota still counts the
GPUs. The negative control: with ``waitForPodsReady`` disabled, the stuck gang keeps its quota for longer
than the timeout the other scenarios use.
"""

from __future__ import annotations

from dataclasses import dataclass

import allure
import pytest

from kbc import apis
from kbc.errors import ClusterError
from kbc.gpu import GpuNode, cordoned, gpu_nodes
from kbc.jobs import describe_pods, node_of
from kbc.kube import Kube, Obj, condition, hold_list, hold_together
from kbc.kueue import (
    WAITING_FOR_PODS_READY_REASONS,
    QueueFactory,
    Queues,
    hold_admitted,
    hold_suspended,
    requeue_count,
    wait_admitted,
    wait_evicted_at_pods_ready_timeout,
    wait_finished,
    wait_pending,
    wait_pods_ready,
    wait_workload_of,
)
from kbc.kueue.settings import (
    PODS_READY_BLOCKING,
    PODS_READY_SHORT,
    PODS_READY_TIMEOUT_SECONDS,
    WAIT_FOR_PODS_READY_OFF,
)
from kbc.labels import GPU, PRODUCT_LABEL
from kbc.workloads import job

pytestmark = [
    pytest.mark.pods_ready,
    pytest.mark.gang,
    pytest.mark.kueue,
    pytest.mark.serial,
    allure.epic("Kueue"),
    allure.feature("pods_ready"),
]

BEYOND_THE_TIMEOUT = PODS_READY_TIMEOUT_SECONDS + 5
"""How long the negative control watches the stuck gang keep its quota: past the others' timeout."""


@dataclass(frozen=True)
class Product:
    """Every GPU node of one product (a flavor's nodes), and gangs of two pods per node that fill them."""

    name: str
    nodes: list[GpuNode]

    @property
    def pods(self) -> int:
        return 2 * len(self.nodes)

    @property
    def per_pod(self) -> int:
        return min(n.allocatable for n in self.nodes) // 2

    @property
    def gpus(self) -> int:
        return self.pods * self.per_pod


@pytest.fixture
def product(kube: Kube) -> Product:
    """The GPU product with the fewest nodes (cordoning them leaves the most for anything else), all free."""
    by_product: dict[str, list[GpuNode]] = {}
    for node in gpu_nodes(kube):
        by_product.setdefault(node.product, []).append(node)
    if not by_product:
        pytest.skip("no schedulable GPU node for the harness's GPU pods: nothing to take out")
    name, nodes = min(by_product.items(), key=lambda item: (len(item[1]), item[0]))
    busy = [
        f"{n.name} ({n.allocatable - n.free} of {n.allocatable} GPUs held)"
        for n in nodes
        if n.free != n.allocatable
    ]
    if busy:
        raise ClusterError(
            f"these scenarios cordon the {name or 'unlabelled'} GPU nodes and need them free: {busy}"
        )
    chosen = Product(name, nodes)
    if chosen.per_pod < 1:
        pytest.skip(f"the {name} nodes have fewer than 2 GPUs each: no gang of two pods per node")
    return chosen


@pytest.fixture
def gang_queues(product: Product, make_kueue_queues: QueueFactory) -> Queues:
    """A ClusterQueue on the product's nodes with room for exactly one gang."""
    return make_kueue_queues(
        {"cpu": "32", GPU: str(product.gpus)}, flavors={"gpus": {PRODUCT_LABEL: product.name}}
    )


def gang(name: str, product: Product, queue: str, *, run_for: str = "", share: int = 1) -> Obj:
    """A gang of two pods per node of *product*, filling 1/*share* of each node."""
    return job(name, pods=product.pods, gpus=product.per_pod // share, queue=queue, run_for=run_for)


def submitted(kube: Kube, namespace: str, manifest: Obj) -> str:
    """Create *manifest* and return the name of its Workload."""
    return str(
        wait_workload_of(kube, namespace, kube.create(manifest, namespace=namespace))[0]["metadata"]["name"]
    )


def hold_unbound(kube: Kube, namespace: str, job_name: str, *, window: float) -> None:
    """For the window: every pod of Job *job_name* exists unbound (what makes its gang not Ready)."""

    def unbound(pods: list[Obj]) -> bool:
        return bool(pods) and not any(node_of(p) for p in pods)

    hold_list(
        kube,
        apis.POD,
        namespace=namespace,
        labels={"job-name": job_name},
        holds=unbound,
        describe=describe_pods,
        window=window,
        what=f"the pods of Job {job_name} unbound on the cordoned nodes",
    )


@pytest.mark.needs(PODS_READY_SHORT)
@allure.story(
    "a gang admitted by quota whose pods cannot become Ready is evicted at the timeout, its quota admits the "
    "next gang, and it is requeued and admitted once the nodes return"
)
def test_a_gang_whose_pods_never_get_ready_is_evicted_and_requeued_and_its_quota_admits_the_next(
    kube: Kube, namespace: str, product: Product, gang_queues: Queues
) -> None:
    queue = gang_queues.local_queue
    with cordoned(kube, product.nodes) as cordon:
        with allure.step(
            f"the {product.name} nodes cordoned; a {product.pods} x {product.per_pod}-GPU gang is admitted "
            f"by quota ({product.gpus} GPUs) but none of its pods can be bound"
        ):
            stuck = submitted(kube, namespace, gang("stuck", product, queue))
            said = condition(wait_admitted(kube, namespace, stuck)[0], "PodsReady") or {}
            assert said.get("status") != "True", f"Kueue says the pods of {stuck} are Ready: {said}"
        with allure.step("the next gang of the same size waits for quota"):
            next_gang = submitted(kube, namespace, gang("next", product, queue, run_for="5s"))
            wait_pending(kube, namespace, next_gang)
        with allure.step(
            f"after {PODS_READY_TIMEOUT_SECONDS}s Kueue evicts the stuck gang (PodsReadyTimeout), requeues it"
        ):
            (evicted,) = wait_evicted_at_pods_ready_timeout(kube, namespace, stuck)
            assert requeue_count(evicted) == 1, (
                f"requeueState after the first eviction: {evicted.get('status')}"
            )
        with allure.step("its quota admits the next gang while the nodes are still cordoned"):
            wait_admitted(kube, namespace, next_gang)
        with allure.step("the nodes return: the next gang's pods all get Ready, and it runs to its end"):
            cordon.release()
            wait_pods_ready(kube, namespace, next_gang)
            wait_finished(kube, namespace, next_gang)
    with allure.step("the evicted gang, requeued, is admitted again and all its pods get Ready"):
        wait_admitted(kube, namespace, stuck)
        wait_pods_ready(kube, namespace, stuck)


@pytest.mark.needs(PODS_READY_BLOCKING)
@allure.story(
    "with blockAdmission, a workload that fits its quota waits while an admitted gang's pods are not Ready"
)
def test_block_admission_holds_the_next_workload_until_the_admitted_gang_is_ready(
    kube: Kube, namespace: str, product: Product, gang_queues: Queues
) -> None:
    if product.per_pod < 2:
        pytest.skip(
            f"the {product.name} nodes have fewer than 4 GPUs each: no two gangs of two pods per node"
        )
    queue = gang_queues.local_queue
    with cordoned(kube, product.nodes) as cordon:
        with allure.step("the nodes cordoned; a gang of half the quota is admitted, its pods unbound"):
            first = submitted(kube, namespace, gang("first", product, queue, share=2))
            wait_admitted(kube, namespace, first)
        with allure.step(
            "a second gang, within the quota left, is held: Kueue waits for the first to be Ready"
        ):
            second = submitted(kube, namespace, gang("second", product, queue, share=2))
            (pending,) = wait_pending(kube, namespace, second)
            said = condition(pending, "QuotaReserved") or {}
            assert said.get("reason") in WAITING_FOR_PODS_READY_REASONS, said
            assert "waiting for all admitted workloads to be in PodsReady condition" in str(
                said.get("message")
            ), said
            hold_suspended(kube, namespace, "second", second)
        with allure.step("the nodes return: the first gang gets Ready, and only then is the second admitted"):
            cordon.release()
            wait_pods_ready(kube, namespace, first)
            wait_admitted(kube, namespace, second)


@pytest.mark.needs(WAIT_FOR_PODS_READY_OFF)
@allure.story(
    "negative control: with waitForPodsReady disabled, a gang whose pods cannot become Ready keeps its quota"
)
def test_without_wait_for_pods_ready_a_stuck_gang_keeps_its_quota(
    kube: Kube, namespace: str, product: Product, gang_queues: Queues
) -> None:
    queue = gang_queues.local_queue
    with cordoned(kube, product.nodes):
        with allure.step("the nodes cordoned; a gang is admitted by quota, its pods unbound; the next waits"):
            stuck = submitted(kube, namespace, gang("stuck", product, queue))
            (admitted,) = wait_admitted(kube, namespace, stuck)
            tracked = condition(admitted, "PodsReady")
            assert tracked is None, (
                f"waitForPodsReady is meant to be off, but Kueue tracks PodsReady: {tracked}"
            )
            waiting = submitted(kube, namespace, gang("waiting", product, queue))
            wait_pending(kube, namespace, waiting)
        with allure.step(
            f"for {BEYOND_THE_TIMEOUT}s (past the {PODS_READY_TIMEOUT_SECONDS}s timeout of the other "
            "scenarios): the stuck gang stays admitted with its pods unbound, and the next gang waits"
        ):
            hold_together(
                lambda: hold_admitted(kube, namespace, stuck, window=BEYOND_THE_TIMEOUT),
                lambda: hold_unbound(kube, namespace, "stuck", window=BEYOND_THE_TIMEOUT),
                lambda: hold_suspended(kube, namespace, "waiting", waiting, window=BEYOND_THE_TIMEOUT),
            )
