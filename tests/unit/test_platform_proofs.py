"""``kbc verify``'s proofs without a cluster: probes carry nothing that forces their placement, the flavor
order Kueue routes a team's work by, what a promise depends on or why it cannot be proven, and how the
outcomes are counted."""

from __future__ import annotations

import textwrap
from pathlib import Path
from types import SimpleNamespace
from typing import Any, cast

import pytest
import yaml

from kbc.kube import hold_together
from kbc.platform import FAILS, HOLDS, NOT_PROVEN, Outcome, derive, load_platform
from kbc.platform._flavors import tolerates
from kbc.platform._outcome import not_proven
from kbc.platform._probes import probe_job
from kbc.platform._routing import earlier_flavors, flavor_order
from kbc.platform.model import Platform
from kbc.platform.promises import FLAVOR, NOMINAL, Promise
from kbc.plugins.platform import selected, tally
from kbc.supply import paths

KUEUE = "kueue.x-k8s.io/v1beta2"
GPU = "nvidia.com/gpu"
EXAMPLE = paths.repo_root() / "manifests" / "platforms" / "example"
POOLS = """\
apiVersion: conformance.kbatch.dev/v1
kind: NodePool
metadata: {name: a100}
spec:
  count: 2
  labels: {product: A100}
  allocatable: {cpu: "32", nvidia.com/gpu: "8"}
---
apiVersion: conformance.kbatch.dev/v1
kind: NodePool
metadata: {name: h100}
spec:
  count: 2
  labels: {product: H100}
  allocatable: {cpu: "32", nvidia.com/gpu: "8"}
"""


def cq(name: str, cohort: str, *flavors: tuple[str, int], borrowing: int | None = None) -> dict[str, Any]:
    """A ClusterQueue of GPU quota on *flavors* (name, nominal), in that order."""
    resources = []
    for flavor, nominal in flavors:
        quota: dict[str, Any] = {"name": GPU, "nominalQuota": nominal}
        if borrowing is not None:
            quota["borrowingLimit"] = borrowing
        resources.append({"name": flavor, "resources": [quota]})
    return {
        "apiVersion": KUEUE,
        "kind": "ClusterQueue",
        "metadata": {"name": name},
        "spec": {"cohortName": cohort, "resourceGroups": [{"coveredResources": [GPU], "flavors": resources}]},
    }


def lq(name: str, target: str) -> dict[str, Any]:
    return {
        "apiVersion": KUEUE,
        "kind": "LocalQueue",
        "metadata": {"name": name, "namespace": "ml"},
        "spec": {"clusterQueue": target},
    }


def flavors() -> list[dict[str, Any]]:
    return [
        {
            "apiVersion": KUEUE,
            "kind": "ResourceFlavor",
            "metadata": {"name": n},
            "spec": {"nodeLabels": {"product": p}},
        }
        for n, p in (("a100", "A100"), ("h100", "H100"))
    ]


def platform_of(tmp_path: Path, *objects: dict[str, Any]) -> Platform:
    root = tmp_path / "platform"
    root.mkdir()
    (root / "nodes.yaml").write_text(textwrap.dedent(POOLS))
    (root / "queues.yaml").write_text(yaml.safe_dump_all([*flavors(), *objects], sort_keys=False))
    return load_platform(root)


def by_id(promises: list[Promise]) -> dict[str, Promise]:
    return {p.id: p for p in promises}


# -- placement is Kueue's -------------------------------------------------------------------------------


