"""Volcano's reclaim action: between Queues by their weights (not their ``deserved``), never within one.

Against the real vc-scheduler with the preempt and reclaim actions merged into the chart's scheduler
configuration (``needs(PREEMPT_AND_RECLAIM)``; the chart runs neither), these scenarios prove that

- two Queues weighted 1 and 3: when the weight-3 queue asks for the GPUs the weight-1 queue holds,
  reclaim evicts the weight-1 queue's pods until each holds the share the proportion plugin entitles it
  to (the weighted split of the cluster's GPUs), and no further;
- the proportion plugin (the chart's) does not read a Queue's ``spec.deserved``: a Queue of weight 1
  deserving every GPU reclaims its weighted half from another of weight 1, and no more;
- reclaim never takes within one Queue: a starving vcjob, ``Inqueue`` (so a candidate of the reclaim
  action) in the Queue whose preemptable vcjob holds the only GPUs it may use, stays unbound, and nothing
  is evicted, for the consistency window. Reclaim looks for victims only among other Queues' jobs
  (``actions/reclaim/reclaim.go:195``, ``j.Queue != job.Queue``), and the same priority gives the preempt
  action no victim either. Its sabotage, ``volcano_reclaim_other_queue``, submits the starving vcjob to
  the idle Queue beside it instead, and reclaim evicts.

Found on the way (kept as is, since it is the chart's default gang plugin): reclaim serves a job
only while it is *starving*, which the gang plugin takes to mean "below its minAvailable". A single
job with minAvailable 1 in the weight-3 queue therefore reclaims one GPU and stops; demand spread
over one-GPU jobs gets the full share. ``enableJobStarving: false`` on the gang plugin would let a
single job reach the share too (it also changes what the preempt action does).
"""

from __future__ import annotations

from dataclasses import dataclass

import allure
import pytest

from kbc import apis, timeouts
from kbc.events import involved, wait_events
from kbc.gpu import all_gpus_free, wait_gpus_left_free
from kbc.jobs import gpus_held, uids
from kbc.kube import Kube, Obj, hold_list, labels_of, wait_for_list
from kbc.labels import GPU
from kbc.volcano import (
    EVICT,
    EVICTED_BY_RECLAIM,
    INQUEUE,
    QUEUE_NAME_LABEL,
    RUNNING,
    VolcanoQueueFactory,
    create_vcjob,
    describe_podgroup,
    hold_nothing_taken,
    phase,
    wait_podgroup,
    wait_podgroup_of,
    wait_vcjob_pods_running,
)
from kbc.volcano.settings import PREEMPT_AND_RECLAIM
from kbc.workloads import vcjob

pytestmark = [pytest.mark.volcano, allure.epic("Volcano")]

# Weights of the two queues in the weighted scenario, and the low job's gang minimum.
LOW_WEIGHT, HIGH_WEIGHT, LOW_MIN_AVAILABLE = 1, 3, 1
# Small CPU requests keep GPUs the only resource a queue's deserved share can run out of.
SMALL_CPU = "100m"


def queue_gpus(pods: list[Obj], queue: str) -> int:
    """GPUs held by the pods of *queue*'s jobs: bound, not finished and not being evicted."""
    return gpus_held([p for p in pods if labels_of(p).get(QUEUE_NAME_LABEL) == queue])


# -- reclaim by weight ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Side:
    """One of two Queues in a reclaim: its name, how the failure calls it, and the GPUs it must end on."""

    queue: str
    called: str
    share: int


