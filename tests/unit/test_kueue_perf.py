"""``kbc bench kueue-perf``'s reading of Kueue's performance configs, the objects it makes from them, what it
does when Kueue admits or evicts, and its figures, without a cluster (tests/integration/test_kueue_perf.py
runs it on one)."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from kbc.cli import bench_perf
from kbc.cli import commands as cli
from kbc.errors import KubeApiError, PerfConfigError
from kbc.perf import (
    Footprint,
    PinsComparison,
    band,
    compare,
    flag,
    load_generator,
    load_rangespec,
    render,
    render_comparison,
    summarize,
)
from kbc.perf import _objects as objects
from kbc.perf._records import (
    NEVER_PLANNED,
    OVERDUE,
    UNSEEN,
    QueueRecord,
    RunRecord,
    WorkloadRecord,
    percentile,
)
from kbc.perf._runner import ADMISSION_MANAGER, _Runner
from kbc.perf._view import history, unfinished
from kbc.supply.lock import load_lock

# Kueue's configs/baseline/generator.yaml of the pinned module, as it is written there.
BASELINE = """\
cohorts:
  - className: cohort
    count: 5
    queuesSets:
    - className: cq
      count: 6
      nominalQuota: 20
      borrowingLimit: 100
      reclaimWithinCohort: Any
      withinClusterQueue: LowerPriority
      workloadsSets:
      - count: 350
        creationIntervalMs: 100
        workloads:
        - className: small
          runtimeMs: 200
          priority: 50
          request: 1
      - count: 100
        creationIntervalMs: 500
        workloads:
        - className: medium
          runtimeMs: 500
          priority: 100
          request: 5
      - count: 50
        creationIntervalMs: 1200
        workloads:
        - className: large
          runtimeMs: 1000
          priority: 200
          request: 20
"""

# The three ways Kueue's rangespec comments give the mean a limit was set from (baseline, large-scale, tas).
RANGESPEC = """\
cmd:
  # Average value 351116.4 (+/- 0.9%), setting at +20%
  maxWallMs: 425_000

clusterQueueClassesMinUsage:
  # mean=38.64%, mean-7% rounded down to 0.1%
  cq: 31.6 #%

wlClassesMaxAvgTimeToAdmissionMs:
  large:    46_000        # 37862 / 1573 / 4.15%
  medium: 90_000
