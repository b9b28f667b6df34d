"""GPUs by DRA asked for the old way: a pod asks for an extended resource in its resources (as for
``nvidia.com/gpu``), no node advertises it, and a DeviceClass that names it (``extendedResourceName``) has
kube-scheduler allocate it devices of the class through a claim of the scheduler's own making; Kueue counts
such a request in the DRA quota its ``deviceClassMappings`` give the class.

Kubernetes v1.34 has this behind the alpha gate ``DRAExtendedResource`` (API server, scheduler, controller
manager, kubelet), off by default: these scenarios run on a cluster of their own with the gate on
(``@pytest.mark.needs(DRA_EXTENDED_RESOURCE)``: the local provider gives the control plane
``--feature-gates``, kind every node's components), and skip on a cluster the harness did not make whose API
server does not report the gate on. The negative control runs on the session's cluster, gate off: the API
server drops the class's ``extendedResourceName`` and the pod stays unschedulable for want of a resource no
node has.
"""

from __future__ import annotations

from collections.abc import Iterator

import allure
import pytest

from kbc import apis
from kbc.dra import (
    DRA_EXTENDED_RESOURCE,
    EXTENDED_RESOURCE,
    SEE_DEVICES,
    Device,
    extended_claim_of,
    extended_device_class,
    prepared_by_a_driver,
    results,
    wait_pods_allocated,
    wait_seen,
)
from kbc.jobs import hold_unschedulable, node_of
from kbc.kube import Kube, Obj, condition
from kbc.kueue import QueueFactory, hold_suspended, wait_admitted, wait_pending, wait_workload_of
from kbc.kueue.settings import DRA_EXTENDED_DEVICES, DRA_QUOTA
from kbc.labels import DRA_DRIVER, EXTENDED_CLASS
from kbc.workloads import job, pod

pytestmark = [pytest.mark.dra, allure.feature("dra")]

INSUFFICIENT = f"Insufficient {EXTENDED_RESOURCE}"
"""kube-scheduler's words for a pod asking for an extended resource that no node has (NodeResourcesFit)."""


@pytest.fixture
def extended_class(kube: Kube, offered: list[Device]) -> Iterator[Obj]:
    """The DeviceClass that backs :data:`EXTENDED_RESOURCE` with the driver's devices, as the API server
    keeps it; removed after the scenario (it is cluster-wide)."""
    made = kube.create(extended_device_class())
    try:
        yield made
    finally:
        kube.delete(apis.DEVICE_CLASS, EXTENDED_CLASS)


def asks(name: str) -> Obj:
    """A pod asking for one :data:`EXTENDED_RESOURCE` in its resources, with no claim of its own; where it
    really runs, its container prints the devices it sees (:data:`SEE_DEVICES`), then waits."""
    manifest = pod(name, extra={EXTENDED_RESOURCE: "1"}, tolerate_gpu=True, labels={"app": name})
    manifest["spec"]["containers"][0]["command"] = ["sh", "-c", SEE_DEVICES]
    return manifest


def extended_job(name: str, pods: int, queue: str) -> Obj:
    """A Job of *pods* pods asking for one :data:`EXTENDED_RESOURCE` each, submitted to *queue*."""
    return job(name, pods=pods, queue=queue, extra={EXTENDED_RESOURCE: "1"}, tolerate_gpu=True)


def allocated_on_its_node(kube: Kube, namespace: str, running: Obj, offered: list[Device]) -> Obj:
    """The claim kube-scheduler made for *running*'s extended resource, checked: one device of the
    driver, of the pod's node's ResourceSlice, mapped to the container's request; a node that does not
    advertise the resource itself."""
    name, node = running["metadata"]["name"], str(node_of(running))
    claim = extended_claim_of(kube, namespace, running)
    status = (running.get("status") or {}).get("extendedResourceClaimStatus")
    assert claim is not None, (
        f"pod {name} runs on {node} but names no claim for its {EXTENDED_RESOURCE} "
        f"(status.extendedResourceClaimStatus: {status})"
    )
    (result,) = results(claim)
    there = {d.name for d in offered if d.node == node}
    assert result["driver"] == DRA_DRIVER and result["pool"] == node and result["device"] in there, (
        f"pod {name}'s claim {claim['metadata']['name']} was allocated {result}, not a device that node "
        f"{node}'s ResourceSlice offers ({sorted(there)})"
    )
    mappings = (status or {}).get("requestMappings") or []
    assert any(m.get("resourceName") == EXTENDED_RESOURCE for m in mappings), mappings
    advertised = (kube.get(apis.NODE, node).get("status") or {}).get("allocatable") or {}
    assert EXTENDED_RESOURCE not in advertised, (
        f"node {node} advertises {EXTENDED_RESOURCE} itself ({advertised[EXTENDED_RESOURCE]}): the pod "
        "may have been placed on it without DRA"
    )
    return claim


