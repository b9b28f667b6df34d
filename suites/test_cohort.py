"""Cohorts with Kueue: idle quota is lent, borrowing is capped, lent quota is taken back, and priority
decides who runs inside one ClusterQueue.

ClusterQueues that name the same ``spec.cohortName`` share their unused nominal quota.
These scenarios prove, against the real Kueue scheduler, that

- a borrower is admitted beyond its nominal quota while a lender is idle, and its
  ClusterQueue reports the borrowed amount (``status.flavorsUsage[].resources[].borrowed``);
- ``borrowingLimit`` caps that: a workload needing more than nominal + limit waits
  suspended with zero pods although the lender is idle, and one within the limit runs;
- a lender with ``preemption.reclaimWithinCohort`` takes its quota back: the borrower's
  Workload is evicted (``Evicted``/``Preempted``, reason ``InCohortReclamation``), its Job is
  suspended again with no pods, and the lender's work runs;
- inside one ClusterQueue with ``withinClusterQueue: LowerPriority``, a Job naming a higher
  WorkloadPriorityClass evicts a lower one (reason ``InClusterQueue``), and the victim is
  readmitted once the quota is free again.
"""

from __future__ import annotations

from collections.abc import Iterator
from decimal import Decimal
from typing import Any

import allure
import pytest
from lightkube import Client

from kbc.gpu import GPU
from kbc.kube import WaitTimeout, condition, is_true, wait_job_complete
from kbc.kueue import (
    EXCEEDS_MAX_QUOTA_REASONS,
    ClusterQueue,
    Cohort,
    Member,
    Preemption,
    Quota,
    Usage,
    Workload,
    describe_cluster_queue,
    flavor_usage,
    hold_suspended,
    is_pending,
    make_cohort,
    make_priority_classes,
    preemption_message,
    queued_job,
    wait_admitted,
    wait_cluster_queue,
    wait_event,
    wait_job_pods_running,
    wait_job_stopped,
    wait_pending,
    wait_preempted,
    wait_usage,
    workload_counts,
    workload_of,
)

pytestmark = [pytest.mark.cohort, pytest.mark.kueue, allure.epic("Kueue"), allure.feature("cohort")]

# Generous: other clusters share this machine's two cores.
ADMIT_TIMEOUT = 60.0
EVICT_TIMEOUT = 60.0


def submit(kube: Client, namespace: str, job: Any) -> str:
    """Create *job*; return the name of the Workload Kueue made for it."""
    created = kube.create(job, namespace=namespace)
    assert created.spec.suspend is True, (
        f"Kueue's webhook should have suspended Job {created.metadata.name}, which names a LocalQueue; "
        "it was created unsuspended, so Kueue does not manage it"
    )
    return str(workload_of(kube, created, namespace).metadata.name)


def held_at_nominal(workload: Any) -> str | None:
    """A wait's early failure: Kueue refused the workload because it exceeds what its queue may ever use."""
    cond = condition(workload, "QuotaReserved") if workload is not None else None
    if (
        cond is not None
        and cond.get("status") == "False"
        and "> maximum capacity" in (cond.get("message") or "")
    ):
        return (
            "the borrower was held at its nominal quota: Kueue says it can never fit "
            f"({cond.get('reason')}: {cond.get('message')}), so the idle lender's quota was not lent to it"
        )
    return None


def expect_evicted(
    kube: Client, workload: str, namespace: str, reason: str, who: str, preemptor: str, queue: str
) -> Any:
    """Wait for *workload* to be preempted with *reason*; if it never is, say what the preemptor saw."""
    try:
        return wait_preempted(kube, workload, namespace, reasons={reason}, timeout=EVICT_TIMEOUT)
    except WaitTimeout as exc:
        waiting = condition(kube.get(Workload, preemptor, namespace=namespace), "QuotaReserved") or {}
        holder = describe_cluster_queue(kube.get(ClusterQueue, queue))
        raise AssertionError(
            f"the {who} was not evicted within {EVICT_TIMEOUT:.0f}s: Kueue should have preempted Workload "
            f"{workload} (Preempted reason {reason}) to admit {preemptor}, which instead waits with "
            f"QuotaReserved={waiting.get('status')} ({waiting.get('reason')}: {waiting.get('message')}). "
            f"The {who}'s queue still holds the quota:\n{holder}\n"
            f"Last state of the {who}:\n{exc.last_state}"
        ) from None


