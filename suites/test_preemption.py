"""Kueue's preemption policies a platform team chooses between, each against its control: the same state
with the policy Kueue ships by default, where nothing is preempted.

- ``borrowWithinCohort: LowerPriority``: a high-priority Job that must borrow evicts a lower-priority Job
  borrowing in another ClusterQueue of the cohort (reason ``InCohortReclaimWhileBorrowing``); with
  ``Never`` (the default) it waits while the borrower keeps the cohort's quota. ``reclaimWithinCohort``
  alone cannot do it: it applies only to a preemptor that fits its own nominal quota, and here it has none.
- ``withinClusterQueue: LowerOrNewerEqualPriority``: an older pending Job evicts a newer one of the same
  priority in its ClusterQueue (reason ``InClusterQueue``); with ``LowerPriority`` it waits.
- fair sharing's preemption strategies, on one state (Kueue's own ``TestFairPreemptions``): a borrowing
  team runs a large low-priority Workload and a small high-priority one, and another team asks for a GPU.
  Kueue's default pair, ``LessThanOrEqualToFinalShare`` first, evicts the small high-priority Workload;
  ``LessThanInitialShare`` alone evicts the large low-priority one (reason ``InCohortFairSharing``). Each
  is the other's control: its sabotage runs it under the other strategy.
"""

from __future__ import annotations

import allure
import pytest

from kbc import apis, timeouts
from kbc.jobs import wait_job_pods_running, wait_job_suspended_without_pods
from kbc.kube import Kube, Obj, condition, describe_objects, is_true, wait_for_list
from kbc.kueue import (
    Member,
    Preemption,
    PriorityFactory,
    QueueFactory,
    Queues,
    after_the_second_of,
    hold_admitted,
    hold_suspended,
    preemption_message,
    set_quota,
    wait_admitted,
    wait_pending,
    wait_usage,
)
from kbc.kueue import newer as is_newer
from kbc.kueue.settings import FAIR_SHARING, FAIR_SHARING_INITIAL_SHARE
from kbc.labels import GPU
from kbc.workloads import job
from suites._preempting import expect_preempted_by, expect_queued

pytestmark = [pytest.mark.preemption, pytest.mark.kueue, allure.epic("Kueue"), allure.feature("preemption")]

GPUS = 4


@pytest.fixture
def priorities(make_priority_classes: PriorityFactory) -> dict[str, str]:
    """WorkloadPriorityClasses low (100) and high (1000)."""
    return make_priority_classes({"low": 100, "high": 1000})


def borrowing_cohort(make_kueue_queues: QueueFactory, borrow_within_cohort: str) -> Queues:
    """A cohort: an idle pool of 4 GPUs, and two teams without GPUs of their own that borrow them; team
    ``high`` may reclaim (``Any``) and preempt while borrowing as *borrow_within_cohort* says."""
    return make_kueue_queues(
        members={
            "pool": Member({"cpu": "8", GPU: str(GPUS)}),
            "low": Member({"cpu": "8", GPU: "0"}),
            "high": Member(
                {"cpu": "8", GPU: "0"},
                preemption=Preemption(reclaim_within_cohort="Any", borrow_within_cohort=borrow_within_cohort),
            ),
        }
    )


def low_borrows_the_pool(kube: Kube, namespace: str, cohort: Queues, priorities: dict[str, str]) -> str:
    """Team low's low-priority Job borrows all 4 GPUs of the idle pool and runs; its Workload."""
    with allure.step(f"team low's low-priority Job of {GPUS} x 1 GPU borrows the idle pool's {GPUS} GPUs"):
        low = expect_queued(
            kube,
            namespace,
            job("low", pods=GPUS, gpus=1, queue=cohort.local_queues["low"], priority_class=priorities["low"]),
        )
        wait_admitted(kube, namespace, low)
        wait_usage(
            kube, cohort.cluster_queues["low"], cohort.flavor, GPU, total=str(GPUS), borrowed=str(GPUS)
        )
        wait_job_pods_running(kube, namespace, "low", GPUS)
    return low


