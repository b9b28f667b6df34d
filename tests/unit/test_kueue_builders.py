"""The ClusterQueue and Cohort builders: each method writes its own field of Kueue's API and nothing else,
the manifest is a copy, and a resource group Kueue's validation would refuse is refused here, naming it."""

from __future__ import annotations

import copy
from typing import Any, cast

import pytest

from kbc import apis
from kbc.kube import Kube
from kbc.kueue import set_quota
from kbc.kueue.objects import (
    ClusterQueueBuilder,
    CohortBuilder,
    FlavorQuotas,
    Preemption,
    Quota,
    cluster_queue,
)

GPUS: FlavorQuotas = {
    "h100": {"cpu": "8", "nvidia.com/gpu": Quota("4", borrowing_limit="2", lending_limit="1")}
}
GROUP = {
    "coveredResources": ["cpu", "nvidia.com/gpu"],
    "flavors": [
        {
            "name": "h100",
            "resources": [
                {"name": "cpu", "nominalQuota": "8"},
                {"name": "nvidia.com/gpu", "nominalQuota": "4", "borrowingLimit": "2", "lendingLimit": "1"},
            ],
        }
    ],
}
BARE = {"namespaceSelector": {}, "resourceGroups": [GROUP]}


def test_a_cluster_queue_of_one_resource_group_admits_every_namespace_by_default() -> None:
    manifest = ClusterQueueBuilder("team-a").resource_group(GPUS).obj()
    assert (manifest["apiVersion"], manifest["kind"]) == (apis.CLUSTER_QUEUE.api_version, "ClusterQueue")
    assert manifest["metadata"] == {"name": "team-a"}
    assert manifest["spec"] == BARE


@pytest.mark.parametrize(
    ("method", "args", "field"),
    [
        (
            "namespace",
            ("team-a",),
            {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "team-a"}}},
        ),
        ("cohort", ("research",), {"cohortName": "research"}),
        (
            "preemption",
            (Preemption(reclaim_within_cohort="Any", within_cluster_queue="LowerPriority"),),
            {
                "preemption": {
                    "withinClusterQueue": "LowerPriority",
                    "reclaimWithinCohort": "Any",
                    "borrowWithinCohort": {"policy": "Never"},
                }
            },
        ),
        ("fair_weight", ("2",), {"fairSharing": {"weight": "2"}}),
        (
            "flavor_fungibility",
            ("TryNextFlavor", "MayStopSearch"),
            {"flavorFungibility": {"whenCanBorrow": "TryNextFlavor", "whenCanPreempt": "MayStopSearch"}},
        ),
        ("queueing_strategy", ("StrictFIFO",), {"queueingStrategy": "StrictFIFO"}),
        ("stop_policy", ("HoldAndDrain",), {"stopPolicy": "HoldAndDrain"}),
        ("admission_checks", ("provisioning", "manual"), {"admissionChecks": ["provisioning", "manual"]}),
    ],
)
def test_each_cluster_queue_method_writes_its_own_field_and_nothing_else(
    method: str, args: tuple[object, ...], field: dict[str, object]
) -> None:
    builder = ClusterQueueBuilder("team-a").resource_group(GPUS)
    assert getattr(builder, method)(*args) is builder, "each method returns the builder, to chain"
    assert builder.obj()["spec"] == {**BARE, **field}


@pytest.mark.parametrize("method", ["cohort", "preemption", "fair_weight"])
def test_a_cluster_queue_field_given_none_is_left_to_kueues_default(method: str) -> None:
    assert getattr(ClusterQueueBuilder("q").resource_group(GPUS), method)(None).obj()["spec"] == BARE


def test_a_borrowing_threshold_goes_under_borrow_within_cohort() -> None:
    spec = Preemption(borrow_within_cohort="LowerPriority", max_priority_threshold=100).to_spec()
    assert spec["borrowWithinCohort"] == {"policy": "LowerPriority", "maxPriorityThreshold": 100}