def test_a_probe_carries_no_node_selector_affinity_or_toleration() -> None:
    job = probe_job("probe-x-1", step="x", queue="research", resource=GPU, units=8, size=4, priority="high")
    spec = job["spec"]["template"]["spec"]
    assert not {"nodeSelector", "affinity", "tolerations", "nodeName"} & set(spec), spec
    assert job["spec"]["parallelism"] == 2
    assert spec["containers"][0]["resources"]["requests"] == {GPU: "4"}
    assert job["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] == "research"


TAINT = {"key": GPU, "value": "present", "effect": "NoSchedule"}


@pytest.mark.parametrize(
    ("toleration", "tolerated"),
    [
        ({"key": GPU, "operator": "Exists", "effect": "NoSchedule"}, True),
        ({"key": GPU, "operator": "Exists"}, True),
        ({"key": GPU, "operator": "Equal", "value": "present", "effect": "NoSchedule"}, True),
        ({"key": GPU, "value": "present"}, True),
        ({"key": GPU, "operator": "Equal", "value": "absent"}, False),
        ({"key": GPU, "operator": "Exists", "effect": "NoExecute"}, False),
        ({"key": "other", "operator": "Exists"}, False),
        ({"operator": "Exists"}, True),
        ({"operator": "Exists", "effect": "NoExecute"}, False),
    ],
)
def test_a_flavor_s_tolerations_match_a_taint_as_kubernetes_matches_them(
    toleration: dict[str, str], tolerated: bool
) -> None:
    assert tolerates([toleration], TAINT) is tolerated


# -- the order Kueue tries flavors in, and what a promise needs ----------------------------------------


def test_the_cohort_s_flavor_order_is_the_one_its_cluster_queues_list(tmp_path: Path) -> None:
    platform = platform_of(
        tmp_path,
        cq("research", "c", ("a100", 8), ("h100", 4)),
        cq("training", "c", ("h100", 8)),
        lq("research", "research"),
        lq("training", "training"),
    )
    research = platform.cluster_queues["research"]
    order = flavor_order(platform, research, GPU)
    assert order.flavors == ("a100", "h100") and not order.conflict
    assert earlier_flavors(platform, research, research.quotas[1]) == ["a100"]
    assert (
        earlier_flavors(
            platform, platform.cluster_queues["training"], platform.cluster_queues["training"].quotas[0]
        )
        == []
    )


def test_cluster_queues_listing_flavors_in_opposite_orders_make_later_flavors_unprovable(
    tmp_path: Path,
) -> None:
    platform = platform_of(
        tmp_path,
        cq("research", "c", ("a100", 8), ("h100", 4)),
        cq("training", "c", ("h100", 8), ("a100", 4)),
        lq("research", "research"),
        lq("training", "training"),
    )
    order = flavor_order(platform, platform.cluster_queues["research"], GPU)
    assert "opposite" not in order.conflict and "the other way round" in order.conflict, order
    promises = by_id(derive(platform))
    later = promises["research/h100/nvidia.com/gpu/nominal"]
    assert "the other way round" in later.unprovable, later
    assert not promises["research/a100/nvidia.com/gpu/nominal"].unprovable


def test_idle_quota_no_team_can_fill_changes_what_a_nominal_gang_promises(tmp_path: Path) -> None:
    # pool lends a100 that no LocalQueue can fill: research's one more a100 would borrow it, and research's
    # h100 gang would go to pool's a100 first.
    platform = platform_of(
        tmp_path,
        cq("research", "c", ("a100", 8), ("h100", 4)),
        cq("pool", "c", ("a100", 8)),
        lq("research", "research"),
    )
    promises = by_id(derive(platform))
    first = promises["research/a100/nvidia.com/gpu/nominal"]
    assert first.params["waits"] is False, first
    assert "one more is not shown to wait: ClusterQueue pool lend(s) it idle quota" in first.says, first.says
    later = promises["research/h100/nvidia.com/gpu/nominal"]
    assert "ClusterQueue pool (a100) lend(s) it idle quota there that no probe can use up" in later.unprovable
    borrow = promises["research/h100/nvidia.com/gpu/borrow"]
    assert borrow.unprovable, "its gang would borrow pool's a100 before it reaches h100"


def test_a_borrowing_limit_of_zero_on_the_earlier_flavor_leaves_the_later_one_provable(
    tmp_path: Path,
) -> None:
    platform = platform_of(
        tmp_path,
        cq("research", "c", ("a100", 8), ("h100", 4), borrowing=0),
        cq("pool", "c", ("a100", 8)),
        lq("research", "research"),
    )
    promises = by_id(derive(platform))
    assert not promises["research/h100/nvidia.com/gpu/nominal"].unprovable
    assert promises["research/a100/nvidia.com/gpu/nominal"].params["waits"] is True


def test_a_local_queue_naming_a_missing_cluster_queue_is_what_the_cohort_s_promises_depend_on(
    tmp_path: Path,
) -> None:
    # training's LocalQueue names a typo: training cannot be filled, so research's "one more waits" and
    # training's own promises depend on that LocalQueue's promise (which fails), and nothing else fails.
    platform = platform_of(
        tmp_path,
        cq("research", "c", ("a100", 8)),
        cq("training", "c", ("a100", 8)),
        lq("research", "research"),
        lq("training", "trainnig"),
    )
    promises = by_id(derive(platform))
    blame = ("ml/training/local-queue",)
    assert promises["research/a100/nvidia.com/gpu/nominal"].depends_on == blame
    assert promises["training/a100/nvidia.com/gpu/nominal"].depends_on == blame
    assert not promises["research/a100/nvidia.com/gpu/borrow"].depends_on, "borrowing with the cohort idle"


def test_the_example_platform_s_promises_need_nothing_the_twin_cannot_do() -> None:
    promises = derive(load_platform(EXAMPLE))
    assert not [p.id for p in promises if p.unprovable or p.depends_on]
    nominal = [p for p in promises if p.kind == NOMINAL]
    assert all(p.params["waits"] for p in nominal)
    flavor = by_id(promises)["flavor/h100"]
    assert flavor.cluster_queue == "research" and "matches nodes it tolerates" in flavor.says


def test_an_unused_flavor_blamed_on_a_broken_local_queue_depends_on_it(tmp_path: Path) -> None:
    platform = platform_of(tmp_path, cq("training", "c", ("h100", 8)), lq("training", "trainnig"))
    promise = by_id(derive(platform))["flavor/h100"]
    assert promise.cluster_queue is None and promise.params["stranded"] == ["training"]
    assert promise.depends_on == ("ml/training/local-queue",)


# -- outcomes ---------------------------------------------------------------------------------------------


def promise(pid: str, kind: str = NOMINAL, lane: str = "cohort/c", depends: tuple[str, ...] = ()) -> Promise:
    return Promise(
        pid, kind, f"{pid} says", "research", "ml/research", lane, "queues.yaml", depends_on=depends
    )


def test_an_outcome_is_one_of_four_states_and_the_tally_names_each() -> None:
    outcomes = [
        Outcome(promise("a"), True, "ok"),
        Outcome(promise("b"), False, "admitted 9"),
        not_proven(promise("c"), "depends on b, which fails", ["b"]),
        Outcome(promise("d"), False, "the harness failed", broken=True),
    ]
    assert [o.state for o in outcomes] == [HOLDS, FAILS, NOT_PROVEN, "broken"]
    assert outcomes[2].line() == "[NOT PROVEN] c says: not proven: depends on b, which fails"
    assert tally(outcomes) == "1 of 4 promises hold, 1 fails, 1 not proven, 1 broken"
    assert tally(outcomes[:1]) == "1 of 1 promises hold"


def test_a_selected_promise_brings_what_it_depends_on_and_a_flavor_its_lane_s_nominal_gangs() -> None:
    promises = [
        promise("lq", kind="local-queue", lane="static"),
        promise("n1"),
        promise("n2"),
        promise("other", kind="borrow", depends=("lq",)),
        promise("flavor/a100", kind=FLAVOR, lane="cohort/d"),
        promise("n3", lane="cohort/d"),
    ]

    def item(p: Promise) -> pytest.Item:
        return cast(pytest.Item, SimpleNamespace(callspec=SimpleNamespace(params={"platform_promise": p})))

    assert [p.id for p in selected(promises, [item(promises[3])])] == ["lq", "other"]
    assert [p.id for p in selected(promises, [item(promises[4])])] == ["flavor/a100", "n3"]
    assert [p.id for p in selected(promises, [item(promises[1])])] == ["n1", "n2"]


def test_holding_nothing_together_holds_nothing() -> None:
    # A lane whose every gang failed has no extra to hold: this once crashed the prover with
    # "max_workers must be greater than 0".
    assert hold_together() == ()
