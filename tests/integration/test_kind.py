"""kind for real: the harness's own Docker Engine, the node image and every image built from the pinned
sources, the registry mirror, the charts' controllers running as pods, scenarios and the canary.

Every kind cluster here runs on the harness's engine (the ``docker_env`` fixture), never on a Docker
of the machine's. The tests that make clusters of their own run before the module's shared cluster is made,
so that one kind cluster runs at a time; ``kbc docker down`` removes the shared cluster, and the last test,
with it gone, makes a cluster it keeps and a profile's beside it.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from kbc import apis, timeouts
from kbc.cluster.docker import missing_capabilities
from kbc.cluster.pools import load_pools
from kbc.cluster.providers.kind.built import BuiltImages
from kbc.cluster.providers.kind.config import BuiltImages as BuiltConfig
from kbc.cluster.providers.kind.config import kind_config
from kbc.cluster.providers.kind.docker import Docker
from kbc.kube import connect, is_true, labels_of
from kbc.labels import (
    GPU,
    HARNESS_SLICE_LABEL,
    POOL_LABEL,
    REAL_NODE_LABEL,
    SHARED_DIR_ANNOTATION,
    WORKLOAD_IMAGE,
)
from kbc.polling import TimeoutException, poll
from kbc.supply import paths
from kbc.supply.images.build import ETCD_TAG_LABEL, ImageBuilder
from kbc.supply.lock import load_lock
from kbc.supply.toolchain import Toolchain
from tests.integration.commands import KBC_AS_TYPED, REPO, run_bounded
from tests.integration.kind_runs import (
    DRA_PREPARED,
    DRA_SABOTAGES,
    RENDEZVOUS_SABOTAGES,
    SCENARIOS,
    KindClusters,
    assert_nothing_left,
    containers_of,
    docker,
    kbc_in,
    processes_of,
)
from tests.integration.suite_runner import run_pytest, run_pytest_past_the_finding

pytestmark = pytest.mark.cluster

CLUSTER = "kbc-selftest-kind"
BUILD = ["--provider", "kind", "--kind-images", "build"]


def test_without_a_docker_the_kind_provider_says_how_to_get_one(tmp_path: Path) -> None:
    env = {**os.environ, "DOCKER_HOST": f"unix://{tmp_path}/no-docker.sock"}
    up = kbc_in(env, "cluster", "up", *BUILD, "--cluster-name", "kbc-no-docker", "--components", "none")
    assert up.returncode != 0
    assert "kbc docker up" in up.stderr and "DOCKER_HOST" in up.stderr, up.stderr
    assert not (paths.clusters_dir() / "kind-kbc-no-docker").exists()


def test_a_kind_cluster_kbc_did_not_create_is_never_touched(
    docker_env: dict[str, str], tmp_path: Path
) -> None:
    name = "someone-elses"
    lock = load_lock()
    tools = Toolchain(lock).ensure(["kind", "helm"])
    kind = str(tools["kind"])
    built = BuiltImages(lock, Docker(docker_env), tools["helm"], sys.stderr)
    image = built.node_image(built.build())  # loaded into the engine, as kbc cluster up would
    config = tmp_path / "kind.yaml"
    # A cluster as its owner would make it from this image (kubeadm told the etcd the image holds,
    # without which kubeadm waits minutes for an etcd it cannot pull): one control plane.
    etcd = Docker(docker_env).image_labels(image)[ETCD_TAG_LABEL]
    restrict = "CAP_SYS_RESOURCE" in missing_capabilities()
    own = kind_config([], built=BuiltConfig(etcd), restrict_oom_score_adj=restrict)
    config.write_text(yaml.safe_dump(own))
    made = run_bounded(
        [kind, "create", "cluster", "--name", name, "--image", image, "--config", str(config), "--retain"],
        timeout=600,
        env=docker_env,
    )
    try:
        assert containers_of(docker_env, name), made.stderr
        down = kbc_in(docker_env, "cluster", "down", "--provider", "kind", "--cluster-name", name)
        assert down.returncode != 0 and "kbc deletes only its own" in down.stderr, down.stderr
        up = kbc_in(docker_env, "cluster", "up", *BUILD, "--cluster-name", name, "--components", "none")
        assert up.returncode != 0 and "was not created by kbc; it is left alone" in up.stderr, up.stderr
        assert containers_of(docker_env, name) == [f"{name}-control-plane"]
        state = docker(docker_env, "inspect", "--format", "{{.State.Running}}", f"{name}-control-plane")
        assert state.stdout.strip() == "true"
    finally:
        subprocess.run(
            [kind, "delete", "cluster", "--name", name], env=docker_env, capture_output=True, check=False
        )


def test_an_interrupted_create_leaves_nothing(docker_env: dict[str, str]) -> None:
    name = "kbc-selftest-kind-int"
    proc = subprocess.Popen(
        [*KBC_AS_TYPED, "cluster", "up", *BUILD, "--cluster-name", name, "--components", "none"],
        cwd=REPO,
        env=docker_env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        # Interrupt once the registry mirror runs beside kind's nodes: both must go.
        deadline = time.monotonic() + 600
        seen = ""
        assert proc.stderr is not None
        while time.monotonic() < deadline:
            line = proc.stderr.readline()
            seen += line
            if "registry mirror on " in line or not line:
                break
        assert "registry mirror on " in seen, seen
        assert containers_of(docker_env, name), "kind's nodes run when the create is interrupted"
        proc.send_signal(signal.SIGINT)
        _, rest = proc.communicate(timeout=300)
        assert proc.returncode == 130, seen + rest
        assert_nothing_left(docker_env, name)
    finally:
        if proc.poll() is None:
            proc.kill()
        kind = str(Toolchain(load_lock()).ensure(["kind"])["kind"])
        subprocess.run(
            [kind, "delete", "cluster", "--name", name], env=docker_env, capture_output=True, check=False
        )


def test_the_canary_upgrades_the_charts_with_helm_on_kind(docker_env: dict[str, str], tmp_path: Path) -> None:
    """The old charts installed from the mirror (their images built from the old pins), the live state
    made, the new charts' crds/ then helm upgrade, nothing lost, the logs read from the pods."""
    lock = load_lock()
    reports = tmp_path / "reports"
    run = run_pytest_past_the_finding(
        ["suites/test_upgrade.py", "-m", "upgrade", *BUILD, "--cluster-name", "kbc-selftest-kind-canary"],
        ["--report-dir", str(reports)],
        sabotage=None,
        timeout=1500,
        env=docker_env,
    )
    assert run.outcomes == {"passed": 1, "failed": 0, "errors": 0, "skipped": 0}, run.explain()
    summary = (reports / "summary.md").read_text()
    for name in ("kueue", "jobset", "lws"):
        component = lock.components[name]
        line = f"upgrade {name} {component.previous.app_version} → {component.app_version}: "
        assert f"- {line}" in summary, summary
    workarounds = [line for line in summary.splitlines() if "workaround for " in line]
    assert any("jobset/issues/1205" in w and "--server-side=false" in w for w in workarounds), summary
    # LeaderWorkerSet's chart moved its CRD from templates/ to crds/ after the previous pin: a plain helm
    # upgrade deletes it and every LeaderWorkerSet (kubernetes-sigs/lws#880); the canary keeps it and says so.
    kept = "leaderworkersets.leaderworkerset.x-k8s.io annotated helm.sh/resource-policy: keep"
    assert any("helm/helm/issues/8163" in w and kept in w for w in workarounds), summary
    assert "log check: " in summary and "not checked" not in summary, summary
    # The log check read the new controllers' logs from their pods, and the API server's.
    checked = json.loads((reports / "summary.json").read_text())["upgrade"]["logs_checked"]
    for component in lock.components.values():
        assert any(name.startswith(component.namespace + ".") for name in checked), checked
    assert any(name.startswith("kube-system.kube-apiserver-") for name in checked), checked
    assert not (paths.clusters_dir() / "kind-kbc-selftest-kind-canary").exists()


