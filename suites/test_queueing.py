"""How Kueue orders a ClusterQueue's waiting workloads: ``spec.queueingStrategy``.

Workloads wait in priority order, then by creation time. The strategy decides what happens when the head
of the queue does not fit:

- ``StrictFIFO``: the head blocks the queue. A later workload that would fit the free quota waits behind
  it, and is admitted only after the head;
- ``BestEffortFIFO`` (Kueue's default): the head is set aside as inadmissible and the next is tried, so a
  workload that fits is admitted past the head.

The two scenarios make the same state on a ClusterQueue of 4 GPUs (2 in use, a 4-GPU head waiting, a
1-GPU job behind it) and differ only in the strategy; each is the other's control, and each has a sabotage
that gives its ClusterQueue the other strategy. Both read the ClusterQueue's ``status.pendingWorkloads`` and
Kueue's own ``kueue_pending_workloads`` metric, whose ``active`` and ``inadmissible`` counts tell the two
strategies apart.
"""

from __future__ import annotations

from collections.abc import Callable

import allure
import pytest

from kbc import apis
from kbc.errors import ScenarioFailure, WaitTimeout
from kbc.jobs import wait_job_pods_running
from kbc.kube import Kube, Obj
from kbc.kueue import (
    Member,
    QueueFactory,
    Queues,
    after_the_second_of,
    describe_cluster_queue,
    hold_suspended,
    wait_admitted,
    wait_cluster_queue,
    wait_pending,
    wait_workload_of,
    workload_counts,
)
from kbc.kueue.metrics import PENDING_WORKLOADS, wait_pending_metric
from kbc.labels import GPU
from kbc.metrics import MetricsReader, describe
from kbc.workloads import job

pytestmark = [pytest.mark.queueing, pytest.mark.kueue, allure.epic("Kueue"), allure.feature("queueing")]

NOMINAL_GPUS = 4
FIRST_GPUS = 2  # admitted first: the free quota is then 2 GPUs
HEAD_GPUS = 4  # waits: more than the 2 free
SMALL_GPUS = 1  # behind the head: fits the 2 free


def queue_with(make_kueue_queues: QueueFactory, strategy: str) -> Queues:
    """One ClusterQueue of 4 GPUs whose ``spec.queueingStrategy`` is *strategy*."""
    return make_kueue_queues(
        members={
            "fifo": Member(
                {"cpu": "16", GPU: str(NOMINAL_GPUS)}, configure=lambda cq: cq.queueing_strategy(strategy)
            )
        }
    )


def submitted(kube: Kube, namespace: str, name: str, gpus: int, queue: str, *, behind: str = "") -> str:
    """A Job of *gpus* pods of 1 GPU on *queue*; the name of its Workload. With *behind* (a Workload), made
    in a later second: Kueue orders equal priorities by creation time to the second, then by UID."""
    if behind:
        after_the_second_of(kube.get(apis.WORKLOAD, behind, namespace))
    created = kube.create(job(name, pods=gpus, gpus=1, queue=queue), namespace=namespace)
    return str(wait_workload_of(kube, namespace, created)[0]["metadata"]["name"])


def head_waits_behind_first(kube: Kube, namespace: str, queues: Queues) -> str:
    """The state both scenarios start from: a 2-GPU Job admitted and running, then a 4-GPU Job (the head)
    waiting for quota; the head's Workload."""
    with allure.step(
        f"a {FIRST_GPUS}-GPU Job is admitted and runs: {NOMINAL_GPUS - FIRST_GPUS} GPUs stay free"
    ):
        first = submitted(kube, namespace, "first", FIRST_GPUS, queues.local_queue)
        wait_admitted(kube, namespace, first)
        wait_job_pods_running(kube, namespace, "first", FIRST_GPUS)
    with allure.step(f"a {HEAD_GPUS}-GPU Job, the head of the queue, waits for quota"):
        head = submitted(kube, namespace, "head", HEAD_GPUS, queues.local_queue)
        wait_pending(kube, namespace, head)
    return head


def counts_are(admitted: int, pending: int) -> Callable[[Obj], bool]:
    """The ClusterQueue's ``status.admittedWorkloads`` and ``status.pendingWorkloads`` are these."""
    return lambda cq: (workload_counts(cq).admitted, workload_counts(cq).pending) == (admitted, pending)


