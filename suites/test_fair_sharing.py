"""Fair sharing with Kueue: ClusterQueues in a cohort share a contended GPU pool in proportion to their
weights.

With fair sharing on (Kueue's ``fairSharing`` configuration, which these scenarios need and the
harness merges into the chart's configuration), a ClusterQueue's share is what it uses above its
nominal quota, over what the cohort can lend, divided by its weight (``spec.fairSharing.weight``).
Kueue admits toward the lowest share and preempts from the highest (``InCohortFairSharing``)
until no preemption would bring the shares closer. These scenarios prove, against the real Kueue
scheduler, that

- two teams with no GPU quota of their own, weighted 1 and 3, end up holding a pool of 8 GPUs
  in the ratio 1:3 (2 and 6 GPUs) once both ask for all of it: the weight-3 team takes GPUs from
  the weight-1 team by fair-sharing preemption, Kueue reports equal weighted shares, and the
  split holds;
- the negative control: with equal weights the same contention ends evenly (4 and 4 GPUs).

The arithmetic here only says which split is correct (weights 1:3 of 8 GPUs: 2 and 6); Kueue
makes every decision.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import allure
import pytest

from kbc import apis
from kbc.kube import Kube, Obj, condition
from kbc.kueue import (
    Member,
    Preemption,
    QueueFactory,
    Queues,
    hold_split,
    usage_of,
    wait_split,
    wait_usage,
    weighted_share,
)
from kbc.kueue.settings import FAIR_SHARING
from kbc.labels import GPU
from kbc.workloads import job

pytestmark = [
    pytest.mark.fair_sharing,
    pytest.mark.cohort,
    pytest.mark.kueue,
    pytest.mark.needs(FAIR_SHARING),
    allure.epic("Kueue"),
    allure.feature("fair_sharing"),
]

POOL = 8
"""GPUs the cohort can lend: the nominal quota of a ClusterQueue that runs nothing itself."""


@dataclass(frozen=True)
class Teams:
    queues: Queues
    a: str
    b: str
    """The two teams' ClusterQueues."""


def two_teams(make_kueue_queues: QueueFactory, weight_a: str, weight_b: str) -> Teams:
    """A cohort: a pool holding 8 GPUs that runs nothing, and teams a and b with CPU of their own but no
    GPUs, weighted *weight_a* and *weight_b*, each allowed to preempt in the cohort."""
    # Kueue reads the preempting ClusterQueue's policy; under fair sharing, reclaimWithinCohort lets it
    # take from a ClusterQueue whose share is higher.
    preempt = Preemption(reclaim_within_cohort="Any")
    queues = make_kueue_queues(
        members={
            "pool": Member({"cpu": "0", GPU: str(POOL)}),
            "team-a": Member({"cpu": "16", GPU: "0"}, preemption=preempt, fair_sharing_weight=weight_a),
            "team-b": Member({"cpu": "16", GPU: "0"}, preemption=preempt, fair_sharing_weight=weight_b),
        }
    )
    return Teams(queues, queues.cluster_queues["team-a"], queues.cluster_queues["team-b"])


def submit(kube: Kube, namespace: str, queue: str, prefix: str, count: int) -> list[str]:
    """*count* one-GPU Jobs to LocalQueue *queue* (each its own Workload, so Kueue can split them)."""
    names = [f"{prefix}-{i}" for i in range(count)]
    for name in names:
        kube.create(job(name, gpus=1, queue=queue), namespace=namespace)
    return names


def settled_elsewhere(teams: Teams, flavor: str, want: dict[str, int]) -> Callable[[list[Obj]], str | None]:
    """A wait's early failure: Kueue's weighted shares are equal while the split is not *want*, so its
    fair-sharing preemption has stopped at another split."""

    def check(cluster_queues: list[Obj]) -> str | None:
        queues = {cq["metadata"]["name"]: cq for cq in cluster_queues}
        shares = {name: weighted_share(queues.get(name)) for name in (teams.a, teams.b)}
        usage = {name: int(u.total) for name, u in usage_of(cluster_queues, shares, flavor, GPU).items()}
        if None in shares.values() or sum(usage.values()) != POOL or usage == want:
            return None
        if len(set(shares.values())) == 1:
            return (
                f"Kueue's weighted shares are equal ({shares[teams.a]} and {shares[teams.b]}) with the "
                f"teams holding {usage[teams.a]} and {usage[teams.b]} GPUs: fair sharing settled there, not "
                "at "
                f"{want[teams.a]} and {want[teams.b]} (check the ClusterQueues' spec.fairSharing.weight)"
            )
        return None

    return check