@pytest.fixture(scope="module")
def kind_cluster(docker_env: dict[str, str]) -> Iterator[subprocess.CompletedProcess[str]]:
    """``kbc cluster up`` of a kind cluster of built images with every component and a real-node worker;
    ``kbc cluster down`` afterwards, which must leave nothing."""
    up = kbc_in(docker_env, "cluster", "up", *BUILD, "--cluster-name", CLUSTER, "--real-nodes", "1")
    try:
        yield up
    finally:
        # The module's last test removes it with `kbc docker down`, when that test ran.
        if (paths.clusters_dir() / f"kind-{CLUSTER}").exists():
            down = kbc_in(docker_env, "cluster", "down", "--provider", "kind", "--cluster-name", CLUSTER)
            assert down.returncode == 0, down.stderr
        assert_nothing_left(docker_env, CLUSTER)


def test_kind_makes_the_cluster_from_built_images_and_helm_installs_the_charts_from_the_mirror(
    kind_cluster: subprocess.CompletedProcess[str],
) -> None:
    up = kind_cluster
    assert up.returncode == 0, up.stdout + up.stderr
    kubeconfig = paths.clusters_dir() / f"kind-{CLUSTER}" / "kubeconfig"
    assert up.stdout.strip().splitlines()[-1] == f"KUBECONFIG={kubeconfig}"
    lock = load_lock()
    # The mirror serves every registry the pinned components' images come from.
    mirrored = re.search(r"registry mirror on \S+ for ([^(]+) \(log", up.stderr)
    assert mirrored, up.stderr
    hosts = {image.repository.split("/")[0] for c in lock.components.values() for image in c.images}
    assert hosts <= set(mirrored.group(1).split(", ")), (hosts, mirrored.group(1))
    for name, component in lock.components.items():
        # Verified against the digest the mirror serves, which is the one built here.
        assert f"[components] {name} {component.app_version} ready in " in up.stderr, up.stderr
        line = next(line for line in up.stderr.splitlines() if line.startswith(f"[components] {name} "))
        assert "verified" in line and "NOT verified" not in line, line
    built = {b.name: b.digest for b in ImageBuilder(lock).built()}
    pools = load_pools(paths.manifests_dir() / "nodes")
    with connect(kubeconfig) as kube:
        nodes = kube.list(apis.NODE)
        assert len(nodes) == 1 + sum(p.replicas for p in pools) + 1 and all(
            is_true(n, "Ready") for n in nodes
        )
        for pool in pools:
            members = [n for n in nodes if labels_of(n).get(POOL_LABEL) == pool.name]
            assert len(members) == pool.replicas, pool.name
            gpus = str(pool.template.get("status", {}).get("allocatable", {}).get(GPU, ""))
            for node in members:
                assert {k: v for k, v in labels_of(node).items() if k in pool.labels} == pool.labels
                assert str(node["status"]["allocatable"].get(GPU, "")) == gpus, node["status"]["allocatable"]
        (real,) = [n for n in nodes if labels_of(n).get(REAL_NODE_LABEL) == "true"]
        assert real["metadata"]["annotations"].get(SHARED_DIR_ANNOTATION), real["metadata"]
        assert any(t["key"] == REAL_NODE_LABEL for t in real["spec"].get("taints") or [])
        assert any(WORKLOAD_IMAGE in image.get("names", []) for image in real["status"]["images"])
        # The controllers run as pods on kind's workers, from their upstream names, by the built digest.
        for name, component in lock.components.items():
            pods = kube.list(apis.POD, namespace=component.namespace)
            running = [p for p in pods if p["status"].get("phase") == "Running"]
            assert running, (
                f"{name}: no pod runs in {component.namespace}: {[p['metadata']['name'] for p in pods]}"
            )
            for image in component.images:
                reference = f"{image.repository}:{image.tag}"
                ids = [
                    status.get("imageID", "")
                    for pod in running
                    for status in pod["status"].get("containerStatuses", [])
                    if status.get("imageID", "").startswith(image.repository + "@")
                ]
                assert ids, f"no running container of {reference}"
                assert all(i.endswith(built[reference]) for i in ids), (reference, ids, built[reference])
    # The follower finds running containers on its own rescans (every 2 s), so a component whose pod
    # became Running just before `cluster up` returned may not have its file yet: wait for it.
    prefixes = [c.namespace + "." for c in lock.components.values()] + ["kube-system.kube-apiserver-"]
    directory = paths.clusters_dir() / f"kind-{CLUSTER}" / "logs"

    def followed() -> list[str] | None:
        logs = sorted(p.name for p in directory.glob("*.log"))
        return logs if all(any(n.startswith(p) for n in logs) for p in prefixes) else None

    try:
        poll(followed, timeout=timeouts.SHORT.seconds, step=1.0)
    except TimeoutException:
        logs = sorted(p.name for p in directory.glob("*.log"))
        missing = [p for p in prefixes if not any(n.startswith(p) for n in logs)]
        pytest.fail(f"no log followed for {missing} within {timeouts.SHORT}; {directory} holds {logs}")


