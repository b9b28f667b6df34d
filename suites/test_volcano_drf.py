"""Volcano's ``drf`` plugin (in the chart's second tier): within a Queue, the job with the lower *dominant*
resource share is served first.

A job's dominant share is its largest share of any resource of the cluster, as allocated now:
``max_r allocated_r / total_r`` over every node's allocatable (``plugins/drf/drf.go``). Two elastic vcjobs
of one Queue and of equal priority each run their base pods on one GPU node, then each wants one more pod
on a second GPU node where only one such pod fits:

- job ``gpus`` runs two base pods of one GPU and a little CPU: its dominant resource is GPUs;
- job ``cpus``, created first, runs one base pod of one GPU and most of a node's CPU: its dominant
  resource is CPU, and its share is the larger although it runs fewer pods.

Every other order a reader might expect (the older job first, the job with fewer pods first) picks
``cpus``; dominant resource fairness picks ``gpus``, and vc-scheduler does.
"""

from __future__ import annotations

from fractions import Fraction

import allure
import pytest
from kubernetes.utils.quantity import parse_quantity

from kbc import apis, timeouts
from kbc.errors import ScenarioFailure
from kbc.gpu import GpuNode, allocatable_gpus, fill_node, gpu_nodes
from kbc.jobs import bound, describe_pods, node_of, wait_pods_running
from kbc.kube import Kube, Obj, hold_list, wait_for_list
from kbc.labels import HOSTNAME_LABEL
from kbc.volcano import JOB_NAME_LABEL, TASK_SPEC_LABEL, VolcanoQueueFactory, create_vcjob
from kbc.workloads import vcjob, vcjob_task

pytestmark = [pytest.mark.volcano, pytest.mark.queueing, allure.epic("Volcano"), allure.feature("drf")]

SMALL_CPU = "100m"
# The share of a node's CPU the cpus job's base pod asks for: enough that CPU is its dominant resource.
CPU_HEAVY = Fraction(3, 5)


def _totals(kube: Kube) -> tuple[Fraction, Fraction]:
    """Every node's allocatable CPU and GPUs summed: the totals drf divides by."""
    nodes = kube.list(apis.NODE)
    cpu = sum(
        Fraction(str(parse_quantity((n["status"].get("allocatable") or {}).get("cpu", "0")))) for n in nodes
    )
    return Fraction(cpu), Fraction(sum(allocatable_gpus(n) for n in nodes))


def _two_free_nodes(kube: Kube) -> tuple[GpuNode, GpuNode]:
    nodes = sorted((n for n in gpu_nodes(kube) if n.free == n.allocatable >= 4), key=lambda n: n.name)
    if len(nodes) < 2:
        pytest.skip(f"drf's scenario needs two GPU nodes with 4 GPUs free; this cluster has {nodes}")
    return nodes[0], nodes[1]


def _elastic(name: str, queue: str, base: int, cpu: str, home: GpuNode, contested: GpuNode) -> Obj:
    """*base* pods of one GPU and *cpu* on *home* (the job's minimum), and one more pod, optional, on
    *contested*."""
    more = vcjob_task(
        "more",
        replicas=1,
        min_available=0,
        cpu=SMALL_CPU,
        node_selector={HOSTNAME_LABEL: contested.name},
    )
    return vcjob(
        name,
        queue,
        replicas=base,
        min_available=base,
        cpu=cpu,
        node_selector={HOSTNAME_LABEL: home.name},
        more_tasks=[more],
    )


def _bases_running(kube: Kube, namespace: str, job: str, count: int, home: GpuNode) -> None:
    wait_pods_running(
        kube,
        namespace,
        {JOB_NAME_LABEL: job, TASK_SPEC_LABEL: "worker"},
        count,
        node=home.name,
        what=f"the {count} base pods of vcjob {job} bound to {home.name} and Running",
    )


@pytest.mark.serial
@allure.story("drf serves the job with the lower dominant share first, not the older one or the smaller one")
def test_drf_serves_the_job_with_the_lower_dominant_share_first(
    kube: Kube, namespace: str, make_volcano_queue: VolcanoQueueFactory
) -> None:
    home, contested = _two_free_nodes(kube)
    queue = make_volcano_queue("vc-drf")
    total_cpu, total_gpus = _totals(kube)
    home_cpu = Fraction(str(parse_quantity(kube.get(apis.NODE, home.name)["status"]["allocatable"]["cpu"])))
    heavy = int(home_cpu * CPU_HEAVY * 1000)
    shares = {
        "gpus": max(Fraction(2) / total_gpus, Fraction(2, 10) / total_cpu),
        "cpus": max(Fraction(1) / total_gpus, Fraction(heavy, 1000) / total_cpu),
    }
    said = ", ".join(f"{job} {float(share):.3f}" for job, share in shares.items())
    allure.attach(
        f"totals: {float(total_cpu)} CPU, {total_gpus} GPUs; dominant shares once the bases run: {said}",
        name="dominant shares",
        attachment_type=allure.attachment_type.TEXT,
    )
    if not shares["cpus"] > shares["gpus"]:
        pytest.skip(f"the nodes here give the CPU-heavy job no larger dominant share ({said})")
    with allure.step(f"no room on {contested.name} yet; then room for exactly one pod"):
        fill_node(kube, namespace, contested, 1, name="filler-stays")
        (now,) = [n for n in gpu_nodes(kube) if n.name == contested.name]
        last = fill_node(kube, namespace, now, 0, name="filler-last")
    with allure.step(
        f"job cpus (1 x 1 GPU, {heavy}m CPU), then job gpus (2 x 1 GPU), their bases on {home.name}"
    ):
        create_vcjob(kube, namespace, _elastic("cpus", queue, 1, f"{heavy}m", home, contested))
        _bases_running(kube, namespace, "cpus", 1, home)
        create_vcjob(kube, namespace, _elastic("gpus", queue, 2, SMALL_CPU, home, contested))
        _bases_running(kube, namespace, "gpus", 2, home)
    with allure.step(f"free one GPU on {contested.name}: job gpus, the lower dominant share, gets it"):
        last.wait_released()

        def on_contested(pods: list[Obj]) -> list[Obj]:
            return [p for p in bound(pods) if node_of(p) == contested.name]

        def owner(pods: list[Obj]) -> str:
            return ", ".join(str(p["metadata"]["labels"].get(JOB_NAME_LABEL)) for p in on_contested(pods))

        found = wait_for_list(
            kube,
            apis.POD,
            namespace=namespace,
            labels={JOB_NAME_LABEL: None},
            until=lambda pods: bool(on_contested(pods)),
            describe=describe_pods,
            timeout=timeouts.POD_START,
            what=f"a pod of job cpus or gpus bound to {contested.name}",
        )
        if owner(found) != "gpus":
            raise ScenarioFailure(
                f"job {owner(found)} got the free GPU on {contested.name}; drf should serve job gpus first "
                f"(dominant shares: {said})"
            )
        hold_list(
            kube,
            apis.POD,
            namespace=namespace,
            labels={JOB_NAME_LABEL: None},
            holds=lambda pods: owner(pods) == "gpus",
            describe=describe_pods,
            what=f"job gpus alone on {contested.name}",
        )
