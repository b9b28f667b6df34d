"""A kind cluster remembers the Docker it was made on: ``kbc cluster down`` reaches it from a shell without
``DOCKER_HOST``, and ``kbc docker down`` finds the clusters its engine hosts (issue 40 item 6)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from kbc.cluster.providers.kind.hosts import (
    docker_hint,
    hosted_clusters,
    on_its_docker,
    record_docker_host,
    recorded_docker_host,
)

ENGINE = "unix:///root/.cache/kbatch-conformance/docker/docker.sock"


@pytest.fixture
def clusters(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("KBC_CACHE_DIR", str(tmp_path))
    return tmp_path / "clusters"


def made(clusters: Path, name: str, host: str | None, monkeypatch: pytest.MonkeyPatch) -> Path:
    directory = clusters / f"kind-{name}"
    directory.mkdir(parents=True)
    (directory / "created-by-kbc").write_text(f"{name}\n")
    if host is not None:
        monkeypatch.setenv("DOCKER_HOST", host)
        record_docker_host(directory)
    monkeypatch.delenv("DOCKER_HOST", raising=False)
    return directory


def test_a_cluster_records_its_docker_and_down_talks_to_it(
    clusters: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    directory = made(clusters, "hk", ENGINE, monkeypatch)
    assert recorded_docker_host(directory) == ENGINE
    with on_its_docker(directory):
        assert os.environ["DOCKER_HOST"] == ENGINE
        assert ENGINE in docker_hint() and "kbc docker up" in docker_hint()
    assert "DOCKER_HOST" not in os.environ
    monkeypatch.setenv("DOCKER_HOST", "tcp://elsewhere:2375")
    with on_its_docker(directory):
        assert os.environ["DOCKER_HOST"] == "tcp://elsewhere:2375", "an exported DOCKER_HOST wins"


def test_the_engine_hosts_the_clusters_made_on_it_and_no_other(
    clusters: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    made(clusters, "hk", ENGINE, monkeypatch)
    made(clusters, "hk-bf8d73", ENGINE, monkeypatch)
    made(clusters, "on-the-default", "", monkeypatch)
    made(clusters, "before-the-record", None, monkeypatch)
    (clusters / "kind-not-ours").mkdir()
    assert hosted_clusters(ENGINE) == ["hk", "hk-bf8d73"]
    assert recorded_docker_host(clusters / "kind-before-the-record") is None
