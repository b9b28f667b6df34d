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
  schedule: a silent misconfiguration, which this suite observes and reports (``FlavorMatchesNoNode``).
"""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from typing import Any

import allure
import pytest
from lightkube import Client
from lightkube.resources.batch_v1 import Job
from lightkube.resources.core_v1 import Node, Pod

from kbc.flavors import (
    FlavorSpec,
    GpuProduct,
    GpuQueues,
    assigned_flavor,
    flavors_without_nodes,
    gpu_products,
    make_gpu_queues,
    product_flavor,
    wait_pods_on_product,
)
from kbc.gpu import (
    GPU,
    PRODUCT_LABEL,
    GpuNode,
    NotEnoughGpus,
    allocatable_gpus,
    gpu_nodes,
    pod_spec,
)
from kbc.kube import (
    CONSISTENCY_WINDOW_S,
    condition,
    hold_list,
    is_true,
    load,
    wait_for_list,
    wait_for_object,
)
from kbc.kueue import (
    ResourceFlavor,
    Workload,
    flavor_usage,
    queued_job,
    wait_admitted,
    wait_cluster_queue,
    wait_event,
    workload_of,
)

pytestmark = [pytest.mark.fake_gpu, allure.feature("fake_gpu")]

SCENARIO_LABEL = "conformance.kbatch.dev/scenario"
# kube-scheduler v1.34 filter reasons (pkg/scheduler/framework/plugins/...):
INSUFFICIENT_GPU = f"Insufficient {GPU}"  # noderesources/fit.go: fmt.Sprintf("Insufficient %v", rName)
UNTOLERATED_TAINT = "untolerated taint"  # tainttoleration: "node(s) had untolerated taint(s)"
SELECTOR_MISMATCH = "didn't match Pod's node affinity/selector"  # nodeaffinity: ErrReasonPod
NO_SUCH_PRODUCT = "NVIDIA-B200-does-not-exist"
# Flavors quote CPU in the same resource group as GPUs (every flavor covers every resource of its
# group); enough for any pod here, so only GPUs decide.
CPU_QUOTA = "64"


@pytest.fixture
def nodes(kube: Client) -> list[GpuNode]:
    """The cluster's Ready GPU nodes; the scenarios need at least one."""
    found = gpu_nodes(kube)
    if not found:
        pytest.skip(
            f"no Ready, schedulable node has allocatable {GPU}: the fake_gpu scenarios need GPU nodes"
        )
    return found


@pytest.fixture
def products(kube: Client) -> list[GpuProduct]:
    """The GPU products of the cluster's GPU nodes, most GPUs first."""
    found = gpu_products(kube)
    if not found:
        pytest.skip(
            f"no Ready GPU node carries the {PRODUCT_LABEL} label, so no product flavor can select one"
        )
    return found


# -- default scheduler ---------------------------------------------------------------------------------


def gpu_pod(name: str, gpus: int, *, tolerate: bool = True) -> Any:
    spec = pod_spec(gpus=gpus, cpu="100m")
    if not tolerate:
        del spec["tolerations"]
    return load(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": name, "labels": {SCENARIO_LABEL: name}},
            "spec": spec,
        }
    )


def scheduled(pod: Any) -> dict[str, Any] | None:
    return condition(pod, "PodScheduled") if pod is not None else None


def wait_unschedulable(kube: Client, namespace: str, labels: dict[str, str], says: str) -> Any:
    """The one pod matching *labels*, once the scheduler reported it Unschedulable with *says* in the
    PodScheduled message; stops at once if it is bound instead."""

    def refused(pods: list[Any]) -> bool:
        cond = scheduled(pods[0]) if len(pods) == 1 else None
        return (
            cond is not None
            and cond["status"] == "False"
            and cond.get("reason") == "Unschedulable"
            and says in (cond.get("message") or "")
        )

    def bound(pods: list[Any]) -> str | None:
        placed = [f"{p.metadata.name} on {p.spec.nodeName}" for p in pods if p.spec.nodeName]
        return f"the scheduler bound it ({', '.join(placed)})" if placed else None

    def describe(pods: list[Any]) -> str:
        return (
            "\n".join(f"    pod {p.metadata.name}: PodScheduled={scheduled(p)}" for p in pods)
            or "    (no pods)"
        )

    pods = wait_for_list(
        kube,
        Pod,
        namespace=namespace,
        labels=labels,
        until=refused,
        fail=bound,
        describe=describe,
        timeout=60,
        what=f"the scheduler to report the pod Unschedulable saying {says!r}",
    )
    return pods[0]


