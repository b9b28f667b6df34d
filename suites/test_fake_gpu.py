"""GPU nodes without GPUs: the default scheduler and Kueue's product flavors on nodes advertising
``nvidia.com/gpu``.

Platform teams route GPU work by the node's allocatable ``nvidia.com/gpu``, the GPU taint, and the
``nvidia.com/gpu.product`` label GPU feature discovery sets. This suite proves, on whatever GPU nodes
the cluster has (kwok nodes on the local provider, patched workers on kind, real nodes on an existing
cluster; nodes are discovered, never named):

- the default scheduler places GPU pods only on nodes with allocatable GPUs, leaves a pod asking more
  than any node has Pending (``Unschedulable``, ``Insufficient nvidia.com/gpu``), and keeps a GPU pod
  without the toleration off the tainted GPU nodes;
- a ResourceFlavor keyed on the product routes a queued Job to that product's pool: Kueue injects the
  flavor's nodeLabels as the Job's nodeSelector on admission, and the pods land on those nodes;
- a ClusterQueue listing two product flavors falls back to the second when the first has no quota left;
- a flavor whose nodeLabels match no node is admitted by quota anyway while its pods can never
  schedule: a silent misconfiguration, which this suite observes and reports (``FlavorMatchesNoNode``,
  from the harness's ``kbc.flavors.flavors_without_nodes`` diagnostic).
"""

from __future__ import annotations

import warnings

import allure
import pytest

from kbc import apis, timeouts
from kbc.errors import NotEnoughGpus
from kbc.events import wait_event
from kbc.flavors import (
    NO_SUCH_PRODUCT,
    FlavorSpec,
    GpuProduct,
    flavors_without_nodes,
    gpu_products,
    product_flavor,
    product_queue_set,
    wait_pods_on_product,
)
from kbc.gpu import GpuNode, gpu_nodes
from kbc.jobs import describe_pods, node_of, phase_of, wait_job_unsuspended
from kbc.kube import Kube, Obj, condition, hold_list, is_true, wait_for_list
from kbc.kueue import (
    QueueFactory,
    Queues,
    assigned_flavor,
    flavor_usage,
    wait_admitted,
    wait_cluster_queue,
    wait_workload_of,
)
from kbc.labels import GPU, PRODUCT_LABEL
from kbc.workloads import job, pod

pytestmark = [pytest.mark.fake_gpu, allure.feature("fake_gpu")]

SCENARIO_LABEL = "conformance.kbatch.dev/scenario"
# kube-scheduler v1.34 filter reasons (pkg/scheduler/framework/plugins/...):
INSUFFICIENT_GPU = f"Insufficient {GPU}"  # noderesources/fit.go: fmt.Sprintf("Insufficient %v", rName)
UNTOLERATED_TAINT = "untolerated taint"  # tainttoleration: "node(s) had untolerated taint(s)"
SELECTOR_MISMATCH = "didn't match Pod's node affinity/selector"  # nodeaffinity: ErrReasonPod
# Flavors quote CPU in the same resource group as GPUs (every flavor covers every resource of its
# group); enough for any pod here, so only GPUs decide.
CPU_QUOTA = "64"


@pytest.fixture
def nodes(kube: Kube) -> list[GpuNode]:
    """The cluster's Ready GPU nodes; the scenarios need at least one."""
    found = gpu_nodes(kube)
    if not found:
        pytest.skip(
            f"no Ready, schedulable node has allocatable {GPU}: the fake_gpu scenarios need GPU nodes"
        )
    return found


@pytest.fixture
def products(kube: Kube) -> list[GpuProduct]:
    """The GPU products of the cluster's GPU nodes, most GPUs first."""
    found = gpu_products(kube)
    if not found:
        pytest.skip(
            f"no Ready GPU node carries the {PRODUCT_LABEL} label, so no product flavor can select one"
        )
    return found


# -- default scheduler ---------------------------------------------------------------------------------


def gpu_pod(name: str, gpus: int, *, tolerate: bool = True) -> Obj:
    return pod(name, gpus=gpus, cpu="100m", labels={SCENARIO_LABEL: name}, tolerate_gpu=tolerate)


