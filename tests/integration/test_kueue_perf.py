"""``kbc bench kueue-perf`` on a local cluster of its own: Kueue's configs read from the pinned module, a
small config of the user's run through the real Kueue manager (a preemption included, whose eviction the
runner must finish for the run to end), the figures written, and nothing left behind."""

from __future__ import annotations

import json
import os
import secrets
import signal
import subprocess
from pathlib import Path

import polling2
import pytest

from kbc import apis
from kbc.cli import bench_perf
from kbc.cluster.providers import Cluster
from kbc.cluster.providers.local import LocalProvider
from kbc.kube import Kube
from kbc.perf import load_generator
from kbc.process import command_lines
from kbc.supply.lock import load_lock
from tests.integration.as_before import Names, assert_as_before
from tests.integration.commands import KBC, REPO, kbc

pytestmark = pytest.mark.cluster

# Two queues of 4 cpu in one cohort. Each first runs a 4-cpu workload of priority 50 for 4 s; 1.5 s in, a
# 4-cpu workload of priority 200 arrives that fits nowhere: Kueue must preempt the first
# (withinClusterQueue: LowerPriority), and the run ends only if the runner finished that eviction and
# Kueue admitted the preempted workload again.
SMALL = """\
cohorts:
  - className: cohort
    count: 1
    queuesSets:
    - className: cq
      count: 2
      nominalQuota: 4
      reclaimWithinCohort: Any
      withinClusterQueue: LowerPriority
      workloadsSets:
      - count: 1
        creationIntervalMs: 100
        workloads:
        - {className: long, runtimeMs: 4000, priority: 50, request: 4}
      - count: 1
        creationIntervalMs: 1500
        workloads:
        - {className: urgent, runtimeMs: 500, priority: 200, request: 4}
      - count: 10
        creationIntervalMs: 300
        workloads:
        - {className: small, runtimeMs: 200, priority: 100, request: 1}
"""


# Kueue's topology config in small: a block of two racks of three nodes (4 cpu each), kwok nodes; gangs
# of four pods that must fit one rack, and gangs balanced over racks in slices of two.
TOPOLOGY = """\
topology:
  name: dc
  levels:
    - {name: block, count: 1, nodeLabel: cloud.provider.com/topology-block}
    - {name: rack, count: 2, nodeLabel: cloud.provider.com/topology-rack}
    - {name: node, count: 3, nodeLabel: kubernetes.io/hostname, capacity: {cpu: "4", memory: 16Gi}}
resourceFlavor: {name: tas-flavor, nodeLabel: tas-node-group, topologyName: dc}
cohorts:
  - className: cohort
    count: 1
    queuesSets:
    - className: cq
      count: 2
      nominalQuota: 12
      borrowingLimit: 12
      reclaimWithinCohort: Any
      withinClusterQueue: LowerPriority
      workloadsSets:
      - count: 6
        creationIntervalMs: 200
        workloads:
        - {className: rack-required, runtimeMs: 1000, priority: 50, request: "2", podCount: 4,
           tasLevel: cloud.provider.com/topology-rack, tasConstraint: required}
      - count: 6
        creationIntervalMs: 300
        workloads:
        - {className: rack-balanced, runtimeMs: 500, priority: 100, request: "1", podCount: 4,
           tasLevel: cloud.provider.com/topology-rack, tasConstraint: balanced, sliceSize: 2}
"""


def test_kueues_own_configs_are_read_from_the_pinned_module() -> None:
    lock = load_lock()
    for name, workloads in (("baseline", 15_000), ("large-scale", 50_000), ("tas", 15_000)):
        directory, source = bench_perf.resolve(lock, name)
        assert source == f"sigs.k8s.io/kueue@{lock.components['kueue'].build.version}"
        config, rangespec = bench_perf.load(directory)
        assert config.workloads == workloads and rangespec is not None
        assert rangespec.max_wall_ms is not None and rangespec.max_wall_ms.published_mean
    tas, _ = bench_perf.load(bench_perf.resolve(lock, "tas")[0])
    assert tas.topology is not None and tas.topology.nodes == 640


# Two workloads that run for 90 s: a run still going when the runner's first progress line comes (15 s).
LONG = """\
cohorts:
  - className: cohort
    count: 1
    queuesSets:
    - className: cq
      count: 1
      nominalQuota: 2
      workloadsSets:
      - count: 2
        creationIntervalMs: 100
        workloads:
        - {className: long, runtimeMs: 90000, priority: 50, request: 1}
"""


