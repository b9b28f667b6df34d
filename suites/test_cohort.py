"""Cohorts with Kueue: idle quota is lent, borrowing and lending are capped, lent quota is taken back, and
priority decides who runs inside one ClusterQueue.

ClusterQueues that name the same ``spec.cohortName`` share their unused nominal quota.
These scenarios prove, against the real Kueue scheduler, that

- a borrower is admitted beyond its nominal quota while a lender is idle, and its
  ClusterQueue reports the borrowed amount (``status.flavorsUsage[].resources[].borrowed``);
- ``borrowingLimit`` caps that: a workload needing more than nominal + limit waits
  suspended with zero pods although the lender is idle, and one within the limit runs;
- ``lendingLimit`` caps what a lender lends: a borrower needing more waits suspended with zero pods
  although the lender is idle, and raising the limit on the running ClusterQueue admits it;
- a lender with ``preemption.reclaimWithinCohort`` takes its quota back: the borrower's
  Workload is evicted (``Evicted``/``Preempted``, reason ``InCohortReclamation``), its Job is
  suspended again with no pods, and the lender's work runs;
- inside one ClusterQueue with ``withinClusterQueue: LowerPriority``, a Job naming a higher
  WorkloadPriorityClass evicts a lower one (reason ``InClusterQueue``), and the victim is
  readmitted once the quota is free again.
"""

from __future__ import annotations

import allure
import pytest

from kbc import apis
from kbc.events import wait_event
from kbc.gpu import gpu_node_names
from kbc.jobs import node_of, wait_job_complete, wait_job_pods_running, wait_job_suspended_without_pods
from kbc.kube import Kube, Obj, condition, is_true, labels_of
from kbc.kueue import (
    CLUSTER_QUEUE_NAME_LABEL,
    EXCEEDS_MAX_QUOTA_REASONS,
    Member,
    Preemption,
    PriorityFactory,
    QueueFactory,
    Queues,
    Quota,
    Usage,
    admission,
    flavor_usage,
    hold_suspended,
    is_pending,
    set_quota,
    wait_admitted,
    wait_cluster_queue,
    wait_pending,
    wait_usage,
    workload_counts,
)
from kbc.labels import GPU
from kbc.workloads import job
from suites._preempting import expect_preempted_by, expect_queued

pytestmark = [pytest.mark.cohort, pytest.mark.kueue, allure.epic("Kueue"), allure.feature("cohort")]


def held_at_nominal(workload: Obj) -> str | None:
    """A wait's early failure: Kueue refused the workload because it exceeds what its queue may ever use."""
    cond = condition(workload, "QuotaReserved")
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


# --- 1. borrowing ---------------------------------------------------------------------------------------


@pytest.fixture
def gpus_to_lend(make_kueue_queues: QueueFactory) -> Queues:
    """A cohort: the lender holds 6 GPUs it does not use, the borrower 2."""
    return make_kueue_queues(
        members={"lender": Member({"cpu": "8", GPU: "6"}), "borrower": Member({"cpu": "8", GPU: "2"})}
    )


@allure.story(
    "a borrower is admitted beyond its nominal GPU quota with the idle quota of a lender in its cohort"
)
def test_borrower_runs_on_idle_quota_lent_by_its_cohort(
    kube: Kube, namespace: str, gpus_to_lend: Queues
) -> None:
    cohort = gpus_to_lend
    flavor = cohort.flavor
    borrower_cq, lender_cq = cohort.cluster_queues["borrower"], cohort.cluster_queues["lender"]
    with allure.step("submit 4 pods x 1 GPU to the borrower, whose nominal quota is 2 GPUs"):
        name = expect_queued(
            kube, namespace, job("borrows", pods=4, gpus=1, queue=cohort.local_queues["borrower"])
        )
    with allure.step("the Workload is admitted by the borrower's ClusterQueue"):
        (admitted,) = wait_admitted(kube, namespace, name, fail=held_at_nominal)
        podset = admission(admitted)["podSetAssignments"][0]
        assert podset["flavors"][GPU] == flavor, podset
        assert podset["resourceUsage"][GPU] == "4", f"the Workload should account 4 GPUs: {podset}"
    with allure.step("the borrower's ClusterQueue reports 4 GPUs used, 2 of them borrowed"):
        cq = wait_usage(kube, borrower_cq, flavor, GPU, total="4", borrowed="2")
        reserved = flavor_usage(cq, flavor, GPU, reserved=True)
        assert reserved == Usage.of("4", "2"), f"flavorsReservation should match: {reserved}"
        cpu = flavor_usage(cq, flavor, "cpu")
        assert cpu == Usage.of("400m", "0"), f"4 pods x 100m CPU fit the nominal 8 CPUs, none borrowed: {cpu}"
        counts = workload_counts(cq)
        assert (counts.admitted, counts.reserving, counts.pending) == (1, 1, 0), counts
        lender = kube.get(apis.CLUSTER_QUEUE, lender_cq)
        assert flavor_usage(lender, flavor, GPU).total == 0, (
            "lent quota is accounted to the borrower, not the lender: "
            f"lender shows {flavor_usage(lender, flavor, GPU)}"
        )
    with allure.step("all 4 pods are bound to nodes with allocatable GPUs and Running"):
        pods = wait_job_pods_running(kube, namespace, "borrows", 4)
        gpu_nodes = gpu_node_names(kube)
        assert all(node_of(p) in gpu_nodes for p in pods), [node_of(p) for p in pods]
        for pod in pods:
            assert labels_of(pod).get(CLUSTER_QUEUE_NAME_LABEL) == borrower_cq, labels_of(pod)


