"""The ``waitForPodsReady`` scenario the operators' suites share: a job admitted by quota on a flavor no node
has is evicted at Kueue's timeout, its operator takes its pods back, and its quota admits the next job of the
same size. Each suite says, through a :class:`StuckJob`, how its kind is built and shows those states."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import allure

from kbc import apis, timeouts
from kbc.flavors import NO_SUCH_PRODUCT
from kbc.jobs import bound, describe_pods
from kbc.kube import Kube, Obj, wait_for_list
from kbc.kueue import (
    QueueFactory,
    wait_admitted,
    wait_evicted_at_pods_ready_timeout,
    wait_pending,
    wait_workload_of,
)
from kbc.kueue.settings import PODS_READY_TIMEOUT_SECONDS
from kbc.labels import GPU, PRODUCT_LABEL
from kbc.workloads import GPU_TOLERATION

#: ``(kube, namespace, name)``: a wait on the named job's pods.
PodsWait = Callable[[Kube, str, str], object]


@dataclass(frozen=True)
class StuckJob:
    """One job kind in the scenario: how it is built and how its pods show each state."""

    #: The admitted job, with its size: ``"a 4-node TrainJob"``.
    one: str
    #: What the others are called: ``"TrainJob"``, ``"LeaderWorkerSet's group"``.
    noun: str
    #: ``(name, local queue)``: a job of 4 GPUs, one per pod.
    build: Callable[[str, str], Obj]
    #: Its pods once admitted on the flavor no node has: ``"all 4 pods are made, none bound"``.
    made: str
    wait_made: PodsWait
    #: What the stuck one is after its eviction: ``"is suspended with every pod removed"``.
    after: str
    wait_after: PodsWait


def pods_made_unbound(kind: str, label: str, pods: int) -> PodsWait:
    """A wait for all *pods* pods labelled ``label=<name>`` made and none bound (*kind* names the job)."""

    def wait(kube: Kube, namespace: str, name: str) -> list[Obj]:
        return wait_for_list(
            kube,
            apis.POD,
            namespace=namespace,
            labels={label: name},
            until=lambda found: len(found) == pods and not bound(found),
            timeout=timeouts.LONG,
            what=f"the {pods} pods of {kind} {name} made, none bound",
            describe=describe_pods,
        )

    return wait


def evicted_at_timeout_and_next_admitted(
    kube: Kube, namespace: str, make_kueue_queues: QueueFactory, job: StuckJob
) -> None:
    """Run the scenario for *job*'s kind, each state a step of the report."""
    queues = make_kueue_queues(
        {"cpu": "16", GPU: "4"},
        flavors={"gone": {PRODUCT_LABEL: NO_SUCH_PRODUCT}},
        tolerations={"gone": [GPU_TOLERATION]},
    )
    with allure.step(
        f"{job.one} is admitted on a flavor of 4 GPUs selecting {PRODUCT_LABEL}={NO_SUCH_PRODUCT}, which no "
        f"node has: {job.made}"
    ):
        stuck = kube.create(job.build("stuck", queues.local_queue), namespace=namespace)
        wl_stuck = wait_workload_of(kube, namespace, stuck)[0]["metadata"]["name"]
        wait_admitted(kube, namespace, wl_stuck)
        job.wait_made(kube, namespace, "stuck")
    with allure.step(f"a second {job.noun} of the same size waits for the quota"):
        waiting = kube.create(job.build("next", queues.local_queue), namespace=namespace)
        wl_next = wait_workload_of(kube, namespace, waiting)[0]["metadata"]["name"]
        wait_pending(kube, namespace, wl_next)
    timeout = PODS_READY_TIMEOUT_SECONDS
    with allure.step(f"after {timeout}s Kueue evicts the stuck {job.noun} (PodsReadyTimeout)"):
        wait_evicted_at_pods_ready_timeout(kube, namespace, wl_stuck)
    with allure.step(f"its quota admits the next {job.noun}, and the stuck one {job.after}"):
        wait_admitted(kube, namespace, wl_next)
        job.wait_after(kube, namespace, "stuck")