@pytest.mark.needs(DRA_EXTENDED_RESOURCE, DRA_EXTENDED_DEVICES)
@allure.epic("Kubernetes")
@allure.story("a pod asking for an extended resource that a DeviceClass backs is allocated a device by DRA")
def test_an_extended_resource_a_device_class_backs_is_allocated_a_device(
    kube: Kube, namespace: str, offered: list[Device], extended_class: Obj
) -> None:
    with allure.step(f"DeviceClass {EXTENDED_CLASS} backs {EXTENDED_RESOURCE}: the API server keeps it"):
        kept = extended_class["spec"].get("extendedResourceName")
        assert kept == EXTENDED_RESOURCE, (
            f"the API server dropped or changed the class's extendedResourceName ({kept!r}): is "
            "DRAExtendedResource on in kube-apiserver?"
        )
    with allure.step(f"a pod asking for 1 {EXTENDED_RESOURCE}, which no node advertises, and no claim"):
        kube.create(asks("asks-one"), namespace=namespace)
    with allure.step("kube-scheduler makes it a claim, allocates a device of the pod's node, and it runs"):
        (running,) = wait_pods_allocated(kube, namespace, {"app": "asks-one"}, 1)
        claim = allocated_on_its_node(kube, namespace, running, offered)
        allure.attach(str(results(claim)), name="allocation")
    node = str(node_of(running))
    if node not in {d.node for d in prepared_by_a_driver(kube, offered)}:
        return  # kwok runs the pod: nothing prepares a device there (the local provider; see test_dra.py)
    with allure.step(f"the driver's kubelet plugin on {node} prepared that device: the container sees it"):
        seen = wait_seen(kube, namespace, "asks-one")
        allure.attach(seen.log, name="what the container sees", attachment_type=allure.attachment_type.TEXT)
        (result,) = results(claim)
        assert list(seen.devices.values()) == [result["device"]], (
            f"the scheduler's claim {claim['metadata']['name']} was allocated {result['device']}, but the "
            f"container sees {seen.devices or 'no device'}; it printed:\n{seen.log}"
        )
        assert set(seen.claims.values()) == {claim["metadata"]["uid"]}, (
            f"the device the container sees was prepared for claims {sorted(set(seen.claims.values()))}, "
            f"not for the scheduler's claim {claim['metadata']['name']}"
        )


@pytest.mark.kueue
@pytest.mark.quota
@pytest.mark.needs(DRA_EXTENDED_RESOURCE, DRA_EXTENDED_DEVICES)
@allure.epic("Kueue")
@allure.story("Kueue counts an extended resource a DeviceClass backs in the class's DRA quota")
def test_kueue_counts_an_extended_resource_a_device_class_backs_in_its_dra_quota(
    kube: Kube,
    namespace: str,
    offered: list[Device],
    extended_class: Obj,
    make_kueue_queues: QueueFactory,
) -> None:
    queues = make_kueue_queues({"cpu": "8", DRA_QUOTA: "2"})
    with allure.step(
        f"a 2-pod Job asking for 1 {EXTENDED_RESOURCE} a pod, through a ClusterQueue of 2 {DRA_QUOTA} "
        f"and no {EXTENDED_RESOURCE}"
    ):
        first = extended_job("extended-a", 2, queues.local_queue)
        first_workload = wait_workload_of(kube, namespace, kube.create(first, namespace=namespace))
    with allure.step(f"Kueue admits it counting 2 {DRA_QUOTA} (the class's mapping); each pod gets a device"):
        (admitted,) = wait_admitted(kube, namespace, first_workload[0]["metadata"]["name"])
        (assignment,) = admitted["status"]["admission"]["podSetAssignments"]
        usage = assignment.get("resourceUsage") or {}
        assert usage.get(DRA_QUOTA) == "2" and EXTENDED_RESOURCE not in usage, (
            f"Kueue counted {usage}, not 2 {DRA_QUOTA} in place of {EXTENDED_RESOURCE}"
        )
        for running in wait_pods_allocated(kube, namespace, {"job-name": "extended-a"}, 2):
            allocated_on_its_node(kube, namespace, running, offered)
    with allure.step(f"a 1-pod Job of the same waits: suspended, zero pods, short of {DRA_QUOTA}"):
        second = extended_job("extended-b", 1, queues.local_queue)
        (made,) = wait_workload_of(kube, namespace, kube.create(second, namespace=namespace))
        (pending,) = wait_pending(kube, namespace, made["metadata"]["name"])
        said = str((condition(pending, "QuotaReserved") or {}).get("message"))
        assert f"insufficient unused quota for {DRA_QUOTA}" in said, said
        hold_suspended(kube, namespace, "extended-b", made["metadata"]["name"])


@allure.epic("Kubernetes")
@allure.story(
    "negative control: without DRAExtendedResource a pod asking for the class's extended resource is "
    "unschedulable"
)
def test_without_the_gate_a_pod_asking_for_the_extended_resource_is_unschedulable(
    kube: Kube, namespace: str, offered: list[Device], extended_class: Obj
) -> None:
    kept = extended_class["spec"].get("extendedResourceName")
    if kept:
        pytest.skip(
            f"this cluster's API server keeps a DeviceClass's extendedResourceName ({kept}): "
            "DRAExtendedResource is on here, and this control needs it off"
        )
    with allure.step("the API server dropped the class's extendedResourceName; a pod asks for 1 of it"):
        kube.create(asks("asks-one"), namespace=namespace)
    with allure.step(f"kube-scheduler says '{INSUFFICIENT}', and the pod stays unbound with no claim"):
        found = hold_unschedulable(kube, namespace, "asks-one", says=INSUFFICIENT, wanting=EXTENDED_RESOURCE)
        assert extended_claim_of(kube, namespace, found) is None, found.get("status")