# --- 2. borrowingLimit ------------------------------------------------------------------------------------


@pytest.fixture
def capped_borrower(make_kueue_queues: QueueFactory) -> Queues:
    """A cohort: the lender holds 800m idle CPU; the borrower has 200m nominal and may borrow at most 200m.

    In millicores, so that the pods that fit also run where CPUs are real (kind's workers)."""
    return make_kueue_queues(
        members={
            "lender": Member({"cpu": "800m"}),
            "borrower": Member({"cpu": Quota("200m", borrowing_limit="200m")}),
        }
    )


@allure.story(
    "borrowingLimit caps borrowing: a workload over nominal + limit waits although the lender is idle"
)
def test_borrowing_limit_holds_back_what_exceeds_it(
    kube: Kube, namespace: str, capped_borrower: Queues
) -> None:
    cohort = capped_borrower
    flavor = cohort.flavor
    borrower_cq, lender_cq = cohort.cluster_queues["borrower"], cohort.cluster_queues["lender"]
    borrower_queue = cohort.local_queues["borrower"]
    with allure.step(
        "submit 3 pods x 200m CPU (600m) to the borrower: more than nominal 200m + borrowingLimit 200m"
    ):
        too_big = expect_queued(kube, namespace, job("too-big", pods=3, cpu="200m", queue=borrower_queue))
        (pending,) = wait_pending(kube, namespace, too_big)
    with allure.step("Kueue says it exceeds the borrower's maximum capacity of 400m CPU"):
        cond = condition(pending, "QuotaReserved")
        assert cond is not None and cond["reason"] in EXCEEDS_MAX_QUOTA_REASONS, cond
        expected = (
            f"couldn't assign flavors to pod set main: insufficient quota for cpu in flavor {flavor}, "
            "previously considered podsets requests (0) + current podset request (600m) > "
            "maximum capacity (400m)"
        )
        assert cond["message"] == expected, f"expected {expected!r}, got {cond['message']!r}"
    with allure.step("it stays suspended with zero pods for the consistency window while the lender is idle"):
        cond = hold_suspended(kube, namespace, "too-big", too_big)
        assert cond["message"] == expected, f"expected {expected!r}, got {cond['message']!r}"
        lender = kube.get(apis.CLUSTER_QUEUE, lender_cq)
        assert flavor_usage(lender, flavor, "cpu").total == 0 and workload_counts(lender).admitted == 0, (
            f"the lender should be idle, with all 800m CPU to lend: {lender.get('status')}"
        )
    with allure.step("2 pods x 200m CPU (400m: nominal 200m + the whole limit 200m) are admitted and run"):
        fits = expect_queued(kube, namespace, job("fits", pods=2, cpu="200m", queue=borrower_queue))
        wait_admitted(kube, namespace, fits, fail=held_at_nominal)
        wait_usage(kube, borrower_cq, flavor, "cpu", total="400m", borrowed="200m")
        wait_job_pods_running(kube, namespace, "fits", 2)
    with allure.step("the 600m workload is still pending; the ClusterQueue counts 1 admitted, 1 pending"):
        wait_cluster_queue(
            kube,
            borrower_cq,
            what=f"ClusterQueue {borrower_cq} to count 1 admitted and 1 pending workload",
            until=lambda cq: (workload_counts(cq).admitted, workload_counts(cq).pending) == (1, 1),
        )
        held = kube.get(apis.WORKLOAD, too_big, namespace)
        assert is_pending(held) and not is_true(held, "Admitted"), held.get("status")


