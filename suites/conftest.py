"""Fixtures the suites share."""

from __future__ import annotations

import pytest

from kbc import apis
from kbc.components.kuberay import RayRuntime
from kbc.dra import Device, devices, serves_dra
from kbc.errors import ClusterError
from kbc.gpu import GpuNode, gpu_nodes, gpu_pods_run
from kbc.kube import Kube
from kbc.kueue import Member, Preemption, QueueFactory, Queues
from kbc.labels import BLOCK_LABEL, DRA_CLASS, DRA_DRIVER, GPU, RACK_LABEL


@pytest.fixture
def offered(kube: Kube) -> list[Device]:
    """The devices of the DRA driver the node pools declare; skips, saying why, where there are none."""
    missing = serves_dra(kube)
    if missing:
        pytest.skip(missing)
    found = devices(kube, DRA_DRIVER)
    if not found:
        pytest.skip(
            f"no ResourceSlice offers a device of driver {DRA_DRIVER}: the local provider publishes the node "
            "pools' devices; on another cluster install a DRA driver (the dra-example-driver's chart)"
        )
    if kube.find(apis.DEVICE_CLASS, DRA_CLASS) is None:
        # Every claim of these scenarios names the class: without it, each would wait out its deadline.
        raise ClusterError(
            f"the ResourceSlices offer devices of driver {DRA_DRIVER}, but the cluster has no DeviceClass "
            f"{DRA_CLASS}, which every claim here names: install the driver's chart (it makes the class) or "
            f"create it (apiVersion: resource.k8s.io/v1, kind: DeviceClass, selectors: "
            f"device.driver == '{DRA_DRIVER}')"
        )
    return found


@pytest.fixture
def ray_runtime(running_images: dict[str, str]) -> RayRuntime | None:
    """The pinned Ray (the lock's ``testImages.ray`` or ``--image ray=REF``) where pods run, which KubeRay's
    pods then run (the head's and workers' ``ray start``, the submitter's ``ray job submit``); None on
    kwok's nodes, which run no container."""
    return RayRuntime.of(running_images["ray"]) if "ray" in running_images else None


@pytest.fixture
def reclaiming_lender(make_kueue_queues: QueueFactory) -> Queues:
    """A cohort for the operators' reclaim scenarios: the lender (4 GPUs) may reclaim what it lends; the
    borrower has 2 GPUs of its own (CPU enough for an operator's extra pods: a Ray head, a submitter)."""
    return make_kueue_queues(
        members={
            "lender": Member({"cpu": "16", GPU: "4"}, preemption=Preemption(reclaim_within_cohort="Any")),
            "borrower": Member({"cpu": "16", GPU: "2"}),
        }
    )


@pytest.fixture
def gpu_programs_run(kube: Kube) -> None:
    """Skips, saying where it runs, unless some GPU node here runs its pods' processes (kind's workers, a
    real cluster's nodes): kwok's fake nodes only mark pods Running, and no job's nodes can meet there."""
    count, run = gpu_pods_run(kube)
    if count and not run:
        pytest.skip(
            f"the {count} GPU nodes here are kwok's fake nodes, whose pods run no process, so no "
            "rendezvous can happen: run it where pods really run (--provider kind)"
        )


@pytest.fixture
def racks(kube: Kube) -> list[GpuNode]:
    """The GPU nodes of the product with the most nodes, each in a rack of its own; two of them at least."""
    nodes = gpu_nodes(kube)
    by_product: dict[str, list[GpuNode]] = {}
    for node in nodes:
        by_product.setdefault(node.product, []).append(node)
    chosen = max(by_product.values(), key=len, default=[])
    if len(chosen) < 2:
        pytest.skip(
            f"topology scenarios need two GPU nodes of one product; this cluster has {sorted(by_product)}"
        )
    unlabelled = [n.name for n in chosen if RACK_LABEL not in n.labels or BLOCK_LABEL not in n.labels]
    if unlabelled:
        # What the provider gave the nodes is the harness's to get right: the pools declare the levels.
        raise ClusterError(
            f"GPU nodes {', '.join(unlabelled)} carry no {RACK_LABEL}/{BLOCK_LABEL} label: Kueue's Topology "
            "levels and the racks of Volcano's HyperNodes are read from node labels (manifests/nodes declare "
            "them; label your nodes so elsewhere)"
        )
    if len({n.labels[RACK_LABEL] for n in chosen}) < 2:
        pytest.skip(f"the {chosen[0].product} nodes share one rack: no rack can be compared with another")
    if any(n.free != n.allocatable for n in chosen):
        raise ClusterError(f"these scenarios need the {chosen[0].product} nodes' GPUs free: {chosen}")
    return chosen
