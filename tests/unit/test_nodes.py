"""Node pools expand into kwok-managed Nodes; broken pool files are named."""

from __future__ import annotations

from pathlib import Path

import pytest

from kbc import paths
from kbc.providers.local._nodes import KWOK_ANNOTATION, POOL_LABEL, NodePoolError, load_pools


def test_repository_pools_make_cpu_and_gpu_nodes() -> None:
    pools = {p.name: p for p in load_pools(paths.manifests_dir() / "nodes")}
    nodes = [n for p in pools.values() for n in p.nodes()]
    names = [n["metadata"]["name"] for n in nodes]
    assert len(names) == len(set(names))
    gpu = [n for n in nodes if "nvidia.com/gpu" in n["status"]["allocatable"]]
    assert len(gpu) >= 2
    for node in nodes:
        assert node["metadata"]["annotations"][KWOK_ANNOTATION[0]] == KWOK_ANNOTATION[1]
        assert node["metadata"]["labels"][POOL_LABEL] in pools
        assert node["metadata"]["labels"]["kubernetes.io/hostname"] == node["metadata"]["name"]
    for node in gpu:
        assert node["status"]["capacity"]["nvidia.com/gpu"] == node["status"]["allocatable"]["nvidia.com/gpu"]
        assert {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"} in node["spec"]["taints"]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("kind: NodePool\nmetadata: {name: x}\nspec: {replicas: 0, template: {}}\n", "positive integer"),
        ("kind: Node\nmetadata: {name: x}\n", "kind NodePool"),
        ("kind: NodePool\nspec: {replicas: 1, template: {}}\n", "metadata.name is missing"),
        ("kind: NodePool\nmetadata: {name: x}\nspec: {replicas: 1}\n", "Node template"),
        ("kind: [\n", "not valid YAML"),
    ],
)
def test_bad_pool_files_are_named(tmp_path: Path, text: str, message: str) -> None:
    (tmp_path / "pool.yaml").write_text(text)
    with pytest.raises(NodePoolError, match=message) as info:
        load_pools(tmp_path)
    assert str(tmp_path / "pool.yaml") in str(info.value)