def high_asks(kube: Kube, namespace: str, cohort: Queues, priorities: dict[str, str]) -> str:
    """Team high's high-priority Job of 4 GPUs, which it must borrow; its Workload."""
    with allure.step(f"team high's high-priority Job of {GPUS} x 1 GPU arrives: it too must borrow them all"):
        manifest = job(
            "high", pods=GPUS, gpus=1, queue=cohort.local_queues["high"], priority_class=priorities["high"]
        )
        return expect_queued(kube, namespace, manifest)


@allure.story(
    "borrowWithinCohort LowerPriority: a high-priority Job that must borrow evicts a lower-priority borrower "
    "of another ClusterQueue (InCohortReclaimWhileBorrowing) and runs"
)
def test_borrow_within_cohort_lets_a_high_priority_borrower_evict_a_lower_priority_borrower(
    kube: Kube, namespace: str, make_kueue_queues: QueueFactory, priorities: dict[str, str]
) -> None:
    cohort = borrowing_cohort(make_kueue_queues, "LowerPriority")
    low = low_borrows_the_pool(kube, namespace, cohort, priorities)
    high = high_asks(kube, namespace, cohort, priorities)
    reason = "InCohortReclaimWhileBorrowing"
    with allure.step(f"team low's Workload is Evicted (Preempted) and Preempted ({reason})"):
        expect_preempted_by(
            kube,
            namespace,
            low,
            reason,
            "low-priority borrower",
            preemptor=high,
            queues=cohort,
            by="high",
            of="low",
        )
    with allure.step("team low's Job is suspended again with its pods gone; team high's runs on the pool"):
        wait_job_suspended_without_pods(kube, namespace, "low")
        wait_admitted(kube, namespace, high)
        wait_usage(
            kube, cohort.cluster_queues["high"], cohort.flavor, GPU, total=str(GPUS), borrowed=str(GPUS)
        )
        wait_job_pods_running(kube, namespace, "high", GPUS)


@allure.story(
    "negative control, borrowWithinCohort Never (Kueue's default): the high-priority Job that must borrow "
    "waits while the lower-priority borrower keeps the cohort's GPUs"
)
def test_without_borrow_within_cohort_a_high_priority_borrower_waits(
    kube: Kube, namespace: str, make_kueue_queues: QueueFactory, priorities: dict[str, str]
) -> None:
    cohort = borrowing_cohort(make_kueue_queues, "Never")
    low = low_borrows_the_pool(kube, namespace, cohort, priorities)
    high = high_asks(kube, namespace, cohort, priorities)
    with allure.step(
        "for the consistency window team low keeps its admission and team high's Job stays suspended with "
        "zero pods"
    ):
        wait_pending(kube, namespace, high)
        hold_admitted(kube, namespace, low)
        hold_suspended(kube, namespace, "high", high)


def team_queue(make_kueue_queues: QueueFactory, within_cluster_queue: str) -> Queues:
    """One ClusterQueue of 2 GPUs (no cohort) preempting within itself as *within_cluster_queue* says."""
    return make_kueue_queues(
        members={
            "team": Member(
                {"cpu": "8", GPU: "2"},
                preemption=Preemption(within_cluster_queue=within_cluster_queue),
                in_cohort=False,
            )
        }
    )


def newer_runs_while_older_waits(kube: Kube, namespace: str, queues: Queues) -> tuple[str, str]:
    """An older 4-GPU Job waits on a 2-GPU queue, a newer 2-GPU Job of the same priority runs past it, then
    the quota is raised to 4: the older now fits the quota, not beside the newer. Their Workloads."""
    with allure.step("an older Job of 4 x 1 GPU waits: the ClusterQueue has 2"):
        older = expect_queued(kube, namespace, job("older", pods=4, gpus=1, queue=queues.local_queue))
        wait_pending(kube, namespace, older)
    with allure.step(
        "a newer Job of 2 x 1 GPU (a later second: Kueue orders by creation time to the second), of the same "
        "priority, is admitted past it and runs"
    ):
        after_the_second_of(kube.get(apis.WORKLOAD, older, namespace))
        newer = expect_queued(kube, namespace, job("newer", pods=2, gpus=1, queue=queues.local_queue))
        seen = [kube.get(apis.WORKLOAD, w, namespace) for w in (newer, older)]
        made = [w["metadata"]["creationTimestamp"] for w in seen]
        assert is_newer(*seen), f"Workload {newer} should be created after {older}: {made}"
        wait_admitted(kube, namespace, newer)
        wait_job_pods_running(kube, namespace, "newer", 2)
    with allure.step(
        "the ClusterQueue's quota is raised to 4 GPUs: the older Job fits it, but not beside the newer"
    ):
        set_quota(kube, queues.cluster_queue, queues.flavor, GPU, nominal="4")
    return older, newer