def hold_unbound(kube: Client, namespace: str, labels: dict[str, str], why: str) -> None:
    """The pod matching *labels* stays Pending, unbound and PodScheduled=False for the consistency window."""

    def unbound(pods: list[Any]) -> bool:
        return (
            len(pods) == 1
            and not pods[0].spec.nodeName
            and pods[0].status.phase == "Pending"
            and (scheduled(pods[0]) or {}).get("status") == "False"
        )

    hold_list(
        kube,
        Pod,
        namespace=namespace,
        labels=labels,
        holds=unbound,
        window=CONSISTENCY_WINDOW_S,
        what=f"the pod staying Pending and unbound ({why})",
        describe=lambda pods: (
            "\n".join(
                f"    pod {p.metadata.name}: node={p.spec.nodeName} phase={p.status.phase}" for p in pods
            )
            or "    (no pods)"
        ),
    )


@allure.epic("Kubernetes")
@allure.story("GPU pods that tolerate the GPU taint land only on nodes with allocatable nvidia.com/gpu")
def test_gpu_pods_land_only_on_gpu_nodes(kube: Client, nodes: list[GpuNode], namespace: str) -> None:
    count = min(3, sum(n.free for n in nodes))
    if count == 0:
        raise NotEnoughGpus(1, nodes)
    with allure.step(
        f"create {count} pods asking 1 GPU each, tolerating the GPU taint, with no nodeSelector"
    ):
        for index in range(count):
            kube.create(gpu_pod(f"gpu-{index}", 1), namespace=namespace)
    with allure.step("every pod is bound and Running on a node with allocatable GPUs and a product label"):
        gpu_names = {n.name for n in nodes}

        def off_gpu(pods: list[Any]) -> str | None:
            stray = [
                f"{p.metadata.name} on {p.spec.nodeName}"
                for p in pods
                if p.spec.nodeName not in (None, *gpu_names)
            ]
            return (
                f"GPU pods were bound to nodes without allocatable {GPU}: {', '.join(stray)}"
                if stray
                else None
            )

        pods = wait_for_list(
            kube,
            Pod,
            namespace=namespace,
            timeout=60,
            what=f"all {count} GPU pods bound and Running",
            until=lambda ps: (
                len(ps) == count and all(p.spec.nodeName and p.status.phase == "Running" for p in ps)
            ),
            fail=off_gpu,
        )
        for pod in pods:
            node = kube.get(Node, pod.spec.nodeName)
            labels = node.metadata.labels or {}
            assert allocatable_gpus(node) > 0, (
                f"pod {pod.metadata.name} asked for 1 {GPU} but runs on {node.metadata.name}, "
                f"whose allocatable is {node.status.allocatable}"
            )
            assert labels.get(PRODUCT_LABEL), (
                f"pod {pod.metadata.name} runs on GPU node {node.metadata.name}, which has no "
                f"{PRODUCT_LABEL} label (GPU feature discovery sets it on every GPU node); labels: {labels}"
            )


