"""Node pools expand into kwok-managed Nodes, named after their pool or as kind names its workers;
broken pool files are named."""

from __future__ import annotations

from pathlib import Path

import pytest

from kbc.cluster.pools import kind_worker_names, kwok_nodes, load_pools
from kbc.cluster.providers.kind import kind_config
from kbc.errors import NodePoolError
from kbc.labels import GPU, HOSTNAME_LABEL, KWOK_ANNOTATION, KWOK_TYPE_LABEL, POOL_LABEL
from kbc.supply import paths


def test_repository_pools_make_cpu_and_gpu_nodes() -> None:
    pools = load_pools(paths.manifests_dir() / "nodes")
    nodes = kwok_nodes(pools)
    names = [n["metadata"]["name"] for n in nodes]
    assert len(names) == len(set(names)) == sum(p.replicas for p in pools)
    gpu = [n for n in nodes if GPU in n["status"]["allocatable"]]
    assert len(gpu) >= 2
    for node in nodes:
        assert node["metadata"]["annotations"][KWOK_ANNOTATION[0]] == KWOK_ANNOTATION[1]
        assert node["metadata"]["labels"][POOL_LABEL] in {p.name for p in pools}
        assert node["metadata"]["labels"][HOSTNAME_LABEL] == node["metadata"]["name"]
        assert node["metadata"]["labels"][KWOK_TYPE_LABEL[0]] == KWOK_TYPE_LABEL[1]
    for node in gpu:
        assert node["status"]["capacity"][GPU] == node["status"]["allocatable"][GPU]
        assert {"key": GPU, "value": "present", "effect": "NoSchedule"} in node["spec"]["taints"]


def test_kind_naming_gives_the_names_and_labels_kind_gives_its_workers() -> None:
    pools = load_pools(paths.manifests_dir() / "nodes")
    nodes = kwok_nodes(pools, naming="kind", cluster="ci")
    total = sum(p.replicas for p in pools)
    assert [n["metadata"]["name"] for n in nodes] == [
        "ci-worker",
        *(f"ci-worker{i}" for i in range(2, total + 1)),
    ]
    assert kind_worker_names("ci", 3) == ["ci-worker", "ci-worker2", "ci-worker3"]
    # The labels kind gives its workers from the provider's kind config, in the same order.
    workers = [n for n in kind_config(pools)["nodes"] if n["role"] == "worker"]
    for node, worker in zip(nodes, workers, strict=True):
        labels = node["metadata"]["labels"]
        assert worker["labels"].items() <= labels.items(), (node["metadata"]["name"], worker["labels"])
        assert KWOK_TYPE_LABEL[0] not in labels, "kind workers carry no kwok type label"
        assert node["metadata"]["annotations"][KWOK_ANNOTATION[0]] == KWOK_ANNOTATION[1], (
            "kwok still manages it"
        )
    with pytest.raises(ValueError, match="unknown node naming 'kwok'"):
        kwok_nodes(pools, naming="kwok")


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