# --- 1. borrowing ---------------------------------------------------------------------------------------


@pytest.fixture
def gpus_to_lend(kube: Client, namespace: str, unique: str) -> Iterator[Cohort]:
    """A cohort: the lender holds 6 GPUs it does not use, the borrower 2."""
    yield from make_cohort(
        kube,
        namespace,
        unique,
        {
            "lender": Member({"cpu": "8", GPU: "6"}),
            "borrower": Member({"cpu": "8", GPU: "2"}),
        },
    )


@allure.story(
    "a borrower is admitted beyond its nominal GPU quota with the idle quota of a lender in its cohort"
)
def test_borrower_runs_on_idle_quota_lent_by_its_cohort(
    kube: Client, namespace: str, gpus_to_lend: Cohort
) -> None:
    cohort = gpus_to_lend
    flavor = cohort.flavors["default"]
    borrower_cq, lender_cq = cohort.cluster_queues["borrower"], cohort.cluster_queues["lender"]
    with allure.step("the lender is idle: its ClusterQueue uses and reserves nothing"):
        lender = kube.get(ClusterQueue, lender_cq)
        assert flavor_usage(lender, flavor, GPU).total == 0, (
            f"lender is not idle: {lender.to_dict()['status']}"
        )
        assert workload_counts(lender).admitted == 0
    with allure.step("submit 4 pods x 1 GPU to the borrower, whose nominal quota is 2 GPUs"):
        name = submit(kube, namespace, queued_job("borrows", cohort.local_queues["borrower"], pods=4, gpus=1))
    with allure.step("the Workload is admitted by the borrower's ClusterQueue"):
        admitted = wait_admitted(kube, name, namespace, timeout=ADMIT_TIMEOUT, fail=held_at_nominal)
        admission = admitted.to_dict()["status"]["admission"]
        assert admission["clusterQueue"] == borrower_cq, admission
        podset = admission["podSetAssignments"][0]
        assert podset["flavors"][GPU] == flavor, podset
        assert podset["resourceUsage"][GPU] == "4", f"the Workload should account 4 GPUs: {podset}"
    with allure.step("the borrower's ClusterQueue reports 4 GPUs used, 2 of them borrowed"):
        cq = wait_usage(kube, borrower_cq, flavor, GPU, total="4", borrowed="2", timeout=ADMIT_TIMEOUT)
        reserved = flavor_usage(cq, flavor, GPU, reserved=True)
        assert reserved == Usage(Decimal(4), Decimal(2)), f"flavorsReservation should match: {reserved}"
        cpu = flavor_usage(cq, flavor, "cpu")
        assert cpu == Usage(Decimal(4), Decimal(0)), f"4 CPUs fit the nominal 8, none borrowed: {cpu}"
        counts = workload_counts(cq)
        assert (counts.admitted, counts.reserving, counts.pending) == (1, 1, 0), counts
        lender = kube.get(ClusterQueue, lender_cq)
        assert flavor_usage(lender, flavor, GPU).total == 0, (
            "lent quota is accounted to the borrower, not the lender: "
            f"lender shows {flavor_usage(lender, flavor, GPU)}"
        )
    with allure.step("all 4 pods are bound to GPU nodes and Running"):
        pods = wait_job_pods_running(kube, namespace, "borrows", 4)
        assert all(p.spec.nodeName.startswith("gpu-") for p in pods), [p.spec.nodeName for p in pods]
        for pod in pods:
            assert pod.metadata.labels.get("kueue.x-k8s.io/cluster-queue-name") == borrower_cq, pod.metadata