def scheduled(found: Obj | None) -> dict[str, str] | None:
    return condition(found, "PodScheduled")


def wait_unschedulable(kube: Kube, namespace: str, labels: dict[str, str], says: str) -> Obj:
    """The one pod matching *labels*, once the scheduler reported it Unschedulable with *says* in the
    PodScheduled message; stops at once if it is bound instead."""

    def refused(pods: list[Obj]) -> bool:
        cond = scheduled(pods[0]) if len(pods) == 1 else None
        return (
            cond is not None
            and cond["status"] == "False"
            and cond.get("reason") == "Unschedulable"
            and says in (cond.get("message") or "")
        )

    def bound(pods: list[Obj]) -> str | None:
        placed = [f"{p['metadata']['name']} on {node_of(p)}" for p in pods if node_of(p)]
        return f"the scheduler bound it ({', '.join(placed)})" if placed else None

    pods = wait_for_list(
        kube,
        apis.POD,
        namespace=namespace,
        labels=labels,
        until=refused,
        fail=bound,
        describe=lambda pods: (
            "\n".join(f"    pod {p['metadata']['name']}: PodScheduled={scheduled(p)}" for p in pods)
            or "    (no pods)"
        ),
        timeout=timeouts.LONG,
        what=f"the scheduler to report the pod Unschedulable saying {says!r}",
    )
    return pods[0]


def hold_unbound(kube: Kube, namespace: str, labels: dict[str, str], why: str) -> None:
    """The pod matching *labels* stays Pending, unbound and PodScheduled=False for the consistency window."""

    def unbound(pods: list[Obj]) -> bool:
        return (
            len(pods) == 1
            and not node_of(pods[0])
            and phase_of(pods[0]) == "Pending"
            and (scheduled(pods[0]) or {}).get("status") == "False"
        )

    hold_list(
        kube,
        apis.POD,
        namespace=namespace,
        labels=labels,
        holds=unbound,
        describe=describe_pods,
        what=f"the pod staying Pending and unbound ({why})",
    )


@allure.epic("Kubernetes")
@allure.story("GPU pods that tolerate the GPU taint land only on nodes with allocatable nvidia.com/gpu")
def test_gpu_pods_land_only_on_gpu_nodes(kube: Kube, nodes: list[GpuNode], namespace: str) -> None:
    count = min(3, sum(n.free for n in nodes))
    if count == 0:
        raise NotEnoughGpus(1, nodes)
    with allure.step(
        f"create {count} pods asking 1 GPU each, tolerating the GPU taint, with no nodeSelector"
    ):
        for index in range(count):
            kube.create(gpu_pod(f"gpu-{index}", 1), namespace=namespace)
    with allure.step("every pod is bound and Running on a node with allocatable GPUs"):
        gpu_names = {n.name for n in nodes}

        def off_gpu(pods: list[Obj]) -> str | None:
            stray = [
                f"{p['metadata']['name']} on {node_of(p)}"
                for p in pods
                if node_of(p) not in (None, *gpu_names)
            ]
            return (
                f"GPU pods were bound to nodes without allocatable {GPU}: {', '.join(stray)}"
                if stray
                else None
            )

        wait_for_list(
            kube,
            apis.POD,
            namespace=namespace,
            timeout=timeouts.POD_START,
            what=f"all {count} GPU pods bound and Running, each on a node with allocatable GPUs",
            until=lambda ps: len(ps) == count and all(node_of(p) and phase_of(p) == "Running" for p in ps),
            fail=off_gpu,
            describe=describe_pods,
        )