@pytest.fixture
def limited_lender(make_kueue_queues: QueueFactory) -> Queues:
    """A cohort: the lender holds 4 GPUs and lends at most 1 (``lendingLimit``); the borrower has 1."""
    return make_kueue_queues(
        members={
            "lender": Member({"cpu": "8", GPU: Quota("4", lending_limit="1")}),
            "borrower": Member({"cpu": "8", GPU: "1"}),
        }
    )


@allure.story(
    "lendingLimit caps what a ClusterQueue lends: a borrower needing more waits although the lender is idle, "
    "and raising the limit admits it"
)
def test_lending_limit_caps_what_the_lender_lends_and_raising_it_admits_the_borrower(
    kube: Kube, namespace: str, limited_lender: Queues
) -> None:
    cohort = limited_lender
    flavor = cohort.flavor
    borrower_cq, lender_cq = cohort.cluster_queues["borrower"], cohort.cluster_queues["lender"]
    with allure.step(
        "the borrower submits 3 pods x 1 GPU: its own 1 GPU and 2 borrowed, where the idle lender lends 1"
    ):
        borrower = expect_queued(
            kube, namespace, job("borrower", pods=3, gpus=1, queue=cohort.local_queues["borrower"])
        )
        wait_pending(kube, namespace, borrower)
    with allure.step("it stays suspended with zero pods for the consistency window while the lender is idle"):
        cond = hold_suspended(kube, namespace, "borrower", borrower)
        lender = kube.get(apis.CLUSTER_QUEUE, lender_cq)
        assert flavor_usage(lender, flavor, GPU).total == 0 and workload_counts(lender).admitted == 0, (
            f"the lender should be idle, its 4 GPUs unused: {lender.get('status')}"
        )
        allure.attach(str(cond), name="why Kueue holds the borrower")
    with allure.step("the lender's lendingLimit is raised to 2: the borrower is admitted, borrowing 2"):
        set_quota(kube, lender_cq, flavor, GPU, lending_limit="2")
        # No early failure on held_at_nominal: its "> maximum capacity" is Kueue's word from before the raise.
        wait_admitted(kube, namespace, borrower)
        wait_usage(kube, borrower_cq, flavor, GPU, total="3", borrowed="2")
        wait_job_pods_running(kube, namespace, "borrower", 3)


# --- 3. reclaim -------------------------------------------------------------------------------------------


@pytest.fixture
def reclaiming_lender(make_kueue_queues: QueueFactory) -> Queues:
    """A cohort: the lender (4 GPUs) may reclaim from any borrower; the borrower has 2 GPUs.

    Kueue applies the preempting Workload's ClusterQueue policy, so reclaimWithinCohort is on the lender.
    """
    return make_kueue_queues(
        members={
            "lender": Member({"cpu": "8", GPU: "4"}, preemption=Preemption(reclaim_within_cohort="Any")),
            "borrower": Member({"cpu": "8", GPU: "2"}),
        }
    )


@allure.story("a lender reclaims its lent GPUs: the borrower is evicted and suspended, the lender's Job runs")
def test_lender_reclaims_lent_quota_by_evicting_the_borrower(
    kube: Kube, namespace: str, reclaiming_lender: Queues
) -> None:
    cohort = reclaiming_lender
    flavor = cohort.flavor
    borrower_cq, lender_cq = cohort.cluster_queues["borrower"], cohort.cluster_queues["lender"]
    with allure.step("the borrower runs 6 pods x 1 GPU: its own 2 GPUs and 4 borrowed from the idle lender"):
        borrower = expect_queued(
            kube, namespace, job("borrower", pods=6, gpus=1, queue=cohort.local_queues["borrower"])
        )
        wait_admitted(kube, namespace, borrower, fail=held_at_nominal)
        wait_usage(kube, borrower_cq, flavor, GPU, total="6", borrowed="4")
        wait_job_pods_running(kube, namespace, "borrower", 6)
    with allure.step("the lender submits 2 pods x 1 GPU, within its nominal 4"):
        lender = expect_queued(
            kube, namespace, job("lender", pods=2, gpus=1, queue=cohort.local_queues["lender"])
        )
    with allure.step("the borrower's Workload is Evicted (Preempted) and Preempted (InCohortReclamation)"):
        victim, expected = expect_preempted_by(
            kube,
            namespace,
            borrower,
            "InCohortReclamation",
            "borrower",
            preemptor=lender,
            queues=cohort,
            by="lender",
            of="borrower",
        )
        evicted = condition(victim, "Evicted") or {}
        assert evicted.get("message") == expected, f"expected {expected!r}, got {evicted.get('message')!r}"
    with allure.step(
        "the borrower's Job is suspended again, its pods are gone, and the Job says it was stopped"
    ):
        wait_job_suspended_without_pods(kube, namespace, "borrower")
        event = wait_event(
            kube,
            namespace,
            kind="Job",
            name="borrower",
            reason="Stopped",
            contains="Preempted to accommodate",
        )
        assert "due to reclamation within the cohort" in event["message"], event["message"]
    with allure.step("the lender's Workload is admitted and its 2 pods run on its own quota"):
        wait_admitted(kube, namespace, lender)
        wait_job_pods_running(kube, namespace, "lender", 2)
        wait_usage(kube, lender_cq, flavor, GPU, total="2", borrowed="0")
        wait_usage(kube, borrower_cq, flavor, GPU, total="0", borrowed="0")
    with allure.step("the borrower waits suspended with zero pods while the lender uses its quota"):
        wait_pending(kube, namespace, borrower)
        hold_suspended(kube, namespace, "borrower", borrower)