# --- 2. borrowingLimit ------------------------------------------------------------------------------------


@pytest.fixture
def capped_borrower(kube: Client, namespace: str, unique: str) -> Iterator[Cohort]:
    """A cohort: the lender holds 8 idle CPUs; the borrower has 2 nominal and may borrow at most 2."""
    yield from make_cohort(
        kube,
        namespace,
        unique,
        {
            "lender": Member({"cpu": "8"}),
            "borrower": Member({"cpu": Quota("2", borrowing_limit="2")}),
        },
    )


@allure.story(
    "borrowingLimit caps borrowing: a workload over nominal + limit waits although the lender is idle"
)
def test_borrowing_limit_holds_back_what_exceeds_it(
    kube: Client, namespace: str, capped_borrower: Cohort
) -> None:
    cohort = capped_borrower
    flavor = cohort.flavors["default"]
    borrower_cq, lender_cq = cohort.cluster_queues["borrower"], cohort.cluster_queues["lender"]
    borrower_queue = cohort.local_queues["borrower"]
    with allure.step(
        "submit 3 pods x 2 CPU (6 CPUs) to the borrower: more than nominal 2 + borrowingLimit 2"
    ):
        too_big = submit(kube, namespace, queued_job("too-big", borrower_queue, pods=3, cpu="2"))
        pending = wait_pending(kube, too_big, namespace, timeout=ADMIT_TIMEOUT)
    with allure.step("Kueue says it exceeds the borrower's maximum capacity of 4 CPUs"):
        cond = condition(pending, "QuotaReserved")
        assert cond is not None and cond["reason"] in EXCEEDS_MAX_QUOTA_REASONS, cond
        expected = (
            f"couldn't assign flavors to pod set main: insufficient quota for cpu in flavor {flavor}, "
            "previously considered podsets requests (0) + current podset request (6) > maximum capacity (4)"
        )
        assert cond["message"] == expected, f"expected {expected!r}, got {cond['message']!r}"
    with allure.step("it stays suspended with zero pods for the consistency window while the lender is idle"):
        cond = hold_suspended(kube, namespace, "too-big", too_big)
        assert "> maximum capacity (4)" in cond["message"], cond
        lender = kube.get(ClusterQueue, lender_cq)
        assert flavor_usage(lender, flavor, "cpu").total == 0 and workload_counts(lender).admitted == 0, (
            f"the lender should be idle, with all 8 CPUs to lend: {lender.to_dict()['status']}"
        )
    with allure.step("2 pods x 2 CPU (4 CPUs: nominal 2 + the whole limit 2) are admitted and run"):
        fits = submit(kube, namespace, queued_job("fits", borrower_queue, pods=2, cpu="2"))
        wait_admitted(kube, fits, namespace, timeout=ADMIT_TIMEOUT, fail=held_at_nominal)
        wait_usage(kube, borrower_cq, flavor, "cpu", total="4", borrowed="2", timeout=ADMIT_TIMEOUT)
        wait_job_pods_running(kube, namespace, "fits", 2)
    with allure.step("the 6-CPU workload is still pending; the ClusterQueue counts 1 admitted, 1 pending"):
        wait_cluster_queue(
            kube,
            borrower_cq,
            what=f"ClusterQueue {borrower_cq} to count 1 admitted and 1 pending workload",
            until=lambda cq: (workload_counts(cq).admitted, workload_counts(cq).pending) == (1, 1),
            timeout=ADMIT_TIMEOUT,
        )
        held = kube.get(Workload, too_big, namespace=namespace)
        assert is_pending(held) and not is_true(held, "Admitted"), held.to_dict()["status"]


# --- 3. reclaim -------------------------------------------------------------------------------------------


