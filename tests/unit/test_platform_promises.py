"""The promises derived from a platform's queue configuration: the example's, small platforms' borrowing,
quota and priority promises, topology and DRA promises, and references that name nothing."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from kbc.platform import derive, load_platform
from kbc.platform.model import Platform
from kbc.platform.promises import (
    BORROW,
    FAIR_SHARING,
    FLAVOR,
    JOB_KIND,
    KINDS,
    LOCAL_QUEUE,
    NOMINAL,
    PRIORITY,
    QUEUEING,
    QUOTA_ZERO,
    RECLAIM,
    RESOURCE_QUOTA,
    STATIC_LANE,
    TOPOLOGY,
    VOLCANO_DESERVED,
    VOLCANO_GUARANTEE,
    VOLCANO_QUEUE,
    borrowable,
    lanes,
)
from kbc.platform.prove import split
from kbc.supply import paths
from tests.unit.platform_helpers import (
    EXAMPLE,
    GPU,
    KUEUE,
    by_id,
    cluster_queue,
    flavor,
    load,
    local_queue,
    priority,
    queues,
    refused,
)

# -- promises of the example platform ---------------------------------------------------------------


@pytest.fixture(scope="module")
def example() -> Platform:
    return load_platform(EXAMPLE)


def test_the_example_platform_reads_as_documented(example: Platform) -> None:
    assert [(p.name, p.count) for p in example.pools] == [("a100", 4), ("h100", 2), ("cpu", 4)]
    assert sorted(example.cluster_queues) == ["research", "sandbox", "training"]
    assert example.workload_priorities == {"batch-low": 100, "batch-high": 1000}
    assert example.components == ["kueue"]
    assert example.warnings == [] and example.ignored == [] and example.values == {}
    assert [dict(s.patch) for s in example.settings] == [
        {"waitForPodsReady": {"timeout": "10m", "blockAdmission": False}}
    ]


def test_the_example_platform_makes_twenty_one_promises_of_every_kueue_kind(example: Platform) -> None:
    promises = derive(example)
    assert len(promises) == 21
    assert len({p.id for p in promises}) == 21, "ids are unique"
    absent = {VOLCANO_QUEUE, VOLCANO_GUARANTEE, VOLCANO_DESERVED, FAIR_SHARING, TOPOLOGY, JOB_KIND}
    assert {p.kind for p in promises} == set(KINDS) - absent, (
        "no Volcano, no fair sharing, no topology, no job kinds but Jobs"
    )
    counts = {kind: sum(p.kind == kind for p in promises) for kind in KINDS if kind not in absent}
    assert counts == {
        LOCAL_QUEUE: 3,
        FLAVOR: 2,
        RESOURCE_QUOTA: 1,
        NOMINAL: 4,
        BORROW: 4,
        RECLAIM: 2,
        PRIORITY: 2,
        QUOTA_ZERO: 1,
        QUEUEING: 2,
    }
    ids = by_id(promises)
    for pid in (
        "team-research/research/local-queue",
        "team-research/resource-quota/gpu-budget/requests.nvidia.com/gpu",
        "flavor/a100",
        "flavor/h100",
        "research/a100/nvidia.com/gpu/nominal",
        "research/a100/nvidia.com/gpu/borrow",
        "training/a100/nvidia.com/gpu/reclaim",
        "research/h100/nvidia.com/gpu/reclaim",
        "research/priority",
        "sandbox/quota-zero",
    ):
        assert pid in ids, pid
    assert promises[0].id == "team-research/research/local-queue", "static promises come first"


def test_the_example_promises_say_what_the_configuration_says(example: Platform) -> None:
    ids = by_id(derive(example))
    borrow = ids["research/a100/nvidia.com/gpu/borrow"]
    assert borrow.says == (
        "team-research/research: may borrow 8 nvidia.com/gpu of a100 from cohort shared-gpu "
        "(borrowingLimit 8): up to 24 admitted, one more waits"
    )
    assert (borrow.params["borrow"], borrow.params["total"]) == (Decimal(8), Decimal(24))
    assert borrow.source == "queues/cluster-queues.yaml, document 1 (line 4)"
    assert (borrow.cluster_queue, borrow.team) == ("research", "team-research/research")
    no_borrow = ids["training/a100/nvidia.com/gpu/borrow"]
    assert (
        "may not borrow nvidia.com/gpu of a100" in no_borrow.says and "(borrowingLimit 0)" in no_borrow.says
    )
    assert no_borrow.params["total"] == Decimal(16)
    cap = ids["team-research/resource-quota/gpu-budget/requests.nvidia.com/gpu"]
    assert cap.params["hard"] == 28 and cap.cluster_queue is None and cap.team == "team-research"
    assert cap.source == "teams/teams.yaml, document 1, item 6 (line 26)"
    assert ids["research/priority"].params["preempts"] is True
    assert ids["training/priority"].params["preempts"] is False
    reclaim = ids["training/a100/nvidia.com/gpu/reclaim"]
    assert reclaim.params["borrower"] == "research" and reclaim.params["policy"] == "Any"
    assert (reclaim.params["low"], reclaim.params["high"]) == ("batch-low", "batch-high")
    assert ids["flavor/h100"].cluster_queue == "research"
    assert ids["sandbox/quota-zero"].says == (
        "sandbox/sandbox: ClusterQueue sandbox has no quota; what it queues never starts"
    )


def test_the_example_promises_run_in_lanes(example: Platform) -> None:
    promises = derive(example)
    for promise in promises:
        if promise.kind in (LOCAL_QUEUE, RESOURCE_QUOTA):
            assert promise.lane == STATIC_LANE, promise.id
    cohort = {
        p.lane for p in promises if p.cluster_queue in ("research", "training") and p.kind != LOCAL_QUEUE
    }
    assert cohort == {"cohort/shared-gpu"}
    assert by_id(promises)["sandbox/quota-zero"].lane == "cluster-queue/sandbox"
    grouped = lanes(promises)
    assert list(grouped) == [STATIC_LANE, "cohort/shared-gpu", "cluster-queue/sandbox"]
    assert len(grouped[STATIC_LANE]) == 4 and len(grouped["cohort/shared-gpu"]) == 16
    assert lanes([]) == {STATIC_LANE: []}


# -- borrowable and promises on small platforms -----------------------------------------------------


def borrow_of(platform: Platform, name: str) -> tuple[Decimal, str]:
    cq = platform.cluster_queues[name]
    return borrowable(platform, cq, cq.quotas[0])


def test_a_borrowing_limit_below_what_the_others_lend_is_what_it_may_borrow(tmp_path: Path) -> None:
    platform = queues(
        tmp_path,
        cluster_queue("a", cohort="c", nominalQuota=4, borrowingLimit=2),
        cluster_queue("b", cohort="c", nominalQuota=8),
    )
    assert borrow_of(platform, "a") == (Decimal(2), "borrowingLimit 2")
    assert borrow_of(platform, "b") == (Decimal(4), "the others lend 4")


def test_without_a_borrowing_limit_it_may_borrow_all_the_others_nominal_quota(tmp_path: Path) -> None:
    platform = queues(
        tmp_path,
        cluster_queue("a", cohort="c", nominalQuota=4),
        cluster_queue("b", cohort="c", nominalQuota=8),
        cluster_queue("d", cohort="c", nominalQuota=3),
        cluster_queue("other-flavor", cohort="c", flavor="h100", nominalQuota=100),
        cluster_queue("other-resource", cohort="c", resource="cpu", nominalQuota=100),
        cluster_queue("other-cohort", cohort="elsewhere", nominalQuota=100),
    )
    assert borrow_of(platform, "a") == (Decimal(11), "the others lend 11")


def test_a_borrowing_limit_above_what_the_others_lend_is_capped_by_them(tmp_path: Path) -> None:
    platform = queues(
        tmp_path,
        cluster_queue("a", cohort="c", nominalQuota=4, borrowingLimit=20),
        cluster_queue("b", cohort="c", nominalQuota=8),
    )
    assert borrow_of(platform, "a") == (Decimal(8), "the others lend 8 (less than its borrowingLimit 20)")


def test_a_lenders_lending_limit_caps_what_it_lends(tmp_path: Path) -> None:
    platform = queues(
        tmp_path,
        cluster_queue("a", cohort="c", nominalQuota=4),
        cluster_queue("b", cohort="c", nominalQuota=8, lendingLimit=3),
        cluster_queue("d", cohort="c", nominalQuota=2, lendingLimit=10),
    )
    assert borrow_of(platform, "a") == (Decimal(5), "the others lend 5")
    assert platform.cluster_queues["d"].quotas[0].lendable == Decimal(2), "never more than its nominal quota"


def test_a_cohorts_own_quota_adds_to_what_may_be_borrowed(tmp_path: Path) -> None:
    cohort = cluster_queue("c", nominalQuota=6) | {"kind": "Cohort"}
    platform = queues(
        tmp_path,
        cohort,
        cluster_queue("a", cohort="c", nominalQuota=4),
        cluster_queue("b", cohort="c", nominalQuota=8),
    )
    assert platform.cohorts["c"].parent is None
    assert borrow_of(platform, "a") == (Decimal(14), "the others lend 14")


def test_a_cluster_queue_in_no_cohort_may_borrow_nothing(tmp_path: Path) -> None:
    platform = queues(
        tmp_path, cluster_queue("a", nominalQuota=4, borrowingLimit=2), cluster_queue("b", nominalQuota=8)
    )
    assert borrow_of(platform, "a") == (Decimal(0), "it is in no cohort")
    assert derive(platform) == [], "no LocalQueue and no flavor: nothing to prove"


def test_a_cluster_queue_of_memory_only_makes_no_quota_promise(tmp_path: Path) -> None:
    platform = queues(
        tmp_path,
        priority("low", 1),
        priority("high", 2),
        cluster_queue("mem", cohort="c", resource="memory", nominalQuota="64Gi"),
        cluster_queue("lender", cohort="c", resource="memory", nominalQuota="64Gi"),
        local_queue("mem", "mem"),
    )
    assert [p.id for p in derive(platform)] == ["ml/mem/local-queue"]


def test_a_cpu_quota_counts_in_whole_cores(tmp_path: Path) -> None:
    platform = queues(tmp_path, cluster_queue("cpu", resource="cpu", nominalQuota=8), local_queue("q", "cpu"))
    assert [p.id for p in derive(platform)] == [
        "ml/q/local-queue",
        "cpu/a100/cpu/nominal",
        "cpu/queueing-strategy",
    ]
    halves = queues(
        tmp_path / "halves",
        cluster_queue("cpu", resource="cpu", nominalQuota="500m"),
        local_queue("q", "cpu"),
    )
    assert [p.id for p in derive(halves)] == ["ml/q/local-queue"]


def test_a_quota_zero_cluster_queue_that_can_borrow_makes_a_borrow_promise_instead(tmp_path: Path) -> None:
    platform = queues(
        tmp_path,
        cluster_queue("zero", cohort="c", nominalQuota=0),
        cluster_queue("lender", cohort="c", nominalQuota=8, lendingLimit=4),
        local_queue("zero", "zero"),
    )
    promises = by_id(derive(platform))
    assert "zero/quota-zero" not in promises
    borrow = promises["zero/a100/nvidia.com/gpu/borrow"]
    assert (borrow.params["borrow"], borrow.params["total"]) == (Decimal(4), Decimal(4))
    assert borrow.lane == "cohort/c"
    alone = queues(tmp_path / "alone", cluster_queue("zero", nominalQuota=0), local_queue("zero", "zero"))
    assert [p.kind for p in derive(alone)] == [LOCAL_QUEUE, QUOTA_ZERO]


def test_a_local_queue_naming_a_missing_cluster_queue_still_gets_its_promise(tmp_path: Path) -> None:
    platform = queues(tmp_path, cluster_queue("real", nominalQuota=4), local_queue("lost", "ghost"))
    [promise] = [p for p in derive(platform) if p.kind == LOCAL_QUEUE]
    assert promise.id == "ml/lost/local-queue"
    assert promise.cluster_queue is None
    assert promise.params["cluster_queue"] == "ghost"
    assert promise.says == "ml/lost submits to ClusterQueue ghost, which is Active"
    # The LocalQueue may have been meant for real, which no LocalQueue reaches: real's promises are listed,
    # each depending on the LocalQueue's (which fails), so the report says what they wait on.
    stranded = [p for p in derive(platform) if p.cluster_queue == "real"]
    assert [p.kind for p in stranded] == [NOMINAL], stranded
    assert stranded[0].depends_on == ("ml/lost/local-queue",), stranded
    assert stranded[0].team == "(no LocalQueue)"


def test_a_cluster_queue_no_local_queue_reaches_makes_no_promise_when_none_is_broken(tmp_path: Path) -> None:
    platform = queues(
        tmp_path,
        cluster_queue("real", nominalQuota=4),
        cluster_queue("other", nominalQuota=2),
        local_queue("a", "other"),
    )
    assert not [p for p in derive(platform) if p.cluster_queue == "real"], (
        "real has no team: nothing to prove"
    )


def test_priority_promises_need_two_workload_priority_classes(tmp_path: Path) -> None:
    objects = [
        cluster_queue("a", nominalQuota=4, preemption={"withinClusterQueue": "LowerOrNewerEqualPriority"}),
        local_queue("a", "a"),
        priority("low", 10),
    ]
    assert not [p for p in derive(queues(tmp_path / "one", *objects)) if p.kind == PRIORITY]
    two = by_id(derive(queues(tmp_path / "two", *objects, priority("high", 100), priority("mid", 50))))
    promise = two["a/priority"]
    assert (promise.params["low"], promise.params["high"], promise.params["preempts"]) == (
        "low",
        "high",
        True,
    )
    assert "a high (100) workload evicts a low (10) one" in promise.says


def test_a_flavor_no_team_uses_is_proven_on_its_own(tmp_path: Path) -> None:
    platform = queues(tmp_path, flavor("spare"), cluster_queue("a", nominalQuota=4), local_queue("a", "a"))
    promise = by_id(derive(platform))["flavor/spare"]
    assert (promise.cluster_queue, promise.team, promise.lane) == (None, "(no team)", STATIC_LANE)


def test_reclaim_says_what_reclaim_within_cohort_does(tmp_path: Path) -> None:
    platform = queues(
        tmp_path,
        cluster_queue("lender", cohort="c", nominalQuota=8),
        cluster_queue("borrower", cohort="c", nominalQuota=4, preemption={"reclaimWithinCohort": "Any"}),
        local_queue("lender", "lender"),
        local_queue("borrower", "borrower"),
    )
    promises = by_id(derive(platform))
    never = promises["lender/a100/nvidia.com/gpu/reclaim"]
    assert never.says.endswith(
        "lender does not take it back (reclaimWithinCohort: Never): its workload waits"
    )
    assert never.params["borrower_total"] == Decimal(12)
    assert promises["borrower/a100/nvidia.com/gpu/reclaim"].says.endswith(
        "takes it back (reclaimWithinCohort: Any)"
    )


def test_a_cohort_with_a_parent_makes_no_borrow_or_reclaim_promise(tmp_path: Path) -> None:
    child = {"apiVersion": KUEUE, "kind": "Cohort", "metadata": {"name": "c"}, "spec": {"parentName": "org"}}
    platform = queues(
        tmp_path,
        child,
        cluster_queue("a", cohort="c", nominalQuota=4),
        cluster_queue("b", cohort="c", nominalQuota=8),
        local_queue("a", "a"),
        local_queue("b", "b"),
    )
    assert platform.cohorts["c"].parent == "org"
    assert {p.kind for p in derive(platform)} == {LOCAL_QUEUE, NOMINAL, QUEUEING}


def test_a_volcano_queue_s_gpu_capability_is_a_promise_proven_last(tmp_path: Path) -> None:
    queue = {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "Queue",
        "metadata": {"name": "batch"},
        "spec": {"weight": 2, "capability": {GPU: "4", "cpu": "0"}},
    }
    platform = queues(tmp_path, flavor(), cluster_queue("a", nominalQuota=4), local_queue("a", "a"), queue)
    assert platform.components == ["kueue", "volcano"]
    promises = derive(platform)
    [volcano] = [p for p in promises if p.kind == "volcano-queue"]
    assert volcano.id == "volcano/batch/capability/nvidia.com/gpu"
    assert volcano.params["capability"] == 4
    assert "a gang of 5 waits" in volcano.says
    assert list(lanes(promises))[-1] == "volcano"


@pytest.mark.parametrize(
    ("units", "size", "expected"),
    [((16, 8, (2, 8))), (24, 8, (3, 8)), (25, 8, (25, 1)), (12, 4, (3, 4)), (1, 4, (1, 1)), (16, 1, (16, 1))],
)
def test_a_probe_gang_is_made_of_pods_of_the_flavor_s_size(
    units: int, size: int, expected: tuple[int, int]
) -> None:
    assert split(units, size) == expected


def test_a_flavor_s_probe_pods_tile_its_nodes_and_its_quotas(example: Platform) -> None:
    # A100: nodes of 8, quotas 16 (+8) and 16 (+0): pods of 8. H100: nodes of 8, quotas 4 (+4) and
    # 12 (+4): pods of 4, so research's 4 and training's 12 fill the two nodes in any order.
    assert example.pod_size("a100", GPU) == 8
    assert example.pod_size("h100", GPU) == 4
    assert example.pod_size("missing", GPU) == 8
    assert example.pod_size("a100", "cpu") == 96, "no quota of it: what the nodes offer"


# -- topologies and DRA devices ---------------------------------------------------------------------

RACKS_AND_DRA = paths.repo_root() / "manifests" / "platforms" / "racks-and-dra"
DEVICE_CLASS = """\
apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata: {name: gpu.example.com}
spec:
  selectors:
  - cel: {expression: "device.driver == 'gpu.example.com'"}