@allure.epic("Kubernetes")
@allure.story(
    "a pod asking more GPUs than any node has stays Pending: Unschedulable, Insufficient nvidia.com/gpu"
)
def test_pod_asking_more_gpus_than_any_node_has_stays_unschedulable(
    kube: Client, nodes: list[GpuNode], namespace: str
) -> None:
    largest = max(n.allocatable for n in nodes)
    wanted = largest + 1
    labels = {SCENARIO_LABEL: "greedy"}
    with allure.step(f"create a pod asking {wanted} GPUs; the largest GPU node has {largest} allocatable"):
        kube.create(gpu_pod("greedy", wanted), namespace=namespace)
    with allure.step("the scheduler reports it Unschedulable with a FailedScheduling event"):
        pod = wait_unschedulable(kube, namespace, labels, INSUFFICIENT_GPU)
        event = wait_event(
            kube,
            namespace,
            kind="Pod",
            name="greedy",
            reason="FailedScheduling",
            contains=INSUFFICIENT_GPU,
            timeout=60,
        )
        allure.attach(event.message, name="FailedScheduling", attachment_type=allure.attachment_type.TEXT)
        assert event.type == "Warning", event
        assert pod.status.phase == "Pending"
    with allure.step("it stays Pending and unbound for the consistency window"):
        hold_unbound(kube, namespace, labels, f"no node has {wanted} {GPU}")