def _reclaim_to_shares(kube: Kube, namespace: str, low: Side, high: Side, total: int) -> None:
    """*low*'s preemptable vcjob takes all *total* GPUs, *high* asks for all of them as one-GPU vcjobs, and
    reclaim evicts *low*'s pods until each Queue holds its share, no further, for the consistency window;
    every eviction is reclaim's, of *low*'s pods, and *low* keeps its gang running."""
    allure.attach(
        f"total={total} {high.called}={high.share} {low.called}={low.share}",
        name="expected shares",
        attachment_type=allure.attachment_type.TEXT,
    )
    with allure.step(f"a preemptable job in the {low.called} takes all {total} GPUs"):
        low_job = vcjob(
            "low",
            low.queue,
            replicas=total,
            min_available=LOW_MIN_AVAILABLE,
            cpu=SMALL_CPU,
            preemptable=True,
        )
        low_pg = wait_podgroup_of(kube, namespace, create_vcjob(kube, namespace, low_job))["metadata"]["name"]
        wait_vcjob_pods_running(kube, namespace, "low", total)
    with allure.step(f"the {high.called} asks for all {total} GPUs too, as {total} one-GPU jobs"):
        # One job per GPU: reclaim works for a job only while it is starving, i.e. below its gang's
        # minAvailable (actions/reclaim/reclaim.go:90,128; gang.go:207-212), so a single
        # job with minAvailable 1 would reclaim one GPU and stop (see the module docstring).
        for index in range(total):
            one = vcjob(
                f"high-{index:02d}",
                high.queue,
                replicas=1,
                min_available=1,
                cpu=SMALL_CPU,
                preemptable=False,
            )
            create_vcjob(kube, namespace, one)

    def shares(pods: list[Obj]) -> str:
        return (
            f"{low.called} holds {queue_gpus(pods, low.queue)} GPUs (its share: {low.share}), "
            f"{high.called} holds {queue_gpus(pods, high.queue)} (its share: {high.share}) of {total}"
        )

    def beyond_share(pods: list[Obj]) -> str | None:
        if queue_gpus(pods, high.queue) > high.share:
            return f"{shares(pods)}: the {high.called} got more than its weight entitles it to"
        if queue_gpus(pods, low.queue) < low.share:
            return f"{shares(pods)}: reclaim evicted the {low.called} below its weighted share"
        return None

    def at_shares(pods: list[Obj]) -> bool:
        return queue_gpus(pods, high.queue) == high.share and queue_gpus(pods, low.queue) == low.share

    with allure.step(f"reclaim evicts low's pods until the queues hold {low.share} and {high.share} GPUs"):
        wait_for_list(
            kube,
            apis.POD,
            namespace=namespace,
            until=at_shares,
            fail=beyond_share,
            describe=shares,
            timeout=timeouts.ROUNDS,
            what=f"the queues to hold their weighted shares ({low.share} and {high.share} GPUs)",
        )
    with allure.step("the shares hold for the consistency window: no further eviction, no overshoot"):
        hold_list(
            kube,
            apis.POD,
            namespace=namespace,
            holds=at_shares,
            describe=lambda pods: beyond_share(pods) or shares(pods),
            what=f"the weighted shares ({low.share} and {high.share} GPUs)",
        )
    with allure.step("the evictions are reclaim's, of low's pods only, and low keeps its gang running"):
        evicted = total - low.share

        def evicted_low(events: list[Obj]) -> set[str]:
            return {
                involved(e).get("uid", "") for e in events if involved(e).get("name", "").startswith("low-")
            }

        def evicted_high(events: list[Obj]) -> str | None:
            victims = sorted(
                {
                    involved(e).get("name", "")
                    for e in events
                    if not involved(e).get("name", "").startswith("low-")
                }
            )
            return f"pods of the {high.called} were evicted: {victims}" if victims else None

        pod_events = wait_events(
            kube,
            namespace,
            reason=EVICT,
            kind="Pod",
            until=lambda es: len(evicted_low(es)) >= evicted,
            fail=evicted_high,
            what=f"Evict events for the {evicted} reclaimed pods of vcjob low",
        )
        messages = {e.get("message") for e in pod_events}
        assert messages == {EVICTED_BY_RECLAIM}, messages
        assert all(e.get("type") == "Warning" for e in pod_events), pod_events
        pg_events = wait_events(
            kube,
            namespace,
            reason=EVICT,
            kind="PodGroup",
            until=lambda es: any(
                involved(e).get("name") == low_pg and (e.get("message") or "").endswith("reclaim") for e in es
            ),
            timeout=timeouts.SHORT,
            what=f"a Normal {EVICT} event (reclaim) on PodGroup {low_pg}",
        )
        groups = sorted({str(involved(e).get("name")) for e in pg_events})
        assert groups == [low_pg], f"only low's PodGroup may see evictions, saw: {groups}"
        low_group = kube.get(apis.PODGROUP, low_pg, namespace)
        assert phase(low_group) == RUNNING, (
            f"low keeps at least minAvailable={LOW_MIN_AVAILABLE} running, so its PodGroup stays Running:\n"
            f"{describe_podgroup(low_group)}"
        )