"""


def _write(tmp_path: Path, text: str, name: str = "generator.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def test_kueues_baseline_reads_as_thirty_queues_and_fifteen_thousand_workloads(tmp_path: Path) -> None:
    config = load_generator(_write(tmp_path, BASELINE))
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
    path = _write(tmp_path, BASELINE.replace(*change, 1))
    with pytest.raises(PerfConfigError) as caught:
        load_generator(path)
    assert caught.value.path == path and caught.value.field == field, str(caught.value)
    assert problem in str(caught.value) and str(path) in str(caught.value)


def test_a_rangespec_gives_its_limits_and_the_means_its_comments_state(tmp_path: Path) -> None:
    spec = load_rangespec(_write(tmp_path, RANGESPEC, "rangespec.yaml"))
    assert spec.max_wall_ms is not None
    assert (spec.max_wall_ms.limit, spec.max_wall_ms.published_mean) == (425_000, 351116.4)
    assert (spec.min_usage_percent["cq"].limit, spec.min_usage_percent["cq"].published_mean) == (31.6, 38.64)
    large, medium = spec.max_mean_admission_ms["large"], spec.max_mean_admission_ms["medium"]
    assert (large.limit, large.published_mean) == (46_000, 37862)
    assert (medium.limit, medium.published_mean) == (90_000, None)


def test_objects_are_named_and_labelled_as_kueues_generator_makes_them(tmp_path: Path) -> None:
    config = load_generator(_write(tmp_path, BASELINE))
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
    config = load_generator(_write(tmp_path, text))
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
    config = load_generator(_write(tmp_path, BASELINE))
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


class _Applies:
    """Stands in for the API client where the runner writes: records what it applies."""

    def __init__(self) -> None:
        self.applied: list[tuple[dict[str, Any], str | None, str]] = []
        self.listed: list[dict[str, Any]] = []

    def apply(self, obj: dict[str, Any], *, subresource: str | None = None, field_manager: str = "") -> Any:
        self.applied.append((obj, subresource, field_manager))
        return obj

    def list_at(self, kind: Any, *, labels: Any = None) -> tuple[list[dict[str, Any]], str]:
        return self.listed, "1"


def _workload(admitted: bool, evicted: bool = False) -> dict[str, Any]:
    conditions = [
        {"type": "QuotaReserved", "status": "True", "reason": "QuotaReserved"},
        {"type": "Admitted", "status": "True" if admitted else "False", "reason": "Admitted"},
    ]
    if evicted:
        conditions.append({"type": "Evicted", "status": "True", "reason": "Preempted"})
    return {
        "metadata": {
            "name": "small-0-0-0",
            "namespace": "cq",
            "uid": "u1",
            "resourceVersion": "7",
            "generation": 1,
        },
        "status": {"conditions": conditions, "admission": {"clusterQueue": "cq"}},
    }


def test_a_workload_finishes_its_runtime_after_its_last_admission_and_an_eviction_unreserves_it(
    tmp_path: Path,
) -> None:
    config = load_generator(_write(tmp_path, BASELINE))
    client = _Applies()
    runner = _Runner(client, config, workers=2, say=lambda _: None)  # type: ignore[arg-type]
    key = "cq/small-0-0-0"
    record = WorkloadRecord("cq", "small-0-0-0", "small", 200, due=0.0, created=1.0)
    runner.workloads[key] = record
    runner.on_workload(_workload(admitted=True), 10.0)
    assert record.admissions == [10.0] and runner.finish_heap == [(10.2, key)]

    # Evicted before its runtime ran out: the reservation goes, applied as the scheduler's own manager
    # without admission, so Kueue's admission goes with it.
    runner.on_workload(_workload(admitted=True, evicted=True), 10.1)
    runner.on_workload(_workload(admitted=True, evicted=True), 10.15)  # the same eviction, seen again
    runner.writers.shutdown(wait=True)
    (body, subresource, manager), *again = client.applied
    assert (subresource, manager) == ("status", ADMISSION_MANAGER) and again == []
    assert record.evictions == 1
    assert "admission" not in body["status"] and body["metadata"]["resourceVersion"] == "7"
    said = {c["type"]: (c["status"], c["reason"]) for c in body["status"]["conditions"]}
    assert said["QuotaReserved"] == ("False", "Pending") and said["Admitted"] == ("False", "NoReservation")
    assert said["Evicted"] == ("True", "Preempted")

    # Requeued and admitted again: its runtime starts again, and the first plan lapses.
    runner.on_workload(_workload(admitted=False), 10.3)
    runner.on_workload(_workload(admitted=True), 12.0)
    assert record.admissions == [10.0, 12.0] and record.finish_due == 12.2
    client.applied.clear()
    runner._finish(key, 10.2)
    assert client.applied == []
    runner._finish(key, 12.2)
    ((body, subresource, manager),) = client.applied
    assert (subresource, manager) == ("status", "kueue-job-controller-Finished")
    assert [(c["type"], c["status"]) for c in body["status"]["conditions"]] == [("Finished", "True")]


def test_the_figures_are_kueues_a_never_admitted_workload_counting_zero_and_usage_integrated(
    tmp_path: Path,
) -> None:
    config = load_generator(_write(tmp_path, BASELINE))
    spec = load_rangespec(_write(tmp_path, RANGESPEC, "rangespec.yaml"))
    workloads = {
        "a": WorkloadRecord("q", "a", "large", 1000, due=0.0, created=0.0, admissions=[2.0], finished=3.0),
        "b": WorkloadRecord(
            "q", "b", "large", 1000, due=0.0, created=1.0, admissions=[5.0, 9.0], evictions=1
        ),
        "c": WorkloadRecord("q", "c", "large", 1000, due=0.0, created=1.0),
    }
    queue = QueueRecord("cq-0-0-cohort-0", "cq", nominal_mcpu=20_000)
    for at, used in ((0.0, "0"), (1.0, "20"), (3.0, "0"), (4.0, "0")):
        queue.observe({"status": {"flavorsUsage": [{"resources": [{"name": "cpu", "total": used}]}]}}, at)
    record = RunRecord(0.0, 10.0, True, "done", workloads, {queue.name: queue}, [], 0)
    summary = summarize(record, config, spec)
    large = summary["workload_classes"]["large"]
    # (2 s + 8 s, the last admission after it appeared) over 3 workloads, as Kueue's recorder divides.
    assert large["mean_time_to_admission_ms"] == pytest.approx(10_000 / 3, abs=0.1)
    assert (large["admitted"], large["never_admitted"], large["evictions"]) == (2, 1, 1)
    # 20 cpu for 2 s of a 4 s window of 20 cpu nominal: 50 %.
    assert summary["cluster_queue_classes"]["cq"]["usage_percent"] == 50.0
    figures = {f["name"]: f for f in summary["figures"]}
    assert figures["wall"]["value"] == 10_000 and figures["wall"]["within_kueue_limit"] is True
    assert figures["large mean time to admission"]["ratio_to_published_mean"] == round(3333.3 / 37862, 2)
    assert figures["cq usage"]["within_kueue_limit"] is True
    assert figures["small mean time to admission"]["limit"] is None
    assert percentile([1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0], 0.9) == 9.0


def test_a_config_too_large_for_the_machine_is_refused_before_anything_starts(tmp_path: Path) -> None:
    config = load_generator(_write(tmp_path, BASELINE.replace("count: 6", "count: 600")))
    with pytest.raises(PerfConfigError) as caught:
        bench_perf.check_fits(config, cores=2, memory_gib=24)
    assert caught.value.field == "cohorts" and "--force" in str(caught.value)
    assert "makes 1500000 workloads in 3000 ClusterQueues" in str(caught.value)
    (warning,) = bench_perf.check_fits(load_generator(_write(tmp_path, BASELINE)), cores=2, memory_gib=24)
    assert "385 creates per second at its peak" in warning and "behind" in warning
    assert bench_perf.check_fits(load_generator(_write(tmp_path, BASELINE)), cores=16, memory_gib=24) == []


def test_the_command_refuses_a_directory_without_a_generator_and_says_what_it_takes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli.main(["bench", "kueue-perf", "--config", str(tmp_path), "--runs", "1"]) == 1
    said = capsys.readouterr().err
    assert f"{tmp_path}/generator.yaml: not found" in said and "baseline, large-scale, tas" in said


def test_old_against_new_compares_the_medians_of_each_figure() -> None:
    def summary(wall: float, small: float) -> dict[str, Any]:
        return {
            "figures": [
                {"name": "wall", "value": wall, "unit": "ms"},
                {"name": "small mean time to admission", "value": small, "unit": "ms"},
            ]
        }

    old = [summary(100_000, 20_000), summary(110_000, 30_000), summary(90_000, 25_000)]
    new = [summary(200_000, 25_000), summary(220_000, 25_000), summary(180_000, 25_000)]
    comparison = compare(old, new)
    assert comparison["wall"]["old"] == 100_000 and comparison["wall"]["new"] == 200_000
    assert comparison["wall"]["ratio"] == 2.0 and comparison["wall"]["old_runs"] == [100_000, 110_000, 90_000]
    assert comparison["small mean time to admission"]["ratio"] == 1.0
    (header, wall, small) = render_comparison(comparison)
    assert small.split()[-1] == "1.00"
    assert "old pins" in header and wall.split()[-3:] == ["100.0s", "200.0s", "2.00"]


def test_the_command_runs_the_pin_sets_it_is_given(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    seen: dict[str, Any] = {}

    def perf(lock: Any, config: str, runs: int, **given: Any) -> dict[str, Any]:
        seen.update(config=config, runs=runs, pins=given["pins"], force=given["force"], old=given["old_from"])
        return {"benchmark": "kueue-perf"}

    monkeypatch.setattr(bench_perf, "bench_kueue_perf", perf)
    output = str(tmp_path / "bench.jsonl")
    assert cli.main(["bench", "kueue-perf", "--runs", "2", "--output", output]) == 0
    assert seen == {"config": "baseline", "runs": 2, "pins": "new", "force": False, "old": "previous"}
    both = ["bench", "kueue-perf", "--config", "tas", "--pins", "both", "--force", "--output", output]
    assert cli.main([*both, "--upgrade-from", "git:origin/main"]) == 0
    assert seen == {"config": "tas", "runs": 3, "pins": "both", "force": True, "old": "git:origin/main"}


def _figures(wall: float, usage: float) -> dict[str, Any]:
    return {
        "figures": [
            {"name": "wall", "value": wall, "unit": "ms", "bound": "max"},
            {"name": "cq usage", "value": usage, "unit": "%", "bound": "min"},
        ]
    }


def test_a_figure_worse_than_the_band_of_its_calibration_is_flagged_and_better_never_is() -> None:
    calibration = band([_figures(100_000, 50.0), _figures(120_000, 52.0), _figures(110_000, 51.0)])
    # (120 - 100) / 110 apart: a wall time 18 % longer is within it; 25 % longer is not.
    assert calibration == {"wall": 0.182, "cq usage": 0.039}
    old = [_figures(100_000, 50.0)]
    assert flag(compare(old, [_figures(118_000, 50.0)]), calibration) == {}
    flagged = flag(compare(old, [_figures(125_000, 50.0)]), calibration)
    assert list(flagged) == ["wall"] and "x1.25; the band is 18%" in flagged["wall"]
    # Usage is bounded below: lower is worse; a band narrower than the floor gets the floor (10 %).
    assert list(flag(compare(old, [_figures(100_000, 44.0)]), calibration)) == ["cq usage"]
    assert flag(compare(old, [_figures(100_000, 46.0)]), calibration) == {}
    assert flag(compare(old, [_figures(50_000, 80.0)]), calibration) == {}
    with pytest.raises(ValueError, match="two runs"):
        band(old)


def test_the_canary_reads_old_against_new_from_the_benchs_lines_and_says_what_regressed(
    tmp_path: Path,
) -> None:
    old = [_figures(100_000, 50.0)]
    comparison = compare(old, [_figures(150_000, 50.0)])
    flagged = flag(comparison, {})
    result = {
        "benchmark": "kueue-perf", "config": "baseline", "runs": 1, "pins": {"old": "v1", "new": "v2"},
        "old_from": "previous", "incomplete": [], "medians": {}, "comparison": comparison,
        "band_from": "no calibration", "flagged": flagged,
    }  # fmt: skip
    runs = tmp_path / "runs.jsonl"
    lines = [json.dumps({"benchmark": "kueue-perf", "pins": "old", "run": 1}), json.dumps(result)]
    found = PinsComparison.from_lines(lines, runs)
    assert (found.old, found.new, found.held, list(found.flagged)) == ("v1", "v2", False, ["wall"])
    assert "REGRESSED" in found.headline() and "Kueue v1 → v2" in found.headline()
    assert any(line.startswith("REGRESSION wall: 100.0s on the old pins, 150.0s") for line in found.lines())
    markdown = "\n".join(found.markdown())
    assert "| wall | 100.0s | 150.0s | 1.50 | **regression** |" in markdown
    assert "| cq usage | 50.0% | 50.0% | 1.00 |  |" in markdown and str(runs) in markdown
    assert found.as_data()["held"] is False and found.as_data()["runs_file"] == str(runs)
    # Nothing worse than the band and every run complete: held; a run that did not finish is not.
    held = PinsComparison.of({**result, "comparison": compare(old, old), "flagged": {}})
    assert held.held and "held" in held.headline()
    unfinished = PinsComparison.of({**result, "flagged": {}, "incomplete": ["new pins, run 1: timed out"]})
    assert not unfinished.held and "INCOMPLETE new pins, run 1: timed out" in unfinished.lines()
    with pytest.raises(ValueError, match="no result line"):
        PinsComparison.from_lines(lines[:1])


def test_calibrating_takes_two_runs_of_the_pins_as_they_are(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "generator.yaml").write_text(BASELINE)
    given = ["bench", "kueue-perf", "--config", str(tmp_path), "--calibrate", "--output", str(tmp_path / "o")]
    assert cli.main([*given, "--runs", "1"]) == 1
    assert "--calibrate needs --runs 2 at least" in capsys.readouterr().err
    assert cli.main([*given, "--runs", "2", "--new-pins-config", "kueue:clientConnection.qps=5"]) == 1
    assert "no --new-pins-config" in capsys.readouterr().err


def test_a_calibration_of_both_pin_sets_keeps_the_wider_band_per_figure() -> None:
    lock = load_lock()
    summaries = {
        "old": [_figures(100_000, 50.0), _figures(120_000, 50.0)],
        "new": [_figures(100_000, 50.0), _figures(105_000, 60.0)],
    }
    found = bench_perf._calibration("baseline", {"old": lock, "new": lock}, summaries, {}, 2)
    assert found["band"] == {"wall": 0.182, "cq usage": 0.182}
    assert found["band_by_pins"]["old"] == {"wall": 0.182, "cq usage": 0.0}
    assert found["pins"] == "old and new" and found["runs"] == 2


def test_a_finish_lost_in_a_worker_is_shown_and_planned_again_by_the_sweep(tmp_path: Path) -> None:
    config = load_generator(_write(tmp_path, BASELINE))
    runner = _Runner(_Applies(), config, workers=2, say=lambda _: None)  # type: ignore[arg-type]
    key = "cq/small-0-0-0"
    record = WorkloadRecord("cq", "small-0-0-0", "small", 200, due=0.0, created=1.0)
    runner.workloads[key] = record
    runner.on_workload(_workload(admitted=True), 10.0)

    def lost(key: str, due: float) -> None:
        raise ValueError("a response the runner could not read")

    runner._guarded(f"finish Workload {key}", lost, key, 10.2)
    assert runner.errors == [f"finish Workload {key}: ValueError: a response the runner could not read"]
    runner.finish_heap.clear()
    runner.sweep(15.0)  # 4.8 s overdue: within the grace
    assert runner.finish_heap == [] and runner.replanned == 0
    runner.sweep(25.0)
    assert runner.finish_heap == [(25.0, key)] and runner.replanned == 1 and record.finish_due == 25.0
    assert runner.replanned_by == {OVERDUE: 1}


def _admitted_at(obj: dict[str, Any], stamp: str) -> dict[str, Any]:
    for cond in obj["status"]["conditions"]:
        if cond["type"] == "Admitted":
            cond["lastTransitionTime"] = stamp
    return obj


def test_a_readmission_the_view_never_saw_unadmitted_is_planned_and_the_sweep_plans_one_never_planned(
    tmp_path: Path,
) -> None:
    # The canary at scale (2026-11-27) left 6 workloads admitted and never finished: first seen admitted and
    # evicted at once, then admitted again, never seen unadmitted in between (a list skips states).
    config = load_generator(_write(tmp_path, BASELINE))
    runner = _Runner(_Applies(), config, workers=2, say=lambda _: None)  # type: ignore[arg-type]
    key = "cq/small-0-0-0"
    record = WorkloadRecord("cq", "small-0-0-0", "small", 200, due=0.0, created=1.0)
    runner.workloads[key] = record
    runner.on_workload(_admitted_at(_workload(admitted=True, evicted=True), "2026-11-27T17:58:52Z"), 10.0)
    assert (record.finish_due, record.unreserving) == (None, True)  # evicted: its reservation goes, no finish
    runner.writers.shutdown(wait=True)
    runner.on_workload(_admitted_at(_workload(admitted=True), "2026-11-27T17:59:10Z"), 28.0)
    assert record.admissions == [10.0, 28.0] and record.finish_due == 28.2
    # The same admission seen again (a resync's list) is not new: its plan stands.
    runner.on_workload(_admitted_at(_workload(admitted=True), "2026-11-27T17:59:10Z"), 29.0)
    assert record.admissions == [10.0, 28.0] and runner.finish_heap == [(28.2, key)]

    # Admitted with no plan at all, however the view came to miss it: the sweep plans it once the grace is
    # over, and counts it.
    record.finished = 30.0
    lost = WorkloadRecord("cq", "small-0-0-1", "small", 200, due=0.0, created=1.0)
    lost.admitted, lost.admissions = True, [40.0]
    runner.workloads["cq/small-0-0-1"] = lost
    runner.sweep(45.0)
    assert (lost.finish_due, runner.replanned) == (None, 0)
    runner.sweep(51.0)
    assert lost.finish_due == 51.0 and runner.replanned_by == {NEVER_PLANNED: 1}
    # What the view went through is the evidence of how a plan was lost (the baseline of 2026-11-28 lost 9).
    assert runner.never_planned == ["cq/small-0-0-1"]
    assert history("cq/small-0-0-0", record, 0.0, [0.5, 20.0]) == (
        "cq/small-0-0-0: 10.0s admitted evicted since 2026-11-27T17:58:52Z; 28.0s admitted since "
        "2026-11-27T17:59:10Z; the watch listed at 0.5s, 20.0s"
    )


def test_the_sweep_never_replaces_a_plan_a_writer_holds_and_waits_longer_for_an_accepted_finish(
    tmp_path: Path,
) -> None:
    """Under a backlog of writes longer than the grace, replacing queued plans made every one of them stale
    before it ran (2,649 finishes planned again in a baseline run, some never applied)."""
    config = load_generator(_write(tmp_path, BASELINE))
    client = _Applies()
    runner = _Runner(client, config, workers=2, say=lambda _: None)  # type: ignore[arg-type]
    key = "cq/small-0-0-0"
    record = WorkloadRecord("cq", "small-0-0-0", "small", 200, due=0.0, created=1.0)
    runner.workloads[key] = record
    runner.on_workload(_workload(admitted=True), 10.0)
    record.finishing = 10.2  # popped and queued behind other writes
    runner.finish_heap.clear()
    runner.sweep(60.0)
    assert runner.finish_heap == [] and runner.replanned == 0 and record.finish_due == 10.2

    # The queued write runs at last: applied, and the writer lets go of the plan.
    runner._finish(key, 10.2)
    assert [manager for _, _, manager in client.applied] == ["kueue-job-controller-Finished"]
    applied = record.finish_applied
    assert applied is not None and not _writer_holds(record)
    runner.sweep(applied + 20.0)  # the watch has not shown it yet: within the grace of an accepted finish
    assert runner.finish_heap == [] and runner.replanned == 0
    runner.sweep(applied + 31.0)
    assert runner.finish_heap == [(applied + 31.0, key)] and runner.replanned_by == {UNSEEN: 1}


def test_the_replanned_finishes_are_told_apart_a_lost_plan_from_a_lagging_watch(tmp_path: Path) -> None:
    config = load_generator(_write(tmp_path, BASELINE))

    def said(by: dict[str, int]) -> str:
        run = RunRecord(0.0, 30.0, True, "done", {}, {}, [], 0, by)
        summary = summarize(run, config, None)
        assert summary["finishes_replanned_by"] == by
        (line,) = [line for line in render(summary) if line.startswith("finishes the runner planned again")]
        return line

    # The canary at scale of 2026-11-27 (old pins) planned 11 finishes again, without saying why.
    watch_only = said({UNSEEN: 11})
    assert "accepted and not shown by the watch within 30s: 11" in watch_only
    assert "none lost" in watch_only and "report it" not in watch_only
    mixed = said({UNSEEN: 2, OVERDUE: 7, NEVER_PLANNED: 1})
    assert mixed.startswith("finishes the runner planned again: 10 (overdue with no writer holding it: 7; ")
    assert "a runner fault, not Kueue's: report it" in mixed
    run = RunRecord(
        0.0, 30.0, True, "done", {}, {}, [], 0, {NEVER_PLANNED: 1}, replanned_examples=["cq/w: …"]
    )
    assert "never planned, as the runner saw it: cq/w: …" in render(summarize(run, config, None))


def test_an_incomplete_run_names_the_workloads_admitted_and_never_finished(tmp_path: Path) -> None:
    config = load_generator(_write(tmp_path, BASELINE))
    runner = _Runner(_Applies(), config, workers=2, say=lambda _: None)  # type: ignore[arg-type]
    key = "cq/small-0-0-0"
    record = WorkloadRecord("cq", "small-0-0-0", "small", 200, due=0.0, created=1.0)
    runner.workloads[key] = record
    runner.workloads["cq/never"] = WorkloadRecord("cq", "never", "small", 200, due=0.0, created=1.0)
    runner.on_workload(_workload(admitted=True), 10.0)
    record.finishing = record.finish_due
    (said,) = unfinished(runner.workloads, 0.0, 40.0)
    assert said == (
        "cq/small-0-0-0: admitted at 10.0s; finish due at 10.2s, held by a writer, accepted by the API "
        "server at never; last seen [QuotaReserved=True, Admitted=True]; the run ended at 40.0s"
    )


def _writer_holds(record: WorkloadRecord) -> bool:
    return record.finishing is not None


def test_a_stalled_run_lists_the_workloads_and_plans_what_its_watch_missed(tmp_path: Path) -> None:
    """Once generation is done, nothing has finished for RESYNC_AFTER seconds and workloads are left, the
    runner lists them: an admission its watch never delivered is planned and counted, not waited on."""
    config = load_generator(_write(tmp_path, BASELINE))
    client = _Applies()
    runner = _Runner(client, config, workers=2, say=lambda _: None)  # type: ignore[arg-type]
    key = "cq/small-0-0-0"
    record = WorkloadRecord("cq", "small-0-0-0", "small", 200, due=0.0, created=1.0)
    runner.workloads[key] = record
    runner.unfinished = 1
    client.listed = [_workload(admitted=True)]
    runner.last_finish = 100.0
    runner.resync(120.0)  # generation still running: the watch has time
    runner.generation_done.set()
    runner.resync(120.0)  # 20 s without a finish: not stalled yet
    assert (record.finish_due, runner.watch_missed) == (None, 0)
    runner.resync(131.0)
    assert record.admissions == [131.0] and record.finish_due == 131.2 and runner.watch_missed == 1
    runner.resync(170.0)  # the same admission listed again is no news
    assert runner.watch_missed == 1 and record.admissions == [131.0]


class _Refuses(_Applies):
    """An API client whose first status writes are refused as given (a conflict, then a server error)."""

    def __init__(self, *refusals: int) -> None:
        super().__init__()
        self.refusals = list(refusals)
        self.read: list[str] = []

    def apply(self, obj: dict[str, Any], *, subresource: str | None = None, field_manager: str = "") -> Any:
        if self.refusals:
            status = self.refusals.pop(0)
            raise KubeApiError("apply", "Workload cq/small-0-0-0", status, "refused", "as the test asks")
        return super().apply(obj, subresource=subresource, field_manager=field_manager)

    def get(self, kind: Any, name: str, namespace: str | None = None) -> dict[str, Any]:
        self.read.append(f"{namespace}/{name}")
        fresh = _workload(admitted=True, evicted=True)
        fresh["metadata"]["resourceVersion"] = "9"
        return fresh


def _admitted_then_evicted(client: _Applies, config: Any, key: str) -> tuple[_Runner, WorkloadRecord]:
    """A runner that saw *key* admitted at 10.0 s and evicted at 10.1 s, writing through *client*."""
    runner = _Runner(client, config, workers=2, say=lambda _: None)  # type: ignore[arg-type]
    record = WorkloadRecord("cq", "small-0-0-0", "small", 200, due=0.0, created=1.0)
    runner.workloads[key] = record
    runner.on_workload(_workload(admitted=True), 10.0)
    runner.on_workload(_workload(admitted=True, evicted=True), 10.1)
    return runner, record


def test_an_evicted_reservation_is_taken_off_at_a_fresh_version_and_the_sweep_takes_up_a_refused_write(
    tmp_path: Path,
) -> None:
    # Kueue waits for the integration to take an evicted reservation off: a write given up would leave the
    # run waiting forever (the canary at scale sat 600 s in make test, 2026-11-27).
    config = load_generator(_write(tmp_path, BASELINE))
    key = "cq/small-0-0-0"

    # A conflict: the watch lags the object under load, so the runner reads it afresh and writes at that.
    client = _Refuses(409)
    runner, record = _admitted_then_evicted(client, config, key)
    runner.writers.shutdown(wait=True)
    ((body, _, manager),) = client.applied
    assert client.read == [key] and body["metadata"]["resourceVersion"] == "9", body["metadata"]
    assert manager == ADMISSION_MANAGER and not record.unreserving and runner.unreserves_retried == 0

    # Refused outright: shown, and written again by the sweep once the grace has passed.
    client = _Refuses(500)
    runner, record = _admitted_then_evicted(client, config, key)
    while record.unreserving:
        time.sleep(0.01)
    assert client.applied == [] and runner.errors[0].startswith(
        f"unset the reservation of evicted Workload {key}"
    )
    runner.sweep(15.0)  # within the grace
    assert runner.unreserves_retried == 0
    runner.sweep(25.0)
    runner.writers.shutdown(wait=True)
    ((body, _, manager),) = client.applied
    assert manager == ADMISSION_MANAGER and runner.unreserves_retried == 1 and record.evicted_at == 25.0
    run = RunRecord(0.0, 30.0, True, "done", {key: record}, {}, runner.errors, 1, unreserves_retried=1)
    said = "\n".join(render(summarize(run, config, None)))
    assert "evicted reservations the runner took off again (its write refused, or not" in said, said