def test_the_pinned_dra_driver_publishes_the_pools_devices_on_their_nodes_only(
    kind_cluster: subprocess.CompletedProcess[str],
) -> None:
    """The dra-example-driver built here and installed by its chart: its kubelet plugin on the DRA pools'
    workers only, by the digest built here, publishing each one's devices; the chart's DeviceClass the only
    one of the driver (the harness makes none on kind)."""
    assert kind_cluster.returncode == 0, kind_cluster.stderr
    lock = load_lock()
    (driver,) = lock.dra_drivers.values()
    pools = {p.name: p for p in load_pools(paths.manifests_dir() / "nodes") if p.dra is not None}
    assert pools, "the pools declare DRA devices"
    built = {b.name: b.digest for b in ImageBuilder(lock).built()}
    kubeconfig = paths.clusters_dir() / f"kind-{CLUSTER}" / "kubeconfig"
    with connect(kubeconfig) as kube:
        members = {
            n["metadata"]["name"]: pools[labels_of(n)[POOL_LABEL]]
            for n in kube.list(apis.NODE)
            if labels_of(n).get(POOL_LABEL) in pools
        }
        (made,) = [c for c in kube.list(apis.DEVICE_CLASS) if c["metadata"]["name"] == driver.driver]
        assert made["metadata"]["annotations"]["meta.helm.sh/release-name"] == driver.name, made["metadata"]
        slices = [s for s in kube.list(apis.RESOURCE_SLICE) if s["spec"]["driver"] == driver.driver]
        published = {s["spec"]["nodeName"]: len(s["spec"]["devices"]) for s in slices}
        assert published == {node: pool.dra.count for node, pool in members.items() if pool.dra}, published
        assert not any(HARNESS_SLICE_LABEL[0] in labels_of(s) for s in slices), (
            "a driver's, not the harness's"
        )
        plugins = kube.list(apis.POD, namespace=driver.namespace)
        assert sorted(p["spec"]["nodeName"] for p in plugins) == sorted(members)
        for plugin in plugins:
            (status,) = plugin["status"]["containerStatuses"]
            assert status["ready"] and status["imageID"].endswith(built[driver.image_name]), status
    assert f"[kind] DRA driver {driver.driver}: {driver.name} {driver.version}" in kind_cluster.stderr