@allure.epic("Kubernetes")
@allure.story("a GPU pod without the GPU toleration is refused by the GPU nodes' taint")
def test_gpu_pod_without_the_toleration_is_refused_by_the_taint(
    kube: Client, nodes: list[GpuNode], namespace: str
) -> None:
    tainted = [
        n.name
        for n in nodes
        if any(t.key == GPU and t.effect == "NoSchedule" for t in (kube.get(Node, n.name).spec.taints or []))
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
        pod = wait_unschedulable(kube, namespace, labels, UNTOLERATED_TAINT)
        message = scheduled(pod)["message"]
        allure.attach(message, name="PodScheduled message", attachment_type=allure.attachment_type.TEXT)
        wait_event(
            kube,
            namespace,
            kind="Pod",
            name="untolerated",
            reason="FailedScheduling",
            contains=UNTOLERATED_TAINT,
            timeout=60,
        )
    with allure.step("it stays Pending and unbound for the consistency window"):
        hold_unbound(kube, namespace, labels, f"every GPU node is tainted {GPU}:NoSchedule")


# -- Kueue ResourceFlavors keyed on the GPU product ---------------------------------------------------


def wait_unsuspended(kube: Client, namespace: str, name: str) -> Any:
    """Job *name* once Kueue has admitted and unsuspended it (with the flavors' nodeSelector injected)."""
    return wait_for_object(
        kube,
        Job,
        name,
        namespace=namespace,
        timeout=60,
        what=f"Kueue to unsuspend Job {name}",
        until=lambda j: j is not None and j.spec.suspend is False,
    )


def flavor_node_labels(kube: Client, flavor: str) -> dict[str, str]:
    """The nodeLabels of ResourceFlavor *flavor*, as the API server holds them."""
    return dict((kube.get(ResourceFlavor, flavor).to_dict().get("spec") or {}).get("nodeLabels") or {})


def admitted_on(kube: Client, namespace: str, job: Any, flavor: str) -> Any:
    """Wait for *job*'s Workload to be Admitted; assert Kueue assigned *flavor* to its GPUs."""
    workload = workload_of(kube, job, namespace)
    name = workload.metadata.name
    admitted = wait_admitted(kube, name, namespace, timeout=60)
    got = assigned_flavor(admitted)
    assert got == flavor, (
        f"Workload {name} of Job {job.metadata.name} was admitted with {GPU} in flavor {got}; "
        f"expected flavor {flavor}. status.admission: {admitted.to_dict()['status'].get('admission')}"
    )
    return admitted


def assert_node_selector(kube: Client, job: Any, flavor: str) -> None:
    """The Job's pod template carries exactly the flavor's nodeLabels as its nodeSelector."""
    selector = dict(job.spec.template.spec.nodeSelector or {})
    labels = flavor_node_labels(kube, flavor)
    assert selector == labels, (
        f"Kueue should inject ResourceFlavor {flavor}'s nodeLabels {labels} into Job {job.metadata.name}'s "
        f"pod template on admission; its nodeSelector is {selector}"
    )


@pytest.fixture
def product_queue(
    kube: Client, namespace: str, unique: str, products: list[GpuProduct]
) -> Iterator[GpuQueues]:
    """A ClusterQueue with one flavor: the product with the most GPUs, quota for all of them."""
    target = products[0]
    yield from make_gpu_queues(
        kube, namespace, unique, [product_flavor(target.product, {"cpu": CPU_QUOTA, GPU: str(target.total)})]
    )


@pytest.mark.kueue
@allure.epic("Kueue")
@allure.story("a ResourceFlavor keyed on nvidia.com/gpu.product routes a Job's pods to that product's nodes")
def test_product_flavor_routes_a_job_to_its_pool(
    kube: Client, namespace: str, products: list[GpuProduct], product_queue: GpuQueues
) -> None:
    target = products[0]
    (key,) = product_queue.flavors
    flavor = product_queue.flavors[key]
    with allure.step(
        f"submit a 2 x 1-GPU Job to a ClusterQueue whose only flavor {flavor} selects {target.product}"
    ):
        created = kube.create(
            queued_job("routed", product_queue.local_queue, pods=2, gpus=1), namespace=namespace
        )
        assert created.spec.suspend is True, "Kueue's webhook suspends a Job that names a LocalQueue"
        assert not created.spec.template.spec.nodeSelector, "the Job asks for no node itself"
    with allure.step(f"Kueue admits it with {GPU} in flavor {flavor}"):
        admitted_on(kube, namespace, created, flavor)
    with allure.step("on admission Kueue injects the flavor's nodeLabels as the Job's nodeSelector"):
        assert_node_selector(kube, wait_unsuspended(kube, namespace, "routed"), flavor)
    with allure.step(f"both pods run on {target.product} nodes"):
        wait_pods_on_product(kube, namespace, "routed", 2, target.product, timeout=90)


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
def fallback_queue(
    kube: Client, namespace: str, unique: str, two_products: tuple[GpuProduct, GpuProduct]
) -> Iterator[GpuQueues]:
    """A ClusterQueue listing the first product's flavor, then the second's; each with the GPUs of that
    product's largest node as quota."""
    first, second = two_products
    keys = [first.key, second.key if second.key != first.key else f"{second.key}-2"]
    specs = [
        product_flavor(p.product, {"cpu": CPU_QUOTA, GPU: str(p.largest)}, key=k)
        for p, k in zip(two_products, keys, strict=True)
    ]
    yield from make_gpu_queues(kube, namespace, unique, specs)


@pytest.mark.kueue
@pytest.mark.serial
@allure.epic("Kueue")
@allure.story(
    "when the first GPU flavor's quota is used up, a Job is admitted on the second and runs on its nodes"
)
def test_second_flavor_takes_a_job_when_the_first_is_full(
    kube: Client,
    namespace: str,
    two_products: tuple[GpuProduct, GpuProduct],
    fallback_queue: GpuQueues,
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
            queued_job("fills-first", fallback_queue.local_queue, gpus=fill), namespace=namespace
        )
        admitted_on(kube, namespace, filler, first_flavor)
        wait_pods_on_product(kube, namespace, "fills-first", 1, first.product, timeout=90)
    with allure.step(
        f"a {spill} x 1-GPU Job is admitted on the next flavor, {second_flavor} ({second.product})"
    ):
        spilled = kube.create(
            queued_job("falls-back", fallback_queue.local_queue, pods=spill, gpus=1), namespace=namespace
        )
        admitted_on(kube, namespace, spilled, second_flavor)
        assert_node_selector(kube, wait_unsuspended(kube, namespace, "falls-back"), second_flavor)
    with allure.step("the ClusterQueue's usage shows both flavors in use"):
        wait_cluster_queue(
            kube,
            fallback_queue.cluster_queue,
            timeout=60,
            what=f"flavorsUsage: {fill} {GPU} in {first_flavor}, {spill} in {second_flavor}",
            until=lambda cq: (
                flavor_usage(cq, first_flavor, GPU).total == fill
                and flavor_usage(cq, second_flavor, GPU).total == spill
            ),
        )
    with allure.step(f"its pods run on {second.product} nodes"):
        wait_pods_on_product(kube, namespace, "falls-back", spill, second.product, timeout=90)


@pytest.fixture
def phantom_queue(kube: Client, namespace: str, unique: str) -> Iterator[GpuQueues]:
    """A ClusterQueue whose only flavor selects a GPU product no node has."""
    spec = FlavorSpec("b200-missing", {PRODUCT_LABEL: NO_SUCH_PRODUCT}, {"cpu": CPU_QUOTA, GPU: "8"})
    yield from make_gpu_queues(kube, namespace, unique, [spec])


@pytest.mark.kueue
@allure.epic("Kueue")
@allure.story(
    "a flavor whose nodeLabels match no node is admitted by quota while its pods never schedule (reported)"
)
def test_flavor_matching_no_node_admits_by_quota_and_its_pods_never_schedule(
    kube: Client, namespace: str, phantom_queue: GpuQueues
) -> None:
    flavor = phantom_queue.flavors["b200-missing"]
    carriers = list(kube.list(Node, labels={PRODUCT_LABEL: NO_SUCH_PRODUCT}))
    assert not carriers, (
        f"the scenario needs a product no node has; {[n.metadata.name for n in carriers]} have it"
    )
    with allure.step(
        f"submit a 1-GPU Job to a ClusterQueue whose only flavor {flavor} selects {NO_SUCH_PRODUCT}"
    ):
        created = kube.create(queued_job("stranded", phantom_queue.local_queue, gpus=1), namespace=namespace)
    with allure.step("Kueue admits it by quota: Admitted=True, GPUs in that flavor"):
        admitted = admitted_on(kube, namespace, created, flavor)
        workload = admitted.metadata.name
        assert is_true(admitted, "QuotaReserved"), condition(admitted, "QuotaReserved")
        assert_node_selector(kube, wait_unsuspended(kube, namespace, "stranded"), flavor)
    labels = {"job-name": "stranded"}
    with allure.step("the scheduler finds no node matching the injected nodeSelector"):
        pod = wait_unschedulable(kube, namespace, labels, SELECTOR_MISMATCH)
        event = wait_event(
            kube,
            namespace,
            kind="Pod",
            name=pod.metadata.name,
            reason="FailedScheduling",
            contains=SELECTOR_MISMATCH,
            timeout=60,
        )
        allure.attach(event.message, name="FailedScheduling", attachment_type=allure.attachment_type.TEXT)
    with allure.step(
        "the pod stays Pending and unbound for the consistency window, the Workload stays Admitted"
    ):
        hold_unbound(kube, namespace, labels, f"no node has {PRODUCT_LABEL}={NO_SUCH_PRODUCT}")
        still = kube.get(Workload, workload, namespace=namespace)
        assert is_true(still, "Admitted"), (
            f"Workload {workload} was expected to keep its admission (Kueue does not look at nodes); "
            f"Admitted is now {condition(still, 'Admitted')}"
        )
    with allure.step("the flavors_without_nodes diagnostic names the flavor; report it"):
        found = {f.name: f for f in flavors_without_nodes(kube)}
        assert flavor in found, (
            f"flavors_without_nodes should name ResourceFlavor {flavor} (nodeLabels "
            f"{PRODUCT_LABEL}: {NO_SUCH_PRODUCT}, matched by no node); it named {sorted(found)}"
        )
        diagnosis = found[flavor]
        assert diagnosis.node_labels == {PRODUCT_LABEL: NO_SUCH_PRODUCT}
        allure.attach(
            f"{diagnosis.explain()}\n\nObserved: Workload {workload} Admitted=True; pod {pod.metadata.name} "
            f"Pending for {CONSISTENCY_WINDOW_S:.0f}s; scheduler: {event.message}",
            name="silent misconfiguration",
            attachment_type=allure.attachment_type.TEXT,
        )
        warnings.warn(diagnosis.warning(), stacklevel=1)
