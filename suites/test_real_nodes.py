"""Gangs whose workers really run: a rendezvous on a real node, through Kueue and without it.

Everything else in these suites stops at the API: kwok marks pods Running and completes them on a
timer. Here the pods run on a real node of the local provider (``--real-nodes``; kubelet and
containerd on this host) in the harness's toolbox image, and each worker of a gang announces
itself in a directory the node shares with them, then waits until all its peers have
(``/bin/rendezvous``). Admitted whole by Kueue, the gang meets and completes. Placed by the default
scheduler alone on a node with room for only part of it, the placed workers really hang at the
rendezvous for the whole window: the deadlock gang admission exists to prevent, as a real process
sees it. Elsewhere (no real node) the suite skips and says how to get one.
"""

from __future__ import annotations

from dataclasses import dataclass

import allure
import pytest

from kbc import apis, timeouts
from kbc.errors import ClusterError
from kbc.jobs import bound, describe_pods, job_pods, phase_of, wait_job_complete
from kbc.kube import Kube, Obj, hold_list, is_true, wait_for_list
from kbc.kueue import QueueFactory, Queues, wait_admitted, wait_workload_of
from kbc.labels import REAL_NODE_LABEL, SHARED_DIR_ANNOTATION, TOOLBOX_REPOSITORY
from kbc.workloads import real_node_job

pytestmark = [pytest.mark.real_node, pytest.mark.gang, allure.feature("real_node")]

GANG = 3


@dataclass(frozen=True)
class RealNode:
    name: str
    toolbox: str
    shared_dir: str
    cpu_millis: int


def _millis(quantity: str) -> int:
    return int(quantity[:-1]) if quantity.endswith("m") else int(float(quantity) * 1000)


@pytest.fixture
def real_node(kube: Kube) -> RealNode:
    """One Ready real node with the toolbox image, which the scenario pins its pods to (with several, the
    first by name); skips, saying how to get one, where there is none."""
    nodes = [n for n in kube.list(apis.NODE, labels={REAL_NODE_LABEL: "true"}) if is_true(n, "Ready")]
    if not nodes:
        pytest.skip(
            "no real node in this cluster: start one with --real-nodes 1 (local provider, as root; "
            "make test does)"
        )
    node = min(nodes, key=lambda n: str(n["metadata"]["name"]))
    name = node["metadata"]["name"]
    images = [i for image in node["status"].get("images", []) for i in image.get("names", [])]
    toolbox = next((i for i in images if i.startswith(TOOLBOX_REPOSITORY + ":")), None)
    shared = node["metadata"].get("annotations", {}).get(SHARED_DIR_ANNOTATION, "")
    # What the provider gave the node is the harness's to get right: without it the test is broken,
    # not failed.
    if not toolbox:
        raise ClusterError(
            f"real node {name} lists no {TOOLBOX_REPOSITORY} image (the provider imports it): {images}"
        )
    if not shared:
        raise ClusterError(
            f"real node {name} has no {SHARED_DIR_ANNOTATION} annotation (the provider sets it)"
        )
    return RealNode(name, toolbox, shared, _millis(str(node["status"]["allocatable"]["cpu"])))


def rendezvous(namespace: str, job: str) -> list[str]:
    return ["/bin/rendezvous", f"/rendezvous/{namespace}-{job}", str(GANG)]


def logs(kube: Kube, namespace: str, pods: list[Obj]) -> dict[str, str]:
    return {p["metadata"]["name"]: kube.pod_log(p["metadata"]["name"], namespace) for p in pods}


@pytest.mark.kueue
@allure.epic("Kueue")
@allure.story("a 3-worker gang admitted whole by Kueue really meets at its rendezvous and completes")
def test_a_gang_admitted_whole_meets_and_completes(
    kube: Kube, namespace: str, real_node: RealNode, make_kueue_queues: QueueFactory
) -> None:
    queues: Queues = make_kueue_queues({"cpu": "1"})
    with allure.step(f"submit a {GANG}-worker rendezvous Job (100m CPU each) to {queues.local_queue}"):
        created = kube.create(
            real_node_job(
                "meet",
                image=real_node.toolbox,
                command=rendezvous(namespace, "meet"),
                pods=GANG,
                shared_dir=real_node.shared_dir,
                queue=queues.local_queue,
                node=real_node.name,
            ),
            namespace=namespace,
        )
        assert created["spec"]["suspend"] is True, "Kueue's webhook suspends a Job that names a LocalQueue"
    with allure.step("Kueue admits the whole gang"):
        workload = wait_workload_of(kube, namespace, created)[0]["metadata"]["name"]
        wait_admitted(kube, namespace, workload)
    with allure.step(f"all {GANG} workers meet and the Job completes on {real_node.name}"):
        wait_job_complete(kube, namespace, "meet", timeout=timeouts.POD_START)
        said = logs(kube, namespace, job_pods(kube, namespace, "meet"))
        allure.attach("\n".join(f"--- {k}\n{v}" for k, v in said.items()), name="worker logs")
        met = [name for name, log in said.items() if f"all {GANG} peers arrived" in log]
        assert len(met) == GANG, f"every worker should have seen all {GANG} peers; their logs: {said}"


@allure.epic("default scheduler")
@allure.story("negative control: without Kueue, a gang placed in part hangs at its rendezvous")
def test_without_kueue_a_partly_placed_gang_hangs_at_its_rendezvous(
    kube: Kube, namespace: str, real_node: RealNode
) -> None:
    # Each worker asks for 45 % of the node's CPU: two fit, the third never does.
    cpu = f"{real_node.cpu_millis * 45 // 100}m"
    with allure.step(f"create a {GANG}-worker rendezvous Job ({cpu} CPU each; the node has room for 2)"):
        kube.create(
            real_node_job(
                "stuck",
                image=real_node.toolbox,
                command=rendezvous(namespace, "stuck"),
                pods=GANG,
                cpu=cpu,
                shared_dir=real_node.shared_dir,
                node=real_node.name,
            ),
            namespace=namespace,
        )

    def placed_two_waiting(pods: list[Obj]) -> bool:
        running = [p for p in bound(pods) if phase_of(p) == "Running"]
        return len(running) == 2 and len(pods) == GANG and len(bound(pods)) == 2

    with allure.step("two workers run; the third is not placed"):
        wait_for_list(
            kube,
            apis.POD,
            namespace=namespace,
            labels={"job-name": "stuck"},
            until=placed_two_waiting,
            timeout=timeouts.POD_START,
            what="two workers of the gang running and the third unplaced",
            describe=describe_pods,
        )

    with allure.step("for the whole window: two workers Running, the third Pending, nobody completes"):
        hold_list(
            kube,
            apis.POD,
            namespace=namespace,
            labels={"job-name": "stuck"},
            holds=placed_two_waiting,
            what="two workers running, one unplaced, none finished",
            describe=describe_pods,
        )
    with allure.step("the placed workers really wait at the rendezvous: 2 of 3 arrived, no meeting"):
        pods = [p for p in job_pods(kube, namespace, "stuck") if p["spec"].get("nodeName")]
        said = logs(kube, namespace, pods)
        allure.attach("\n".join(f"--- {k}\n{v}" for k, v in said.items()), name="worker logs")
        for name, log in said.items():
            assert f"waiting for {GANG} peers" in log and "peers arrived:" not in log, (name, log)
        job = kube.get(apis.JOB, "stuck", namespace)
        assert not (job.get("status", {}).get("succeeded") or 0), job.get("status")