def test_a_second_up_reuses_the_cluster_and_installs_nothing(
    kind_cluster: subprocess.CompletedProcess[str], docker_env: dict[str, str]
) -> None:
    assert kind_cluster.returncode == 0, kind_cluster.stderr
    again = kbc_in(docker_env, "cluster", "up", *BUILD, "--cluster-name", CLUSTER, "--real-nodes", "1")
    assert again.returncode == 0, again.stderr
    assert f"kind cluster {CLUSTER} is already running; reusing it" in again.stderr
    assert "[components]" not in again.stderr and "creating kind cluster" not in again.stderr, again.stderr


def test_the_representative_scenarios_pass_on_kind(
    kind_cluster: subprocess.CompletedProcess[str], docker_env: dict[str, str], tmp_path: Path
) -> None:
    assert kind_cluster.returncode == 0, kind_cluster.stderr
    run = run_pytest(
        [*SCENARIOS, *BUILD, "--cluster-name", CLUSTER],
        ["--report-dir", str(tmp_path)],
        sabotage=None,
        timeout=900,
        env=docker_env,
    )
    assert run.outcomes == {"passed": len(SCENARIOS), "failed": 0, "errors": 0, "skipped": 0}, run.explain()


def test_a_scenario_broken_on_kind_fails_there_too(
    kind_cluster: subprocess.CompletedProcess[str], docker_env: dict[str, str]
) -> None:
    """The same sabotage that turns the GPU quota scenario red on the local provider does on kind."""
    assert kind_cluster.returncode == 0, kind_cluster.stderr
    run = run_pytest(
        ["suites/test_quota.py::test_gpu_quota_admits_what_fits_and_holds_what_does_not", *BUILD],
        ["--cluster-name", CLUSTER, "--timeout-scale", "0.5"],
        sabotage="quota_far_too_high",
        timeout=600,
        env=docker_env,
    )
    assert run.outcomes == {"passed": 0, "failed": 1, "errors": 0, "skipped": 0}, run.explain()