@pytest.fixture
def reclaiming_lender(kube: Client, namespace: str, unique: str) -> Iterator[Cohort]:
    """A cohort: the lender (4 GPUs) may reclaim from any borrower; the borrower has 2 GPUs.

    Kueue applies the preempting Workload's ClusterQueue policy, so reclaimWithinCohort is on the lender.
    """
    yield from make_cohort(
        kube,
        namespace,
        unique,
        {
            "lender": Member({"cpu": "8", GPU: "4"}, preemption=Preemption(reclaim_within_cohort="Any")),
            "borrower": Member({"cpu": "8", GPU: "2"}),
        },
    )


@allure.story("a lender reclaims its lent GPUs: the borrower is evicted and suspended, the lender's Job runs")
def test_lender_reclaims_lent_quota_by_evicting_the_borrower(
    kube: Client, namespace: str, reclaiming_lender: Cohort
) -> None:
    cohort = reclaiming_lender
    flavor = cohort.flavors["default"]
    borrower_cq, lender_cq = cohort.cluster_queues["borrower"], cohort.cluster_queues["lender"]
    with allure.step("the borrower runs 6 pods x 1 GPU: its own 2 GPUs and 4 borrowed from the idle lender"):
        borrower = submit(
            kube, namespace, queued_job("borrower", cohort.local_queues["borrower"], pods=6, gpus=1)
        )
        wait_admitted(kube, borrower, namespace, timeout=ADMIT_TIMEOUT, fail=held_at_nominal)
        wait_usage(kube, borrower_cq, flavor, GPU, total="6", borrowed="4", timeout=ADMIT_TIMEOUT)
        wait_job_pods_running(kube, namespace, "borrower", 6)
    with allure.step("the lender submits 2 pods x 1 GPU, within its nominal 4"):
        lender = submit(kube, namespace, queued_job("lender", cohort.local_queues["lender"], pods=2, gpus=1))
    with allure.step("the borrower's Workload is Evicted (Preempted) and Preempted (InCohortReclamation)"):
        victim = expect_evicted(
            kube, borrower, namespace, "InCohortReclamation", "borrower", preemptor=lender, queue=borrower_cq
        )
        preemptor = kube.get(Workload, lender, namespace=namespace)
        expected = preemption_message(
            preemptor, "InCohortReclamation", cohort.path("lender"), cohort.path("borrower")
        )
        preempted, evicted = condition(victim, "Preempted"), condition(victim, "Evicted")
        assert preempted is not None and evicted is not None
        assert "Preempted to accommodate" in preempted["message"], preempted
        assert preempted["message"] == expected, f"expected {expected!r}, got {preempted['message']!r}"
        assert evicted["reason"] == "Preempted" and evicted["message"] == expected, evicted
    with allure.step(
        "the borrower's Job is suspended again, its pods are gone, and the Job says it was stopped"
    ):
        stopped = wait_job_stopped(kube, namespace, "borrower", timeout=EVICT_TIMEOUT)
        assert stopped.spec.suspend is True
        event = wait_event(
            kube,
            namespace,
            kind="Job",
            name="borrower",
            reason="Stopped",
            contains="Preempted to accommodate",
        )
        assert "due to reclamation within the cohort" in event.message, event.message
    with allure.step("the lender's Workload is admitted and its 2 pods run on its own quota"):
        wait_admitted(kube, lender, namespace, timeout=ADMIT_TIMEOUT)
        wait_job_pods_running(kube, namespace, "lender", 2)
        wait_usage(kube, lender_cq, flavor, GPU, total="2", borrowed="0", timeout=ADMIT_TIMEOUT)
        wait_usage(kube, borrower_cq, flavor, GPU, total="0", borrowed="0", timeout=ADMIT_TIMEOUT)
    with allure.step("the borrower waits suspended with zero pods while the lender uses its quota"):
        wait_pending(kube, borrower, namespace, timeout=ADMIT_TIMEOUT)
        hold_suspended(kube, namespace, "borrower", borrower)


# --- 4. priority preemption inside one ClusterQueue -------------------------------------------------------


