"""What the kind provider writes, checked alone: kind's config, containerd's mirror files, the pod network."""

from __future__ import annotations

import dataclasses
import io
import json
import tarfile
from collections.abc import Mapping
from pathlib import Path

import pytest
import yaml

from kbc.cluster.charts.helm import KEEP_ANNOTATION, known_upgrade_issues, moved_crds_issue
from kbc.cluster.pools import NodePool, load_pools
from kbc.cluster.providers.kind.config import (
    CERTS_DIR,
    BuiltImages,
    PodNetworkNode,
    hosts_toml,
    kind_config,
    mirror_files,
    plain_http_files,
    pod_network_conflist,
    pod_routes,
    registry_mirrors,
)
from kbc.cluster.providers.kind.dra_driver import chart_values, plan
from kbc.errors import NodePoolError
from kbc.labels import POOL_LABEL, REAL_NODE_LABEL
from kbc.supply import paths
from kbc.supply.lock import load_lock
from kbc.supply.oci import Mirror, mirrored, plain_http, registry_host
from kbc.workloads import sleep_command

POOLS = load_pools(paths.manifests_dir() / "nodes")


def test_a_cluster_of_pulled_images_keeps_kinds_defaults() -> None:
    config = kind_config(POOLS)
    assert "containerdConfigPatches" not in config and "kubeadmConfigPatches" not in config
    assert "networking" not in config, "kindnetd and kind's own API address"


def test_control_plane_feature_gates_go_to_every_node_s_components() -> None:
    assert "featureGates" not in kind_config(POOLS)
    config = kind_config(POOLS, feature_gates={"DRAExtendedResource": True})
    assert config["featureGates"] == {"DRAExtendedResource": True}


def test_a_cluster_of_built_images_says_what_differs() -> None:
    config = kind_config(POOLS, 6443, BuiltImages("3.6.16-0"), registry_files=True)
    assert config["networking"] == {
        "apiServerAddress": "127.0.0.1",
        "apiServerPort": 6443,
        "disableDefaultCNI": True,
    }
    (patch,) = config["containerdConfigPatches"]
    assert f'config_path = "{CERTS_DIR}"' in patch
    (kubeadm,) = config["kubeadmConfigPatches"]
    assert "kind: ClusterConfiguration" in kubeadm and "imageTag: 3.6.16-0" in kubeadm


def test_restricted_oom_scores_and_real_node_workers_are_added_on_request() -> None:
    config = kind_config(POOLS, restrict_oom_score_adj=True, real_nodes=2)
    assert any("restrict_oom_score_adj = true" in p for p in config["containerdConfigPatches"])
    real = [n for n in config["nodes"] if n.get("labels", {}).get(REAL_NODE_LABEL) == "true"]
    assert len(real) == 2 and all(n["role"] == "worker" for n in real)
    assert len(config["nodes"]) == 1 + sum(p.replicas for p in POOLS) + 2


def test_a_plain_http_mirror_of_the_users_is_allowed_to_the_nodes() -> None:
    mirrors = [
        Mirror("registry.k8s.io", "http://10.0.0.5:5000/k8s"),
        Mirror("docker.io", "10.0.0.6:443/hub"),
        Mirror("https://volcano-sh.github.io/helm-charts", "http://127.0.0.1:8080"),
    ]
    (path,) = plain_http_files(mirrors)
    assert path == f"{CERTS_DIR}/10.0.0.5:5000/hosts.toml"
    assert 'server = "http://10.0.0.5:5000"' in plain_http_files(mirrors)[path]


def test_each_upstream_registry_is_mirrored_path_and_all() -> None:
    text = hosts_toml("registry.k8s.io", "172.18.0.1:5000")
    assert text.startswith('server = "https://registry.k8s.io"')
    assert '[host."http://172.18.0.1:5000/v2/registry.k8s.io"]' in text and "override_path = true" in text
    assert 'server = "https://registry-1.docker.io"' in hosts_toml("docker.io", "172.18.0.1:5000")
    files = mirror_files(["registry.k8s.io", "docker.io"], "172.18.0.1:5000")
    assert set(files) == {f"{CERTS_DIR}/registry.k8s.io/hosts.toml", f"{CERTS_DIR}/docker.io/hosts.toml"}


