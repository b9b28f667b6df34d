"""Fixtures of the integration tests that make clusters of their own."""

from __future__ import annotations

import shutil
from collections.abc import Iterator

import pytest

from kbc.cluster.docker import DockerEngine
from kbc.cluster.providers.local import LocalProvider
from kbc.supply import paths
from kbc.supply.lock import load_lock
from tests.integration.commands import kbc


@pytest.fixture
def cleanup_names() -> Iterator[list[str]]:
    """Names of clusters a test may create; removed afterwards whatever happened."""
    names: list[str] = []
    yield names
    provider = LocalProvider(load_lock())
    for name in names:
        if (paths.clusters_dir() / name / "state.json").exists():
            provider.down(name)
        shutil.rmtree(paths.clusters_dir() / name, ignore_errors=True)


@pytest.fixture(scope="session")
def docker_env() -> Iterator[dict[str, str]]:
    """The environment of a command that runs kind on the harness's own engine (``kbc docker up``),
    started for these tests when it is not running and stopped after them if they started it.

    Only the commands under test get its ``DOCKER_HOST``; this session's own environment does not, so
    the rest of ``make test`` still resolves ``--provider auto`` as a user's machine would."""
    engine = DockerEngine()
    started = not engine.running()
    if started:
        engine.up()
        _remove_killed_runs_kind_clusters(engine.env())
    try:
        yield engine.env()
    finally:
        if started:
            left = engine.down()
            assert not left, f"the engine left {left.describe()}"


def _remove_killed_runs_kind_clusters(env: dict[str, str]) -> None:
    """Remove the kind clusters of these tests' own names that an earlier ``make test`` killed outright (a
    CI time limit, a reboot) left: the engine, started again, brings their nodes back half-way, and a test
    would reuse one where it proves a cluster made from nothing. Only when this session started the engine:
    then no run of these tests can be using it."""
    for directory in sorted(paths.clusters_dir().glob("kind-kbc-selftest*")):
        name = directory.name.removeprefix("kind-")
        down = kbc("cluster", "down", "--provider", "kind", "--cluster-name", name, env=env, timeout=600)
        assert down.returncode == 0, f"removing {name}, left by an earlier run: {down.stderr}"
