"""Topology-aware gangs (Kueue's TAS, on by default in the pinned Kueue): for GPU training, a gang split
across racks is as bad as a partial one, and Kueue admits a gang that asks for one rack only where one rack
holds it whole.

The node pools (``manifests/nodes``) put the GPU nodes in one block and each H100 node in a rack of its
own (``topology.kbatch.dev/block``, ``topology.kbatch.dev/rack``). Each scenario makes a ``Topology`` of
block, rack and host and a ResourceFlavor on the H100 nodes that names it; where a rack must be partly
taken, a filler pod (placed by kube-scheduler, outside Kueue) holds GPUs on a node. Where the gang landed
is read from the nodes its pods run on. The negative control: where the TAS gang waits for a rack, the
same gang through a flavor without a topology is admitted by quota alone and split across the racks. (A
flavor that names a topology places even a gang that asks nothing: Kueue packs it.)
"""

from __future__ import annotations

from collections.abc import Iterator

import allure
import pytest

from kbc.gpu import GpuNode, fill_node
from kbc.jobs import wait_pods_running
from kbc.kube import Kube, Obj, condition
from kbc.kueue import QueueFactory, Queues, hold_suspended, wait_admitted, wait_pending, wait_workload_of
from kbc.kueue.topology import DOES_NOT_FIT, domains_of, made_topology, preferred, required
from kbc.labels import BLOCK_LABEL, GPU, HOSTNAME_LABEL, PRODUCT_LABEL, RACK_LABEL
from kbc.workloads import job, jobset

pytestmark = [
    pytest.mark.tas,
    pytest.mark.gang,
    pytest.mark.kueue,
    allure.epic("Kueue"),
    allure.feature("tas"),
]

LEVELS = (BLOCK_LABEL, RACK_LABEL, HOSTNAME_LABEL)
PER_POD = 4
"""GPUs each gang pod asks for: two make a rack's (a node's) 8."""


@pytest.fixture
def tas_queues(
    kube: Kube, unique: str, racks: list[GpuNode], make_kueue_queues: QueueFactory
) -> Iterator[Queues]:
    """A Topology of block, rack and host, a flavor on the racks' product naming it, and room for every
    GPU of those nodes."""
    total = sum(n.allocatable for n in racks)
    with made_topology(kube, f"dc-{unique}", LEVELS) as name:
        yield make_kueue_queues(
            {"cpu": "32", GPU: str(total)},
            flavors={"racks": {PRODUCT_LABEL: racks[0].product}},
            topology=name,
        )


def not_placed(workload: Obj) -> str | None:
    """A wait's early failure: Kueue cannot assign the gang a flavor at all (not a matter of room)."""
    cond = condition(workload, "QuotaReserved") or {}
    said = str(cond.get("message"))
    if cond.get("status") == "False" and "couldn't assign flavors" in said and DOES_NOT_FIT not in said:
        return f"Kueue cannot place it: {cond.get('reason')}: {said}"
    return None


def admitted(kube: Kube, created: Obj, namespace: str) -> None:
    name = wait_workload_of(kube, namespace, created)[0]["metadata"]["name"]
    wait_admitted(kube, namespace, name, fail=not_placed)


def gang(
    name: str, queue: str, annotations: dict[str, str] | None = None, pods: int = 2
) -> dict[str, object]:
    return job(name, pods=pods, gpus=PER_POD, queue=queue, annotations=annotations)


@pytest.mark.serial
@allure.story("a gang that must fit one rack is admitted into one rack")
def test_a_gang_that_needs_one_rack_lands_in_one_rack(kube: Kube, namespace: str, tas_queues: Queues) -> None:
    with allure.step(f"a 2 x {PER_POD}-GPU Job that requires one {RACK_LABEL}"):
        created = kube.create(
            gang("one-rack", tas_queues.local_queue, required(RACK_LABEL)), namespace=namespace
        )
    with allure.step("Kueue admits it; both pods run in the same rack"):
        admitted(kube, created, namespace)
        pods = wait_pods_running(kube, namespace, {"job-name": "one-rack"}, 2, what="the gang's 2 pods")
        landed = domains_of(kube, pods, RACK_LABEL)
        assert len(landed) == 1, f"a gang that requires one rack ran in {landed}"


@pytest.mark.serial
@allure.story("a gang that fits the quota but no single rack waits whole, then runs in the rack that frees")
def test_a_gang_no_rack_can_hold_waits_whole_then_runs_when_a_rack_frees(
    kube: Kube, namespace: str, racks: list[GpuNode], tas_queues: Queues
) -> None:
    with allure.step(
        f"fillers take half of each rack: {PER_POD} GPUs free in each, {PER_POD * len(racks)} in all"
    ):
        fillers = [
            fill_node(kube, namespace, node, PER_POD, name=f"filler-{i}") for i, node in enumerate(racks)
        ]
    with allure.step(
        f"a 2 x {PER_POD}-GPU Job that requires one rack waits: quota allows it, no rack holds it"
    ):
        created = kube.create(
            gang("waits", tas_queues.local_queue, required(RACK_LABEL)), namespace=namespace
        )
        workload = wait_workload_of(kube, namespace, created)[0]["metadata"]["name"]
        (pending,) = wait_pending(kube, namespace, workload)
        said = str((condition(pending, "QuotaReserved") or {}).get("message"))
        assert DOES_NOT_FIT in said and "1 out of 2" in said, said
        hold_suspended(kube, namespace, "waits", workload)
    with allure.step(f"the filler of {racks[0].name} goes: its rack frees, and the gang runs there whole"):
        fillers[0].wait_released()
        wait_admitted(kube, namespace, workload)
        pods = wait_pods_running(kube, namespace, {"job-name": "waits"}, 2, what="the gang's 2 pods")
        assert domains_of(kube, pods, RACK_LABEL) == {racks[0].labels[RACK_LABEL]: 2}, domains_of(
            kube, pods, RACK_LABEL
        )