@allure.story(
    "withinClusterQueue LowerOrNewerEqualPriority: an older pending Job evicts a newer one of the same "
    "priority in its ClusterQueue (InClusterQueue) and runs"
)
def test_lower_or_newer_equal_priority_lets_an_older_job_evict_a_newer_one_of_equal_priority(
    kube: Kube, namespace: str, make_kueue_queues: QueueFactory
) -> None:
    queues = team_queue(make_kueue_queues, "LowerOrNewerEqualPriority")
    older, newer = newer_runs_while_older_waits(kube, namespace, queues)
    with allure.step("the newer Job's Workload is Evicted (Preempted) and Preempted (InClusterQueue)"):
        expect_preempted_by(
            kube,
            namespace,
            newer,
            "InClusterQueue",
            "newer Job",
            preemptor=older,
            queues=queues,
            by="team",
            of="team",
        )
    with allure.step("the newer Job is suspended with its pods gone; the older is admitted and runs"):
        wait_job_suspended_without_pods(kube, namespace, "newer")
        wait_admitted(kube, namespace, older)
        wait_job_pods_running(kube, namespace, "older", 4)


@allure.story(
    "negative control, withinClusterQueue LowerPriority: the older pending Job waits while the newer one of "
    "the same priority keeps running"
)
def test_with_lower_priority_an_older_job_waits_behind_a_newer_one_of_equal_priority(
    kube: Kube, namespace: str, make_kueue_queues: QueueFactory
) -> None:
    queues = team_queue(make_kueue_queues, "LowerPriority")
    older, newer = newer_runs_while_older_waits(kube, namespace, queues)
    with allure.step(
        "for the consistency window the newer Job keeps its admission and the older stays suspended with "
        "zero pods"
    ):
        wait_pending(kube, namespace, older)
        hold_admitted(kube, namespace, newer)
        hold_suspended(kube, namespace, "older", older)


# --- fair sharing's preemption strategies -----------------------------------------------------------------

TEAM_GPUS = 3
"""Each team's nominal GPUs: a cohort of 3 teams holds 9."""


def fair_cohort(make_kueue_queues: QueueFactory) -> Queues:
    """Kueue's own fair-preemption state (``TestFairPreemptions``): teams a, b and c of 3 GPUs each, in one
    cohort, each reclaiming from any other (under fair sharing: from a queue whose share is higher)."""
    # No preemption within a ClusterQueue: team b's high-priority Workload, once evicted, would evict its own
    # low-priority one in turn (InClusterQueue), which is not what the strategies decide (local, 2026-12-07).
    preempt = Preemption(reclaim_within_cohort="Any")
    return make_kueue_queues(
        members={
            team: Member({"cpu": "16", GPU: str(TEAM_GPUS)}, preemption=preempt) for team in ("a", "b", "c")
        }
    )


def b_borrows_and_a_asks(
    kube: Kube, namespace: str, cohort: Queues, priorities: dict[str, str]
) -> tuple[str, str, str]:
    """Team a uses its 3 GPUs; team b runs a low-priority Job of 5 and a high-priority Job of 1 (3 GPUs
    borrowed from team c, idle); team a asks for 1 more GPU. The Workloads of b-low, b-high and a's ask."""
    local = cohort.local_queues
    with allure.step("team a runs 3 x 1 GPU: its nominal 3"):
        a_full = expect_queued(kube, namespace, job("a-full", pods=3, gpus=1, queue=local["a"]))
        wait_admitted(kube, namespace, a_full)
    with allure.step(
        "team b runs a low-priority Job of 5 x 1 GPU and a high-priority Job of 1: 3 GPUs borrowed"
    ):
        b_low = expect_queued(
            kube, namespace, job("b-low", pods=5, gpus=1, queue=local["b"], priority_class=priorities["low"])
        )
        wait_admitted(kube, namespace, b_low)
        b_high = expect_queued(
            kube,
            namespace,
            job("b-high", pods=1, gpus=1, queue=local["b"], priority_class=priorities["high"]),
        )
        wait_admitted(kube, namespace, b_high)
        wait_usage(kube, cohort.cluster_queues["b"], cohort.flavor, GPU, total="6", borrowed="3")
    with allure.step("team a asks for 1 GPU more: the cohort's 9 are all in use, so Kueue must preempt"):
        a_more = expect_queued(kube, namespace, job("a-more", pods=1, gpus=1, queue=local["a"]))
    return b_low, b_high, a_more


