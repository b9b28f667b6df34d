"""The promises of a ClusterQueue's ``queueingStrategy`` and of a Volcano Queue's ``guarantee`` and
``deserved``: read from the platform's files, with the numbers their probes use and where they came from."""

from __future__ import annotations

from pathlib import Path
from types import TracebackType
from typing import Any, cast

import yaml

from kbc.kube import Kube
from kbc.platform import NOT_PROVEN, Prover, derive
from kbc.platform.promises import LAST_LANE, QUEUEING, VOLCANO_DESERVED, VOLCANO_GUARANTEE, lanes
from tests.unit.platform_helpers import (
    GPU,
    POOL,
    by_id,
    cluster_queue,
    dump,
    flavor,
    load,
    local_queue,
    queues,
)

VOLCANO = "scheduling.volcano.sh/v1beta1"


def strategy(cq: dict[str, Any], value: str) -> dict[str, Any]:
    cq["spec"]["queueingStrategy"] = value
    return cq


def volcano_queue(name: str, **spec: Any) -> dict[str, Any]:
    return {"apiVersion": VOLCANO, "kind": "Queue", "metadata": {"name": name}, "spec": {"weight": 1, **spec}}


# -- queueingStrategy ----------------------------------------------------------------------------------


def test_a_cluster_queue_s_queueing_strategy_is_read_and_defaults_to_best_effort(tmp_path: Path) -> None:
    platform = queues(
        tmp_path,
        flavor(),
        strategy(cluster_queue("strict", nominalQuota=8), "StrictFIFO"),
        cluster_queue("default", nominalQuota=16),
        local_queue("strict", "strict"),
        local_queue("default", "default"),
    )
    assert platform.cluster_queues["strict"].queueing_strategy == "StrictFIFO"
    assert platform.cluster_queues["default"].queueing_strategy == "BestEffortFIFO"
    ids = by_id(derive(platform))
    strict, best = ids["strict/queueing-strategy"], ids["default/queueing-strategy"]
    assert (strict.kind, best.kind) == (QUEUEING, QUEUEING)
    assert strict.says == (
        "ml/strict: in strict, a workload of 8 nvidia.com/gpu that fits its idle quota waits behind the head "
        "of the queue, which does not fit, until the head goes (queueingStrategy: StrictFIFO)"
    )
    assert best.says.endswith(
        "is admitted past the head of the queue, which does not fit (queueingStrategy: BestEffortFIFO, "
        "Kueue's default)"
    )
    assert strict.params["strict"] is True and best.params["strict"] is False
    assert (strict.cluster_queue, strict.team, strict.lane) == ("strict", "ml/strict", "cluster-queue/strict")
    assert strict.source == "queues.yaml, document 2 (line 9)"
    assert strict.params["quota"] == platform.cluster_queues["strict"].quotas[0]


def test_the_head_asks_for_more_than_any_cluster_queue_can_ever_hold(tmp_path: Path) -> None:
    cohort = cluster_queue("c", nominalQuota=4) | {"kind": "Cohort"}
    platform = queues(
        tmp_path,
        flavor(),
        cohort,
        cluster_queue("a", cohort="c", nominalQuota=8),
        cluster_queue("b", cohort="c", flavor="h100", nominalQuota=16),
        local_queue("a", "a"),
    )
    promise = by_id(derive(platform))["a/queueing-strategy"]
    # Every GPU quota of the platform is 28, whatever the flavor or cohort: the head is one pod beyond.
    assert promise.params["small"] == 4 and promise.params["head"] == 32
    assert promise.params["head"] % promise.params["small"] == 0, "the head is whole probe pods"
    assert not promise.unprovable and not promise.depends_on
    assert "b/queueing-strategy" not in by_id(derive(platform)), "no team submits to b"


def test_a_cluster_queue_without_a_quota_to_admit_from_makes_no_queueing_promise(tmp_path: Path) -> None:
    platform = queues(
        tmp_path,
        flavor(),
        strategy(cluster_queue("zero", nominalQuota=0), "StrictFIFO"),
        cluster_queue("memory", resource="memory", nominalQuota="64Gi"),
        local_queue("zero", "zero"),
        local_queue("memory", "memory"),
    )
    assert not [p for p in derive(platform) if p.kind == QUEUEING]


# -- Volcano guarantee and deserved -----------------------------------------------------------------