@pytest.mark.sabotages(DRA_PREPARED)
@pytest.mark.parametrize("sabotage", list(DRA_SABOTAGES))
def test_the_dra_driver_scenario_fails_with_each_sabotage_on_kind(
    kind_cluster: subprocess.CompletedProcess[str], docker_env: dict[str, str], sabotage: str
) -> None:
    """Each half of the scenario the dra-example-driver passes on kind, broken there: it must fail."""
    assert kind_cluster.returncode == 0, kind_cluster.stderr
    fails_on_kind(DRA_PREPARED, sabotage, DRA_SABOTAGES[sabotage], "0.5", docker_env)


def test_training_jobs_meet_at_the_rendezvous_their_operators_wire_on_kind(
    kind_cluster: subprocess.CompletedProcess[str], docker_env: dict[str, str], tmp_path: Path
) -> None:
    """A TrainJob's and a PyTorchJob's real pods meet at their operator's rendezvous when admitted whole, and
    hang there when placed in part without Kueue."""
    assert kind_cluster.returncode == 0, kind_cluster.stderr
    run = run_pytest(
        [*RENDEZVOUS_SABOTAGES, *BUILD, "--cluster-name", CLUSTER],
        ["--report-dir", str(tmp_path)],
        sabotage=None,
        timeout=900,
        env=docker_env,
    )
    passed = len(RENDEZVOUS_SABOTAGES)
    assert run.outcomes == {"passed": passed, "failed": 0, "errors": 0, "skipped": 0}, run.explain()


@pytest.mark.parametrize(
    "scenario",
    [
        pytest.param(s, marks=pytest.mark.sabotages(s), id=RENDEZVOUS_SABOTAGES[s][0])
        for s in RENDEZVOUS_SABOTAGES
    ],
)
def test_each_rendezvous_scenario_fails_with_its_sabotage_on_kind(
    kind_cluster: subprocess.CompletedProcess[str], docker_env: dict[str, str], scenario: str
) -> None:
    assert kind_cluster.returncode == 0, kind_cluster.stderr
    sabotage, because = RENDEZVOUS_SABOTAGES[scenario]
    fails_on_kind(scenario, sabotage, because, "0.25", docker_env)


