"""A platform directory without a cluster: every YAML document read with where it was, and bad input named
by file, document and field."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from kbc.errors import PlatformError
from kbc.platform import load_platform
from kbc.platform._read import Source, read_documents, yaml_files
from tests.unit.platform_helpers import (
    KUEUE,
    NAMESPACE,
    POOL,
    cluster_queue,
    dump,
    flavor,
    local_queue,
    node,
    queues,
    refused,
    write,
)

# -- reading ----------------------------------------------------------------------------------------


def test_every_document_of_every_yaml_file_is_read_with_where_it_was(tmp_path: Path) -> None:
    root = write(
        tmp_path / "p",
        {
            "queues/teams.yaml": """\
                # The teams, one document each.
                apiVersion: v1
                kind: Namespace
                metadata: {name: a}
                ---
                # an empty document counts as one
                ---
                apiVersion: v1
                kind: Namespace
                metadata: {name: b}
                """,
            "nested/deeper/flavor.yml": dump(flavor()),
            ".git/config.yaml": NAMESPACE,
            "nested/.hidden/skip.yaml": NAMESPACE,
            "notes.txt": "kind: Namespace\n",
            "README.md": "# not YAML\n",
            "pools.json": "{}",
        },
    )
    assert [p.relative_to(root).as_posix() for p in yaml_files(root)] == [
        "nested/deeper/flavor.yml",
        "queues/teams.yaml",
    ]
    found = [(d.title(), d.source.describe(root)) for d in read_documents(root)]
    assert found == [
        ("ResourceFlavor a100", "nested/deeper/flavor.yml, document 1 (line 1)"),
        ("Namespace a", "queues/teams.yaml, document 1 (line 2)"),
        ("Namespace b", "queues/teams.yaml, document 3 (line 8)"),
    ]


def test_the_items_of_a_list_are_read_one_by_one_with_their_index(tmp_path: Path) -> None:
    root = write(
        tmp_path / "p",
        {
            "teams.yaml": NAMESPACE
            + "---\n"
            + dump(
                {"apiVersion": "v1", "kind": "List", "items": [local_queue("a", "a"), local_queue("b", "b")]}
            ),
            "nodes.yaml": dump({"apiVersion": "v1", "kind": "NodeList", "items": [node("n-1", "p4d", "8")]}),
        },
    )
    found = [(d.title(), d.source.item, d.source.describe(root)) for d in read_documents(root)]
    assert found == [
        ("Node n-1", 0, "nodes.yaml, document 1, item 0 (line 4)"),
        ("Namespace ml", None, "teams.yaml, document 1 (line 1)"),
        ("LocalQueue ml/a", 0, "teams.yaml, document 2, item 0 (line 8)"),
        ("LocalQueue ml/b", 1, "teams.yaml, document 2, item 1 (line 15)"),
    ]


def test_a_source_is_described_relative_to_the_root_where_it_can_be(tmp_path: Path) -> None:
    source = Source(tmp_path / "queues" / "teams.yaml", 2, 14)
    assert source.describe(tmp_path) == "queues/teams.yaml, document 2 (line 14)"
    assert source.describe() == f"{tmp_path}/queues/teams.yaml, document 2 (line 14)"
    assert source.describe(tmp_path / "elsewhere") == f"{tmp_path}/queues/teams.yaml, document 2 (line 14)"
    assert (
        Source(tmp_path / "t.yaml", 1, 2, item=3).describe(tmp_path) == "t.yaml, document 1, item 3 (line 2)"
    )


# -- bad input --------------------------------------------------------------------------------------


def test_yaml_that_does_not_parse_names_the_file_document_and_line(tmp_path: Path) -> None:
    message = refused(
        tmp_path, {"nodes.yaml": POOL, "queues/bad.yaml": NAMESPACE + "---\na: b\nc: [1, 2\nd: e\n"}
    )
    assert "queues/bad.yaml, document 2 (line 7, column 2)" in message
    assert "is not valid YAML" in message
    assert "kubectl apply --dry-run=client" in message


@pytest.mark.parametrize(
    ("text", "held"), [("- apiVersion: v1\n  kind: Namespace\n", "list"), ("just words\n", "str")]
)
def test_a_document_that_is_not_a_mapping_is_refused(tmp_path: Path, text: str, held: str) -> None:
    message = refused(tmp_path, {"nodes.yaml": POOL, "q/ns.yaml": NAMESPACE + "---\n" + text})
    assert message.startswith(f"q/ns.yaml, document 2 (line 5): holds a {held}, not a Kubernetes object")


def test_a_list_item_that_is_not_a_mapping_is_refused(tmp_path: Path) -> None:
    message = refused(tmp_path, {"nodes.yaml": POOL, "l.yaml": "kind: List\napiVersion: v1\nitems: [x]\n"})
    assert message.startswith("l.yaml, document 1, item 0 (line 3): is not a Kubernetes object")


@pytest.mark.parametrize(
    ("body", "problem"),
    [
        ("apiVersion: v1\nmetadata: {name: x}\n", "kind is missing"),
        ("kind: Namespace\nmetadata: {name: x}\n", "apiVersion is missing"),
        ("apiVersion: v1\nkind: Namespace\nmetadata: {labels: {a: b}}\n", "Namespace has no metadata.name"),
    ],
)
def test_an_object_without_kind_api_version_or_name_is_refused(
    tmp_path: Path, body: str, problem: str
) -> None:
    message = refused(tmp_path, {"nodes.yaml": POOL, "q/ns.yaml": NAMESPACE + "---\n" + body})
    assert message.startswith(f"q/ns.yaml, document 2 (line 5): {problem}")


def test_an_object_defined_twice_names_both_places(tmp_path: Path) -> None:
    message = refused(
        tmp_path, {"nodes.yaml": POOL, "a.yaml": NAMESPACE, "b/c.yaml": dump(flavor()) + "---\n" + NAMESPACE}
    )
    assert message.startswith(
        "b/c.yaml, document 2 (line 9): Namespace ml is defined twice; "
        "the first is at a.yaml, document 1 (line 1)"
    )


def test_the_same_name_in_two_namespaces_is_two_objects(tmp_path: Path) -> None:
    platform = queues(
        tmp_path,
        cluster_queue("cq", nominalQuota=1),
        local_queue("q", "cq", "a"),
        local_queue("q", "cq", "b"),
    )
    assert [lq.team for lq in platform.local_queues] == ["a/q", "b/q"]


def test_a_quota_without_nominal_quota_names_the_field(tmp_path: Path) -> None:
    message = refused(
        tmp_path, {"nodes.yaml": POOL, "cq.yaml": dump(cluster_queue("research", borrowingLimit=2))}
    )
    assert message == (
        "cq.yaml, document 1 (line 1): spec.resourceGroups[0].flavors[0].resources[0].nominalQuota is missing"
    )


@pytest.mark.parametrize("field", ["nominalQuota", "borrowingLimit", "lendingLimit"])
def test_a_bad_quantity_names_the_field_and_the_value(tmp_path: Path, field: str) -> None:
    fields: dict[str, Any] = {"nominalQuota": 8, field: "lots"}
    message = refused(tmp_path, {"nodes.yaml": POOL, "cq.yaml": dump(cluster_queue("research", **fields))})
    assert message == (
        f"cq.yaml, document 1 (line 1): spec.resourceGroups[0].flavors[0].resources[0].{field}: "
        "'lots' is not a Kubernetes quantity"
    )


@pytest.mark.parametrize(
    ("spec", "problem"),
    [
        ("{count: 0, allocatable: {cpu: '4'}}", "spec.count must be a positive whole number"),
        ("{allocatable: {cpu: '4'}}", "spec.count must be a positive whole number"),
        ("{count: two, allocatable: {cpu: '4'}}", "spec.count must be a positive whole number"),
        ("{replicas: 0, template: {status: {allocatable: {cpu: '4'}}}}", "spec.replicas must be a positive"),
        ("{count: 3}", "spec.allocatable is missing"),
        ("{count: 3, allocatable: {cpu: many}}", "allocatable[cpu]: 'many' is not a Kubernetes quantity"),
    ],
)
def test_a_node_pool_needs_a_count_and_what_each_node_offers(tmp_path: Path, spec: str, problem: str) -> None:
    pool = f"apiVersion: conformance.kbatch.dev/v1\nkind: NodePool\nmetadata: {{name: cpu}}\nspec: {spec}\n"
    message = refused(tmp_path, {"ns.yaml": NAMESPACE, "nodes/cpu.yaml": pool})
    assert message.startswith(f"nodes/cpu.yaml, document 1 (line 1): {problem}")


def test_an_exported_node_without_allocatable_is_refused(tmp_path: Path) -> None:
    bare = node("gpu-7", "p4d", "8")
    del bare["status"]
    listed = dump({"apiVersion": "v1", "kind": "List", "items": [node("gpu-1", "p4d", "8"), bare]})
    message = refused(tmp_path, {"ns.yaml": NAMESPACE, "nodes.yaml": listed})
    assert message.startswith(
        "nodes.yaml, document 1, item 1 (line 44): Node gpu-7 has no status.allocatable"
    )
    assert "kubectl get nodes -o yaml" in message


@pytest.mark.parametrize(
    ("spec", "problem"),
    [
        (
            "kind: LocalQueue\nmetadata: {name: q, namespace: ml}\nspec: {}\n",
            "LocalQueue q has no spec.clusterQueue",
        ),
        (
            "kind: WorkloadPriorityClass\nmetadata: {name: low}\nvalue: high\n",
            "WorkloadPriorityClass low: value must",
        ),
    ],
)
def test_queue_objects_missing_what_promises_need_are_refused(
    tmp_path: Path, spec: str, problem: str
) -> None:
    message = refused(tmp_path, {"nodes.yaml": POOL, "q.yaml": f"apiVersion: {KUEUE}\n{spec}"})
    assert message.startswith(f"q.yaml, document 1 (line 1): {problem}")


def test_an_empty_directory_says_what_it_expected(tmp_path: Path) -> None:
    message = refused(tmp_path, {"README.md": "nothing here\n", ".git/x.yaml": NAMESPACE})
    assert "holds no YAML documents" in message
    assert "ClusterQueues, ResourceFlavors, LocalQueues" in message
    assert "NodePools" in message


def test_a_directory_with_queues_but_no_nodes_is_refused(tmp_path: Path) -> None:
    message = refused(tmp_path, {"cq.yaml": dump(cluster_queue("a", nominalQuota=1))})
    assert "describes no nodes" in message
    assert "kubectl get nodes -o yaml" in message and "kind: NodePool" in message


def test_a_directory_with_nodes_but_no_queues_is_refused(tmp_path: Path) -> None:
    message = refused(
        tmp_path,
        {"nodes.yaml": POOL, "deploy.yaml": "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: x}\n"},
    )
    assert "holds nodes but no queues" in message
    assert "ClusterQueues, ResourceFlavors and LocalQueues" in message


def test_a_path_that_is_not_a_directory_is_refused(tmp_path: Path) -> None:
    file = tmp_path / "pools.yaml"
    file.write_text(POOL)
    for path in (file, tmp_path / "missing"):
        with pytest.raises(
            PlatformError, match=r"is not a directory\. Give --platform the directory"
        ) as caught:
            load_platform(path)
        assert caught.value.where == str(path)
