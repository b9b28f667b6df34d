"""``kbc bench kueue-perf``'s reading of Kueue's performance configs, the objects it makes from them, and
what it refuses before anything starts, without a cluster (tests/integration/test_kueue_perf.py runs
it on one)."""

from __future__ import annotations

from pathlib import Path

import pytest

from kbc.cli import bench_perf
from kbc.cli import commands as cli
from kbc.errors import PerfConfigError
from kbc.perf import (
    Footprint,
    load_generator,
    load_rangespec,
)
from kbc.perf import _objects as objects
from tests.unit.kueue_perf_data import BASELINE, RANGESPEC, write_config


def test_kueues_baseline_reads_as_thirty_queues_and_fifteen_thousand_workloads(tmp_path: Path) -> None:
    config = load_generator(write_config(tmp_path, BASELINE))
    assert (config.cluster_queues, config.workloads) == (30, 15_000)
    assert config.workload_classes == ["small", "medium", "large"]
    # 30 queues x (10 + 2 + 0.83) creates a second; the longest stream (large) lasts 60 s.
    assert round(config.peak_creates_per_second) == 385
    assert config.generation_seconds == 60.0
    assert config.flavor.name == "rf" and config.topology is None


@pytest.mark.parametrize(
    ("change", "field", "problem"),
    [
        (
            ("nominalQuota: 20", "nominalQuotas: 20"),
            "cohorts[0].queuesSets[0].nominalQuotas",
            "is not a field",
        ),
        (
            ("request: 5", "request: five"),
            "cohorts[0].queuesSets[0].workloadsSets[1].workloads[0].request",
            "not a Kubernetes quantity",
        ),
        (
            ("reclaimWithinCohort: Any", "reclaimWithinCohort: Sometimes"),
            "cohorts[0].queuesSets[0].reclaimWithinCohort",
            "'Sometimes' is not one of",
        ),
        (("count: 350", "count: 0"), "cohorts[0].queuesSets[0].workloadsSets[0].count", "must be at least 1"),
        (("- className: cohort", "- count: 1"), "cohorts[0].className", "is missing"),
        (("runtimeMs: 200", "runtimeMs: 200\n          tasLevel: rack"), "topology", "no topology"),
    ],
)
def test_a_config_the_generator_cannot_read_names_the_file_and_the_field(
    tmp_path: Path, change: tuple[str, str], field: str, problem: str
) -> None:
    path = write_config(tmp_path, BASELINE.replace(*change, 1))
    with pytest.raises(PerfConfigError) as caught:
        load_generator(path)
    assert caught.value.path == path and caught.value.field == field, str(caught.value)
    assert problem in str(caught.value) and str(path) in str(caught.value)


def test_a_rangespec_gives_its_limits_and_the_means_its_comments_state(tmp_path: Path) -> None:
    spec = load_rangespec(write_config(tmp_path, RANGESPEC, "rangespec.yaml"))
    assert spec.max_wall_ms is not None
    assert (spec.max_wall_ms.limit, spec.max_wall_ms.published_mean) == (425_000, 351116.4)
    assert (spec.min_usage_percent["cq"].limit, spec.min_usage_percent["cq"].published_mean) == (31.6, 38.64)
    large, medium = spec.max_mean_admission_ms["large"], spec.max_mean_admission_ms["medium"]
    assert (large.limit, large.published_mean) == (46_000, 37862)
    assert (medium.limit, medium.published_mean) == (90_000, None)


def test_objects_are_named_and_labelled_as_kueues_generator_makes_them(tmp_path: Path) -> None:
    config = load_generator(write_config(tmp_path, BASELINE))
    queues = objects.queues(config)
    assert [q.name for q in queues[:2]] == ["cq-0-0-cohort-0", "cq-0-1-cohort-0"]
    assert queues[-1].name == "cq-0-5-cohort-4" and queues[-1].cohort == "cohort-4"
    cq = objects.cluster_queue(config, queues[0])
    assert cq["metadata"]["labels"][objects.CLASS_LABEL] == "cq"
    assert cq["spec"]["cohortName"] == "cohort-0"
    assert cq["spec"]["resourceGroups"][0]["flavors"][0] == {
        "name": "rf",
        "resources": [{"name": "cpu", "nominalQuota": "20", "borrowingLimit": "100"}],
    }
    assert cq["spec"]["preemption"] == {"reclaimWithinCohort": "Any", "withinClusterQueue": "LowerPriority"}
    template = queues[0].spec.workloads_sets[0].workloads[0]
    name = objects.workload_name(template, 0, 17, 0)
    wl = objects.workload(queues[0], template, name)
    assert name == "small-0-17-0" and wl["metadata"]["namespace"] == "cq-0-0-cohort-0"
    assert wl["metadata"]["labels"] == {objects.RUNNING_MS_LABEL: "200", objects.CLASS_LABEL: "small"}
    assert wl["spec"]["queueName"] == "cq-0-0-cohort-0" and wl["spec"]["priority"] == 50
    assert wl["spec"]["podSets"][0]["count"] == 1
    assert wl["spec"]["podSets"][0]["template"]["spec"]["containers"][0]["resources"] == {
        "requests": {"cpu": "1"}
    }


