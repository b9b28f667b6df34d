"""Fixtures of the integration tests that make clusters of their own."""

from __future__ import annotations

import shutil
from collections.abc import Iterator

import pytest

from kbc.cluster.providers.local import LocalProvider
from kbc.supply import paths
from kbc.supply.lock import load_lock


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
