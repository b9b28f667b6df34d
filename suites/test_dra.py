"""GPUs by Dynamic Resource Allocation (``resource.k8s.io/v1``, GA in Kubernetes 1.34), as the pinned
releases run them: kube-scheduler allocates a pod's claim from the devices the nodes' ResourceSlices
offer, a CEL selector picks the devices it names, a namespace ResourceQuota caps a DeviceClass's devices,
and Kueue counts the devices claims ask for in ClusterQueue quota (``resources.deviceClassMappings``).

The devices are the node pools' (``manifests/nodes``: ``gpu.example.com``, 4 per GPU node, with the GPU
product as ``productName``). On the local provider the harness publishes their ResourceSlices as a DRA
driver's controller would, and kwok runs the pods (no kubelet prepares a device); on kind the pinned
dra-example-driver's kubelet plugin publishes them (with the driver's own attributes: no ``productName``)
and prepares an allocated device for the pod, whose container sees it. Allocation is always
kube-scheduler's. Each scenario has its negative control: the claim no node can satisfy stays
unschedulable, a selector matching nothing too, a quota on another class caps nothing, what does not fit
the DRA quota waits whole with zero pods, and a pod without a claim sees no device.
"""

from __future__ import annotations

import allure
import pytest

from kbc import apis, timeouts
from kbc.dra import (
    SEE_DEVICES,
    UNSCHEDULABLE,
    Device,
    Seen,
    attribute_is,
    claim_template,
    claims_of,
    prepared_by_a_driver,
    quota_key,
    results,
    wait_pods_allocated,
    wait_seen,
)
from kbc.errors import KubeApiError, NotRefused, Refused
from kbc.jobs import hold_unschedulable, node_of, wait_pods_running
from kbc.kube import Kube, Obj, condition, wait_for_list
from kbc.kueue import (
    QueueFactory,
    hold_suspended,
    wait_admitted,
    wait_pending,
    wait_workload_of,
)
from kbc.kueue.settings import DRA_DEVICES, DRA_QUOTA
from kbc.labels import DRA_CLASS, DRA_DRIVER, HARNESS_SLICE_LABEL, HOSTNAME_LABEL
from kbc.workloads import job, pod

pytestmark = [pytest.mark.dra, allure.feature("dra")]

PRODUCT = "productName"
NO_SUCH_PRODUCT = "NVIDIA-B200-does-not-exist"


def per_node(found: list[Device]) -> dict[str, list[Device]]:
    nodes: dict[str, list[Device]] = {}
    for device in found:
        nodes.setdefault(device.node, []).append(device)
    return nodes


def hold_unallocated(kube: Kube, namespace: str, name: str, why: str) -> None:
    """Until the scheduler says pod *name* cannot get its claims, then for the window: unbound, claim
    unallocated."""
    found = hold_unschedulable(
        kube,
        namespace,
        name,
        says=UNSCHEDULABLE,
        wanting="devices",
        why=why,
        bound_means="its claims were allocated",
    )
    for claim in claims_of(kube, namespace, found):
        assert not results(claim), f"claim {claim['metadata']['name']} was allocated: {results(claim)}"


def claim_pod(name: str, template: str) -> Obj:
    return pod(name, claim=template, labels={"app": name})


@allure.epic("Kubernetes")
@allure.story("a claim is allocated a device of a node that offers it, and its pod runs there")
def test_a_claim_is_allocated_a_device_that_a_node_offers(
    kube: Kube, namespace: str, offered: list[Device]
) -> None:
    with allure.step(f"a pod claiming one device of DeviceClass {DRA_CLASS}"):
        kube.create(claim_template("one", count=1), namespace=namespace)
        kube.create(claim_pod("claims-one", "one"), namespace=namespace)
    with allure.step("kube-scheduler allocates it a device, and the pod runs on that device's node"):
        (running,) = wait_pods_allocated(kube, namespace, {"app": "claims-one"}, 1)
        (claim,) = claims_of(kube, namespace, running)
        (result,) = results(claim)
        allure.attach(str(result), name="allocation")
        there = {d.name for d in per_node(offered).get(str(node_of(running)), [])}
        assert result["driver"] == DRA_DRIVER and result["pool"] == node_of(running), result
        assert result["device"] in there, (
            f"the claim was allocated {result['device']} of pool {result['pool']}, which node "
            f"{node_of(running)}'s ResourceSlice does not offer ({sorted(there)})"
        )


