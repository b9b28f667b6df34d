"""Real nodes of the local provider: a kubelet and containerd on this host join, run pods, and go.

No stand-in: the pinned kubelet, containerd, runc and CNI plugins, built from the module proxy.
Each test checks, after the cluster is gone, that the host is as it was: no process, mount,
bridge, cgroup, shim socket directory, CNI cache entry or directory of the node is left.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import signal
import subprocess
import sys
import tarfile
import time
from pathlib import Path
from typing import Any

import pytest

from kbc import apis
from kbc.cluster.providers.local import LocalProvider, RealNodeOptions
from kbc.cluster.providers.local._realnode import RealNodeError, RealNodeRecord, leftovers
from kbc.cluster.providers.local._realnode import preflight as realnode_preflight
from kbc.cluster.providers.local._realnode.model import bridge_name, socket_dir_of
from kbc.kube import connect, is_true
from kbc.labels import HOSTNAME_LABEL, REAL_NODE_LABEL, TOOLBOX_REPOSITORY
from kbc.supply import paths
from kbc.supply.lock import load_lock
from tests.integration.commands import KBC_AS_TYPED, REPO, kbc, run_bounded, unique_name

pytestmark = [pytest.mark.cluster]


def real_node_records(name: str) -> list[RealNodeRecord]:
    state = json.loads((paths.clusters_dir() / name / "state.json").read_text())
    return [RealNodeRecord.from_dict(data) for data in state.get("real_nodes", {}).values()]


def assert_host_as_it_was(records: list[RealNodeRecord]) -> None:
    assert records, "the test never saw the real node's record"
    for record in records:
        left = leftovers(record)
        assert not left, f"real node {record.name} left {left.describe()}"
        assert not Path(f"/sys/class/net/{record.bridge}").exists()
        assert not any(Path("/sys/fs/cgroup").glob(f"*/{record.cgroup_root.lstrip('/')}"))


def toolbox_pod(name: str, node: str, image: str, command: list[str]) -> dict[str, Any]:
    return apis.POD.manifest(
        name,
        spec={
            "restartPolicy": "Never",
            "nodeSelector": {REAL_NODE_LABEL: "true", HOSTNAME_LABEL: node},
            "tolerations": [{"key": REAL_NODE_LABEL, "operator": "Exists", "effect": "NoSchedule"}],
            "containers": [{"name": "main", "image": image, "imagePullPolicy": "Never", "command": command}],
        },
    )


def up_real(name: str, count: int, *extra: str) -> subprocess.CompletedProcess[str]:
    return kbc(
        "cluster",
        "up",
        "--name",
        name,
        "--components",
        "none",
        "--real-nodes",
        str(count),
        "--real-node-gpus",
        "none",
        *extra,
    )


def test_real_nodes_join_run_a_pod_whose_log_is_read_and_leave_nothing(cleanup_names: list[str]) -> None:
    """One real node, then a second one added to the running cluster: each is Ready with its own
    network, ports and directories; a pod runs on one, a long-running container on the other. The
    cluster's name is as long as names go (42 characters): no socket path of a node may outgrow it."""
    name = unique_name("realnode-with-a-longest-name-for-ok")
    assert len(name) == 42, name
    cleanup_names.append(name)
    up = up_real(name, 1)
    assert up.returncode == 0, up.stderr
    assert f"real node {name}-real-1: Ready in" in up.stderr, up.stderr
    kubeconfig = Path(up.stdout.strip().splitlines()[-1].removeprefix("KUBECONFIG="))
    # Before any pod ran on node 1 (the CNI plugin would make its bridge only then): node 2 must not
    # be given node 1's pod subnet.
    more = up_real(name, 2)
    assert more.returncode == 0, more.stderr
    assert "reusing it" in more.stderr and f"real node {name}-real-2: Ready in" in more.stderr, more.stderr
    assert f"{name}-real-1: Ready" not in more.stderr, "the running node is kept, not started again"
    records = real_node_records(name)
    assert [r.name for r in records] == [f"{name}-real-1", f"{name}-real-2"]
    for field in ("directory", "socket_dir", "cgroup_root", "bridge", "network", "subnet", "kubelet_port"):
        values = [getattr(r, field) for r in records]
        assert len(set(values)) == 2, f"the two real nodes share their {field}: {values}"
    first, second = records
    # What the cluster reports (and the test report's environment shows): its real nodes' images.
    versions = json.loads((paths.clusters_dir() / name / "state.json").read_text())["versions"]
    assert versions["real-nodes"] == "2" and versions["real-node-gpus"] == "none", versions
    assert TOOLBOX_REPOSITORY in versions["real-node-images"], versions
    with connect(kubeconfig) as kube:
        for record in records:
            node = kube.get(apis.NODE, record.name)
            assert is_true(node, "Ready"), record.name
            assert node["metadata"]["labels"][REAL_NODE_LABEL] == "true"
            taint = {"key": REAL_NODE_LABEL, "value": "true", "effect": "NoSchedule"}
            assert taint in node["spec"]["taints"]
            assert "kwok.x-k8s.io/node" not in node["metadata"].get("annotations", {}), (
                "kwok must not manage it"
            )
            info = node["status"]["nodeInfo"]
            assert info["kubeletVersion"] == load_lock().kubernetes.version
            assert info["containerRuntimeVersion"].startswith("containerd://")
        images = [n for image in node["status"]["images"] for n in image["names"]]
        toolbox = next(n for n in images if n.startswith(TOOLBOX_REPOSITORY + ":"))
        show_address = "echo hello from $(hostname) at $(ip -4 addr show eth0 | grep inet)"
        kube.create(
            toolbox_pod("hello", second.name, toolbox, ["sh", "-c", show_address]), namespace="default"
        )
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline:
            phase = kube.get(apis.POD, "hello", "default").get("status", {}).get("phase")
            if phase in ("Succeeded", "Failed"):
                break
            time.sleep(0.5)
        assert phase == "Succeeded", kube.get(apis.POD, "hello", "default").get("status")
        log = kube.pod_log("hello", "default")
        subnet_prefix = second.subnet.rsplit(".", 1)[0]
        assert "hello from hello at" in log and f"inet {subnet_prefix}." in log, log
        # A long-running container, so that teardown has a live shim, mounts and a veth to remove.
        kube.create(toolbox_pod("sleeper", first.name, toolbox, ["sleep", "3600"]), namespace="default")
        deadline = time.monotonic() + 60
        while kube.get(apis.POD, "sleeper", "default").get("status", {}).get("phase") != "Running":
            assert time.monotonic() < deadline, "the sleeper never ran"
            time.sleep(0.5)
    # The leftover check sees a running node (so that "nothing left" below means something).
    running = leftovers(first)
    assert running.processes and running.mounts and running.interfaces and running.paths, running
    down = kbc("cluster", "down", "--name", name)
    assert down.returncode == 0, down.stderr
    assert_host_as_it_was(records)


