"""A platform directory without a cluster: every YAML document read with where it was, bad input named
by file, document and field, objects sorted into what the twin applies (and nodes into pools), the
promises derived from the queue configuration, the behaviour diff of ``kbc verify --against``, and
``--against git:REF``."""

from __future__ import annotations

import subprocess
import textwrap
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
import yaml

from kbc.cli.verify import diff, platform_at
from kbc.configuration import Setting
from kbc.errors import PlatformError
from kbc.platform import derive, load_platform
from kbc.platform._read import Source, read_documents, yaml_files
from kbc.platform.model import Platform
from kbc.platform.promises import (
    BORROW,
    FAIR_SHARING,
    FLAVOR,
    KINDS,
    LOCAL_QUEUE,
    NOMINAL,
    PRIORITY,
    QUOTA_ZERO,
    RECLAIM,
    RESOURCE_QUOTA,
    STATIC_LANE,
    VOLCANO_QUEUE,
    Promise,
    borrowable,
    lanes,
)
from kbc.platform.prove import split
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


# -- helpers ----------------------------------------------------------------------------------------


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


# -- classification ---------------------------------------------------------------------------------


def test_exported_nodes_are_grouped_by_shape_into_pools(tmp_path: Path) -> None:
    nodes = [
        node("a100-1", "p4d.24xlarge", "8"),
        node("h100-1", "p5.48xlarge", "8"),
        node("a100-2", "p4d.24xlarge", "8"),
    ]
    nodes.append(node("a100-3", "p4d.24xlarge", "4"))
    cpu = node("worker-12", "", "0", tainted=False)
    del cpu["metadata"]["labels"]["node.kubernetes.io/instance-type"]
    exported = dump(
        {"apiVersion": "v1", "kind": "List", "items": [*nodes, cpu], "metadata": {"resourceVersion": ""}}
    )
    platform = load(tmp_path, {"nodes.yaml": exported, "ns.yaml": NAMESPACE})
    assert [(p.name, p.count) for p in platform.pools] == [
        ("p4d-24xlarge", 2),
        ("p5-48xlarge", 1),
        ("p4d-24xlarge-2", 1),
        ("worker", 1),
    ]
    assert platform.node_count == 5
    first = platform.pools[0]
    assert first.labels == {"node.kubernetes.io/instance-type": "p4d.24xlarge", "kubernetes.io/os": "linux"}
    assert first.taints == [{"key": GPU, "value": "present", "effect": "NoSchedule"}]
    assert first.allocatable == {"cpu": "95", "memory": "1100Gi", "pods": "110", GPU: "8"}
    assert platform.where(first.doc) == "nodes.yaml, document 1, item 0 (line 4)"
    assert platform.pools[3].taints == []
    assert [d.kind for d in platform.objects] == ["Namespace"], "nodes are pools, not objects to apply"


def test_compact_and_replicas_template_node_pools_give_the_same_manifest(tmp_path: Path) -> None:
    template = """\
        apiVersion: conformance.kbatch.dev/v1
        kind: NodePool
        metadata: {name: gpu}
        spec:
          replicas: 2
          template:
            metadata:
              labels: {nvidia.com/gpu.product: A100}
            spec:
              taints:
              - {key: nvidia.com/gpu, value: present, effect: NoSchedule}
            status:
              allocatable: {cpu: "32", memory: 256Gi, nvidia.com/gpu: "8"}
        """
    compact = load(tmp_path / "compact", {"nodes.yaml": POOL, "ns.yaml": NAMESPACE}).pools
    templated = load(tmp_path / "template", {"nodes.yaml": template, "ns.yaml": NAMESPACE}).pools
    assert len(compact) == len(templated) == 1
    assert compact[0].manifest() == templated[0].manifest()
    assert compact[0].manifest() == {
        "apiVersion": "conformance.kbatch.dev/v1",
        "kind": "NodePool",
        "metadata": {"name": "gpu"},
        "spec": {
            "replicas": 2,
            "template": {
                "metadata": {"labels": {"nvidia.com/gpu.product": "A100"}},
                "status": {
                    "capacity": {"cpu": "32", "memory": "256Gi", GPU: "8"},
                    "allocatable": {"cpu": "32", "memory": "256Gi", GPU: "8"},
                },
                "spec": {"taints": [{"key": GPU, "value": "present", "effect": "NoSchedule"}]},
            },
        },
    }