@pytest.mark.cohort
@pytest.mark.serial
@pytest.mark.needs(PREEMPT_AND_RECLAIM)
@allure.feature("cohort")
@allure.story(
    "a weight-3 queue reclaims GPUs from a weight-1 queue that holds them all, up to its weighted share"
)
def test_reclaim_between_queues_follows_their_weights(
    kube: Kube, namespace: str, make_volcano_queue: VolcanoQueueFactory
) -> None:
    total = all_gpus_free(kube)
    # The test oracle, not a scheduling decision: both queues ask for every GPU, more than either's share,
    # so the proportion plugin's deserved share is the plain weighted split of the cluster's GPUs
    # (proportion.go:207-250); a queue grows only while allocated + 1 GPU <= deserved, so it ends on the
    # whole GPUs below it.
    high_share = total * HIGH_WEIGHT // (LOW_WEIGHT + HIGH_WEIGHT)
    _reclaim_to_shares(
        kube,
        namespace,
        low=Side(
            make_volcano_queue("vc-low", weight=LOW_WEIGHT), f"weight-{LOW_WEIGHT} queue", total - high_share
        ),
        high=Side(
            make_volcano_queue("vc-high", weight=HIGH_WEIGHT), f"weight-{HIGH_WEIGHT} queue", high_share
        ),
        total=total,
    )


@pytest.mark.cohort
@pytest.mark.serial
@pytest.mark.needs(PREEMPT_AND_RECLAIM)
@allure.feature("cohort")
@allure.story(
    "proportion ignores a Queue's spec.deserved: a Queue deserving every GPU reclaims only its weighted half"
)
def test_proportion_ignores_a_queue_s_deserved(
    kube: Kube, namespace: str, make_volcano_queue: VolcanoQueueFactory
) -> None:
    total = all_gpus_free(kube)
    # Equal weights: proportion's deserved share is half of the GPUs whatever spec.deserved says, for it
    # computes a Queue's deserved from its weight and never reads the field (proportion.go:207-227;
    # the capacity plugin reads it, docs/suites.md).
    half = total // 2
    _reclaim_to_shares(
        kube,
        namespace,
        low=Side(make_volcano_queue("vc-holder"), "weight-1 queue holding the GPUs", total - half),
        high=Side(
            make_volcano_queue("vc-deserving", deserved={GPU: str(total)}),
            f"weight-1 queue deserving all {total} GPUs",
            half,
        ),
        total=total,
    )


# -- reclaim never within one Queue ---------------------------------------------------------------


@pytest.mark.cohort
@pytest.mark.preemption
@pytest.mark.serial
@pytest.mark.needs(PREEMPT_AND_RECLAIM)
@allure.feature("cohort")
@allure.story("reclaim never takes within one Queue: a starving vcjob there waits, nothing is evicted")
def test_reclaim_never_takes_within_one_queue(
    kube: Kube, namespace: str, make_volcano_queue: VolcanoQueueFactory
) -> None:
    own = make_volcano_queue("vc-own")
    # Idle, reclaimable and of the same weight: a Queue reclaim could serve, so that what the scenario
    # sees is reclaim staying out of one Queue, not a cluster with nowhere else to go (the sabotage
    # submits the starving vcjob here).
    make_volcano_queue("vc-idle")
    with allure.step(
        "leave exactly 2 GPUs free on one GPU node; a preemptable vcjob of Queue own takes them"
    ):
        filler = wait_gpus_left_free(kube, namespace, free=2)
        node = filler.node.name
        holder = vcjob(
            "holder",
            own,
            replicas=2,
            min_available=1,
            cpu=SMALL_CPU,
            node_selector=filler.node.selector,
            preemptable=True,
        )
        create_vcjob(kube, namespace, holder)
        before = uids(wait_vcjob_pods_running(kube, namespace, "holder", 2, node=node))
    with allure.step("a vcjob of 1 GPU in the same Queue, the same priority: Inqueue, starving, unplaced"):
        starving = vcjob(
            "starving", own, replicas=1, min_available=1, cpu=SMALL_CPU, node_selector=filler.node.selector
        )
        starving_pg = wait_podgroup_of(kube, namespace, create_vcjob(kube, namespace, starving))
        name = starving_pg["metadata"]["name"]
        # Inqueue is what makes it a candidate of the reclaim action (reclaim.go:72, job.IsPending).
        wait_podgroup(
            kube,
            namespace,
            name,
            until=lambda pg: phase(pg) == INQUEUE,
            what=f"PodGroup {name} to be {INQUEUE} (a job the reclaim action considers)",
        )

    with allure.step("for the consistency window: holder's 2 pods run on, starving's is unbound, no Evict"):
        hold_nothing_taken(
            kube,
            namespace,
            holder="holder",
            kept=before,
            holder_keeps="the holder keeping both its pods (reclaim takes only from other Queues)",
            waiter="starving",
            waiter_waits="the starving vcjob's pod unbound while its own Queue holds the GPUs",
        )