def broken_archive(path: Path, image: str) -> Path:
    """An OCI archive that names *image* but lacks the blobs its index points to."""
    index = {
        "schemaVersion": 2,
        "manifests": [
            {
                "mediaType": "application/vnd.oci.image.manifest.v1+json",
                "digest": "sha256:" + "0" * 64,
                "size": 100,
                "annotations": {"io.containerd.image.name": image},
            }
        ],
    }
    with tarfile.open(path, "w") as tar:
        for member, data in (
            ("oci-layout", b'{"imageLayoutVersion": "1.0.0"}'),
            ("index.json", json.dumps(index).encode()),
        ):
            info = tarfile.TarInfo(member)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return path


def test_a_real_node_that_fails_to_start_on_a_running_cluster_is_removed_and_the_cluster_kept(
    cleanup_names: list[str], tmp_path: Path
) -> None:
    name = unique_name("realfail")
    cleanup_names.append(name)
    up = up_real(name, 1)
    assert up.returncode == 0, up.stderr
    (kept,) = real_node_records(name)
    archive = broken_archive(tmp_path / "broken.tar", "localhost/kbatch-conformance-test/broken:1")
    failed = up_real(name, 2, "--image-archive", str(archive))
    assert failed.returncode != 0, failed.stderr
    assert (
        f"real node {name}-real-2 start 'image-archive': ctr images import {archive} failed" in failed.stderr
    ), failed.stderr
    # Node 2 got as far as a running containerd with its cgroups, directories and state: all gone.
    gone = RealNodeRecord(
        name=f"{name}-real-2",
        directory=str(paths.clusters_dir() / name / "real-node-2"),
        socket_dir=socket_dir_of(name, 2),
        cgroup_root=f"/kbc-{name}-2",
        cgroup_dirs=[],
        bridge=bridge_name(name, 2),
        network=f"kbc-{name}-2",
        subnet="",
        node_ip="",
        kubelet_port=0,
        gpus=False,
    )
    assert_host_as_it_was([gone])
    state = json.loads((paths.clusters_dir() / name / "state.json").read_text())
    assert list(state["real_nodes"]) == [kept.name], state["real_nodes"]
    assert not [p for p in state["components"] if p.endswith("-2")], state["components"]
    # The cluster and its first node run on, and the cluster is reused as before.
    again = up_real(name, 1)
    assert again.returncode == 0 and "reusing it" in again.stderr, again.stderr
    kubeconfig = Path(again.stdout.strip().splitlines()[-1].removeprefix("KUBECONFIG="))
    with connect(kubeconfig) as kube:
        assert is_true(kube.get(apis.NODE, kept.name), "Ready")
        assert kube.find(apis.NODE, f"{name}-real-2") is None, "node 2 never registered"
    assert leftovers(kept).processes, "the kept node's processes run on"
    down = kbc("cluster", "down", "--name", name)
    assert down.returncode == 0, down.stderr
    assert_host_as_it_was([kept])