@allure.story(
    "StrictFIFO: a Job that fits the free quota waits behind the head of its ClusterQueue, which does not "
    "fit, and the head is admitted first"
)
def test_strict_fifo_holds_a_fitting_job_behind_a_head_that_does_not_fit(
    kube: Kube, namespace: str, make_kueue_queues: QueueFactory, component_metrics: MetricsReader
) -> None:
    queues = queue_with(make_kueue_queues, "StrictFIFO")
    cq = queues.cluster_queue
    head = head_waits_behind_first(kube, namespace, queues)
    with allure.step(
        f"a {SMALL_GPUS}-GPU Job behind the head, which the {NOMINAL_GPUS - FIRST_GPUS} free GPUs would fit, "
        "stays suspended with zero pods and its Workload unadmitted for the consistency window"
    ):
        small = submitted(kube, namespace, "small", SMALL_GPUS, queues.local_queue, behind=head)
        hold_suspended(kube, namespace, "small", small, reported=False)
    with allure.step(
        f"ClusterQueue {cq} counts 1 admitted and 2 pending workloads; Kueue's {PENDING_WORKLOADS} counts "
        "both active (the head is retried at once, the Job behind it waits its turn), none inadmissible"
    ):
        wait_cluster_queue(
            kube, cq, what=f"ClusterQueue {cq} to count 1 admitted and 2 pending", until=counts_are(1, 2)
        )
        text = wait_pending_metric(component_metrics, cq, active=2, inadmissible=0)
        allure.attach(describe(text, PENDING_WORKLOADS), name=PENDING_WORKLOADS)
    with allure.step("once the first Job is gone, the head is admitted before the Job behind it"):
        kube.delete(apis.JOB, "first", namespace=namespace, foreground=True)
        wait_admitted(kube, namespace, head)
        wait_job_pods_running(kube, namespace, "head", HEAD_GPUS)
        hold_suspended(kube, namespace, "small", small, reported=False)
        wait_cluster_queue(
            kube,
            cq,
            what=f"ClusterQueue {cq} to count 1 admitted (the head) and 1 pending (the small Job)",
            until=counts_are(1, 1),
        )


@allure.story(
    "BestEffortFIFO: a Job that fits the free quota is admitted past the head of its ClusterQueue, which "
    "does not fit and keeps waiting"
)
def test_best_effort_fifo_admits_a_fitting_job_past_a_head_that_does_not_fit(
    kube: Kube, namespace: str, make_kueue_queues: QueueFactory, component_metrics: MetricsReader
) -> None:
    queues = queue_with(make_kueue_queues, "BestEffortFIFO")
    cq = queues.cluster_queue
    head = head_waits_behind_first(kube, namespace, queues)
    with allure.step(f"a {SMALL_GPUS}-GPU Job behind the head is admitted and runs on the free GPUs"):
        small = submitted(kube, namespace, "small", SMALL_GPUS, queues.local_queue, behind=head)
        try:
            wait_admitted(kube, namespace, small)
        except WaitTimeout as exc:
            raise ScenarioFailure(
                f"the {SMALL_GPUS}-GPU Job was not admitted past the head within {exc.timeout:.0f}s although "
                f"{NOMINAL_GPUS - FIRST_GPUS} GPUs are free: Kueue held it behind the head, as StrictFIFO "
                f"does.\n{describe_cluster_queue(kube.get(apis.CLUSTER_QUEUE, cq))}\n"
                f"Last state of its Workload:\n{exc.last_state}"
            ) from None
        wait_job_pods_running(kube, namespace, "small", SMALL_GPUS)
    with allure.step(
        f"the head still waits; ClusterQueue {cq} counts 2 admitted and 1 pending workload, and Kueue's "
        f"{PENDING_WORKLOADS} counts it inadmissible (set aside until something changes), none active"
    ):
        wait_pending(kube, namespace, head)
        wait_cluster_queue(
            kube, cq, what=f"ClusterQueue {cq} to count 2 admitted and 1 pending", until=counts_are(2, 1)
        )
        text = wait_pending_metric(component_metrics, cq, active=0, inadmissible=1)
        allure.attach(describe(text, PENDING_WORKLOADS), name=PENDING_WORKLOADS)