@allure.epic("Kubernetes")
@allure.story("negative control: a claim for more devices than any node offers leaves its pod unschedulable")
def test_a_claim_no_node_can_satisfy_leaves_its_pod_unschedulable(
    kube: Kube, namespace: str, offered: list[Device]
) -> None:
    most = max(len(found) for found in per_node(offered).values())
    with allure.step(f"a pod claiming {most + 1} devices; the node with the most offers {most}"):
        kube.create(claim_template("too-many", count=most + 1), namespace=namespace)
        kube.create(claim_pod("claims-too-many", "too-many"), namespace=namespace)
    with allure.step("it stays unscheduled for the window, its claim unallocated"):
        hold_unallocated(kube, namespace, "claims-too-many", f"no node offers {most + 1} devices")


@pytest.fixture
def product(offered: list[Device]) -> str:
    """The GPU product with the fewest devices (so that landing there is no accident of numbers)."""
    counts: dict[str, int] = {}
    for device in offered:
        value = device.attribute(PRODUCT)
        if value is not None:
            counts[str(value)] = counts.get(str(value), 0) + 1
    if len(counts) < 2:
        carried = sorted({name for device in offered for name in device.attributes})
        pytest.skip(
            f"a CEL selector picks one product only where devices of two carry a {PRODUCT} attribute; "
            f"these carry {sorted(counts) or 'none'} (their attributes: {', '.join(carried)}). A DRA driver "
            "publishes its own attributes: on kind the dra-example-driver's, which name no product"
        )
    return min(counts, key=lambda p: (counts[p], p))


@allure.epic("Kubernetes")
@allure.story("a CEL selector routes a claim to the devices of one GPU product")
def test_a_cel_selector_routes_a_claim_to_one_product(
    kube: Kube, namespace: str, offered: list[Device], product: str
) -> None:
    selector = attribute_is(PRODUCT, product)
    with allure.step(f"a pod claiming one device where {selector}"):
        kube.create(claim_template("product", selector=selector), namespace=namespace)
        kube.create(claim_pod("claims-product", "product"), namespace=namespace)
    with allure.step(f"it is allocated a device of {product}, on a node offering that product"):
        (running,) = wait_pods_allocated(kube, namespace, {"app": "claims-product"}, 1)
        ((result,),) = [results(c) for c in claims_of(kube, namespace, running)]
        chosen = next(d for d in offered if (d.pool, d.name) == (result["pool"], result["device"]))
        assert chosen.attribute(PRODUCT) == product, f"allocated {chosen} for a claim of {product}"
        assert node_of(running) == chosen.node, (node_of(running), chosen)


@allure.epic("Kubernetes")
@allure.story("negative control: a selector no device matches leaves the pod unschedulable")
def test_a_selector_no_device_matches_leaves_the_pod_unschedulable(
    kube: Kube, namespace: str, offered: list[Device]
) -> None:
    selector = attribute_is(PRODUCT, NO_SUCH_PRODUCT)
    with allure.step(f"a pod claiming one device where {selector}"):
        kube.create(claim_template("nothing", selector=selector), namespace=namespace)
        kube.create(claim_pod("claims-nothing", "nothing"), namespace=namespace)
    with allure.step("it stays unscheduled for the window, its claim unallocated"):
        hold_unallocated(kube, namespace, "claims-nothing", f"no device has {PRODUCT} {NO_SUCH_PRODUCT}")