@allure.epic("Kubernetes")
@allure.story(
    "a pod asking more GPUs than any node has stays Pending: Unschedulable, Insufficient nvidia.com/gpu"
)
def test_pod_asking_more_gpus_than_any_node_has_stays_unschedulable(
    kube: Kube, nodes: list[GpuNode], namespace: str
) -> None:
    largest = max(n.allocatable for n in nodes)
    wanted = largest + 1
    labels = {SCENARIO_LABEL: "greedy"}
    with allure.step(f"create a pod asking {wanted} GPUs; the largest GPU node has {largest} allocatable"):
        kube.create(gpu_pod("greedy", wanted), namespace=namespace)
    with allure.step("the scheduler reports it Unschedulable with a FailedScheduling event"):
        wait_unschedulable(kube, namespace, labels, INSUFFICIENT_GPU)
        event = wait_event(
            kube,
            namespace,
            kind="Pod",
            name="greedy",
            reason="FailedScheduling",
            contains=INSUFFICIENT_GPU,
            timeout=timeouts.LONG,
        )
        allure.attach(event["message"], name="FailedScheduling", attachment_type=allure.attachment_type.TEXT)
        assert event["type"] == "Warning", event
    with allure.step("it stays Pending and unbound for the consistency window"):
        hold_unbound(kube, namespace, labels, f"no node has {wanted} {GPU}")


@allure.epic("Kubernetes")
@allure.story("a GPU pod without the GPU toleration is refused by the GPU nodes' taint")
def test_gpu_pod_without_the_toleration_is_refused_by_the_taint(
    kube: Kube, nodes: list[GpuNode], namespace: str
) -> None:
    tainted = [
        n.name
        for n in nodes
        if any(
            t.get("key") == GPU and t.get("effect") == "NoSchedule"
            for t in (kube.get(apis.NODE, n.name).get("spec") or {}).get("taints") or []
        )
    ]
    if not tainted:
        pytest.skip(
            f"no GPU node carries a {GPU}:NoSchedule taint on this cluster "
            f"({', '.join(n.name for n in nodes)}), so no taint can refuse the pod"
        )
    labels = {SCENARIO_LABEL: "untolerated"}
    with allure.step(f"create a 1-GPU pod without a toleration; tainted GPU nodes: {', '.join(tainted)}"):
        kube.create(gpu_pod("untolerated", 1, tolerate=False), namespace=namespace)
    with allure.step(
        "the scheduler reports the untolerated taint, in the condition and a FailedScheduling event"
    ):
        found = wait_unschedulable(kube, namespace, labels, UNTOLERATED_TAINT)
        message = (scheduled(found) or {}).get("message", "")
        allure.attach(message, name="PodScheduled message", attachment_type=allure.attachment_type.TEXT)
        wait_event(
            kube,
            namespace,
            kind="Pod",
            name="untolerated",
            reason="FailedScheduling",
            contains=UNTOLERATED_TAINT,
            timeout=timeouts.LONG,
        )
    with allure.step("it stays Pending and unbound for the consistency window"):
        hold_unbound(kube, namespace, labels, f"every GPU node is tainted {GPU}:NoSchedule")


# -- Kueue ResourceFlavors keyed on the GPU product ---------------------------------------------------


def expect_admitted_on(kube: Kube, namespace: str, created: Obj, flavor: str) -> Obj:
    """Wait for *created*'s Workload to be Admitted; assert Kueue assigned *flavor* to its GPUs."""
    name = wait_workload_of(kube, namespace, created)[0]["metadata"]["name"]
    (admitted,) = wait_admitted(kube, namespace, name)
    got = assigned_flavor(admitted)
    assert got == flavor, (
        f"Workload {name} of Job {created['metadata']['name']} was admitted with {GPU} in flavor {got}; "
        f"expected flavor {flavor}. status.admission: {admitted['status'].get('admission')}"
    )
    return admitted


def assert_node_selector(kube: Kube, admitted_job: Obj, flavor: str) -> None:
    """The Job's pod template carries exactly the flavor's nodeLabels (as the API server holds them)."""
    selector = dict(admitted_job["spec"]["template"]["spec"].get("nodeSelector") or {})
    labels = dict((kube.get(apis.RESOURCE_FLAVOR, flavor).get("spec") or {}).get("nodeLabels") or {})
    assert selector == labels, (
        f"Kueue should inject ResourceFlavor {flavor}'s nodeLabels {labels} into Job "
        f"{admitted_job['metadata']['name']}'s pod template on admission; its nodeSelector is {selector}"
    )


def product_queues(make: QueueFactory, specs: list[FlavorSpec]) -> Queues:
    return make(**product_queue_set(specs))


