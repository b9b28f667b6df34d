"""Kueue, JobSet and Volcano installed from their pinned charts, doing their real work."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from lightkube import Client
from lightkube.generic_resource import create_namespaced_resource
from lightkube.resources.batch_v1 import Job
from lightkube.resources.core_v1 import Pod

from kbc import paths
from kbc.components import ComponentError, parse_components, parse_values
from kbc.components._chart import ChartError, resolve_chart
from kbc.kube import api_get, load, wait_for_list, wait_for_object, wait_job_complete
from kbc.kueue import ClusterQueue, ResourceFlavor, Workload, is_true, wait_admitted
from kbc.lockfile import ChartsLock
from kbc.plugins.cluster import ClusterSession
from kbc.providers import Cluster
from kbc.providers.local import LocalProvider

pytestmark = pytest.mark.cluster

COMPLETE_AFTER = "conformance.kbatch.dev/complete-after"
JobSet = create_namespaced_resource("jobset.x-k8s.io", "v1alpha2", "JobSet", "jobsets")
VolcanoJob = create_namespaced_resource("batch.volcano.sh", "v1alpha1", "Job", "jobs")
PodGroup = create_namespaced_resource("scheduling.volcano.sh", "v1beta1", "PodGroup", "podgroups")


def container(cpu: str = "1") -> dict[str, Any]:
    return {"name": "main", "image": "registry.invalid/fake:1", "resources": {"requests": {"cpu": cpu}}}


def test_kueue_suspends_a_queued_job_and_admits_it_once_quota_exists(
    kube: Client, namespace: str, unique: str
) -> None:
    job = load(
        {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": {"name": "queued", "labels": {"kueue.x-k8s.io/queue-name": "lq"}},
            "spec": {
                "parallelism": 2,
                "completions": 2,
                "suspend": False,
                "template": {
                    "metadata": {"annotations": {COMPLETE_AFTER: "2s"}},
                    "spec": {"restartPolicy": "Never", "containers": [container()]},
                },
            },
        }
    )
    created = kube.create(job, namespace=namespace)
    assert created.spec.suspend is True, "Kueue's Job webhook must suspend a Job that names a LocalQueue"
    workloads = wait_for_list(
        kube,
        Workload,
        namespace=namespace,
        until=lambda ws: len(ws) == 1,
        timeout=30,
        what="Kueue to create the Job's Workload",
    )
    workload = workloads[0].to_dict()
    assert workload["metadata"]["ownerReferences"][0]["name"] == "queued"
    assert not is_true(workloads[0], "QuotaReserved")
    assert not list(kube.list(Pod, namespace=namespace)), "a suspended Job must have no pods"

    flavor, cq = f"flavor-{unique}", f"cq-{unique}"
    kube.create(
        load({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor", "metadata": {"name": flavor}})
    )
    kube.create(
        load(
            {
                "apiVersion": "kueue.x-k8s.io/v1beta2",
                "kind": "ClusterQueue",
                "metadata": {"name": cq},
                "spec": {
                    "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": namespace}},
                    "resourceGroups": [
                        {
                            "coveredResources": ["cpu"],
                            "flavors": [
                                {"name": flavor, "resources": [{"name": "cpu", "nominalQuota": "4"}]}
                            ],
                        }
                    ],
                },
            }
        )
    )
    try:
        kube.create(
            load(
                {
                    "apiVersion": "kueue.x-k8s.io/v1beta2",
                    "kind": "LocalQueue",
                    "metadata": {"name": "lq", "namespace": namespace},
                    "spec": {"clusterQueue": cq},
                }
            ),
            namespace=namespace,
        )
        name = workload["metadata"]["name"]
        admitted = wait_admitted(kube, name, namespace, timeout=60)
        assert admitted.to_dict()["status"]["admission"]["clusterQueue"] == cq
        done = wait_job_complete(kube, "queued", namespace)
        assert done.status.succeeded == 2
        wait_for_object(
            kube,
            Workload,
            name,
            namespace=namespace,
            timeout=30,
            what="the Workload to be Finished",
            until=lambda w: is_true(w, "Finished"),
        )
    finally:
        kube.delete(ClusterQueue, cq)
        kube.delete(ResourceFlavor, flavor)


def test_jobset_creates_its_child_jobs_and_completes(kube: Client, namespace: str) -> None:
    template = {
        "spec": {
            "parallelism": 2,
            "completions": 2,
            "template": {
                "metadata": {"annotations": {COMPLETE_AFTER: "2s"}},
                "spec": {"restartPolicy": "Never", "containers": [container("100m")]},
            },
        }
    }
    kube.create(
        load(
            {
                "apiVersion": "jobset.x-k8s.io/v1alpha2",
                "kind": "JobSet",
                "metadata": {"name": "js", "namespace": namespace},
                "spec": {"replicatedJobs": [{"name": "workers", "replicas": 2, "template": template}]},
            }
        ),
        namespace=namespace,
    )
    jobs = wait_for_list(
        kube,
        Job,
        namespace=namespace,
        until=lambda js: len(js) == 2,
        timeout=30,
        what="JobSet to create two child Jobs",
    )
    assert sorted(j.metadata.name for j in jobs) == ["js-workers-0", "js-workers-1"]
    for job in jobs:
        assert job.metadata.labels["jobset.sigs.k8s.io/jobset-name"] == "js"
    wait_for_object(
        kube,
        JobSet,
        "js",
        namespace=namespace,
        timeout=60,
        what="the JobSet to complete",
        until=lambda js: is_true(js, "Completed"),
        fail=lambda js: "JobSet failed" if is_true(js, "Failed") else None,
    )


def test_volcano_job_gets_a_podgroup_and_runs(kube: Client, namespace: str) -> None:
    kube.create(
        load(
            {
                "apiVersion": "batch.volcano.sh/v1alpha1",
                "kind": "Job",
                "metadata": {"name": "vj", "namespace": namespace},
                "spec": {
                    "minAvailable": 3,
                    "schedulerName": "volcano",
                    "queue": "default",
                    "tasks": [
                        {
                            "name": "worker",
                            "replicas": 3,
                            "template": {
                                "spec": {"restartPolicy": "Never", "containers": [container("100m")]}
                            },
                        }
                    ],
                },
            }
        ),
        namespace=namespace,
    )
    groups = wait_for_list(
        kube,
        PodGroup,
        namespace=namespace,
        until=lambda gs: len(gs) == 1,
        timeout=30,
        what="Volcano to create the Job's PodGroup",
    )
    assert groups[0].to_dict()["spec"]["minMember"] == 3

    def all_running(pods: list[Any]) -> bool:
        return len(pods) == 3 and all(p.status.phase == "Running" and p.spec.nodeName for p in pods)

    pods = wait_for_list(
        kube,
        Pod,
        namespace=namespace,
        until=all_running,
        timeout=60,
        what="the Volcano Job's 3 pods to be bound and running",
    )
    assert {p.spec.schedulerName for p in pods} == {"volcano"}
    wait_for_object(
        kube,
        PodGroup,
        groups[0].metadata.name,
        namespace=namespace,
        timeout=30,
        what="the PodGroup to be Running",
        until=lambda g: g is not None and g.to_dict().get("status", {}).get("phase") == "Running",
    )


def test_served_api_versions_and_controller_versions_match_the_lock(
    kube: Client, charts_lock: ChartsLock, cluster: Cluster
) -> None:
    def versions(group: str) -> tuple[str, list[str]]:
        data = api_get(kube, f"/apis/{group}")
        return data["preferredVersion"]["version"], [v["version"] for v in data["versions"]]

    assert versions("kueue.x-k8s.io")[0] == "v1beta2"
    assert versions("jobset.x-k8s.io")[0] == "v1alpha2"
    assert "v1alpha1" in versions("batch.volcano.sh")[1]
    assert "v1beta1" in versions("scheduling.volcano.sh")[1]

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
    for name in ("kueue", "jobset", "volcano"):
        record = state["installed"][name]
        assert record["appVersion"] == charts_lock.components[name].app_version
        assert record["chartVersion"] == charts_lock.components[name].chart.version
        assert record["chartSource"] == "module" and record["chartDigest"].startswith("h1:")


def test_a_killed_controller_is_noticed_and_restarted(
    kube: Client, cluster_session: ClusterSession, cluster: Cluster, namespace: str
) -> None:
    provider = cluster_session.provider
    assert isinstance(provider, LocalProvider)
    state = json.loads((cluster.log_dir.parent / "state.json").read_text())
    os.kill(state["components"]["kueue-controller-manager"]["pid"], signal.SIGKILL)
    dead = wait_for_dead(provider, cluster.name, "kueue-controller-manager")
    assert "kueue-controller-manager is not running" in dead.describe()
    assert "Last lines of" in dead.describe()
    assert provider.restart_dead(cluster.name) == ["kueue-controller-manager"]
    assert not provider.dead_processes(cluster.name)
    job = load(
        {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": {"name": "after-restart", "labels": {"kueue.x-k8s.io/queue-name": "lq"}},
            "spec": {"template": {"spec": {"restartPolicy": "Never", "containers": [container()]}}},
        }
    )
    created = kube.create(job, namespace=namespace)
    assert created.spec.suspend is True, "the restarted Kueue must serve its webhooks again"


def wait_for_dead(provider: LocalProvider, name: str, process: str) -> Any:
    import time

    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        for dead in provider.dead_processes(name):
            if dead.name == process:
                return dead
        time.sleep(0.1)
    raise AssertionError(f"{process} was killed but not reported dead")


def test_a_controller_dying_during_a_test_fails_that_test_with_its_log(
    tmp_path: Path, cluster: Cluster
) -> None:
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
    inner = subprocess.run(
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
            str(tmp_path),
        ],
        capture_output=True,
        text=True,
        timeout=180,
        cwd=tmp_path,
        check=False,
    )
    output = inner.stdout
    assert "1 passed, 1 error" in output, output
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
    proc = subprocess.run(
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
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
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
        import shutil

        shutil.rmtree(paths.clusters_dir() / name, ignore_errors=True)


def _cmdline_has(proc_dir: Path, marker: str) -> bool:
    try:
        return marker in (proc_dir / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return False
