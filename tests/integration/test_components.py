"""Kueue, JobSet and Volcano installed from their pinned charts, doing their real work."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from kbc import apis, timeouts
from kbc.cluster.charts.source import resolve_chart
from kbc.cluster.components import parse_components, parse_values
from kbc.cluster.providers import Cluster, LocalProvider
from kbc.cluster.providers.local import DeadProcess
from kbc.errors import ChartError, ComponentError
from kbc.jobs import node_of, phase_of, wait_job_complete
from kbc.kube import Kube, is_true, wait_for_list, wait_until_exists
from kbc.kueue import admission, kueue_queues, wait_admitted, wait_finished
from kbc.plugins.cluster import ClusterSession
from kbc.polling import poll
from kbc.supply import paths
from kbc.supply.pins import ChartsLock
from kbc.volcano import phase
from kbc.workloads import job, jobset, vcjob
from tests.integration.commands import run_bounded
from tests.integration.suite_runner import read_junit

pytestmark = pytest.mark.cluster


def test_kueue_suspends_a_queued_job_and_admits_it_once_quota_exists(
    kube: Kube, namespace: str, unique: str
) -> None:
    manifest = job("queued", pods=2, run_for="2s", queue="queue")
    manifest["spec"]["suspend"] = False
    created = kube.create(manifest, namespace=namespace)
    assert created["spec"]["suspend"] is True, (
        "Kueue's Job webhook must suspend a Job that names a LocalQueue"
    )
    (workload,) = wait_for_list(
        kube,
        apis.WORKLOAD,
        namespace=namespace,
        until=lambda ws: len(ws) == 1,
        timeout=timeouts.SHORT,
        what="Kueue to create the Job's Workload",
    )
    assert workload["metadata"]["ownerReferences"][0]["name"] == "queued"
    assert not is_true(workload, "QuotaReserved")
    assert not kube.list(apis.POD, namespace=namespace), "a suspended Job must have no pods"
    with kueue_queues(kube, namespace, unique, {"cpu": "4"}) as queues:
        name = workload["metadata"]["name"]
        (admitted,) = wait_admitted(kube, namespace, name)
        assert admission(admitted)["clusterQueue"] == queues.cluster_queue
        done = wait_job_complete(kube, namespace, "queued")
        assert done["status"]["succeeded"] == 2
        wait_finished(kube, namespace, name)


def test_jobset_creates_its_child_jobs_and_completes(kube: Kube, namespace: str) -> None:
    kube.create(
        jobset("js", replicated_jobs=2, pods_per_job=2, cpu="100m", run_for="2s"), namespace=namespace
    )
    jobs = wait_for_list(
        kube,
        apis.JOB,
        namespace=namespace,
        until=lambda js: len(js) == 2,
        timeout=timeouts.SHORT,
        what="JobSet to create two child Jobs",
    )
    assert sorted(j["metadata"]["name"] for j in jobs) == ["js-workers-0", "js-workers-1"]
    for child in jobs:
        assert child["metadata"]["labels"]["jobset.sigs.k8s.io/jobset-name"] == "js"
    wait_until_exists(
        kube,
        apis.JOBSET,
        "js",
        namespace=namespace,
        timeout=timeouts.LONG,
        what="the JobSet to complete",
        until=lambda js: is_true(js, "Completed"),
        fail=lambda js: "JobSet failed" if is_true(js, "Failed") else None,
    )


def test_volcano_job_gets_a_podgroup_and_runs(kube: Kube, namespace: str) -> None:
    kube.create(vcjob("vj", "default", replicas=3, min_available=3, gpus=0), namespace=namespace)
    (group,) = wait_for_list(
        kube,
        apis.PODGROUP,
        namespace=namespace,
        until=lambda gs: len(gs) == 1,
        timeout=timeouts.SHORT,
        what="Volcano to create the Job's PodGroup",
    )
    assert group["spec"]["minMember"] == 3
    pods = wait_for_list(
        kube,
        apis.POD,
        namespace=namespace,
        until=lambda ps: len(ps) == 3 and all(phase_of(p) == "Running" and node_of(p) for p in ps),
        timeout=timeouts.POD_START,
        what="the Volcano Job's 3 pods to be bound and running",
    )
    assert {p["spec"]["schedulerName"] for p in pods} == {"volcano"}
    wait_until_exists(
        kube,
        apis.PODGROUP,
        group["metadata"]["name"],
        namespace=namespace,
        timeout=timeouts.SHORT,
        what="the PodGroup to be Running",
        until=lambda g: phase(g) == "Running",
    )


def test_served_api_versions_and_controller_versions_match_the_lock(
    kube: Kube, charts_lock: ChartsLock, cluster: Cluster
) -> None:
    # The harness speaks the version kbc/apis.py names; the pinned components serve it, preferred or not.
    assert kube.served_versions(apis.KUEUE_GROUP)[0] == apis.WORKLOAD.version
    assert kube.served_versions(apis.JOBSET_GROUP)[0] == apis.JOBSET.version
    assert apis.VCJOB.version in kube.served_versions(apis.VOLCANO_BATCH_GROUP)
    assert apis.PODGROUP.version in kube.served_versions(apis.VOLCANO_SCHEDULING_GROUP)

    logs = cluster.log_dir
    assert logs is not None
    kueue_log = (logs / "kueue-controller-manager.log").read_text()
    jobset_log = (logs / "jobset-controller.log").read_text()
    for name, text in (("kueue", kueue_log), ("jobset", jobset_log)):
        found = set(re.findall(r'"gitVersion":\s*"([^"]+)"', text))
        assert found == {charts_lock.components[name].app_version}, (name, found)
    for binary in ("vc-scheduler", "vc-controller-manager", "vc-webhook-manager"):
        path = paths.binaries_dir() / "volcano" / charts_lock.components["volcano"].app_version / binary
        out = subprocess.run([str(path), "--version"], capture_output=True, text=True, check=False)
        assert charts_lock.components["volcano"].app_version in out.stdout + out.stderr, out
    state = json.loads((logs.parent / "state.json").read_text())
    for name in charts_lock.components:
        record = state["installed"][name]
        assert record["appVersion"] == charts_lock.components[name].app_version
        assert record["chartVersion"] == charts_lock.components[name].chart.version
        assert record["chartSource"] == "module" and record["chartDigest"].startswith("h1:")


def test_a_killed_controller_is_noticed_and_restarted(
    kube: Kube, cluster_session: ClusterSession, cluster: Cluster, namespace: str
) -> None:
    provider = cluster_session.provider
    assert isinstance(provider, LocalProvider) and cluster.log_dir is not None
    state = json.loads((cluster.log_dir.parent / "state.json").read_text())
    os.kill(state["components"]["kueue-controller-manager"]["pid"], signal.SIGKILL)
    dead = wait_for_dead(provider, cluster.name, "kueue-controller-manager")
    assert "kueue-controller-manager is not running" in dead.describe()
    assert "Last lines of" in dead.describe()
    assert provider.restart_dead(cluster.name) == ["kueue-controller-manager"]
    assert not provider.dead_processes(cluster.name)
    created = kube.create(job("after-restart", queue="lq"), namespace=namespace)
    assert created["spec"]["suspend"] is True, "the restarted Kueue must serve its webhooks again"


def wait_for_dead(provider: LocalProvider, name: str, process: str) -> DeadProcess:
    def reported() -> DeadProcess | None:
        return next((dead for dead in provider.dead_processes(name) if dead.name == process), None)

    return poll(reported, timeout=10, step=0.1)


def test_a_controller_dying_during_a_test_fails_that_test_with_its_log(
    tmp_path: Path, cluster: Cluster
) -> None:
    assert cluster.log_dir is not None
    # A separate pytest run against the same cluster: its only test kills the JobSet controller.
    (tmp_path / "test_inner.py").write_text(
        textwrap.dedent("""
        import json, os, signal, time

        def test_kills_jobset(cluster):
            state = json.loads((cluster.log_dir.parent / "state.json").read_text())
            os.kill(state["components"]["jobset-controller"]["pid"], signal.SIGKILL)
            time.sleep(1)
    """)
    )
    inner = run_bounded(
        [
            sys.executable,
            "-m",
            "pytest",
            "-p",
            "kbc.plugin",
            "--cluster-name",
            cluster.name,
            "--components",
            "none",
            "-p",
            "no:cacheprovider",
            "--rootdir",
            str(tmp_path),
            "--junitxml",
            str(tmp_path / "junit.xml"),
            str(tmp_path),
        ],
        timeout=180,
        cwd=tmp_path,
    )
    output = inner.stdout
    outcomes, failures = read_junit(tmp_path / "junit.xml")
    # The test's own body passed; the controllers plugin failed it in teardown (an error of that test).
    assert outcomes == {"passed": 0, "failed": 0, "errors": 1, "skipped": 0}, output
    (failure,) = failures
    assert "failed on teardown" in failure and "kbc.errors.ControllerDied" in failure, failure
    assert "died during this test and were restarted (jobset-controller)" in output
    assert "jobset-controller is not running" in output and "Last lines of" in output
    log = (cluster.log_dir / "jobset-controller.log").read_text()
    before_restart = log.rsplit("restarted by kbatch-conformance", 1)[0].splitlines()[:-1]
    last_line = next(line for line in reversed(before_restart) if line.strip())
    assert last_line.strip()[:100] in output, "the error must quote the dead controller's log"


def test_unknown_component_and_bad_values_are_named(tmp_path: Path) -> None:
    with pytest.raises(ComponentError, match="unknown component\\(s\\) kuue"):
        parse_components("kuue,jobset")
    assert parse_components("none") == ()
    assert parse_components("volcano,kueue") == ("kueue", "volcano")
    bad = tmp_path / "bad.yaml"
    bad.write_text("a: [unclosed\n")
    with pytest.raises(ComponentError, match=r"kueue: values file .*bad.yaml does not parse"):
        parse_values([f"kueue={bad}"])
    with pytest.raises(ComponentError, match="expected COMPONENT=FILE"):
        parse_values(["kueue"])
    with pytest.raises(ComponentError, match="unknown component 'kubeflow'"):
        parse_values([f"kubeflow={bad}"])


def test_a_chart_of_the_wrong_version_is_refused(tmp_path: Path, charts_lock: ChartsLock) -> None:
    chart = tmp_path / "kueue"
    chart.mkdir()
    (chart / "Chart.yaml").write_text("apiVersion: v2\nname: kueue\nversion: 0.0.1\n")
    with pytest.raises(ChartError, match=r"is chart 'kueue' version '0\.0\.1', but charts-lock\.yaml pins"):
        resolve_chart(charts_lock.components["kueue"], f"dir:{chart}")
    with pytest.raises(ChartError, match=r"Chart\.yaml missing"):
        resolve_chart(charts_lock.components["kueue"], f"dir:{tmp_path / 'nowhere'}")


def test_a_controller_that_exits_at_start_is_reported_and_nothing_is_left(
    tmp_path: Path, charts_lock: ChartsLock
) -> None:
    values = tmp_path / "broken.yaml"
    # An unknown integration makes Kueue refuse its configuration and exit at start.
    values.write_text(
        textwrap.dedent("""
        managerConfig:
          controllerManagerConfigYaml: |
            apiVersion: config.kueue.x-k8s.io/v1beta2
            kind: Configuration
            integrations:
              frameworks: ["no.such/framework"]
    """)
    )
    name = f"broken-{os.getpid()}"
    proc = run_bounded(
        [
            sys.executable,
            "-m",
            "kbc.cli",
            "cluster",
            "up",
            "--name",
            name,
            "--components",
            "kueue",
            "--values",
            f"kueue={values}",
        ],
        timeout=300,
    )
    try:
        assert proc.returncode == 1, proc.stderr
        assert "kueue-controller-manager exited during start-up" in proc.stderr
        assert "no.such/framework" in proc.stderr, proc.stderr
        assert not (paths.clusters_dir() / name / "state.json").exists()
        leftover = [
            p for p in Path("/proc").iterdir() if p.name.isdigit() and _cmdline_has(p, f"/clusters/{name}/")
        ]
        assert not leftover
    finally:
        shutil.rmtree(paths.clusters_dir() / name, ignore_errors=True)


def _cmdline_has(proc_dir: Path, marker: str) -> bool:
    try:
        return marker in (proc_dir / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return False
