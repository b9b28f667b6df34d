"""What the platform tests share: small platform directories written from YAML text and objects."""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

import pytest
import yaml

from kbc.errors import PlatformError
from kbc.platform import load_platform
from kbc.platform.model import Platform
from kbc.platform.promises import (
    Promise,
)
from kbc.supply import paths

EXAMPLE = paths.repo_root() / "manifests" / "platforms" / "example"
KUEUE = "kueue.x-k8s.io/v1beta2"
GPU = "nvidia.com/gpu"

POOL = """\
apiVersion: conformance.kbatch.dev/v1
kind: NodePool
metadata: {name: gpu}
spec:
  count: 2
  labels: {nvidia.com/gpu.product: A100}
  taints:
  - {key: nvidia.com/gpu, value: present, effect: NoSchedule}
  allocatable: {cpu: "32", memory: 256Gi, nvidia.com/gpu: "8"}
"""
NAMESPACE = """\
apiVersion: v1
kind: Namespace
metadata: {name: ml}
"""


def write(root: Path, files: dict[str, str]) -> Path:
    """*files* (relative path -> YAML text) written under *root*; returns *root*."""
    root.mkdir(parents=True, exist_ok=True)
    for relative, text in files.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    return root


def load(tmp_path: Path, files: dict[str, str]) -> Platform:
    return load_platform(write(tmp_path / "platform", files))


def refused(tmp_path: Path, files: dict[str, str]) -> str:
    """The message of the PlatformError that loading *files* raises."""
    with pytest.raises(PlatformError) as caught:
        load(tmp_path, files)
    return str(caught.value)


def dump(*objects: dict[str, Any]) -> str:
    return yaml.safe_dump_all(objects, sort_keys=False)


def cluster_queue(
    name: str,
    *,
    cohort: str | None = None,
    flavor: str = "a100",
    resource: str = GPU,
    preemption: dict[str, str] | None = None,
    **fields: Any,
) -> dict[str, Any]:
    """A ClusterQueue with one quota (*fields*: ``nominalQuota``, ``borrowingLimit``, ``lendingLimit``)."""
    quota = {"name": resource, **fields}
    spec: dict[str, Any] = {
        "resourceGroups": [
            {"coveredResources": [resource], "flavors": [{"name": flavor, "resources": [quota]}]}
        ]
    }
    if cohort is not None:
        spec["cohortName"] = cohort
    if preemption is not None:
        spec["preemption"] = preemption
    return {"apiVersion": KUEUE, "kind": "ClusterQueue", "metadata": {"name": name}, "spec": spec}


def local_queue(name: str, target: str, namespace: str = "ml") -> dict[str, Any]:
    return {
        "apiVersion": KUEUE,
        "kind": "LocalQueue",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"clusterQueue": target},
    }


def flavor(name: str = "a100") -> dict[str, Any]:
    return {
        "apiVersion": KUEUE,
        "kind": "ResourceFlavor",
        "metadata": {"name": name},
        "spec": {"nodeLabels": {"nvidia.com/gpu.product": "A100"}},
    }


def priority(name: str, value: int) -> dict[str, Any]:
    return {"apiVersion": KUEUE, "kind": "WorkloadPriorityClass", "metadata": {"name": name}, "value": value}


def queues(tmp_path: Path, *objects: dict[str, Any]) -> Platform:
    """A platform of one node pool and *objects* (in one multi-document file)."""
    return load(tmp_path, {"nodes.yaml": POOL, "queues.yaml": dump(*objects)})


def by_id(promises: list[Promise]) -> dict[str, Promise]:
    return {p.id: p for p in promises}


def node(name: str, instance_type: str, gpus: str, *, tainted: bool = True) -> dict[str, Any]:
    """A Node as ``kubectl get nodes -o yaml`` exports it."""
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "uid": f"uid-{name}",
            "resourceVersion": "4242",
            "creationTimestamp": "2025-01-01T00:00:00Z",
            "annotations": {"node.alpha.kubernetes.io/ttl": "0"},
            "labels": {
                "kubernetes.io/hostname": name,
                "node.kubernetes.io/instance-type": instance_type,
                "kubernetes.io/os": "linux",
            },
            "managedFields": [{"manager": "kubelet", "operation": "Update", "apiVersion": "v1"}],
        },
        "spec": {
            "providerID": f"aws:///eu-west-1a/{name}",
            **({"taints": [{"key": GPU, "value": "present", "effect": "NoSchedule"}]} if tainted else {}),
        },
        "status": {
            "allocatable": {"cpu": "95", "memory": "1100Gi", "pods": "110", GPU: gpus},
            "capacity": {"cpu": "96", "memory": "1152Gi", "pods": "110", GPU: gpus},
            "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady"}],
            "nodeInfo": {"kubeletVersion": "v1.34.1"},
        },
    }