@pytest.fixture
def priority_queue(kube: Client, namespace: str, unique: str) -> Iterator[Cohort]:
    """One ClusterQueue (no cohort) of 4 GPUs that lets higher priority preempt lower priority."""
    yield from make_cohort(
        kube,
        namespace,
        unique,
        {
            "team": Member(
                {"cpu": "8", GPU: "4"},
                preemption=Preemption(within_cluster_queue="LowerPriority"),
                in_cohort=False,
            )
        },
    )


@pytest.fixture
def priorities(kube: Client, unique: str) -> Iterator[dict[str, str]]:
    """WorkloadPriorityClasses low (100) and high (1000)."""
    yield from make_priority_classes(kube, unique, {"low": 100, "high": 1000})


@allure.story(
    "a high-priority Job preempts a low-priority one in its ClusterQueue; the victim is readmitted later"
)
def test_higher_priority_preempts_lower_priority_within_a_cluster_queue(
    kube: Client, namespace: str, priority_queue: Cohort, priorities: dict[str, str]
) -> None:
    cohort = priority_queue
    queue = cohort.local_queues["team"]
    with allure.step("a low-priority Job of 4 pods x 1 GPU fills the 4-GPU quota"):
        low = submit(
            kube, namespace, queued_job("low", queue, pods=4, gpus=1, priority_class=priorities["low"])
        )
        spec = wait_admitted(kube, low, namespace, timeout=ADMIT_TIMEOUT).to_dict()["spec"]
        assert spec.get("priority") == 100, f"spec.priority should come from {priorities['low']}: {spec}"
        ref = {"group": "kueue.x-k8s.io", "kind": "WorkloadPriorityClass", "name": priorities["low"]}
        assert spec.get("priorityClassRef") == ref, f"expected priorityClassRef {ref}, got {spec}"
        wait_job_pods_running(kube, namespace, "low", 4)
    with allure.step("a high-priority Job of 2 pods x 1 GPU arrives"):
        high_job = queued_job("high", queue, pods=2, gpus=1, run_for="10s", priority_class=priorities["high"])
        high = submit(kube, namespace, high_job)
    with allure.step("the low Workload is Evicted (Preempted) and Preempted (InClusterQueue)"):
        victim = expect_evicted(
            kube,
            low,
            namespace,
            "InClusterQueue",
            "low-priority Job",
            preemptor=high,
            queue=cohort.cluster_queues["team"],
        )
        preemptor = kube.get(Workload, high, namespace=namespace)
        expected = preemption_message(preemptor, "InClusterQueue", cohort.path("team"), cohort.path("team"))
        preempted = condition(victim, "Preempted")
        assert preempted is not None and preempted["message"] == expected, (
            f"expected {expected!r}, got {preempted}"
        )
    with allure.step("the low Job is suspended again and its pods are gone"):
        wait_job_stopped(kube, namespace, "low", timeout=EVICT_TIMEOUT)
        wait_event(
            kube, namespace, kind="Job", name="low", reason="Stopped", contains="Preempted to accommodate"
        )
    with allure.step("the high Workload (priority 1000) is admitted and its pods run"):
        spec = wait_admitted(kube, high, namespace, timeout=ADMIT_TIMEOUT).to_dict()["spec"]
        assert spec.get("priority") == 1000, spec
        assert (spec.get("priorityClassRef") or {}).get("name") == priorities["high"], spec
        wait_job_pods_running(kube, namespace, "high", 2)
    with allure.step("when the high Job completes, the low Workload is readmitted and runs again"):
        wait_job_complete(kube, "high", namespace, timeout=ADMIT_TIMEOUT)
        readmitted = wait_admitted(kube, low, namespace, timeout=ADMIT_TIMEOUT)
        after = condition(readmitted, "Preempted")
        assert after is not None and after["status"] == "False" and after["reason"] == "QuotaReserved", after
        assert after["message"] == f"Previously: {expected}", after
        wait_job_pods_running(kube, namespace, "low", 4)