def test_export_noise_is_removed_from_what_is_applied(tmp_path: Path) -> None:
    exported = cluster_queue("research", nominalQuota=8)
    exported["metadata"].update(
        {
            "uid": "0f7c",
            "resourceVersion": "981",
            "generation": 3,
            "creationTimestamp": "2025-01-01T00:00:00Z",
            "managedFields": [{"manager": "kubectl-client-side-apply"}],
            "annotations": {"kubectl.kubernetes.io/last-applied-configuration": "{...}"},
        }
    )
    exported["status"] = {"admittedWorkloads": 2, "conditions": [{"type": "Active", "status": "True"}]}
    annotated = flavor()
    annotated["metadata"]["annotations"] = {
        "kubectl.kubernetes.io/last-applied-configuration": "{...}",
        "team": "research",
    }
    platform = queues(tmp_path, exported, annotated)
    applied = {d.kind: d.body for d in platform.objects}
    assert applied["ClusterQueue"] == cluster_queue("research", nominalQuota=8)
    assert applied["ResourceFlavor"]["metadata"] == {"name": "a100", "annotations": {"team": "research"}}
    assert "status" in exported, "the document read is not changed in place"
    assert platform.cluster_queues["research"].quotas[0].nominal == Decimal(8)


def test_objects_are_applied_in_dependency_order(tmp_path: Path) -> None:
    quota = {
        "apiVersion": "v1",
        "kind": "ResourceQuota",
        "metadata": {"name": "gpus", "namespace": "ml"},
        "spec": {"hard": {f"requests.{GPU}": "4"}},
    }
    volcano = {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "Queue",
        "metadata": {"name": "v"},
        "spec": {"weight": 2},
    }
    platform = load(
        tmp_path,
        {
            "a-quota.yaml": dump(quota, volcano),
            "b-local.yaml": dump(local_queue("research", "research")),
            "c-cluster.yaml": dump(cluster_queue("research", nominalQuota=8)),
            "d-flavor.yaml": dump(flavor(), priority("low", 1)),
            "e-namespace.yaml": NAMESPACE,
            "nodes.yaml": POOL,
        },
    )
    assert [d.kind for d in platform.objects] == [
        "Namespace",
        "WorkloadPriorityClass",
        "ResourceFlavor",
        "ClusterQueue",
        "LocalQueue",
        "ResourceQuota",
        "Queue",
    ]


def test_unknown_kinds_are_left_out_with_a_warning(tmp_path: Path) -> None:
    deployment = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "ml"},
    }
    platform = queues(tmp_path, flavor(), deployment)
    assert [d.title() for d in platform.ignored] == ["Deployment ml/web"]
    assert platform.warnings == ["left out 1 object(s) of kinds the twin does not use: Deployment (apps/v1)"]
    assert [d.kind for d in platform.objects] == ["ResourceFlavor"]


def test_a_kueue_configuration_becomes_a_setting_of_its_behaviour_fields(tmp_path: Path) -> None:
    config = """\
        apiVersion: config.kueue.x-k8s.io/v1beta2
        kind: Configuration
        waitForPodsReady: {timeout: 10m, blockAdmission: false}
        fairSharing: {preemptionStrategies: [LessThanInitialShare]}
        webhook: {port: 9443}
        metrics: {bindAddress: ":8443"}
        """
    platform = load(tmp_path, {"nodes.yaml": POOL, "ns.yaml": NAMESPACE, "config/kueue.yaml": config})
    [setting] = platform.settings
    assert isinstance(setting, Setting)
    assert setting.component == "kueue"
    assert setting.name == "platform configuration (kueue.yaml)"
    assert dict(setting.patch) == {
        "waitForPodsReady": {"timeout": "10m", "blockAdmission": False},
        "fairSharing": {"preemptionStrategies": ["LessThanInitialShare"]},
    }
    [warning] = platform.warnings
    assert warning.startswith(
        "config/kueue.yaml, document 1 (line 1): Kueue Configuration fields metrics, webhook"
    )
    assert platform.components == ["kueue"], "the setting needs Kueue even with no Kueue objects"
    assert [d.kind for d in platform.objects] == ["Namespace"]


def test_chart_values_files_are_recorded_by_component(tmp_path: Path) -> None:
    platform = load(
        tmp_path,
        {
            "nodes.yaml": POOL,
            "ns.yaml": NAMESPACE,
            "values/kueue.yaml": "controllerManager:\n  replicas: 2\n",
            "charts/volcano-values.yaml": "custom:\n  scheduler_replicas: 1\n---\nbasic: {}\n",
        },
    )
    root = tmp_path.resolve() / "platform"
    assert platform.values == {
        "volcano": [root / "charts" / "volcano-values.yaml"],
        "kueue": [root / "values" / "kueue.yaml"],
    }
    assert platform.components == ["kueue", "volcano"]
    assert platform.settings == [] and platform.ignored == []


