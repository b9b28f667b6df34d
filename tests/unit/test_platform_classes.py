"""A platform directory sorted into what the twin applies: nodes into pools, objects in dependency order,
Kueue's configuration into settings, chart values by component, quotas by what they cap."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path

import pytest

from kbc.configuration import Setting
from tests.unit.platform_helpers import (
    GPU,
    NAMESPACE,
    POOL,
    cluster_queue,
    dump,
    flavor,
    load,
    local_queue,
    node,
    priority,
    queues,
    refused,
)

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