def test_a_volcano_queue_s_gpu_guarantee_is_held_back_from_another_queue_s_job(tmp_path: Path) -> None:
    reserved = volcano_queue(
        "reserved",
        capability={GPU: "8"},
        deserved={GPU: "4"},
        guarantee={"resource": {GPU: "4", "cpu": "8"}},
    )
    other = volcano_queue("other", deserved={GPU: "2"}, guarantee={"resource": {GPU: "2"}})
    platform = queues(tmp_path, reserved, other)
    assert platform.volcano_queues["reserved"].guarantee == {GPU: "4", "cpu": "8"}
    assert platform.volcano_queues["reserved"].deserved == {GPU: "4"}
    promises = derive(platform)
    assert [p.id for p in promises] == [
        "volcano/reserved/capability/nvidia.com/gpu",
        "volcano/reserved/guarantee/nvidia.com/gpu",
        "volcano/reserved/deserved",
        "volcano/other/guarantee/nvidia.com/gpu",
        "volcano/other/deserved",
    ]
    guarantee = by_id(promises)["volcano/reserved/guarantee/nvidia.com/gpu"]
    assert guarantee.kind == VOLCANO_GUARANTEE and guarantee.lane == LAST_LANE
    # Two nodes of 8 GPUs; the two queues guarantee 6 together: another queue's job gets 10, in pods of 2.
    assert guarantee.params == {
        "queue": "reserved",
        "resource": GPU,
        "guarantee": 4,
        "guaranteed": 6,
        "total": 16,
        "others": 10,
        "size": 2,
    }
    assert guarantee.says == (
        "Volcano queue reserved holds 4 nvidia.com/gpu back from every other queue (spec.guarantee) (the "
        "platform's queues guarantee 6 in all): a job of another queue asking for all 16 of the cluster "
        "gets 10"
    )
    assert guarantee.source == "queues.yaml, document 1 (line 1)"
    assert not guarantee.unprovable
    assert list(lanes(promises)) == ["static", LAST_LANE]


def test_a_guarantee_of_cpu_alone_or_without_gpu_nodes_proves_nothing(tmp_path: Path) -> None:
    cpu_only = queues(tmp_path, volcano_queue("cpu", guarantee={"resource": {"cpu": "8"}}))
    assert derive(cpu_only) == []
    no_gpus = POOL.replace('nvidia.com/gpu: "8"', 'example.com/fpga: "2"')
    queue = volcano_queue("reserved", deserved={GPU: "4"}, guarantee={"resource": {GPU: "4"}})
    platform = load(tmp_path / "fpga", {"nodes.yaml": no_gpus, "queues.yaml": dump(queue)})
    promise = by_id(derive(platform))["volcano/reserved/guarantee/nvidia.com/gpu"]
    assert promise.unprovable == "the platform has no node offering nvidia.com/gpu to ask for"


def test_deserved_is_not_proven_saying_proportion_never_reads_it(tmp_path: Path) -> None:
    platform = queues(tmp_path, volcano_queue("team", weight=3, deserved={GPU: "4", "cpu": "16"}))
    [promise] = derive(platform)
    assert promise.id == "volcano/team/deserved" and promise.kind == VOLCANO_DESERVED
    assert promise.says == "Volcano queue team deserves 4 nvidia.com/gpu, 16 cpu (spec.deserved)"
    assert promise.lane == LAST_LANE and promise.params["plugins"] is None
    assert "proportion plugin, which the chart's scheduler configuration runs, never reads spec.deserved" in (
        promise.unprovable
    )
    assert "proportion.go:207-227" in promise.unprovable
    assert "queue team's share is what its weight (3) gives" in promise.unprovable


def test_deserved_under_the_capacity_plugin_says_reclaim_decides_and_why_it_is_not_proven(
    tmp_path: Path,
) -> None:
    conf = {
        "actions": "enqueue, allocate, backfill, reclaim",
        "tiers": [
            {"plugins": [{"name": "priority"}, {"name": "gang"}, {"name": "conformance"}]},
            {"plugins": [{"name": "predicates"}, {"name": "capacity"}, {"name": "nodeorder"}]},
        ],
    }
    values = yaml.safe_dump({"custom": {"scheduler_config_override": yaml.safe_dump(conf)}})
    queue = volcano_queue("team", deserved={GPU: "4"})
    platform = load(tmp_path, {"nodes.yaml": POOL, "queues.yaml": dump(queue), "values/volcano.yaml": values})
    [promise] = derive(platform)
    assert "capacity" in promise.params["plugins"] and "proportion" not in promise.params["plugins"]
    assert "reclaim action" in promise.unprovable and "volcano#5896" in promise.unprovable
    assert "never reads" not in promise.unprovable


class _Twin:
    """A client nothing is asked of: a promise the derivation says the twin cannot prove never runs."""

    def __enter__(self) -> _Twin:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, value: BaseException | None, tb: TracebackType | None
    ) -> None:
        return None


def test_the_prover_settles_deserved_as_not_proven_with_why_without_a_probe(tmp_path: Path) -> None:
    platform = queues(tmp_path, volcano_queue("team", deserved={GPU: "4"}))
    promises = derive(platform)
    prover = Prover(platform, lambda: cast(Kube, _Twin()), promises)
    prover.start()
    outcome = prover.result("volcano/team/deserved", timeout=30)
    assert outcome.state == NOT_PROVEN
    assert outcome.did.startswith("not proven: Volcano's proportion plugin")