def perf_clusters() -> set[str]:
    """The local clusters kbc bench kueue-perf made (``kbc-perf-<hex>``): only those, since another worker
    of make test starts and removes clusters of its own meanwhile."""
    return {name for name, _ in LocalProvider.list_clusters() if name.startswith(bench_perf.CLUSTER_PREFIX)}


def test_a_run_cancelled_with_sigterm_removes_its_cluster_and_stops_everything(tmp_path: Path) -> None:
    # A CI cancellation sends SIGTERM: the bench unwinds as on Ctrl-C, and its cluster goes with it.
    (tmp_path / "generator.yaml").write_text(LONG)
    before = perf_clusters()
    log = tmp_path / "bench.log"
    with log.open("wb") as out:
        bench = subprocess.Popen(
            [*KBC, "bench", "kueue-perf", "--config", str(tmp_path), "--runs", "1", "--output",
             str(tmp_path / "runs.jsonl")],
            cwd=REPO, stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
        )  # fmt: skip
        try:
            started = polling2.poll(
                lambda: [n for n in perf_clusters() if n not in before and "created of" in
                         log.read_text(errors="replace")],
                step=0.5, timeout=240,
            )  # fmt: skip
            bench.send_signal(signal.SIGTERM)
            returncode = bench.wait(timeout=120)
        finally:
            if bench.poll() is None:
                os.killpg(bench.pid, signal.SIGKILL)
    said = log.read_text(errors="replace")
    assert returncode == 130 and "kbc: interrupted" in said, said[-3000:]
    assert perf_clusters() == before, said[-3000:]
    (name,) = started
    assert not [cmd for _, cmd in command_lines() if name in cmd], f"processes of {name} left running"


SCALE_SCENARIO = "suites/test_upgrade.py::test_kueues_performance_test_holds_from_old_pins_to_new"


@pytest.mark.sabotages(SCALE_SCENARIO)
def test_the_canary_at_scale_fails_on_a_kueue_slowed_through_its_configuration(tmp_path: Path) -> None:
    # The sabotage: the new pins' Kueue may write to the API server five times a second (its client QPS
    # through the configuration seam); each admission takes writes, so every figure of time grows past
    # any band. The canary runs its scale scenario only (-m "upgrade and scale": no suite, no upgrade of a
    # cluster of its own), which runs kbc bench kueue-perf --pins both as a user would.
    config = tmp_path / f"small-{secrets.token_hex(3)}"  # a name no calibration on this machine has
    config.mkdir()
    (config / "generator.yaml").write_text(SMALL)
    reports = tmp_path / "reports"
    slowed = "kueue:clientConnection={qps: 5, burst: 5}"
    before = perf_clusters()
    done = kbc(
        "canary", "--scale", str(config), "--scale-new-pins-config", slowed, "--provider", "local",
        "--cluster-name", "kbc-selftest-scale", "--components", "kueue", "-m", "upgrade and scale",
        "--report-dir", str(reports), "-p", "no:cacheprovider",
        # Each run takes under a minute here (docs/performance.md); one that stalls ends at this bound
        # naming what it left unfinished, well inside the command's own time.
        "--scale-timeout", "200",
        timeout=720,
    )  # fmt: skip
    output = done.stdout + done.stderr
    assert done.returncode == 1, output
    assert "1 failed" in output and "REGRESSION wall" in output, output
    assert "upgrade canary: Kueue's performance test" in output, output
    scale = json.loads((reports / "summary.json").read_text())["upgrade"]["scale"]
    assert scale["held"] is False and "wall" in scale["flagged"], scale
    assert "no calibration at" in scale["band_from"], scale
    lock = load_lock()
    kueue = lock.components["kueue"]
    assert (scale["old"], scale["new"]) == (kueue.previous.app_version, kueue.app_version), scale
    records = [json.loads(line) for line in Path(scale["runs_file"]).read_text().splitlines()]
    assert [r["pins"] for r in records[:2]] == ["old", "new"]
    assert records[1]["kueue_client"] == {"qps": 5, "burst": 5} and records[0]["kueue_client"]["qps"] > 5
    assert all(r["complete"] for r in records[:2]), records
    # The old pins' run is the config run through the real Kueue unhindered: a preemption whose eviction
    # the runner finished (the run ends only then), every workload admitted and finished, nothing refused.
    old = records[0]
    assert old["workloads"] == load_generator(config / "generator.yaml").workloads == 24
    for name, counts in old["workload_classes"].items():
        assert counts["admitted"] == counts["finished"] == counts["workloads"], (name, counts)
    assert old["workload_classes"]["long"]["evictions"] >= 1, old["workload_classes"]
    assert old["refused_requests"] == 0, old["refused_examples"]
    assert old["processes"]["kueue-controller-manager"]["cpu_seconds"] > 0, old["processes"]
    assert {f["name"] for f in old["figures"]} >= {"wall", "long mean time to admission", "cq usage"}
    assert records[-1]["medians"]["old"]["wall"]["values"] == [old["figures"][0]["value"]]
    summary = (reports / "summary.md").read_text()
    assert "## Upgrade canary: Kueue's performance test" in summary and "**regression**" in summary, summary
    assert perf_clusters() == before
    assert "kbc-selftest-scale" not in {name for name, _ in LocalProvider.list_clusters()}