@pytest.mark.serial
@allure.story("a gang that prefers one rack is admitted across racks where no rack holds it")
def test_a_gang_that_prefers_one_rack_is_admitted_across_racks(
    kube: Kube, namespace: str, racks: list[GpuNode], tas_queues: Queues
) -> None:
    with allure.step(f"fillers take half of each rack: {PER_POD} GPUs free in each"):
        for i, node in enumerate(racks):
            fill_node(kube, namespace, node, PER_POD, name=f"filler-{i}")
    with allure.step(
        f"a 2 x {PER_POD}-GPU Job that prefers one rack is admitted, one pod in each of two racks"
    ):
        created = kube.create(
            gang("prefers", tas_queues.local_queue, preferred(RACK_LABEL)), namespace=namespace
        )
        admitted(kube, created, namespace)
        pods = wait_pods_running(kube, namespace, {"job-name": "prefers"}, 2, what="the gang's 2 pods")
        landed = domains_of(kube, pods, RACK_LABEL)
        assert len(landed) == 2, f"with {PER_POD} GPUs free per rack the gang had to span two racks: {landed}"


@pytest.mark.serial
@allure.story("negative control: without topology-aware scheduling the same gang is split across racks")
def test_without_topology_aware_scheduling_the_gang_is_split_across_racks(
    kube: Kube, namespace: str, racks: list[GpuNode], make_kueue_queues: QueueFactory
) -> None:
    # A flavor that names a Topology places every gang itself (Kueue packs even one that asks nothing):
    # the control's flavor names none, so only quota admits and kube-scheduler places.
    total = sum(n.allocatable for n in racks)
    plain = make_kueue_queues(
        {"cpu": "32", GPU: str(total)}, flavors={"racks": {PRODUCT_LABEL: racks[0].product}}
    )
    with allure.step(
        f"fillers take half of each rack: {PER_POD} GPUs free in each, as where the TAS gang waits"
    ):
        for i, node in enumerate(racks):
            fill_node(kube, namespace, node, PER_POD, name=f"filler-{i}")
    with allure.step(
        f"a 2 x {PER_POD}-GPU Job through a flavor without a topology is admitted by quota alone"
    ):
        created = kube.create(gang("anywhere", plain.local_queue), namespace=namespace)
        admitted(kube, created, namespace)
    with allure.step("kube-scheduler places one pod in each of two racks: the gang is split"):
        pods = wait_pods_running(kube, namespace, {"job-name": "anywhere"}, 2, what="the gang's 2 pods")
        landed = domains_of(kube, pods, RACK_LABEL)
        assert len(landed) == 2, (
            f"without topology-aware scheduling the gang was expected split, not {landed}"
        )


@pytest.mark.serial
@pytest.mark.jobset
@allure.story("a JobSet's replicated jobs each land in one rack of their own asking")
def test_each_replicated_job_of_a_jobset_lands_in_one_rack(
    kube: Kube, namespace: str, tas_queues: Queues
) -> None:
    manifest = jobset("ranks", replicated_jobs=1, pods_per_job=2, gpus=PER_POD, queue=tas_queues.local_queue)
    (template,) = manifest["spec"]["replicatedJobs"]
    second = {**template, "name": "second"}
    second["template"] = {"spec": {**template["template"]["spec"]}}
    manifest["spec"]["replicatedJobs"] = [template, second]
    for replicated in manifest["spec"]["replicatedJobs"]:
        pod_meta = replicated["template"]["spec"]["template"].setdefault("metadata", {})
        pod_meta["annotations"] = {**(pod_meta.get("annotations") or {}), **required(RACK_LABEL)}
    with allure.step(f"a JobSet of two replicated jobs of 2 x {PER_POD} GPUs, each requiring one rack"):
        created = kube.create(manifest, namespace=namespace)
        admitted(kube, created, namespace)
    with allure.step("each replicated job's pods run in one rack"):
        for name in ("workers", "second"):
            labels = {"jobset.sigs.k8s.io/replicatedjob-name": name}
            pods = wait_pods_running(kube, namespace, labels, 2, what=f"replicated job {name}'s 2 pods")
            landed = domains_of(kube, pods, RACK_LABEL)
            assert len(landed) == 1, f"replicated job {name} requires one rack and ran in {landed}"