@pytest.fixture
def prepared(kube: Kube, offered: list[Device]) -> list[Device]:
    """The devices a DRA driver's kubelet plugin published, which it prepares once allocated; skips where the
    harness published every slice itself."""
    found = prepared_by_a_driver(kube, offered)
    if not found:
        pytest.skip(
            f"the harness publishes these ResourceSlices itself (label {'='.join(HARNESS_SLICE_LABEL)}), as "
            "a driver's controller would, for nodes no kubelet plugin serves (kwok): no driver prepares an "
            "allocated device, so no container can see one. This runs where a DRA driver's kubelet plugin "
            "publishes the devices (kind: the pinned dra-example-driver)"
        )
    return found


def seeing_pod(name: str, template: str | None, nodes: list[str]) -> Obj:
    """A pod on one of *nodes* that prints the devices its container sees (claiming from *template*)."""
    manifest = pod(name, claim=template, labels={"app": name}, tolerate_gpu=True)
    manifest["spec"]["containers"][0]["command"] = ["sh", "-c", SEE_DEVICES]
    on = {"key": HOSTNAME_LABEL, "operator": "In", "values": nodes}
    manifest["spec"]["affinity"] = {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [{"matchExpressions": [on]}]
            }
        }
    }
    return manifest


def attach(seen: Seen, name: str) -> None:
    allure.attach(seen.log, name=name, attachment_type=allure.attachment_type.TEXT)


@allure.epic("Kubernetes")
@allure.story(
    "a DRA driver's kubelet plugin prepares the device kube-scheduler allocated: the container sees it; "
    "a pod without a claim sees none"
)
def test_a_driver_prepares_the_allocated_device_and_the_pod_sees_it(
    kube: Kube, namespace: str, prepared: list[Device]
) -> None:
    nodes = sorted({device.node for device in prepared})
    with allure.step(f"a pod claiming one device of {DRA_CLASS}, on a node whose devices a driver published"):
        kube.create(claim_template("one", count=1), namespace=namespace)
        kube.create(seeing_pod("sees-its-device", "one", nodes), namespace=namespace)
    with allure.step("kube-scheduler allocates it a device; the plugin prepares it; the container sees it"):
        (running,) = wait_pods_allocated(kube, namespace, {"app": "sees-its-device"}, 1)
        (claim,) = claims_of(kube, namespace, running)
        (result,) = results(claim)
        allure.attach(str(result), name="allocation")
        seen = wait_seen(kube, namespace, "sees-its-device")
        attach(seen, "what the claiming container sees")
        assert list(seen.devices.values()) == [result["device"]], (
            f"claim {claim['metadata']['name']} was allocated {result['device']} of pool {result['pool']} "
            f"(driver {result['driver']}), but its container on {node_of(running)} sees "
            f"{seen.devices or 'no device'}: the driver's kubelet plugin did not prepare what was allocated "
            f"for this container (its CDI environment); the container printed:\n{seen.log}"
        )
        uid = claim["metadata"]["uid"]
        assert set(seen.claims.values()) == {uid}, (
            f"the device the container sees was prepared for claims {sorted(set(seen.claims.values()))}, "
            f"not for its own claim {claim['metadata']['name']} ({uid})"
        )
    node = str(node_of(running))
    with allure.step(f"negative control: a pod without a claim, on the same node {node}, sees no device"):
        kube.create(seeing_pod("sees-nothing", None, [node]), namespace=namespace)
        wait_pods_running(kube, namespace, {"app": "sees-nothing"}, 1, node=node)
        control = wait_seen(kube, namespace, "sees-nothing")
        attach(control, "what the container without a claim sees")
        assert not control.devices and not control.claims, (
            f"a pod that claims no device sees {control.devices} (prepared for claims "
            f"{sorted(set(control.claims.values()))}) on {node}: devices reach containers they were not "
            f"allocated to; the container printed:\n{control.log}"
        )


def claim(name: str, count: int, device_class: str = DRA_CLASS) -> Obj:
    """A ResourceClaim of its own (not from a template): quota is charged when it is created."""
    spec = claim_template(name, count=count, device_class=device_class)["spec"]["spec"]
    return apis.RESOURCE_CLAIM.manifest(name, spec=spec)


def quota(namespace: str, key: str, hard: int) -> Obj:
    return apis.RESOURCE_QUOTA.manifest("devices", namespace, spec={"hard": {key: str(hard)}})