def test_resource_groups_add_up_in_order_and_the_manifest_is_a_copy() -> None:
    builder = ClusterQueueBuilder("q").resource_group(GPUS).resource_group({"spot": {"memory": "64Gi"}})
    first = builder.obj()
    assert [g["coveredResources"] for g in first["spec"]["resourceGroups"]] == [
        ["cpu", "nvidia.com/gpu"],
        ["memory"],
    ]
    first["spec"]["resourceGroups"].clear()
    assert len(builder.obj()["spec"]["resourceGroups"]) == 2, "changing a manifest never changes the builder"


def test_a_resource_group_kueue_would_refuse_is_refused_naming_the_queue_and_the_flavor() -> None:
    with pytest.raises(ValueError, match="flavor a100 of ClusterQueue q covers"):
        ClusterQueueBuilder("q").resource_group(
            {"h100": {"cpu": "1", "gpu": "1"}, "a100": {"gpu": "1", "cpu": "1"}}
        )
    with pytest.raises(ValueError, match="ClusterQueue q needs at least one flavor"):
        ClusterQueueBuilder("q").resource_group({})
    with pytest.raises(ValueError, match="ClusterQueue q needs at least one resource group"):
        ClusterQueueBuilder("q").obj()


def test_cluster_queue_is_the_builders_common_case() -> None:
    preemption = Preemption(reclaim_within_cohort="Any")
    assert cluster_queue("q", "team-a", GPUS, cohort="c", preemption=preemption, fair_sharing_weight="3") == (
        ClusterQueueBuilder("q")
        .namespace("team-a")
        .resource_group(GPUS)
        .cohort("c")
        .preemption(preemption)
        .fair_weight("3")
        .obj()
    )


def test_a_bare_cohort_is_what_a_cohort_name_makes_implicitly() -> None:
    manifest = CohortBuilder("research").obj()
    assert (manifest["apiVersion"], manifest["kind"]) == (apis.COHORT.api_version, "Cohort")
    assert (manifest["metadata"], manifest["spec"]) == ({"name": "research"}, {})


def test_each_cohort_method_writes_its_own_field() -> None:
    built = CohortBuilder("research").parent("org").resource_group(GPUS).fair_weight("2").obj()
    assert built["spec"] == {"parentName": "org", "resourceGroups": [GROUP], "fairSharing": {"weight": "2"}}
    with pytest.raises(ValueError, match="flavor a100 of Cohort research covers"):
        CohortBuilder("research").resource_group({"h100": {"cpu": "1"}, "a100": {"gpu": "1"}})


class _Queues:
    """A stand-in for the API's ClusterQueues: what ``set_quota`` reads and replaces."""

    def __init__(self, cq: dict[str, object]) -> None:
        self.cq = cq
        self.replaced: dict[str, Any] | None = None

    def get(self, kind: object, name: str) -> dict[str, object]:
        return copy.deepcopy(self.cq)

    def replace(self, obj: dict[str, object]) -> dict[str, object]:
        self.replaced = obj
        return obj


def test_set_quota_changes_only_the_fields_given_of_one_resource_in_one_flavor() -> None:
    queues = _Queues(cluster_queue("team-a", "ns", GPUS))
    set_quota(cast(Kube, queues), "team-a", "h100", "nvidia.com/gpu", lending_limit="3")
    changed = copy.deepcopy(GROUP)
    changed["flavors"][0]["resources"][1]["lendingLimit"] = "3"  # type: ignore[index]
    assert queues.replaced is not None and queues.replaced["spec"]["resourceGroups"] == [changed]


def test_set_quota_of_a_quota_the_queue_lacks_says_which() -> None:
    queues = _Queues(cluster_queue("team-a", "ns", GPUS))
    with pytest.raises(ValueError, match="ClusterQueue team-a has no quota of memory in flavor h100"):
        set_quota(cast(Kube, queues), "team-a", "h100", "memory", nominal="1Gi")
    assert queues.replaced is None