def test_the_same_mirrors_serve_helm_and_the_digest_checks_over_plain_http() -> None:
    mirrors = registry_mirrors(["docker.io", "registry.k8s.io"], "172.18.0.1:5000")
    assert mirrored("oci://registry.k8s.io/kueue/charts/kueue", mirrors) == (
        "oci://172.18.0.1:5000/registry.k8s.io/kueue/charts/kueue"
    )
    assert mirrored("docker.io/volcanosh/vc-scheduler", mirrors) == (
        "172.18.0.1:5000/docker.io/volcanosh/vc-scheduler"
    )
    assert plain_http("172.18.0.1:5000", mirrors) and not plain_http("172.18.0.1:5000")


@pytest.mark.parametrize(
    ("reference", "host"),
    [
        ("registry.k8s.io/kueue/kueue", "registry.k8s.io"),
        ("oci://registry.k8s.io/jobset/charts/jobset", "registry.k8s.io"),
        ("docker.io/volcanosh/vc-scheduler", "docker.io"),
        ("volcanosh/vc-scheduler", "docker.io"),
        ("localhost:5000/x", "localhost:5000"),
    ],
)
def test_registry_host(reference: str, host: str) -> None:
    assert registry_host(reference) == host


def test_each_node_gets_its_pod_cidr_and_a_route_to_every_other_node() -> None:
    conflist = json.loads(pod_network_conflist("10.244.3.0/24"))
    ptp, portmap = conflist["plugins"]
    assert ptp["type"] == "ptp" and ptp["ipMasq"] is False
    assert ptp["ipam"]["ranges"] == [[{"subnet": "10.244.3.0/24"}]]
    assert portmap["type"] == "portmap"
    nodes = [
        PodNetworkNode("a", "172.18.0.2", "10.244.0.0/24"),
        PodNetworkNode("b", "172.18.0.3", "10.244.1.0/24"),
        PodNetworkNode("c", "172.18.0.4", "10.244.2.0/24"),
    ]
    routes = pod_routes(nodes)
    assert routes["a"] == [("10.244.1.0/24", "172.18.0.3"), ("10.244.2.0/24", "172.18.0.4")]
    assert all(len(r) == 2 for r in routes.values())


@pytest.mark.parametrize(
    ("run_for", "command"),
    [
        ("", ["sleep", "infinity"]),
        ("8s", ["sleep", "8"]),
        ("500ms", ["sleep", "0.5"]),
        ("1m30s", ["sleep", "90"]),
    ],
)
def test_workload_pods_sleep_as_long_as_kwok_would_run_them(run_for: str, command: list[str]) -> None:
    assert sleep_command(run_for) == command


@pytest.mark.parametrize("bad", ["8", "eight seconds", "5x"])
def test_a_duration_without_a_unit_is_refused(bad: str) -> None:
    with pytest.raises(ValueError, match="run_for="):
        sleep_command(bad)


def _chart(tmp_path: Path, secret: str) -> Path:
    archive = tmp_path / "jobset-0.12.0.tgz"
    with tarfile.open(archive, "w:gz") as tar:
        for name, text in (("jobset/Chart.yaml", "name: jobset\n"), ("jobset/templates/cert.yaml", secret)):
            data = text.encode()
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return archive


def test_a_chart_that_declares_its_webhook_certificate_data_is_a_known_upgrade_issue(tmp_path: Path) -> None:
    jobset = load_lock().components["jobset"]
    declared = 'kind: Secret\nmetadata:\n  name: x-webhook-server-cert\ndata:\n  ca.crt: ""\n  ca.key: ""\n'
    declared += '  tls.crt: ""\n  tls.key: ""\n'
    (issue,) = known_upgrade_issues(jobset, _chart(tmp_path, declared))
    assert issue.url.endswith("kubernetes-sigs/jobset/issues/1205") and issue.flags == (
        "--server-side=false",
    )
    # The upstream fix keeps the Secret and drops its data: then no workaround applies.
    fixed = "kind: Secret\nmetadata:\n  name: x-webhook-server-cert\n"
    assert known_upgrade_issues(jobset, _chart(tmp_path, fixed)) == []