def wait_quota_computed(kube: Kube, namespace: str) -> None:
    wait_for_list(
        kube,
        apis.RESOURCE_QUOTA,
        namespace=namespace,
        until=lambda qs: any((q.get("status") or {}).get("hard") for q in qs),
        timeout=timeouts.SHORT,
        what="the quota controller to compute ResourceQuota devices",
    )


@allure.epic("Kubernetes")
@allure.story("a namespace ResourceQuota on a DeviceClass's devices refuses a claim beyond it (403)")
def test_a_device_class_quota_refuses_a_claim_beyond_it(
    kube: Kube, namespace: str, offered: list[Device]
) -> None:
    key = quota_key(DRA_CLASS)
    with allure.step(f"cap the namespace at 2 devices: {key}: 2"):
        kube.create(quota(namespace, key, 2), namespace=namespace)
        wait_quota_computed(kube, namespace)
    with allure.step("a claim for 3 devices is refused with 403 exceeded quota"):
        try:
            kube.create(claim("three", 3), namespace=namespace)
        except KubeApiError as exc:
            refusal = exc
        else:
            raise NotRefused(
                f"the API server accepted ResourceClaim three (3 devices) in a namespace capped at 2 ({key})"
            )
        assert refusal.status == 403 and "exceeded quota: devices" in refusal.message, refusal
        assert f"requested: {key}=3, used: {key}=0, limited: {key}=2" in refusal.message, refusal.message
    with allure.step("a claim for 2 is accepted"):
        kube.create(claim("two", 2), namespace=namespace)


@allure.epic("Kubernetes")
@allure.story("negative control: a quota on another DeviceClass caps nothing of this one")
def test_a_quota_on_another_device_class_caps_nothing(
    kube: Kube, namespace: str, offered: list[Device]
) -> None:
    other = quota_key("other.example.com")
    with allure.step(f"cap the namespace at 1 device of another class: {other}: 1"):
        kube.create(quota(namespace, other, 1), namespace=namespace)
        wait_quota_computed(kube, namespace)
    with allure.step(f"a claim for 3 devices of {DRA_CLASS} is accepted: the cap is another class's"):
        try:
            kube.create(claim("three", 3), namespace=namespace)
        except KubeApiError as exc:
            hard = [
                (q.get("status") or {}).get("hard")
                for q in kube.list(apis.RESOURCE_QUOTA, namespace=namespace)
            ]
            raise Refused(
                f"the API server refused ResourceClaim three (3 devices of {DRA_CLASS}) although the "
                f"namespace caps only {other}: {exc.message} (quotas as they stand: {hard})"
            ) from exc


# -- Kueue counting DRA devices in quota --------------------------------------------------------------------


def claim_job(name: str, pods: int, queue: str, template: str) -> Obj:
    return job(name, pods=pods, queue=queue, claim=template)