@pytest.fixture
def product_queue(make_kueue_queues: QueueFactory, products: list[GpuProduct]) -> Queues:
    """A ClusterQueue with one flavor: the product with the most GPUs, quota for all of them."""
    target = products[0]
    return product_queues(
        make_kueue_queues, [product_flavor(target.product, {"cpu": CPU_QUOTA, GPU: str(target.total)})]
    )


@pytest.mark.kueue
@allure.epic("Kueue")
@allure.story("a ResourceFlavor keyed on nvidia.com/gpu.product routes a Job's pods to that product's nodes")
def test_product_flavor_routes_a_job_to_its_pool(
    kube: Kube, namespace: str, products: list[GpuProduct], product_queue: Queues
) -> None:
    target = products[0]
    flavor = product_queue.flavor
    with allure.step(
        f"submit a 2 x 1-GPU Job to a ClusterQueue whose only flavor {flavor} selects {target.product}"
    ):
        created = kube.create(
            job("routed", pods=2, gpus=1, queue=product_queue.local_queue), namespace=namespace
        )
        assert created["spec"]["suspend"] is True, "Kueue's webhook suspends a Job that names a LocalQueue"
    with allure.step(f"Kueue admits it with {GPU} in flavor {flavor}"):
        expect_admitted_on(kube, namespace, created, flavor)
    with allure.step("on admission Kueue injects the flavor's nodeLabels as the Job's nodeSelector"):
        assert_node_selector(kube, wait_job_unsuspended(kube, namespace, "routed"), flavor)
    with allure.step(f"both pods run on {target.product} nodes"):
        wait_pods_on_product(kube, namespace, "routed", 2, target.product)


@pytest.fixture
def two_products(products: list[GpuProduct]) -> tuple[GpuProduct, GpuProduct]:
    """The two GPU products with the most GPUs; the fallback scenario needs two."""
    if len(products) < 2:
        pytest.skip(
            f"flavor fallback needs GPU nodes of two products; every GPU node of this cluster reports "
            f"{PRODUCT_LABEL}={products[0].product}"
        )
    return products[0], products[1]


@pytest.fixture
def fallback_queue(make_kueue_queues: QueueFactory, two_products: tuple[GpuProduct, GpuProduct]) -> Queues:
    """A ClusterQueue listing the first product's flavor, then the second's; each with the GPUs of that
    product's largest node as quota."""
    first, second = two_products
    keys = [first.key, second.key if second.key != first.key else f"{second.key}-2"]
    specs = [
        product_flavor(p.product, {"cpu": CPU_QUOTA, GPU: str(p.largest)}, key=k)
        for p, k in zip(two_products, keys, strict=True)
    ]
    return product_queues(make_kueue_queues, specs)


@pytest.mark.kueue
@pytest.mark.serial
@allure.epic("Kueue")
@allure.story(
    "when the first GPU flavor's quota is used up, a Job is admitted on the second and runs on its nodes"
)
def test_second_flavor_takes_a_job_when_the_first_is_full(
    kube: Kube, namespace: str, two_products: tuple[GpuProduct, GpuProduct], fallback_queue: Queues
) -> None:
    first, second = two_products
    first_flavor, second_flavor = fallback_queue.flavors.values()
    fill, spill = first.largest, min(4, second.largest)
    # Quota decides admission; the pods still need free GPUs on the real nodes of each product.
    free = {n.name: n for n in gpu_nodes(kube)}
    if not any(free[n.name].free >= fill for n in first.nodes):
        raise NotEnoughGpus(fill, [free[n.name] for n in first.nodes])
    if sum(free[n.name].free for n in second.nodes) < spill:
        raise NotEnoughGpus(spill, [free[n.name] for n in second.nodes])
    with allure.step(
        f"a 1 x {fill}-GPU Job takes all of flavor {first_flavor} ({first.product}, quota {fill})"
    ):
        filler = kube.create(
            job("fills-first", gpus=fill, queue=fallback_queue.local_queue), namespace=namespace
        )
        expect_admitted_on(kube, namespace, filler, first_flavor)
        wait_pods_on_product(kube, namespace, "fills-first", 1, first.product)
    with allure.step(
        f"a {spill} x 1-GPU Job is admitted on the next flavor, {second_flavor} ({second.product})"
    ):
        spilled = kube.create(
            job("falls-back", pods=spill, gpus=1, queue=fallback_queue.local_queue), namespace=namespace
        )
        expect_admitted_on(kube, namespace, spilled, second_flavor)
        assert_node_selector(kube, wait_job_unsuspended(kube, namespace, "falls-back"), second_flavor)
    with allure.step("the ClusterQueue's usage shows both flavors in use"):
        wait_cluster_queue(
            kube,
            fallback_queue.cluster_queue,
            what=f"flavorsUsage: {fill} {GPU} in {first_flavor}, {spill} in {second_flavor}",
            until=lambda cq: (
                flavor_usage(cq, first_flavor, GPU).total == fill
                and flavor_usage(cq, second_flavor, GPU).total == spill
            ),
        )
    with allure.step(f"its pods run on {second.product} nodes"):
        wait_pods_on_product(kube, namespace, "falls-back", spill, second.product)


