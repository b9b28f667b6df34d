"""The parts of real nodes that need no root: the configuration each node's containerd, kubelet and CNI
network get, GPU feature discovery's label file, the PCI scan behind ``nvidia.com/gpu.present``, and
removing only what a node made."""

from __future__ import annotations

import json
import socket
import tomllib
from pathlib import Path

import pytest

from kbc.cluster.pki import create_pki
from kbc.cluster.providers.local._realnode import config, gpu, teardown
from kbc.cluster.providers.local._realnode.model import (
    CDI_DIR,
    HostFacts,
    NodeStart,
    RealNodeOptions,
    RealNodeRecord,
)
from kbc.errors import BuildPrerequisiteError, ToolMissingError
from kbc.supply.images import own
from kbc.supply.images.archive import ImageArchive


def record(tmp_path: Path, *, gpus: bool = False) -> RealNodeRecord:
    return RealNodeRecord(
        name="c1-real-1",
        directory=str(tmp_path / "real-node-1"),
        socket_dir="/run/kbc-0123abcd",
        cgroup_root="/kbc-c1-1",
        cgroup_dirs=[],
        bridge="kbc0123abcd",
        network="kbc-c1-1",
        subnet="10.88.7.0/24",
        node_ip="192.0.2.2",
        kubelet_port=41234,
        gpus=gpus,
    )


def binaries(tmp_path: Path) -> dict[str, Path]:
    names = ("runc", "containerd-shim-runc-v2", "bridge", "host-local", "loopback", "kubelet", "containerd")
    return {name: tmp_path / "bin" / name for name in names}


def paths_in(value: object) -> list[str]:
    if isinstance(value, dict):
        return [p for v in value.values() for p in paths_in(v)]
    if isinstance(value, list):
        return [p for v in value for p in paths_in(v)]
    return [value] if isinstance(value, str) and value.startswith("/") else []


def test_containerd_uses_only_the_node_s_own_paths_and_the_harness_s_binaries(tmp_path: Path) -> None:
    node = record(tmp_path)
    pause = ImageArchive("localhost/kbatch-conformance/pause:0123", tmp_path / "pause.tar")
    text = config.containerd_config(node, node.root, binaries(tmp_path), pause)
    parsed = tomllib.loads(text)
    assert parsed["version"] == 3
    ours = (node.directory, node.socket_dir, str(tmp_path / "bin"))
    assert [p for p in paths_in(parsed) if not p.startswith(ours)] == [], "a path of the host's runtime"
    runtime = parsed["plugins"]["io.containerd.cri.v1.runtime"]
    assert runtime["cdi_spec_dirs"] == [str(node.root / "cdi")], "no host CDI specs without GPUs"
    assert parsed["plugins"]["io.containerd.cri.v1.images"]["pinned_images"]["sandbox"] == pause.name
    with_gpus = tomllib.loads(
        config.containerd_config(record(tmp_path, gpus=True), node.root, binaries(tmp_path), pause)
    )
    assert with_gpus["plugins"]["io.containerd.cri.v1.runtime"]["cdi_spec_dirs"][-1] == CDI_DIR


def test_the_kubelet_authenticates_every_caller_and_runs_under_the_node_s_cgroup(tmp_path: Path) -> None:
    node = record(tmp_path)
    pki = create_pki(tmp_path / "pki")
    start = NodeStart(
        "c1",
        1,
        node.root,
        tmp_path / "kubeconfig",
        pki,
        binaries(tmp_path),
        HostFacts("192.0.2.2", 1, False),
        RealNodeOptions(count=1),
        ("k8s.io/kubernetes", "v0.0.0"),
    )
    kubelet = config.kubelet_config(node, node.root, start)
    assert kubelet["authentication"]["anonymous"] == {"enabled": False}
    assert kubelet["authentication"]["x509"]["clientCAFile"] == str(pki.ca.cert)
    assert kubelet["authorization"] == {"mode": "Webhook"}
    assert (kubelet["cgroupRoot"], kubelet["port"], kubelet["readOnlyPort"]) == ("/kbc-c1-1", 41234, 0)
    assert kubelet["containerRuntimeEndpoint"] == f"unix://{node.containerd_socket}"


def test_pods_get_the_node_s_bridge_and_subnet_with_ipam_state_in_its_directory(tmp_path: Path) -> None:
    node = record(tmp_path)
    cni = json.loads(json.dumps(config.cni_config(node, node.root)))
    (bridge,) = cni["plugins"]
    assert (bridge["type"], bridge["bridge"]) == ("bridge", "kbc0123abcd")
    assert bridge["ipam"]["ranges"] == [[{"subnet": "10.88.7.0/24"}]]
    assert bridge["ipam"]["dataDir"].startswith(node.directory)