@pytest.mark.kueue
@pytest.mark.gang
@pytest.mark.needs(DRA_DEVICES)
@allure.epic("Kueue")
@allure.story("Kueue admits a gang of claim-bearing pods whole within its DRA quota; the next waits whole")
def test_kueue_admits_a_claim_gang_whole_within_its_dra_quota_and_the_next_waits_whole(
    kube: Kube, namespace: str, offered: list[Device], make_kueue_queues: QueueFactory
) -> None:
    queues = make_kueue_queues({"cpu": "8", DRA_QUOTA: "4"})
    kube.create(claim_template("one", count=1), namespace=namespace)
    with allure.step(f"a 4-pod Job, each pod claiming 1 device, through a ClusterQueue of 4 {DRA_QUOTA}"):
        first = kube.create(claim_job("gang-a", 4, queues.local_queue, "one"), namespace=namespace)
        first_workload = wait_workload_of(kube, namespace, first)[0]["metadata"]["name"]
    with allure.step(f"Kueue admits it whole, counting 4 {DRA_QUOTA}; its 4 pods get a device each and run"):
        (admitted,) = wait_admitted(kube, namespace, first_workload)
        (assignment,) = admitted["status"]["admission"]["podSetAssignments"]
        assert assignment.get("resourceUsage", {}).get(DRA_QUOTA) == "4", assignment
        running = wait_pods_allocated(kube, namespace, {"job-name": "gang-a"}, 4)
        given = {
            (r["pool"], r["device"])
            for p in running
            for c in claims_of(kube, namespace, p)
            for r in results(c)
        }
        assert len(given) == 4, f"4 pods, 4 distinct devices: {sorted(given)}"
    with allure.step("a 2-pod Job of the same claims waits whole: suspended, zero pods, Kueue says why"):
        second = kube.create(claim_job("gang-b", 2, queues.local_queue, "one"), namespace=namespace)
        second_workload = wait_workload_of(kube, namespace, second)[0]["metadata"]["name"]
        (pending,) = wait_pending(kube, namespace, second_workload)
        said = str((condition(pending, "QuotaReserved") or {}).get("message"))
        assert f"insufficient unused quota for {DRA_QUOTA}" in said, said
        hold_suspended(kube, namespace, "gang-b", second_workload)
    with allure.step("the first Job ends: the freed quota admits the second whole"):
        kube.delete(apis.JOB, "gang-a", namespace=namespace)
        wait_admitted(kube, namespace, second_workload)
        wait_pods_allocated(kube, namespace, {"job-name": "gang-b"}, 2)


@pytest.mark.kueue
@pytest.mark.quota
@pytest.mark.needs(DRA_DEVICES)
@allure.epic("Kueue")
@allure.story("a ClusterQueue with no DRA quota holds a claim-bearing Job suspended with zero pods")
def test_a_quota_zero_dra_cluster_queue_holds_its_workload(
    kube: Kube, namespace: str, offered: list[Device], make_kueue_queues: QueueFactory
) -> None:
    queues = make_kueue_queues({"cpu": "8", DRA_QUOTA: "0"})
    kube.create(claim_template("one", count=1), namespace=namespace)
    created = kube.create(claim_job("waits", 1, queues.local_queue, "one"), namespace=namespace)
    workload = wait_workload_of(kube, namespace, created)[0]["metadata"]["name"]
    (pending,) = wait_pending(kube, namespace, workload)
    said = str((condition(pending, "QuotaReserved") or {}).get("message"))
    assert DRA_QUOTA in said and "maximum capacity (0)" in said, said
    hold_suspended(kube, namespace, "waits", workload)


@pytest.mark.kueue
@pytest.mark.needs(DRA_DEVICES)
@allure.epic("Kueue")
@allure.story("a Workload claiming devices of a class Kueue has no mapping for is held with Kueue's reason")
def test_kueue_holds_a_workload_whose_device_class_it_cannot_map(
    kube: Kube, namespace: str, unique: str, offered: list[Device], make_kueue_queues: QueueFactory
) -> None:
    queues = make_kueue_queues({"cpu": "8", DRA_QUOTA: "4"})
    unmapped = f"unmapped-{unique}.example.com"
    selector = {"cel": {"expression": f"device.driver == '{DRA_DRIVER}'"}}
    kube.create(apis.DEVICE_CLASS.manifest(unmapped, spec={"selectors": [selector]}))
    try:
        kube.create(claim_template("unmapped", device_class=unmapped), namespace=namespace)
        created = kube.create(claim_job("unmapped", 1, queues.local_queue, "unmapped"), namespace=namespace)
        workload = wait_workload_of(kube, namespace, created)[0]["metadata"]["name"]
        with allure.step(f"Kueue holds it: DeviceClass {unmapped} is in no deviceClassMappings"):
            (pending,) = wait_pending(kube, namespace, workload)
            cond = condition(pending, "QuotaReserved") or {}
            assert cond.get("reason") in ("Inadmissible", "Misconfigured"), cond
            expected = f"DeviceClass {unmapped} is not mapped in DRA configuration for podset main"
            assert expected in str(cond.get("message")), cond
            hold_suspended(kube, namespace, "unmapped", workload)
    finally:
        kube.delete(apis.DEVICE_CLASS, unmapped)