def test_the_remains_of_a_run_killed_outright_are_removed_by_the_next_up(cleanup_names: list[str]) -> None:
    """SIGKILL to every process of a cluster (a machine restart, a CI job's time limit) leaves its state,
    its real node's bridge and mounts: the next `kbc cluster up` of that name removes them and starts
    afresh, where its pre-flight used to refuse the cluster's own bridge as another's."""
    name = unique_name("realkill")
    cleanup_names.append(name)
    up = up_real(name, 1)
    assert up.returncode == 0, up.stderr
    (record,) = real_node_records(name)
    state = json.loads((paths.clusters_dir() / name / "state.json").read_text())
    for process in state["components"].values():
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process["pid"], signal.SIGKILL)
    assert Path(f"/sys/class/net/{record.bridge}").exists(), "the killed node's bridge is what is tested"
    again = up_real(name, 1)
    assert again.returncode == 0, again.stderr
    assert f"cluster {name}: removing the remains of an earlier run" in again.stderr, again.stderr
    kubeconfig = Path(again.stdout.strip().splitlines()[-1].removeprefix("KUBECONFIG="))
    with connect(kubeconfig) as kube:
        assert is_true(kube.get(apis.NODE, record.name), "Ready")
    down = kbc("cluster", "down", "--name", name)
    assert down.returncode == 0, down.stderr
    assert_host_as_it_was([record])


def test_sigint_while_the_real_node_starts_leaves_nothing(cleanup_names: list[str]) -> None:
    name = unique_name("realint")
    cleanup_names.append(name)
    state_file = paths.clusters_dir() / name / "state.json"
    proc = subprocess.Popen(
        [*KBC_AS_TYPED, "cluster", "up", "--name", name, "--components", "none", "--real-nodes", "1"],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    records: list[RealNodeRecord] = []
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        if state_file.exists():
            state = json.loads(state_file.read_text())
            if "containerd-1" in state.get("components", {}) and state.get("real_nodes"):
                records = [RealNodeRecord.from_dict(d) for d in state["real_nodes"].values()]
                break
        assert proc.poll() is None, proc.communicate()
        time.sleep(0.02)
    assert records, "never saw the real node mid-startup"
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err
    assert_host_as_it_was(records)
    assert not state_file.exists()


def test_a_test_session_that_made_the_cluster_leaves_nothing(tmp_path: Path) -> None:
    """The rendezvous suite in a session of its own, on a cluster with two real nodes it makes and removes:
    the scenarios pin their pods to one real node, so a second one cannot spread a gang across nodes
    (which would fail the rendezvous, and let the negative control's third worker run)."""
    name = unique_name("realsession")
    seen = tmp_path / "records.json"
    # A conftest-free observer: records the real node as the session sees it, before teardown.
    observer = tmp_path / "observe_real_nodes.py"
    observer.write_text(
        "import json, pathlib\n"
        "from kbc.supply import paths\n"
        "def pytest_runtest_teardown(item):\n"
        f"    state = paths.clusters_dir() / {name!r} / 'state.json'\n"
        "    if state.exists():\n"
        "        nodes = json.loads(state.read_text())['real_nodes']\n"
        f"        pathlib.Path({str(seen)!r}).write_text(json.dumps(nodes))\n"
    )
    run = run_bounded(
        [
            sys.executable,
            "-m",
            "pytest",
            "suites/test_real_nodes.py",
            "--cluster-name",
            name,
            "--components",
            "kueue",
            "--real-nodes",
            "2",
            "-p",
            "observe_real_nodes",
            "-p",
            "no:cacheprovider",
            "-q",
        ],
        timeout=600,
        env={**os.environ, "PYTHONPATH": str(tmp_path)},
    )
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-2000:]
    assert "2 passed" in run.stdout, run.stdout[-2000:]
    records = [RealNodeRecord.from_dict(d) for d in json.loads(seen.read_text()).values()]
    assert len(records) == 2, records
    assert_host_as_it_was(records)
    assert not (paths.clusters_dir() / name).exists()