@pytest.mark.parametrize("name", ["settings.yaml", "values/prometheus.yaml", "kueue-overrides.yaml"])
def test_a_values_mapping_in_another_file_is_refused(tmp_path: Path, name: str) -> None:
    message = refused(tmp_path, {"nodes.yaml": POOL, "ns.yaml": NAMESPACE, name: "replicas: 2\n"})
    assert message.startswith(f"{name}, document 1 (line 1): has no apiVersion and kind")
    assert "values/<component>.yaml" in message


def test_components_follow_the_groups_of_the_objects(tmp_path: Path) -> None:
    volcano = {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "Queue",
        "metadata": {"name": "research"},
        "spec": {"weight": 3, "capability": {GPU: 16, "cpu": "64"}},
    }
    only_volcano = queues(tmp_path / "v", volcano)
    assert only_volcano.components == ["volcano"]
    spec = only_volcano.volcano_queues["research"]
    assert (spec.weight, spec.capability) == (3, {GPU: "16", "cpu": "64"})
    assert queues(tmp_path / "k", flavor()).components == ["kueue"]
    assert queues(tmp_path / "kv", flavor(), volcano).components == ["kueue", "volcano"]
    assert (
        queues(
            tmp_path / "core", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "x"}}
        ).components
        == []
    )


def test_resource_quotas_cap_extended_resources_only(tmp_path: Path) -> None:
    hard = {
        f"requests.{GPU}": "4",
        f"limits.{GPU}": "4",
        "requests.cpu": "64",
        "count/pods": "10",
        "pods": "20",
    }
    quota = {
        "apiVersion": "v1",
        "kind": "ResourceQuota",
        "metadata": {"name": "budget", "namespace": "ml"},
        "spec": {"hard": hard},
    }
    platform = queues(tmp_path, quota)
    assert [
        (c.namespace, c.quota, c.key, c.resource, c.hard, c.caps_requests) for c in platform.quota_caps
    ] == [
        ("ml", "budget", f"requests.{GPU}", GPU, Decimal(4), True),
        ("ml", "budget", f"limits.{GPU}", GPU, Decimal(4), False),
    ]


# -- promises of the example platform ---------------------------------------------------------------


@pytest.fixture(scope="module")
def example() -> Platform:
    return load_platform(EXAMPLE)


def test_the_example_platform_reads_as_documented(example: Platform) -> None:
    assert [(p.name, p.count) for p in example.pools] == [("a100", 4), ("h100", 2), ("cpu", 4)]
    assert sorted(example.cluster_queues) == ["research", "sandbox", "training"]
    assert example.workload_priorities == {"batch-low": 100, "batch-high": 1000}
    assert example.components == ["kueue"]
    assert example.warnings == [] and example.ignored == [] and example.values == {}
    assert [dict(s.patch) for s in example.settings] == [
        {"waitForPodsReady": {"timeout": "10m", "blockAdmission": False}}
    ]


def test_the_example_platform_makes_nineteen_promises_of_every_kueue_kind(example: Platform) -> None:
    promises = derive(example)
    assert len(promises) == 19
    assert len({p.id for p in promises}) == 19, "ids are unique"
    assert {p.kind for p in promises} == set(KINDS) - {VOLCANO_QUEUE, FAIR_SHARING}, (
        "no Volcano, no fair sharing"
    )
    counts = {
        kind: sum(p.kind == kind for p in promises)
        for kind in KINDS
        if kind not in (VOLCANO_QUEUE, FAIR_SHARING)
    }
    assert counts == {
        LOCAL_QUEUE: 3,
        FLAVOR: 2,
        RESOURCE_QUOTA: 1,
        NOMINAL: 4,
        BORROW: 4,
        RECLAIM: 2,
        PRIORITY: 2,
        QUOTA_ZERO: 1,
    }
    ids = by_id(promises)
    for pid in (
        "team-research/research/local-queue",
        "team-research/resource-quota/gpu-budget/requests.nvidia.com/gpu",
        "flavor/a100",
        "flavor/h100",
        "research/a100/nvidia.com/gpu/nominal",
        "research/a100/nvidia.com/gpu/borrow",
        "training/a100/nvidia.com/gpu/reclaim",
        "research/h100/nvidia.com/gpu/reclaim",
        "research/priority",
        "sandbox/quota-zero",
    ):
        assert pid in ids, pid
    assert promises[0].id == "team-research/research/local-queue", "static promises come first"