def preempted_by_fair_sharing(kube: Kube, namespace: str, local_queue: str) -> list[str]:
    """The Workloads submitted to *local_queue* that Kueue preempted for fair sharing (and that wait)."""
    found = []
    for workload in kube.list(apis.WORKLOAD, namespace=namespace):
        cond = condition(workload, "Preempted") or {}
        queued = (workload.get("spec") or {}).get("queueName") == local_queue
        if queued and cond.get("status") == "True" and cond.get("reason") == "InCohortFairSharing":
            found.append(workload["metadata"]["name"])
    return found


def contend(kube: Kube, namespace: str, teams: Teams, want: dict[str, int]) -> list[Obj]:
    """Team a fills the pool, team b asks for all of it too; return the ClusterQueues once they hold
    *want* and have kept it for the consistency window."""
    flavor = teams.queues.flavor
    with allure.step(f"team-a submits {POOL} one-GPU Jobs: with team-b idle it borrows the whole pool"):
        submit(kube, namespace, teams.queues.local_queues["team-a"], "a", POOL)
        wait_usage(kube, teams.a, flavor, GPU, total=str(POOL), borrowed=str(POOL))
    with allure.step(f"team-b submits {POOL} one-GPU Jobs of its own: both teams now ask for the whole pool"):
        submit(kube, namespace, teams.queues.local_queues["team-b"], "b", POOL)
    split = {teams.a: str(want[teams.a]), teams.b: str(want[teams.b])}
    with allure.step(
        f"Kueue preempts team-a's Workloads until team-a holds {want[teams.a]} GPUs, team-b {want[teams.b]}"
    ):
        wait_split(kube, split, flavor, GPU, fail=settled_elsewhere(teams, flavor, want))
    with allure.step("the split holds for the consistency window: nothing is preempted back and forth"):
        return hold_split(kube, split, flavor, GPU)


@pytest.mark.serial
@allure.story("two ClusterQueues weighted 1 and 3 hold a contended GPU pool 1:3 once both ask for all of it")
def test_weights_divide_a_contended_pool_in_proportion(
    kube: Kube, namespace: str, make_kueue_queues: QueueFactory
) -> None:
    teams = two_teams(make_kueue_queues, "1", "3")
    want = {teams.a: POOL // 4, teams.b: POOL * 3 // 4}
    queues = contend(kube, namespace, teams, want)
    with allure.step("Kueue reports equal weighted shares for the two teams"):
        shares = {cq["metadata"]["name"]: weighted_share(cq) for cq in queues}
        assert shares[teams.a] is not None and shares[teams.a] == shares[teams.b], (
            f"at 2 and 6 GPUs with weights 1 and 3 the weighted shares should be equal: {shares}"
        )
    with allure.step(f"the {POOL - want[teams.a]} GPUs team-a gave up went by fair-sharing preemption"):
        preempted = preempted_by_fair_sharing(kube, namespace, teams.queues.local_queues["team-a"])
        assert len(preempted) == POOL - want[teams.a], (
            f"expected {POOL - want[teams.a]} of team-a's Workloads Preempted (InCohortFairSharing), got "
            f"{sorted(preempted)}"
        )
        assert not preempted_by_fair_sharing(kube, namespace, teams.queues.local_queues["team-b"])


@pytest.mark.serial
@allure.story("negative control: with equal weights the same contention ends in an even split")
def test_equal_weights_divide_a_contended_pool_evenly(
    kube: Kube, namespace: str, make_kueue_queues: QueueFactory
) -> None:
    teams = two_teams(make_kueue_queues, "1", "1")
    contend(kube, namespace, teams, {teams.a: POOL // 2, teams.b: POOL // 2})