def test_gpu_feature_discovery_labels_are_read_as_written() -> None:
    # The shape GFD writes (internal/lm/output.go of the pinned release: "%s=%s\n" per label).
    text = (
        "nvidia.com/gpu.count=1\n"
        "nvidia.com/gpu.product=NVIDIA-H100-80GB-HBM3\n"
        "nvidia.com/gpu.memory=81559\n"
        "nvidia.com/mig.capable=true\n"
        "\n"
    )
    assert gpu.parse_feature_file(text) == {
        "nvidia.com/gpu.count": "1",
        "nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3",
        "nvidia.com/gpu.memory": "81559",
        "nvidia.com/mig.capable": "true",
    }
    assert gpu.parse_feature_file("no label here\n# comment=1\n") == {}


def pci(root: Path, address: str, vendor: str, klass: str) -> None:
    device = root / address
    device.mkdir(parents=True)
    (device / "vendor").write_text(vendor + "\n")
    (device / "class").write_text(klass + "\n")


def test_only_nvidia_display_and_3d_controllers_count_as_gpus(tmp_path: Path) -> None:
    pci(tmp_path, "0000:00:01.0", "0x8086", "0x030000")  # another vendor's VGA
    pci(tmp_path, "0000:00:02.0", "0x10de", "0x040300")  # NVIDIA HD audio function
    pci(tmp_path, "0000:00:03.0", "0x10de", "0x068000")  # NVSwitch bridge
    assert gpu.nvidia_pci_gpus(tmp_path) == []
    pci(tmp_path, "0000:17:00.0", "0x10de", "0x030200")  # an H100 (3D controller)
    assert gpu.nvidia_pci_gpus(tmp_path) == ["0000:17:00.0"]
    assert gpu.nvidia_pci_gpus(tmp_path / "absent") == []


def test_a_host_directory_a_node_made_is_removed_only_as_far_as_it_is_empty(tmp_path: Path) -> None:
    made = tmp_path / "cni"
    (made / "results").mkdir(parents=True)
    (made / "networks" / "x").mkdir(parents=True)
    teardown.prune_empty(made)
    assert not made.exists(), "empty directories the node made are gone"
    (made / "results").mkdir(parents=True)
    (made / "networks").mkdir()
    theirs = made / "results" / "other-network-abc-eth0"
    theirs.write_text("{}")
    teardown.prune_empty(made)
    assert theirs.exists(), "another node's (or runtime's) file stays"
    assert not (made / "networks").exists(), "the empty part goes"
    assert teardown.holds_files(made)


@pytest.mark.parametrize("depth", [0, 3], ids=["short-path", "path-beyond-sun_path"])
def test_a_socket_nothing_listens_on_is_removed_one_in_use_stays(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, depth: int
) -> None:
    # CI's tmp_path alone made the short case's path 108 bytes once: a path past sun_path's 107 must
    # be judged as well, not removed because connect() cannot name it.
    kubelet = tmp_path / "kubelet"
    plugins = kubelet.joinpath(*["d" * 40] * depth, "device-plugins")
    plugins.mkdir(parents=True)
    dead, live = plugins / "kubelet.sock", plugins / "other.sock"
    assert (len(bytes(live)) > 107) == bool(depth)
    monkeypatch.chdir(plugins)  # bind by the short relative name, whatever the absolute length
    with socket.socket(socket.AF_UNIX) as gone:
        gone.bind(dead.name)  # bound, never listening, then closed: what a stopped kubelet leaves
    with socket.socket(socket.AF_UNIX) as serving:
        serving.bind(live.name)
        serving.listen()
        teardown.remove_dead_sockets(kubelet)
        assert not dead.exists() and live.exists()
    teardown.prune_empty(kubelet)
    assert kubelet.exists(), "the live socket's file keeps its directory"


def test_a_kept_pause_binary_needs_neither_go_nor_gcc(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A host without network, given the harness's cache (a GPU machine), needs no Go or gcc for it."""
    monkeypatch.setenv("KBC_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    monkeypatch.delenv("KBC_GO", raising=False)
    with pytest.raises((ToolMissingError, BuildPrerequisiteError)):
        own.pause_binary("example.com/kubernetes", "v0.0.1")
    kept = tmp_path / "images" / "pause-build" / "v0.0.1" / "pause"
    kept.parent.mkdir(parents=True)
    kept.write_bytes(b"\x7fELF kept")
    assert own.pause_binary("example.com/kubernetes", "v0.0.1") == kept