def test_a_topology_config_makes_kueues_nodes_and_topology_requests(tmp_path: Path) -> None:
    topology = """\
topology:
  name: dc
  levels:
  - {name: block, count: 1, nodeLabel: b}
  - {name: rack, count: 3, nodeLabel: r}
  - {name: node, count: 2, nodeLabel: kubernetes.io/hostname, capacity: {cpu: '8'}}
resourceFlavor: {name: tas-flavor, nodeLabel: tas-node-group, topologyName: dc}
"""
    balanced = "runtimeMs: 200\n" + "".join(
        f"          {line}\n"
        for line in ("podCount: 2", "tasLevel: r", "tasConstraint: balanced", "sliceSize: 1")
    )
    text = topology + BASELINE.replace("runtimeMs: 200\n", balanced)
    config = load_generator(write_config(tmp_path, text))
    assert config.topology is not None and config.topology.nodes == 6
    made = list(objects.nodes(config.topology))
    assert [n for n, _, _ in made[:3]] == ["node-b0-r0-n0", "node-b0-r0-n1", "node-b0-r1-n0"]
    _, labels, capacity = made[2]
    assert labels["r"] == "rack-1" and labels["kubernetes.io/hostname"] == "node-0"
    assert labels[objects.TAS_NODE_GROUP] == "tas" and capacity["cpu"] == "8"
    assert objects.flavor(config)["spec"] == {"nodeLabels": {"tas-node-group": "tas"}, "topologyName": "dc"}
    queue = objects.queues(config)[0]
    small = queue.spec.workloads_sets[0].workloads[0]
    pod_set = objects.workload(queue, small, "small-0-0-0")["spec"]["podSets"][0]
    assert pod_set["count"] == 2
    assert pod_set["topologyRequest"] == {"podSetSliceRequiredTopology": "r", "podSetSliceSize": 1}


def test_on_an_existing_cluster_a_run_knows_its_objects_by_name_and_refuses_what_it_cannot_do(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = load_generator(write_config(tmp_path, BASELINE))
    footprint = Footprint.of(config)
    assert len(footprint.cluster_queues) == len(footprint.namespaces) == config.cluster_queues == 30
    assert footprint.cohorts == tuple(f"cohort-{i}" for i in range(5)) and footprint.flavor == "rf"
    # Refused before any cluster is reached (there is none here): another pin set, Kueue reconfigured,
    # the kind provider.
    given = ["bench", "kueue-perf", "--config", str(tmp_path), "--output", str(tmp_path / "o")]
    existing = [*given, "--provider", "existing", "--allow-context", "staging"]
    assert cli.main([*existing, "--pins", "both"]) == 1
    assert "--provider existing measures the Kueue the cluster runs" in capsys.readouterr().err
    assert cli.main([*existing, "--new-pins-config", "kueue:clientConnection.qps=5"]) == 1
    assert "does not do on a cluster it did not create" in capsys.readouterr().err
    assert cli.main([*given, "--provider", "kind"]) == 1
    assert "runs on --provider local or existing, not kind" in capsys.readouterr().err


def test_a_config_too_large_for_the_machine_is_refused_before_anything_starts(tmp_path: Path) -> None:
    config = load_generator(write_config(tmp_path, BASELINE.replace("count: 6", "count: 600")))
    with pytest.raises(PerfConfigError) as caught:
        bench_perf.check_fits(config, cores=2, memory_gib=24)
    assert caught.value.field == "cohorts" and "--force" in str(caught.value)
    assert "makes 1500000 workloads in 3000 ClusterQueues" in str(caught.value)
    baseline = load_generator(write_config(tmp_path, BASELINE))
    (warning,) = bench_perf.check_fits(baseline, cores=2, memory_gib=24)
    assert "385 creates per second at its peak" in warning and "behind" in warning
    assert bench_perf.check_fits(baseline, cores=32, memory_gib=24) == []
    # As many workloads as Kueue's large-scale, which two cores ran in 48 minutes: said before it starts.
    large = load_generator(write_config(tmp_path, BASELINE.replace("count: 6", "count: 20")))
    estimate, behind = bench_perf.check_fits(large, cores=2, memory_gib=24)
    assert "50000 workloads in 100 ClusterQueues: creating them alone will take about 33 minutes" in estimate
    assert "behind" in behind
    with pytest.raises(PerfConfigError, match="this machine's 8 GiB hold about 28000"):
        bench_perf.check_fits(large, cores=2, memory_gib=8)


def test_the_command_refuses_a_directory_without_a_generator_and_says_what_it_takes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli.main(["bench", "kueue-perf", "--config", str(tmp_path), "--runs", "1"]) == 1
    said = capsys.readouterr().err
    assert f"{tmp_path}/generator.yaml: not found" in said and "baseline, large-scale, tas" in said