@pytest.fixture
def phantom_queue(make_kueue_queues: QueueFactory) -> Queues:
    """A ClusterQueue whose only flavor selects a GPU product no node has."""
    spec = FlavorSpec("b200-missing", {PRODUCT_LABEL: NO_SUCH_PRODUCT}, {"cpu": CPU_QUOTA, GPU: "8"})
    return product_queues(make_kueue_queues, [spec])


@pytest.mark.kueue
@allure.epic("Kueue")
@allure.story(
    "a flavor whose nodeLabels match no node is admitted by quota while its pods never schedule (reported)"
)
def test_flavor_matching_no_node_admits_by_quota_and_its_pods_never_schedule(
    kube: Kube, namespace: str, phantom_queue: Queues
) -> None:
    flavor = phantom_queue.flavor
    with allure.step(
        f"submit a 1-GPU Job to a ClusterQueue whose only flavor {flavor} selects {NO_SUCH_PRODUCT}"
    ):
        created = kube.create(job("stranded", gpus=1, queue=phantom_queue.local_queue), namespace=namespace)
    with allure.step("Kueue admits it by quota: Admitted=True, GPUs in that flavor"):
        workload = expect_admitted_on(kube, namespace, created, flavor)["metadata"]["name"]
        assert_node_selector(kube, wait_job_unsuspended(kube, namespace, "stranded"), flavor)
    labels = {"job-name": "stranded"}
    with allure.step("the scheduler finds no node matching the injected nodeSelector"):
        stranded = wait_unschedulable(kube, namespace, labels, SELECTOR_MISMATCH)
        event = wait_event(
            kube,
            namespace,
            kind="Pod",
            name=stranded["metadata"]["name"],
            reason="FailedScheduling",
            contains=SELECTOR_MISMATCH,
            timeout=timeouts.LONG,
        )
        allure.attach(event["message"], name="FailedScheduling", attachment_type=allure.attachment_type.TEXT)
    with allure.step(
        "the pod stays Pending and unbound for the consistency window, the Workload stays Admitted"
    ):
        hold_unbound(kube, namespace, labels, f"no node has {PRODUCT_LABEL}={NO_SUCH_PRODUCT}")
        still = kube.get(apis.WORKLOAD, workload, namespace)
        assert is_true(still, "Admitted"), (
            f"Workload {workload} was expected to keep its admission (Kueue does not look at nodes); "
            f"Admitted is now {condition(still, 'Admitted')}"
        )
    with allure.step("the harness's diagnostic finds the flavor that matches no node, and reports it"):
        found = [f for f in flavors_without_nodes(kube) if f.name == flavor]
        assert found, (
            f"flavors_without_nodes() missed ResourceFlavor {flavor} (nodeLabels {PRODUCT_LABEL}="
            f"{NO_SUCH_PRODUCT}, which no node carries): the diagnostic platform teams run would say nothing"
        )
        (diagnosis,) = found
        allure.attach(
            f"{diagnosis.explain()}\n\nObserved: Workload {workload} Admitted=True; pod "
            f"{stranded['metadata']['name']} Pending for the consistency window; "
            f"scheduler: {event['message']}",
            name="silent misconfiguration",
            attachment_type=allure.attachment_type.TEXT,
        )
        warnings.warn(diagnosis.warning(), stacklevel=1)