def test_the_example_promises_say_what_the_configuration_says(example: Platform) -> None:
    ids = by_id(derive(example))
    borrow = ids["research/a100/nvidia.com/gpu/borrow"]
    assert borrow.says == (
        "team-research/research: may borrow 8 nvidia.com/gpu of a100 from cohort shared-gpu "
        "(borrowingLimit 8): up to 24 admitted, one more waits"
    )
    assert (borrow.params["borrow"], borrow.params["total"]) == (Decimal(8), Decimal(24))
    assert borrow.source == "queues/cluster-queues.yaml, document 1 (line 4)"
    assert (borrow.cluster_queue, borrow.team) == ("research", "team-research/research")
    no_borrow = ids["training/a100/nvidia.com/gpu/borrow"]
    assert (
        "may not borrow nvidia.com/gpu of a100" in no_borrow.says and "(borrowingLimit 0)" in no_borrow.says
    )
    assert no_borrow.params["total"] == Decimal(16)
    cap = ids["team-research/resource-quota/gpu-budget/requests.nvidia.com/gpu"]
    assert cap.params["hard"] == 28 and cap.cluster_queue is None and cap.team == "team-research"
    assert cap.source == "teams/teams.yaml, document 1, item 6 (line 26)"
    assert ids["research/priority"].params["preempts"] is True
    assert ids["training/priority"].params["preempts"] is False
    reclaim = ids["training/a100/nvidia.com/gpu/reclaim"]
    assert reclaim.params["borrower"] == "research" and reclaim.params["policy"] == "Any"
    assert (reclaim.params["low"], reclaim.params["high"]) == ("batch-low", "batch-high")
    assert ids["flavor/h100"].cluster_queue == "research"
    assert ids["sandbox/quota-zero"].says == (
        "sandbox/sandbox: ClusterQueue sandbox has no quota; what it queues never starts"
    )


def test_the_example_promises_run_in_lanes(example: Platform) -> None:
    promises = derive(example)
    for promise in promises:
        if promise.kind in (LOCAL_QUEUE, RESOURCE_QUOTA):
            assert promise.lane == STATIC_LANE, promise.id
    cohort = {
        p.lane for p in promises if p.cluster_queue in ("research", "training") and p.kind != LOCAL_QUEUE
    }
    assert cohort == {"cohort/shared-gpu"}
    assert by_id(promises)["sandbox/quota-zero"].lane == "cluster-queue/sandbox"
    grouped = lanes(promises)
    assert list(grouped) == [STATIC_LANE, "cohort/shared-gpu", "cluster-queue/sandbox"]
    assert len(grouped[STATIC_LANE]) == 4 and len(grouped["cohort/shared-gpu"]) == 14
    assert lanes([]) == {STATIC_LANE: []}


# -- borrowable and promises on small platforms -----------------------------------------------------


def borrow_of(platform: Platform, name: str) -> tuple[Decimal, str]:
    cq = platform.cluster_queues[name]
    return borrowable(platform, cq, cq.quotas[0])


def test_a_borrowing_limit_below_what_the_others_lend_is_what_it_may_borrow(tmp_path: Path) -> None:
    platform = queues(
        tmp_path,
        cluster_queue("a", cohort="c", nominalQuota=4, borrowingLimit=2),
        cluster_queue("b", cohort="c", nominalQuota=8),
    )
    assert borrow_of(platform, "a") == (Decimal(2), "borrowingLimit 2")
    assert borrow_of(platform, "b") == (Decimal(4), "the others lend 4")


def test_without_a_borrowing_limit_it_may_borrow_all_the_others_nominal_quota(tmp_path: Path) -> None:
    platform = queues(
        tmp_path,
        cluster_queue("a", cohort="c", nominalQuota=4),
        cluster_queue("b", cohort="c", nominalQuota=8),
        cluster_queue("d", cohort="c", nominalQuota=3),
        cluster_queue("other-flavor", cohort="c", flavor="h100", nominalQuota=100),
        cluster_queue("other-resource", cohort="c", resource="cpu", nominalQuota=100),
        cluster_queue("other-cohort", cohort="elsewhere", nominalQuota=100),
    )
    assert borrow_of(platform, "a") == (Decimal(11), "the others lend 11")


def test_a_borrowing_limit_above_what_the_others_lend_is_capped_by_them(tmp_path: Path) -> None:
    platform = queues(
        tmp_path,
        cluster_queue("a", cohort="c", nominalQuota=4, borrowingLimit=20),
        cluster_queue("b", cohort="c", nominalQuota=8),
    )
    assert borrow_of(platform, "a") == (Decimal(8), "the others lend 8 (less than its borrowingLimit 20)")