# --- 4. priority preemption inside one ClusterQueue -------------------------------------------------------


@pytest.fixture
def priority_queue(make_kueue_queues: QueueFactory) -> Queues:
    """One ClusterQueue (no cohort) of 4 GPUs that lets higher priority preempt lower priority."""
    return make_kueue_queues(
        members={
            "team": Member(
                {"cpu": "8", GPU: "4"},
                preemption=Preemption(within_cluster_queue="LowerPriority"),
                in_cohort=False,
            )
        }
    )


@pytest.fixture
def priorities(make_priority_classes: PriorityFactory) -> dict[str, str]:
    """WorkloadPriorityClasses low (100) and high (1000)."""
    return make_priority_classes({"low": 100, "high": 1000})


@allure.story(
    "a high-priority Job preempts a low-priority one in its ClusterQueue; the victim is readmitted later"
)
def test_higher_priority_preempts_lower_priority_within_a_cluster_queue(
    kube: Kube, namespace: str, priority_queue: Queues, priorities: dict[str, str]
) -> None:
    queue = priority_queue.local_queue
    with allure.step("a low-priority Job of 4 pods x 1 GPU fills the 4-GPU quota"):
        low = expect_queued(
            kube, namespace, job("low", pods=4, gpus=1, queue=queue, priority_class=priorities["low"])
        )
        spec = wait_admitted(kube, namespace, low)[0]["spec"]
        assert spec.get("priority") == 100, (
            f"Kueue should take spec.priority from {priorities['low']}: {spec}"
        )
        wait_job_pods_running(kube, namespace, "low", 4)
    with allure.step("a high-priority Job of 2 pods x 1 GPU arrives"):
        high_job = job("high", pods=2, gpus=1, run_for="10s", queue=queue, priority_class=priorities["high"])
        high = expect_queued(kube, namespace, high_job)
    with allure.step("the low Workload is Evicted (Preempted) and Preempted (InClusterQueue)"):
        _, expected = expect_preempted_by(
            kube,
            namespace,
            low,
            "InClusterQueue",
            "low-priority Job",
            preemptor=high,
            queues=priority_queue,
            by="team",
            of="team",
        )
    with allure.step("the low Job is suspended again and its pods are gone"):
        wait_job_suspended_without_pods(kube, namespace, "low")
        wait_event(
            kube, namespace, kind="Job", name="low", reason="Stopped", contains="Preempted to accommodate"
        )
    with allure.step("the high Workload (priority 1000) is admitted and its pods run"):
        spec = wait_admitted(kube, namespace, high)[0]["spec"]
        assert spec.get("priority") == 1000, (
            f"Kueue should take spec.priority from {priorities['high']}: {spec}"
        )
        wait_job_pods_running(kube, namespace, "high", 2)
    with allure.step("when the high Job completes, the low Workload is readmitted and runs again"):
        wait_job_complete(kube, namespace, "high")
        (readmitted,) = wait_admitted(kube, namespace, low)
        after = condition(readmitted, "Preempted")
        assert after is not None and after["status"] == "False" and after["reason"] == "QuotaReserved", after
        assert after["message"] == f"Previously: {expected}", after
        wait_job_pods_running(kube, namespace, "low", 4)