# -- pre-flight: each error says what to do, and nothing is left -------------------------------------


def preflight_fails(cleanup_names: list[str], options: RealNodeOptions) -> RealNodeError:
    name = unique_name("realpre")
    cleanup_names.append(name)
    with pytest.raises(RealNodeError) as info:
        LocalProvider(load_lock(), real_nodes=options).up(name, components=())
    assert not (paths.clusters_dir() / name).exists(), "a failed pre-flight must start nothing"
    return info.value


def test_gpus_required_where_there_are_none_is_refused_before_anything_starts(
    cleanup_names: list[str],
) -> None:
    if list(Path("/dev").glob("nvidia[0-9]*")):
        pytest.skip("this host has an NVIDIA device: the check for a missing one cannot fail here")
    error = preflight_fails(cleanup_names, RealNodeOptions(count=1, gpus="all"))
    assert error.check == "gpus" and "no /dev/nvidia[0-9]* device" in str(error)
    assert "--real-node-gpus auto/none" in str(error)


def test_a_bridge_that_already_exists_is_refused(
    cleanup_names: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    name = unique_name("realbr")
    cleanup_names.append(name)
    bridge = bridge_name(name, 1)
    subprocess.run(["ip", "link", "add", bridge, "type", "bridge"], check=True)
    try:
        with pytest.raises(RealNodeError, match=f"a network interface named {bridge} already exists"):
            LocalProvider(load_lock(), real_nodes=RealNodeOptions(count=1)).up(name, components=())
        assert not (paths.clusters_dir() / name).exists()
    finally:
        subprocess.run(["ip", "link", "delete", bridge], check=False)


def test_not_root_is_refused(cleanup_names: list[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("kbc.cluster.providers.local._realnode.preflight.os.geteuid", lambda: 1000)
    error = preflight_fails(cleanup_names, RealNodeOptions(count=1))
    assert error.check == "root" and "uid 1000" in str(error) and "sudo" in str(error)


def test_no_overlay_filesystem_is_refused(
    cleanup_names: list[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    filesystems = tmp_path / "filesystems"
    filesystems.write_text("nodev\tsysfs\nnodev\ttmpfs\n\text4\n")
    monkeypatch.setattr(realnode_preflight, "PROC_FILESYSTEMS", filesystems)
    error = preflight_fails(cleanup_names, RealNodeOptions(count=1))
    assert error.check == "overlay" and "modprobe overlay" in str(error)


@pytest.mark.parametrize("version", [1, 2])
def test_missing_cgroup_controllers_are_named(
    cleanup_names: list[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path, version: int
) -> None:
    if version == 2:
        (tmp_path / "cgroup.controllers").write_text("cpuset cpu io\n")
    else:
        for hierarchy in ("cpu,cpuacct", "pids", "devices"):
            (tmp_path / hierarchy).mkdir()
    monkeypatch.setattr(realnode_preflight, "CGROUP_ROOT", tmp_path)
    error = preflight_fails(cleanup_names, RealNodeOptions(count=1))
    assert error.check == "cgroups" and f"cgroup v{version} without the memory" in str(error), str(error)


def test_no_non_loopback_address_is_refused(
    cleanup_names: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    real_run = subprocess.run

    def only_loopback(command: list[str], *args: object, **kwargs: object) -> object:
        if command[:2] == ["ip", "-j"] and "addr" in command:
            return subprocess.CompletedProcess(command, 0, "[]", "")
        return real_run(command, *args, **kwargs)  # type: ignore[call-overload]

    monkeypatch.setattr("kbc.cluster.providers.local._realnode.preflight.subprocess.run", only_loopback)
    error = preflight_fails(cleanup_names, RealNodeOptions(count=1))
    assert error.check == "node-ip" and "ip link add dummy0" in str(error)


def test_an_image_archive_that_names_no_image_is_refused(cleanup_names: list[str], tmp_path: Path) -> None:
    archive = tmp_path / "nameless.tar"
    subprocess.run(["tar", "-cf", str(archive), "-T", "/dev/null"], check=True)
    error = preflight_fails(cleanup_names, RealNodeOptions(count=1, image_archives=(archive,)))
    assert error.check == "image-archive" and "names no image" in str(error)
