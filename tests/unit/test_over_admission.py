"""An over-admission read and told as a finding: a cohort's use against its quota, from Kueue's status or
from its Workloads' admissions; Kueue's start-up lines as the evidence; the canary's summary line."""

from __future__ import annotations

from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path
from typing import Any, cast

import pytest

import kbc.kueue.waits
from kbc.cluster.components import Upgraded
from kbc.kube import Kube
from kbc.kueue import cohort_use, start_up_lines, watch_cohort_use
from kbc.labels import GPU
from kbc.report.canary import Canary, summary_lines
from kbc.supply.lock import load_lock


def cluster_queue(name: str, nominal: str, used: str) -> dict[str, Any]:
    return {
        "metadata": {"name": name},
        "spec": {
            "cohortName": "c1",
            "resourceGroups": [
                {"flavors": [{"name": "gpus", "resources": [{"name": GPU, "nominalQuota": nominal}]}]}
            ],
        },
        "status": {"flavorsUsage": [{"name": "gpus", "resources": [{"name": GPU, "total": used}]}]},
    }


def workload(name: str, queue: str, gpus: str) -> dict[str, Any]:
    assignment = {"flavors": {GPU: "gpus"}, "resourceUsage": {GPU: gpus}}
    return {
        "metadata": {"name": name},
        "status": {"admission": {"clusterQueue": queue, "podSetAssignments": [assignment]}},
    }


def test_a_cohort_within_its_quota_is_not_over() -> None:
    use = cohort_use([cluster_queue("lender", "6", "4"), cluster_queue("borrower", "2", "4")], "gpus", GPU)
    assert (use.total, use.capacity, use.over) == (Decimal(8), Decimal(8), False)
    assert use.describe() == "8 of 8 in use (lender 4 of 6, borrower 4 of 2)"


def test_a_cohort_committed_beyond_its_quota_is_over_from_the_workloads_whatever_the_status_says() -> None:
    queues = [cluster_queue("lender", "6", "4"), cluster_queue("borrower", "2", "4")]
    workloads = [
        workload("borrows", "borrower", "4"),
        workload("lends", "lender", "4"),
        workload("gang", "lender", "2"),
        {"metadata": {"name": "pending"}, "status": {}},
        workload("elsewhere", "other-queue", "8"),
    ]
    assert not cohort_use(queues, "gpus", GPU).over, "the status has not caught up"
    use = cohort_use(queues, "gpus", GPU, workloads)
    assert use.over and use.describe() == "10 of 8 in use (lender 6 of 6, borrower 4 of 2)"


class Queues:
    """A Kube that has the cohort's two ClusterQueues."""

    def get(self, kind: object, name: str) -> dict[str, Any]:
        quotas = {"lender": ("6", "4"), "borrower": ("2", "4")}
        return cluster_queue(name, *quotas[name])


def watched_over(monkeypatch: pytest.MonkeyPatch, *seen: list[dict[str, Any]]) -> list[int]:
    """Have the watch see the Workloads *seen*, one list a change; the indexes it took."""
    taken: list[int] = []

    def observe(*args: object, **kwargs: object) -> Iterator[list[dict[str, Any]]]:
        for index, workloads in enumerate(seen):
            taken.append(index)
            yield workloads

    monkeypatch.setattr(kbc.kueue.waits, "observe", observe)
    return taken


FULL = [workload("borrows", "borrower", "4"), workload("lends", "lender", "4")]


def test_the_watch_returns_at_the_first_change_that_takes_the_cohort_over(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    taken = watched_over(monkeypatch, FULL, [*FULL, workload("gang", "lender", "2")], FULL)
    use = watch_cohort_use(
        cast(Kube, Queues()), "ns", cluster_queues=["lender", "borrower"], flavor="gpus", resource=GPU
    )
    assert use.over and use.describe() == "10 of 8 in use (lender 6 of 6, borrower 4 of 2)"
    assert taken == [0, 1], "it should stop at the over-admission, a late one included"


def test_a_cohort_within_its_quota_for_the_whole_window_is_returned_as_it_ends(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    taken = watched_over(monkeypatch, FULL, FULL[:1])
    use = watch_cohort_use(
        cast(Kube, Queues()), "ns", cluster_queues=["lender", "borrower"], flavor="gpus", resource=GPU
    )
    assert not use.over and use.describe() == "4 of 8 in use (lender 0 of 6, borrower 4 of 2)"
    assert taken == [0, 1]


KUEUE_LOG = "\n".join(
    [
        '{"level":"info","msg":"Starting manager"}',
        '{"level":"Level(-2)","msg":"ClusterQueue create event","clusterQueue":{"name":"lender"}}',
        '{"level":"Level(-2)","msg":"Scheduling cycle starts","schedulingCycle":1}',
        '{"level":"Level(-2)","msg":"Workload assumed in the cache","schedulingCycle":1,'
        '"workload":{"name":"gang"}}',
        '{"level":"Level(-2)","msg":"ClusterQueue for workload didn\'t exist; ignored for now"}',
        '{"level":"Level(-2)","msg":"ClusterQueue create event","clusterQueue":{"name":"borrower"}}',
        '{"level":"Level(-2)","msg":"Scheduling cycle starts","schedulingCycle":9}',
    ]
)


def test_kueue_s_start_up_lines_show_what_it_knew_when_it_admitted() -> None:
    lines = start_up_lines(KUEUE_LOG)
    assert [line.split('"msg":"')[1].split('"')[0] for line in lines] == [
        "ClusterQueue create event",
        "Scheduling cycle starts",
        "Workload assumed in the cache",
        "ClusterQueue for workload didn't exist; ignored for now",
        "ClusterQueue create event",
    ], "the first cycles and the cache filling, not cycle 9"


def test_the_canary_summary_names_a_finding_first_among_its_lines() -> None:
    lock = load_lock(Path(__file__).resolve().parents[2] / "charts-lock.yaml")
    canary = Canary(
        "previous", lock, lock, findings=["over-admitted: after the upgrade the cohort holds 10 of 8"]
    )
    lines = summary_lines(canary)
    assert "FINDING: over-admitted: after the upgrade the cohort holds 10 of 8" in lines, lines


def test_the_canary_summary_says_what_the_upgrade_kept_and_what_came_and_went() -> None:
    lock = load_lock(Path(__file__).resolve().parents[2] / "charts-lock.yaml")
    kept = {"objects": 40, "admitted": 5, "pods": 9, "claims": 1, "placed": 1}
    canary = Canary("previous", lock, lock, results=[Upgraded("kueue", "v1", "v2", True)], kept=dict(kept))
    (line,) = [line for line in summary_lines(canary) if line.startswith("upgrade kueue")]
    assert line.endswith("1 DRA claims' allocations and 1 topology assignments unchanged"), line
    canary.kept.update(passing=2, passing_seconds=7)
    (line,) = [line for line in summary_lines(canary) if line.startswith("upgrade kueue")]
    assert line.endswith(
        "unchanged; 2 status changes came and went within 7s (the report's upgrade scenario lists them)"
    ), line