def wait_fair_victim(
    kube: Kube, namespace: str, cohort: Queues, expected: str, spared: str, a_more: str
) -> None:
    """Kueue preempts exactly one of team b's Workloads for fair sharing, *expected*, and admits team a's
    ask; *spared* keeps its admission."""
    reason = "InCohortFairSharing"
    candidates = {expected, spared}

    def preempted(workloads: list[Obj]) -> list[Obj]:
        return [w for w in workloads if w["metadata"]["name"] in candidates and is_true(w, "Preempted")]

    with allure.step(f"Kueue preempts one of team b's Workloads ({reason}), and it is {expected}"):
        found = wait_for_list(
            kube,
            apis.WORKLOAD,
            namespace=namespace,
            until=lambda ws: bool(preempted(ws)),
            timeout=timeouts.LONG,
            what=f"Kueue to preempt one of team b's Workloads ({' or '.join(sorted(candidates))})",
            describe=describe_objects,
        )
        victims = [w["metadata"]["name"] for w in preempted(found)]
        assert victims == [expected], (
            f"Kueue preempted {victims}, not {expected}: the strategy in force chose another victim "
            f"({describe_objects(preempted(found))})"
        )
        cond = condition(preempted(found)[0], "Preempted") or {}
        path = cohort.path
        want = preemption_message(kube.get(apis.WORKLOAD, a_more, namespace), reason, path("a"), path("b"))
        assert cond.get("reason") == reason and cond.get("message") == want, f"expected {want!r}: {cond}"
    with allure.step(
        f"team a's ask is admitted, and {spared} keeps its admission for the consistency window"
    ):
        wait_admitted(kube, namespace, a_more)
        hold_admitted(kube, namespace, spared)


@pytest.mark.fair_sharing
@pytest.mark.needs(FAIR_SHARING)
@allure.story(
    "fair sharing with Kueue's default strategies (LessThanOrEqualToFinalShare first): of a borrowing team's "
    "two Workloads, the high-priority one whose eviction leaves the team's share above the preemptor's goes"
)
def test_fair_sharing_final_share_preempts_the_workload_that_keeps_the_imbalance_away(
    kube: Kube, namespace: str, make_kueue_queues: QueueFactory, priorities: dict[str, str]
) -> None:
    cohort = fair_cohort(make_kueue_queues)
    b_low, b_high, a_more = b_borrows_and_a_asks(kube, namespace, cohort, priorities)
    # Shares (borrowed over the 9 the cohort can lend): team a with its ask 1/9; team b 3/9, 2/9 without
    # b-high, 0 without b-low. Only evicting b-high leaves b's share at least a's new one.
    wait_fair_victim(kube, namespace, cohort, expected=b_high, spared=b_low, a_more=a_more)


@pytest.mark.fair_sharing
@pytest.mark.needs(FAIR_SHARING_INITIAL_SHARE)
@allure.story(
    "fair sharing with LessThanInitialShare alone: of a borrowing team's two Workloads, the lower-priority "
    "one goes, although it is the larger"
)
def test_fair_sharing_initial_share_preempts_the_lower_priority_workload_even_if_larger(
    kube: Kube, namespace: str, make_kueue_queues: QueueFactory, priorities: dict[str, str]
) -> None:
    cohort = fair_cohort(make_kueue_queues)
    b_low, b_high, a_more = b_borrows_and_a_asks(kube, namespace, cohort, priorities)
    # Team b's share now (3/9) is above team a's with its ask (1/9): any of b's Workloads may go, the lowest
    # priority first.
    wait_fair_victim(kube, namespace, cohort, expected=b_low, spared=b_high, a_more=a_more)