def test_crds_the_release_renders_as_templates_and_the_new_chart_keeps_in_crds_are_kept_by_annotation() -> (
    None
):
    """helm upgrade would delete them (the old release rendered them, the new one does not): the workaround
    annotates them to be kept, before the new chart's crds/ are applied."""
    component = load_lock().components["jobset"]
    crd = {"kind": "CustomResourceDefinition", "metadata": {"name": "things.example.com"}}
    other = {"kind": "CustomResourceDefinition", "metadata": {"name": "others.example.com"}}
    issue = moved_crds_issue(component, ["things.example.com", "gone.example.com"], [crd, other])
    assert issue is not None and issue.keep == ("things.example.com",) and issue.flags == ()
    assert issue.url.endswith("helm/helm/issues/8163")
    assert f"things.example.com annotated {KEEP_ANNOTATION}: keep before helm upgrade" in issue.describe()
    assert "moved them from templates/ to crds/" in issue.describe()
    # A release that renders no CRD (they were in crds/ already), or none the new chart keeps: nothing to do.
    assert moved_crds_issue(component, [], [crd]) is None
    assert moved_crds_issue(component, ["gone.example.com"], [crd]) is None


# -- the DRA driver kind installs where pools declare DRA devices ---------------------------------------


def _pools_with(tmp_path: Path, changes: Mapping[str, Mapping[str, object]]) -> list[NodePool]:
    """The repository's pools, written to *tmp_path* with *changes* to a pool's ``spec.dra``."""
    for source in sorted((paths.manifests_dir() / "nodes").glob("*.yaml")):
        doc = yaml.safe_load(source.read_text())
        dra = doc["spec"].get("dra")
        if dra is not None and doc["metadata"]["name"] in changes:
            dra.update(changes[doc["metadata"]["name"]])
        (tmp_path / source.name).write_text(yaml.safe_dump(doc))
    return load_pools(tmp_path)


def test_the_pools_dra_devices_get_the_pinned_driver_on_their_nodes_only() -> None:
    lock = load_lock()
    (planned,), notes = plan(lock, POOLS)
    assert notes == []
    assert planned.driver is lock.dra_driver_for("gpu.example.com")
    assert planned.pool_names == sorted(p.name for p in POOLS if p.dra is not None) and planned.devices == 4
    values = chart_values(planned, "v9@sha256:" + "0" * 64)
    assert values["image"]["repository"] == planned.driver.image.repository
    assert values["image"]["tag"] == "v9@sha256:" + "0" * 64
    plugin = values["kubeletPlugin"]
    assert plugin["numDevices"] == 4
    (term,) = plugin["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][
        "nodeSelectorTerms"
    ]
    assert term == {"matchExpressions": [{"key": POOL_LABEL, "operator": "In", "values": planned.pool_names}]}
    assert plugin["tolerations"] == [
        {"key": "nvidia.com/gpu", "effect": "NoSchedule", "operator": "Equal", "value": "present"}
    ], "the GPU pools' taint, once"


def test_pools_of_one_driver_with_different_device_counts_are_refused_naming_them(tmp_path: Path) -> None:
    pools = _pools_with(tmp_path, {"gpu-a100": {"devices": 8}})
    with pytest.raises(NodePoolError, match=r"different device counts .*gpu-a100 8, gpu-h100 4") as info:
        plan(load_lock(), pools)
    assert "Declare the same spec.dra.devices" in str(info.value)


def test_a_pool_of_a_driver_the_lock_does_not_pin_is_refused_saying_what_is_pinned(tmp_path: Path) -> None:
    pools = _pools_with(tmp_path, {"gpu-a100": {"driver": "gpu.nvidia.com"}})
    with pytest.raises(NodePoolError, match=r"gpu-a100 .* driver gpu.nvidia.com") as info:
        plan(load_lock(), pools)
    assert "gpu.example.com (dra-example-driver)" in str(info.value) and "draDrivers" in str(info.value)


def test_a_lock_without_dra_drivers_installs_none_and_says_so() -> None:
    lock = dataclasses.replace(load_lock(), dra_drivers={})
    planned, (note,) = plan(lock, POOLS)
    assert planned == [] and "pins no DRA driver" in note and "the DRA suite skips" in note