def test_a_lenders_lending_limit_caps_what_it_lends(tmp_path: Path) -> None:
    platform = queues(
        tmp_path,
        cluster_queue("a", cohort="c", nominalQuota=4),
        cluster_queue("b", cohort="c", nominalQuota=8, lendingLimit=3),
        cluster_queue("d", cohort="c", nominalQuota=2, lendingLimit=10),
    )
    assert borrow_of(platform, "a") == (Decimal(5), "the others lend 5")
    assert platform.cluster_queues["d"].quotas[0].lendable == Decimal(2), "never more than its nominal quota"


def test_a_cohorts_own_quota_adds_to_what_may_be_borrowed(tmp_path: Path) -> None:
    cohort = cluster_queue("c", nominalQuota=6) | {"kind": "Cohort"}
    platform = queues(
        tmp_path,
        cohort,
        cluster_queue("a", cohort="c", nominalQuota=4),
        cluster_queue("b", cohort="c", nominalQuota=8),
    )
    assert platform.cohorts["c"].parent is None
    assert borrow_of(platform, "a") == (Decimal(14), "the others lend 14")


def test_a_cluster_queue_in_no_cohort_may_borrow_nothing(tmp_path: Path) -> None:
    platform = queues(
        tmp_path, cluster_queue("a", nominalQuota=4, borrowingLimit=2), cluster_queue("b", nominalQuota=8)
    )
    assert borrow_of(platform, "a") == (Decimal(0), "it is in no cohort")
    assert derive(platform) == [], "no LocalQueue and no flavor: nothing to prove"


def test_a_cluster_queue_of_memory_only_makes_no_quota_promise(tmp_path: Path) -> None:
    platform = queues(
        tmp_path,
        priority("low", 1),
        priority("high", 2),
        cluster_queue("mem", cohort="c", resource="memory", nominalQuota="64Gi"),
        cluster_queue("lender", cohort="c", resource="memory", nominalQuota="64Gi"),
        local_queue("mem", "mem"),
    )
    assert [p.id for p in derive(platform)] == ["ml/mem/local-queue"]


def test_a_cpu_quota_counts_in_whole_cores(tmp_path: Path) -> None:
    platform = queues(tmp_path, cluster_queue("cpu", resource="cpu", nominalQuota=8), local_queue("q", "cpu"))
    assert [p.id for p in derive(platform)] == ["ml/q/local-queue", "cpu/a100/cpu/nominal"]
    halves = queues(
        tmp_path / "halves",
        cluster_queue("cpu", resource="cpu", nominalQuota="500m"),
        local_queue("q", "cpu"),
    )
    assert [p.id for p in derive(halves)] == ["ml/q/local-queue"]


def test_a_quota_zero_cluster_queue_that_can_borrow_makes_a_borrow_promise_instead(tmp_path: Path) -> None:
    platform = queues(
        tmp_path,
        cluster_queue("zero", cohort="c", nominalQuota=0),
        cluster_queue("lender", cohort="c", nominalQuota=8, lendingLimit=4),
        local_queue("zero", "zero"),
    )
    promises = by_id(derive(platform))
    assert "zero/quota-zero" not in promises
    borrow = promises["zero/a100/nvidia.com/gpu/borrow"]
    assert (borrow.params["borrow"], borrow.params["total"]) == (Decimal(4), Decimal(4))
    assert borrow.lane == "cohort/c"
    alone = queues(tmp_path / "alone", cluster_queue("zero", nominalQuota=0), local_queue("zero", "zero"))
    assert [p.kind for p in derive(alone)] == [LOCAL_QUEUE, QUOTA_ZERO]


def test_a_local_queue_naming_a_missing_cluster_queue_still_gets_its_promise(tmp_path: Path) -> None:
    platform = queues(tmp_path, cluster_queue("real", nominalQuota=4), local_queue("lost", "ghost"))
    [promise] = [p for p in derive(platform) if p.kind == LOCAL_QUEUE]
    assert promise.id == "ml/lost/local-queue"
    assert promise.cluster_queue is None
    assert promise.params["cluster_queue"] == "ghost"
    assert promise.says == "ml/lost submits to ClusterQueue ghost, which is Active"
    assert not [p for p in derive(platform) if p.cluster_queue == "real"], (
        "real has no team: nothing to prove"
    )