def fails_on_kind(scenario: str, sabotage: str, because: list[str], scale: str, env: dict[str, str]) -> None:
    """*scenario* run on the module's kind cluster with *sabotage* (its waits scaled by *scale*) fails, and
    its failure says every text of *because*."""
    run = run_pytest(
        [scenario, *BUILD],
        ["--cluster-name", CLUSTER, "--timeout-scale", scale],
        sabotage=sabotage,
        timeout=600,
        env=env,
    )
    assert run.outcomes == {"passed": 0, "failed": 1, "errors": 0, "skipped": 0}, run.explain()
    (failure,) = run.failures
    missing = [text for text in because if text not in failure]
    assert not missing, f"the failure does not explain itself with {missing}:\n{failure}"


def test_docker_down_removes_the_kind_clusters_it_hosts_with_their_host_processes(
    kind_cluster: subprocess.CompletedProcess[str], docker_env: dict[str, str]
) -> None:
    """The last test of the module's cluster: ``kbc docker down`` with it running removes it as ``kbc cluster
    down`` would (its registry, chart repository, log follower and real node are host processes the engine
    does not own), then the engine; ``kbc docker up`` brings the engine back for the tests after it."""
    assert kind_cluster.returncode == 0, kind_cluster.stderr
    assert processes_of(CLUSTER), "the cluster's registry mirror runs on the host"
    try:
        down = kbc_in(docker_env, "docker", "down")
        assert down.returncode == 0, down.stderr
        removed = f"removed kind cluster {CLUSTER} (nodes, registry mirror, chart repository, logs)"
        assert removed in down.stderr, down.stderr
        assert "nothing of it is left" in down.stderr, down.stderr
        assert processes_of(CLUSTER) == [], "the registry, chart repository and log follower are stopped"
        assert not (paths.clusters_dir() / f"kind-{CLUSTER}").exists(), "the cluster's folder is removed"
    finally:
        up = kbc_in(docker_env, "docker", "up")
        assert up.returncode == 0, up.stderr


# After the module's cluster is gone: a session that makes its cluster, and a scenario of another Kueue
# configuration, which on kind gets a kind cluster of its own.
KEPT = "kbc-selftest-kind-kept"
PROFILED = "suites/test_pods_ready.py::test_without_wait_for_pods_ready_a_stuck_gang_keeps_its_quota"
QUOTA_ZERO = next(s for s in SCENARIOS if "test_quota_zero" in s)


def test_with_keep_cluster_a_profile_s_kind_cluster_still_goes_and_the_kept_one_is_named(
    docker_env: dict[str, str], tmp_path: Path
) -> None:
    """Under --keep-cluster the session's cluster is kept and named with the ``kbc cluster down`` line that
    removes it; a profile's kind cluster runs beside it alone and goes when its scenarios end."""
    try:
        with KindClusters(docker_env) as sampled:
            run = run_pytest(
                [QUOTA_ZERO, PROFILED, *BUILD, "--cluster-name", KEPT, "--keep-cluster"],
                ["--report-dir", str(tmp_path)],
                sabotage=None,
                timeout=1500,
                env=docker_env,
            )
        assert run.outcomes == {"passed": 2, "failed": 0, "errors": 0, "skipped": 0}, run.explain()
        profiles = sorted(sampled.seen - {KEPT})
        assert len(profiles) == 1 and profiles[0].startswith(f"{KEPT}-"), sampled.seen
        assert sampled.most == 2, f"at most the session's cluster and one profile's at once: {sampled.most}"
        assert_nothing_left(docker_env, profiles[0])
        kept = run.output.split("1 cluster(s) kept (--keep-cluster); remove each with:\n", 1)
        assert len(kept) == 2, f"the run names the one cluster it kept:\n{run.output[-3000:]}"
        line = kept[1].splitlines()[0].strip()
        assert line == f"kbc cluster down --provider kind --cluster-name {KEPT}", line
        assert containers_of(docker_env, KEPT), "the kept cluster runs"
        # The line it printed is the one that removes it.
        down = kbc_in(docker_env, *line.split()[1:])
        assert down.returncode == 0, down.stderr
        assert_nothing_left(docker_env, KEPT)
    finally:
        if (paths.clusters_dir() / f"kind-{KEPT}").exists():
            kbc_in(docker_env, "cluster", "down", "--provider", "kind", "--cluster-name", KEPT)