def test_on_an_existing_cluster_it_measures_its_kueue_and_leaves_only_what_was_there(
    tmp_path: Path, kube: Kube, cluster: Cluster
) -> None:
    # The session's cluster stands in for a team's staging cluster: opted in to by its context, its own
    # Kueue measured as it runs, nothing installed, the run's objects removed after it.
    (tmp_path / "generator.yaml").write_text(SMALL)
    context = f"kbc-{cluster.name}"
    given = ["--provider", "existing", "--kubeconfig", str(cluster.kubeconfig), "--config", str(tmp_path)]
    before = Names.of(kube, apis.NAMESPACE)
    queues = Names.of(kube, apis.CLUSTER_QUEUE)

    refused = kbc("bench", "kueue-perf", *given, "--runs", "1")
    assert refused.returncode == 1 and f"--allow-context {context}" in refused.stderr, refused.stderr
    # A ClusterQueue of the cluster's in a cohort the config makes would lend to the run's: refused
    # before anything is made.
    theirs = kube.create(
        apis.CLUSTER_QUEUE.manifest("team-cq", spec={"cohortName": "cohort-0", "resourceGroups": []})
    )
    try:
        met = kbc("bench", "kueue-perf", *given, "--allow-context", context, "--runs", "1")
    finally:
        kube.delete(apis.CLUSTER_QUEUE, theirs["metadata"]["name"])
    assert met.returncode == 1, met.stderr
    assert "ClusterQueue team-cq (in cohort cohort-0)" in met.stderr, met.stderr
    assert_as_before(kube, before, "the refused run")

    output = tmp_path / "runs.jsonl"
    done = kbc(
        "bench", "kueue-perf", *given, "--allow-context", context, "--runs", "1", "--output", str(output),
        timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    record = json.loads(output.read_text().splitlines()[0])
    assert record["complete"] is True and record["left_behind"] == [], done.stderr
    assert record["cluster"] == f"existing context {context}" and record["nodes_made"] == 0
    for name, counts in record["workload_classes"].items():
        assert counts["admitted"] == counts["finished"] == counts["workloads"], (name, counts)
    assert set(record["processes"]) == {bench_perf.RUNNER}, record["processes"]
    assert_as_before(kube, before, "the run")
    assert_as_before(kube, queues, "the run")
    assert kube.list(apis.NODE), "the existing provider never removes the cluster"


def test_a_topology_config_gets_its_kwok_nodes_and_every_gang_a_topology_assignment(tmp_path: Path) -> None:
    (tmp_path / "generator.yaml").write_text(TOPOLOGY)
    output = tmp_path / "runs.jsonl"
    done = kbc("bench", "kueue-perf", "--config", str(tmp_path), "--runs", "1", "--output", str(output))
    assert done.returncode == 0, done.stderr
    record = json.loads(output.read_text().splitlines()[0])
    assert record["complete"] is True and record["nodes_made"] == 6, done.stderr
    for name, counts in record["workload_classes"].items():
        assert counts["admitted"] == counts["finished"] == counts["workloads"] == 12, (name, counts)
        # Admitted by Kueue's topology-aware scheduling: each admission carries where its pods go.
        assert counts["topology_assigned"] == counts["admitted"], (name, counts)