def test_priority_promises_need_two_workload_priority_classes(tmp_path: Path) -> None:
    objects = [
        cluster_queue("a", nominalQuota=4, preemption={"withinClusterQueue": "LowerOrNewerEqualPriority"}),
        local_queue("a", "a"),
        priority("low", 10),
    ]
    assert not [p for p in derive(queues(tmp_path / "one", *objects)) if p.kind == PRIORITY]
    two = by_id(derive(queues(tmp_path / "two", *objects, priority("high", 100), priority("mid", 50))))
    promise = two["a/priority"]
    assert (promise.params["low"], promise.params["high"], promise.params["preempts"]) == (
        "low",
        "high",
        True,
    )
    assert "a high (100) workload evicts a low (10) one" in promise.says


def test_a_flavor_no_team_uses_is_proven_on_its_own(tmp_path: Path) -> None:
    platform = queues(tmp_path, flavor("spare"), cluster_queue("a", nominalQuota=4), local_queue("a", "a"))
    promise = by_id(derive(platform))["flavor/spare"]
    assert (promise.cluster_queue, promise.team, promise.lane) == (None, "(no team)", STATIC_LANE)


def test_reclaim_says_what_reclaim_within_cohort_does(tmp_path: Path) -> None:
    platform = queues(
        tmp_path,
        cluster_queue("lender", cohort="c", nominalQuota=8),
        cluster_queue("borrower", cohort="c", nominalQuota=4, preemption={"reclaimWithinCohort": "Any"}),
        local_queue("lender", "lender"),
        local_queue("borrower", "borrower"),
    )
    promises = by_id(derive(platform))
    never = promises["lender/a100/nvidia.com/gpu/reclaim"]
    assert never.says.endswith(
        "lender does not take it back (reclaimWithinCohort: Never): its workload waits"
    )
    assert never.params["borrower_total"] == Decimal(12)
    assert promises["borrower/a100/nvidia.com/gpu/reclaim"].says.endswith(
        "takes it back (reclaimWithinCohort: Any)"
    )


def test_a_cohort_with_a_parent_makes_no_borrow_or_reclaim_promise(tmp_path: Path) -> None:
    child = {"apiVersion": KUEUE, "kind": "Cohort", "metadata": {"name": "c"}, "spec": {"parentName": "org"}}
    platform = queues(
        tmp_path,
        child,
        cluster_queue("a", cohort="c", nominalQuota=4),
        cluster_queue("b", cohort="c", nominalQuota=8),
        local_queue("a", "a"),
        local_queue("b", "b"),
    )
    assert platform.cohorts["c"].parent == "org"
    assert {p.kind for p in derive(platform)} == {LOCAL_QUEUE, NOMINAL}


# -- the behaviour diff of --against ----------------------------------------------------------------


def outcome(**changes: Any) -> dict[str, Any]:
    """A promise as ``summary.json`` records it."""
    entry: dict[str, Any] = {
        "id": "research/a100/nvidia.com/gpu/borrow",
        "kind": BORROW,
        "team": "team-research/research",
        "cluster_queue": "research",
        "says": "may borrow 8",
        "source": "queues/cluster-queues.yaml, document 1 (line 4)",
        "held": True,
        "broken": False,
        "did": "admitted 24",
        "seconds": 3.2,
        "measures": {"borrowed": 8, "admit_seconds": 0.4},
    }
    return entry | changes