"""


def test_a_topology_gives_a_promise_of_one_rack_for_the_largest_rack_and_a_dra_quota_a_nominal_one() -> None:
    platform = load_platform(RACKS_AND_DRA)
    assert platform.dra_mappings == {"example.com/gpu": ("gpu.example.com",)}
    assert [p.devices for p in platform.pools] == [0, 0, 4]
    assert platform.pod_size("dra", "example.com/gpu") == 4, "the devices a node offers divide the quota"
    promises = by_id(derive(platform))
    rack = promises["flavor/racked/topology/topology.kbatch.dev/rack"]
    assert rack.kind == TOPOLOGY and rack.depends_on == ("flavor/racked",)
    assert (rack.params["gang"], rack.params["beyond"]) == (16, 24), (
        "the largest rack holds 16; 24 fits the quota"
    )
    assert rack.params["domains"] == {"rack-a": "16", "rack-b": "16"}
    assert rack.lane == promises["training/racked/nvidia.com/gpu/nominal"].lane
    dra = promises["inference/dra/example.com/gpu/nominal"]
    assert dra.kind == NOMINAL and "a gang of 8 example.com/gpu on dra" in dra.says
    pools = {p.name: p.manifest() for p in platform.pools}
    assert pools["dra-gpus"]["spec"]["dra"]["devices"] == 4, "the twin publishes the pool's devices"


def test_a_quota_smaller_than_two_racks_promises_only_the_gang_of_one_rack(tmp_path: Path) -> None:
    files = {p.name: p.read_text() for p in RACKS_AND_DRA.glob("*.yaml")}
    files["queues.yaml"] = files["queues.yaml"].replace("nominalQuota: 24", "nominalQuota: 16")
    rack = by_id(derive(load(tmp_path, files)))["flavor/racked/topology/topology.kbatch.dev/rack"]
    assert (rack.params["gang"], rack.params["beyond"]) == (16, None)
    assert "cannot ask for more than one topology.kbatch.dev/rack holds" in rack.says


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        (
            lambda f: f.__setitem__(
                "queues.yaml", f["queues.yaml"].replace("topologyName: datacenter", "topologyName: dc")
            ),
            "ResourceFlavor racked names Topology dc (spec.topologyName), which the platform does not define "
            "(it defines: datacenter)",
        ),
        (
            lambda f: f.__setitem__(
                "queues.yaml",
                f["queues.yaml"].replace(
                    "nodeLabel: topology.kbatch.dev/rack", "nodeLabel: topology.kbatch.dev/row"
                ),
            ),
            "Topology datacenter's level topology.kbatch.dev/row is a label no node carries",
        ),
        (
            lambda f: f.__setitem__(
                "kueue-config.yaml", f["kueue-config.yaml"].replace("[gpu.example.com]", "[gpu.nvidia.com]")
            ),
            "resources.deviceClassMappings maps example.com/gpu to DeviceClass gpu.nvidia.com, which neither "
            "the platform defines nor a node pool's DRA driver provides (DeviceClasses: gpu.example.com)",
        ),
        (
            lambda f: f.update(
                {"nodes.yaml": f["nodes.yaml"].split("  dra:")[0], "class.yaml": DEVICE_CLASS}
            ),
            "ClusterQueue inference has quota of example.com/gpu, which Kueue counts in DRA devices "
            "(deviceClassMappings: gpu.example.com), but no node pool offers any",
        ),
        (
            lambda f: f.__setitem__("nodes.yaml", f["nodes.yaml"].replace("devices: 4", "devices: four")),
            "spec.dra.devices must be a positive whole number",
        ),
    ],
    ids=[
        "missing-topology",
        "level-on-no-node",
        "mapping-to-no-class",
        "dra-quota-without-devices",
        "bad-devices",
    ],
)
def test_a_broken_topology_or_dra_reference_names_the_object_and_the_fix(
    tmp_path: Path, change: Any, expected: str
) -> None:
    files = {p.name: p.read_text() for p in RACKS_AND_DRA.glob("*.yaml")}
    change(files)
    said = refused(tmp_path, files)
    assert expected in said, said
