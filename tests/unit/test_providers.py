"""Provider selection, the existing provider's opt-in guard, and the kind provider without a cluster.

The kind provider with real kind clusters is in tests/integration/test_kind.py.
"""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import pytest
import yaml

from kbc import apis
from kbc.cluster.pools import load_pools
from kbc.cluster.providers import ProviderOptions, get_provider, resolve_provider_name
from kbc.cluster.providers.existing import ExistingProvider
from kbc.cluster.providers.kind import KindProvider, advertise_pools, kind_config
from kbc.errors import (
    ContextNotAllowedError,
    ProviderNotAvailableError,
    ToolMissingError,
)
from kbc.kube import Kube
from kbc.labels import POOL_LABEL
from kbc.supply import paths
from kbc.supply.lock import load_lock


def test_auto_is_local_without_a_privileged_docker(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("kbc.cluster.providers.docker_runs_privileged", lambda: False)
    assert resolve_provider_name("auto") == "local"
    monkeypatch.setattr("kbc.cluster.providers.docker_runs_privileged", lambda: True)
    assert resolve_provider_name("auto") == "kind"
    with pytest.raises(ProviderNotAvailableError, match="unknown provider 'kund'"):
        resolve_provider_name("kund")


def write_kubeconfig(path: Path, contexts: list[str], current: str) -> Path:
    path.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "current-context": current,
                "contexts": [{"name": c, "context": {"cluster": c, "user": c}} for c in contexts],
                "clusters": [{"name": c, "cluster": {"server": "https://127.0.0.1:1"}} for c in contexts],
                "users": [{"name": c, "user": {}} for c in contexts],
            }
        )
    )
    return path


def test_existing_refuses_a_context_the_user_did_not_opt_in_to(tmp_path: Path) -> None:
    kubeconfig = write_kubeconfig(tmp_path / "kc", ["prod", "gpu-staging"], current="prod")
    lock = load_lock()
    no_opt_in = ExistingProvider(lock, kubeconfig=kubeconfig, out=io.StringIO())
    with pytest.raises(ContextNotAllowedError, match=r"refusing to use context 'prod'.*--allow-context prod"):
        no_opt_in.up("x", components=())
    other = ExistingProvider(lock, kubeconfig=kubeconfig, allow_context="gpu-staging", out=io.StringIO())
    with pytest.raises(ContextNotAllowedError, match="context 'prod'"):
        other.get("x")
    chosen = ExistingProvider(lock, kubeconfig=kubeconfig, context="gpu-staging", allow_context="gpu-staging")
    cluster = chosen.get("x")
    assert cluster is not None and not cluster.created_by_harness
    assert cluster.details["context"] == "gpu-staging"


def test_existing_never_deletes_and_names_a_missing_context(tmp_path: Path) -> None:
    kubeconfig = write_kubeconfig(tmp_path / "kc", ["a"], current="a")
    out = io.StringIO()
    ExistingProvider(load_lock(), kubeconfig=kubeconfig, allow_context="a", out=out).down("x")
    assert "never removes a cluster it did not create" in out.getvalue()
    missing = ExistingProvider(load_lock(), kubeconfig=kubeconfig, context="b", allow_context="b")
    with pytest.raises(Exception, match="context 'b' is not in"):
        missing.get("x")


def test_node_naming_is_refused_for_clusters_that_name_their_own_nodes() -> None:
    with pytest.raises(
        ProviderNotAvailableError, match="--node-naming kind applies to the local provider only"
    ):
        get_provider("kind", load_lock(), ProviderOptions(node_naming="kind"))


def test_get_provider_passes_the_options_on(tmp_path: Path) -> None:
    kubeconfig = write_kubeconfig(tmp_path / "kc", ["a"], current="a")
    provider = get_provider(
        "existing", load_lock(), ProviderOptions(kubeconfig=kubeconfig, allow_context="a")
    )
    assert isinstance(provider, ExistingProvider) and provider.get("x") is not None


def test_kind_config_has_a_worker_per_pool_replica_with_the_pool_labels() -> None:
    pools = load_pools(paths.manifests_dir() / "nodes")
    config = kind_config(pools, api_port=6443)
    workers = [n for n in config["nodes"] if n["role"] == "worker"]
    assert len(workers) == sum(p.replicas for p in pools)
    gpu_workers = [w for w in workers if w["labels"].get("nvidia.com/gpu.present") == "true"]
    assert gpu_workers and all(w["labels"][POOL_LABEL].startswith("gpu-") for w in gpu_workers)
    assert config["networking"] == {"apiServerAddress": "127.0.0.1", "apiServerPort": 6443}


class RecordingKube(Kube):
    """Answers node lists with kind-shaped workers and records patches (no API server behind it)."""

    def __init__(self, nodes: list[dict[str, Any]]) -> None:
        self.nodes = nodes
        self.patches: list[tuple[str, str, Any, str | None]] = []

    def list(self, kind: apis.Kind, **selectors: Any) -> list[dict[str, Any]]:
        assert kind == apis.NODE and selectors == {"labels": {POOL_LABEL: None}}, (kind, selectors)
        return self.nodes

    def patch(self, kind: apis.Kind, name: str, patch: Any, **options: Any) -> dict[str, Any]:
        self.patches.append((kind.kind, name, patch, options.get("subresource")))
        return {}


def worker(name: str, pool: str) -> dict[str, Any]:
    return {"metadata": {"name": name, "labels": {POOL_LABEL: pool}}}


def test_kind_workers_get_the_pool_taints_and_advertised_gpus() -> None:
    pools = load_pools(paths.manifests_dir() / "nodes")
    kube = RecordingKube([worker("kbc-worker", "cpu"), worker("kbc-worker2", "gpu-h100")])
    advertise_pools(kube, pools)
    gpu = [p for p in kube.patches if p[1] == "kbc-worker2"]
    taint = {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}
    assert ("Node", "kbc-worker2", {"spec": {"taints": [taint]}}, None) in gpu
    status = next(body for _, _, body, sub in gpu if sub == "status")
    assert status == {"status": {"capacity": {"nvidia.com/gpu": "8"}, "allocatable": {"nvidia.com/gpu": "8"}}}
    assert not [p for p in kube.patches if p[1] == "kbc-worker"], "CPU workers keep what kubelet reports"


def test_kind_without_docker_says_how_to_get_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))  # no docker on it
    with pytest.raises(ToolMissingError, match=r"docker was not found.*--provider local"):
        KindProvider(load_lock(), out=io.StringIO()).up("k")