def summary(*entries: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {e["id"]: e for e in entries}


def test_the_same_behaviour_gives_no_lines() -> None:
    assert diff(summary(outcome()), summary(outcome())) == []
    assert diff({}, {}) == []


def test_a_changed_measure_and_sentence_give_one_line_naming_the_team() -> None:
    after = outcome(says="may borrow 4", measures={"borrowed": 4, "admit_seconds": 0.4})
    [line] = diff(summary(outcome()), summary(after))
    assert line.startswith("~ team-research/research [borrow research/a100/nvidia.com/gpu/borrow]: ")
    assert "says “may borrow 8” → “may borrow 4”" in line
    assert "borrowed 8 → 4" in line


def test_a_promise_that_stops_holding_says_so() -> None:
    [line] = diff(summary(outcome()), summary(outcome(held=False, did="admitted 16")))
    assert "holds → fails" in line
    [back] = diff(summary(outcome(held=False)), summary(outcome()))
    assert "fails → holds" in back


def test_timings_alone_are_not_a_change_of_behaviour() -> None:
    slower = outcome(seconds=9.9, measures={"borrowed": 8, "admit_seconds": 2.5})
    assert diff(summary(outcome()), summary(slower)) == []


def test_a_measure_only_one_side_has_is_shown_as_missing() -> None:
    [line] = diff(summary(outcome()), summary(outcome(measures={"admit_seconds": 0.4, "waited": True})))
    assert "borrowed 8 → -" in line and "waited - → yes" in line


def test_promises_only_one_side_makes_are_new_or_gone() -> None:
    gone = outcome(id="sandbox/quota-zero", team="sandbox/sandbox", says="sandbox has no quota")
    new = outcome(id="flavor/b200", team="(no team)", says="b200 matches nodes", did="ran on b200")
    lines = diff(summary(outcome(), gone), summary(outcome(), new))
    assert lines == [
        "- sandbox/sandbox: promise gone: sandbox has no quota",
        "+ (no team): new promise: b200 matches nodes: ran on b200",
    ]


# -- --against: another directory, or git:REF -------------------------------------------------------


def git(repo: Path, *args: str) -> str:
    identity = [
        "-c",
        "user.name=kbc test",
        "-c",
        "user.email=kbc@example.invalid",
        "-c",
        "commit.gpgsign=false",
    ]
    proc = subprocess.run(["git", *identity, *args], cwd=repo, capture_output=True, text=True, check=True)
    return proc.stdout


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A Git repository whose ``platforms/ml`` is committed (tag ``v1``) and then changed twice."""
    top = tmp_path / "repo"
    write(
        top,
        {
            "platforms/ml/nodes.yaml": POOL,
            "platforms/ml/queues.yaml": dump(cluster_queue("a", nominalQuota=4)),
            "README.md": "x\n",
        },
    )
    git(top, "init", "-q")
    git(top, "add", "-A")
    git(top, "commit", "-q", "-m", "first")
    git(top, "tag", "v1")
    write(top, {"platforms/ml/queues.yaml": dump(cluster_queue("a", nominalQuota=8))})
    git(top, "commit", "-q", "-am", "second")
    write(
        top,
        {
            "platforms/ml/queues.yaml": dump(cluster_queue("a", nominalQuota=16)),
            "platforms/ml/new.yaml": NAMESPACE,
        },
    )
    (top / "platforms" / "ml" / "nodes.yaml").unlink()
    return top


def test_a_plain_directory_is_the_platform_itself(tmp_path: Path) -> None:
    other = write(tmp_path / "other", {"nodes.yaml": POOL})
    assert platform_at(str(other), tmp_path, tmp_path / "into") == other
    assert not (tmp_path / "into").exists()
    with pytest.raises(PlatformError, match=r"is not a directory\. Give --against git:REF"):
        platform_at(str(tmp_path / "missing"), tmp_path, tmp_path / "into")


def test_git_ref_extracts_the_directory_as_it_was(repo: Path, tmp_path: Path) -> None:
    directory = repo / "platforms" / "ml"
    head = platform_at("git:HEAD", directory, tmp_path / "head")
    assert head == tmp_path / "head" / "platforms" / "ml"
    assert sorted(p.name for p in head.iterdir()) == ["nodes.yaml", "queues.yaml"]
    assert load_platform(head).cluster_queues["a"].quotas[0].nominal == Decimal(8)
    first = platform_at("git:v1", directory, tmp_path / "v1")
    assert load_platform(first).cluster_queues["a"].quotas[0].nominal == Decimal(4)
    assert not (tmp_path / "v1" / "README.md").exists(), "only the platform directory is extracted"
    assert "nominalQuota: 16" in (directory / "queues.yaml").read_text(), "the work tree is untouched"
    assert not (directory / "nodes.yaml").exists()


def test_git_ref_of_the_repository_root_extracts_it_whole(repo: Path, tmp_path: Path) -> None:
    found = platform_at("git:v1", repo, tmp_path / "into")
    assert (found / "platforms" / "ml" / "nodes.yaml").read_text() == POOL


def test_an_unknown_git_ref_names_gits_message(repo: Path, tmp_path: Path) -> None:
    with pytest.raises(PlatformError) as caught:
        platform_at("git:no-such-ref", repo / "platforms" / "ml", tmp_path / "into")
    assert caught.value.where.startswith("git archive --format=tar no-such-ref -- platforms/ml")
    assert "no-such-ref" in caught.value.problem and "fatal" in caught.value.problem
    assert "needs DIR inside a Git repository that has REF" in str(caught.value)


def test_git_ref_outside_a_repository_is_refused(tmp_path: Path) -> None:
    outside = write(tmp_path / "plain", {"nodes.yaml": POOL})
    with pytest.raises(PlatformError, match="not a git repository") as caught:
        platform_at("git:HEAD", outside, tmp_path / "into")
    assert caught.value.where.startswith("git rev-parse --show-toplevel")


# -- mended after review -----------------------------------------------------------------------------


def test_exported_nodes_never_take_the_name_of_a_node_pool(tmp_path: Path) -> None:
    exported = node("gpu-1", "p4d", "8")
    del exported["metadata"]["labels"]["node.kubernetes.io/instance-type"]
    platform = load(
        tmp_path,
        {"pools.yaml": POOL, "nodes.yaml": dump(exported), "queues.yaml": dump(flavor())},
    )
    assert sorted((p.name, p.count) for p in platform.pools) == [("gpu", 2), ("gpu-2", 1)]


def test_two_node_pools_of_one_name_are_refused(tmp_path: Path) -> None:
    message = refused(tmp_path, {"a.yaml": POOL, "b.yaml": POOL, "queues.yaml": dump(flavor())})
    assert message.startswith(
        "b.yaml, document 1 (line 1): NodePool gpu is defined twice; the first is at a.yaml"
    )


def test_a_boolean_count_is_not_a_number_of_nodes(tmp_path: Path) -> None:
    message = refused(
        tmp_path, {"nodes.yaml": POOL.replace("count: 2", "count: true"), "q.yaml": dump(flavor())}
    )
    assert "spec.count must be a positive whole number" in message


def test_storage_class_and_object_count_keys_are_not_gpu_caps(tmp_path: Path) -> None:
    quota = {
        "apiVersion": "v1",
        "kind": "ResourceQuota",
        "metadata": {"name": "q", "namespace": "ml"},
        "spec": {
            "hard": {
                "gold.storageclass.storage.k8s.io/requests.storage": "500Gi",
                "count/jobs.batch": "10",
                "requests.nvidia.com/gpu": "4",
            }
        },
    }
    platform = queues(tmp_path, flavor(), quota)
    assert [c.key for c in platform.quota_caps] == ["requests.nvidia.com/gpu"]


def test_a_cohort_with_child_cohorts_gets_no_borrow_or_reclaim_promise(tmp_path: Path) -> None:
    child = {
        "apiVersion": KUEUE,
        "kind": "Cohort",
        "metadata": {"name": "child"},
        "spec": {"parentName": "root"},
    }
    platform = queues(
        tmp_path,
        flavor(),
        child,
        cluster_queue("a", cohort="root", nominalQuota=4),
        cluster_queue("b", cohort="child", nominalQuota=8),
        local_queue("a", "a"),
        local_queue("b", "b"),
    )
    kinds = {(p.cluster_queue, p.kind) for p in derive(platform)}
    assert ("a", "borrow") not in kinds and ("b", "borrow") not in kinds, kinds
    assert ("a", "nominal") in kinds and ("b", "nominal") in kinds, kinds


def test_a_promise_that_broke_is_told_from_one_that_failed() -> None:
    [line] = diff(summary(outcome()), summary(outcome(held=False, broken=True)))
    assert "holds → broken" in line


def test_a_volcano_queue_s_gpu_capability_is_a_promise_proven_last(tmp_path: Path) -> None:
    queue = {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "Queue",
        "metadata": {"name": "batch"},
        "spec": {"weight": 2, "capability": {GPU: "4", "cpu": "0"}},
    }
    platform = queues(tmp_path, flavor(), cluster_queue("a", nominalQuota=4), local_queue("a", "a"), queue)
    assert platform.components == ["kueue", "volcano"]
    promises = derive(platform)
    [volcano] = [p for p in promises if p.kind == "volcano-queue"]
    assert volcano.id == "volcano/batch/capability/nvidia.com/gpu"
    assert volcano.params["capability"] == 4
    assert "a gang of 5 waits" in volcano.says
    assert list(lanes(promises))[-1] == "volcano"


@pytest.mark.parametrize(
    ("units", "size", "expected"),
    [((16, 8, (2, 8))), (24, 8, (3, 8)), (25, 8, (25, 1)), (12, 4, (3, 4)), (1, 4, (1, 1)), (16, 1, (16, 1))],
)
def test_a_probe_gang_is_made_of_pods_of_the_flavor_s_size(
    units: int, size: int, expected: tuple[int, int]
) -> None:
    assert split(units, size) == expected


def test_a_flavor_s_probe_pods_tile_its_nodes_and_its_quotas(example: Platform) -> None:
    # A100: nodes of 8, quotas 16 (+8) and 16 (+0): pods of 8. H100: nodes of 8, quotas 4 (+4) and
    # 12 (+4): pods of 4, so research's 4 and training's 12 fill the two nodes in any order.
    assert example.pod_size("a100", GPU) == 8
    assert example.pod_size("h100", GPU) == 4
    assert example.pod_size("missing", GPU) == 8
    assert example.pod_size("a100", "cpu") == 96, "no quota of it: what the nodes offer"
