"""The host-facing helpers of real nodes that need no root: GPU feature discovery's label file, the PCI
scan behind ``nvidia.com/gpu.present``, and removing only what a node made."""

from __future__ import annotations

from pathlib import Path

from kbc.cluster.providers.local import _realnode as realnode


def test_gpu_feature_discovery_labels_are_read_as_written() -> None:
    # The shape GFD writes (internal/lm/output.go of the pinned release: "%s=%s\n" per label).
    text = (
        "nvidia.com/gpu.count=1\n"
        "nvidia.com/gpu.product=NVIDIA-H100-80GB-HBM3\n"
        "nvidia.com/gpu.memory=81559\n"
        "nvidia.com/mig.capable=true\n"
        "\n"
    )
    assert realnode.parse_feature_file(text) == {
        "nvidia.com/gpu.count": "1",
        "nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3",
        "nvidia.com/gpu.memory": "81559",
        "nvidia.com/mig.capable": "true",
    }
    assert realnode.parse_feature_file("no label here\n# comment=1\n") == {}


def pci(root: Path, address: str, vendor: str, klass: str) -> None:
    device = root / address
    device.mkdir(parents=True)
    (device / "vendor").write_text(vendor + "\n")
    (device / "class").write_text(klass + "\n")


def test_only_nvidia_display_and_3d_controllers_count_as_gpus(tmp_path: Path) -> None:
    pci(tmp_path, "0000:00:01.0", "0x8086", "0x030000")  # another vendor's VGA
    pci(tmp_path, "0000:00:02.0", "0x10de", "0x040300")  # NVIDIA HD audio function
    pci(tmp_path, "0000:00:03.0", "0x10de", "0x068000")  # NVSwitch bridge
    assert realnode.nvidia_pci_gpus(tmp_path) == []
    pci(tmp_path, "0000:17:00.0", "0x10de", "0x030200")  # an H100 (3D controller)
    assert realnode.nvidia_pci_gpus(tmp_path) == ["0000:17:00.0"]
    assert realnode.nvidia_pci_gpus(tmp_path / "absent") == []


def test_a_host_directory_a_node_made_is_removed_only_as_far_as_it_is_empty(tmp_path: Path) -> None:
    made = tmp_path / "cni"
    (made / "results").mkdir(parents=True)
    (made / "networks" / "x").mkdir(parents=True)
    realnode._prune_empty(made)
    assert not made.exists(), "empty directories the node made are gone"
    (made / "results").mkdir(parents=True)
    (made / "networks").mkdir()
    theirs = made / "results" / "other-network-abc-eth0"
    theirs.write_text("{}")
    realnode._prune_empty(made)
    assert theirs.exists(), "another node's (or runtime's) file stays"
    assert not (made / "networks").exists(), "the empty part goes"
    assert realnode._holds_files(made)
