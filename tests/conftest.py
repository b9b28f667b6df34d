"""Shared helpers of the harness's own tests."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from kbc.supply.lock import default_lock_path
from tests import xdist_groups


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
    # First: the cluster plugin reads the cluster name in its own pytest_configure.
    xdist_groups.check_distribution(config)
    xdist_groups.configure_controller(config)
    xdist_groups.worker_cluster_name(config)
    xdist_groups.record_durations(config)


def pytest_unconfigure(config: pytest.Config) -> None:
    xdist_groups.unconfigure(config)


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    # Last, once every plugin has chosen and ordered the items.
    xdist_groups.write_groups(config, items)


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node: Any) -> None:
    xdist_groups.configure_node(node.config, node.workerinput)


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    return xdist_groups.make_scheduler(config, log)


@pytest.fixture
def lock_data() -> dict[str, object]:
    """The repository's lock file as plain data, to break in a test."""
    data: dict[str, object] = yaml.safe_load(default_lock_path().read_text())
    return data


@pytest.fixture
def write_lock(tmp_path: Path):  # type: ignore[no-untyped-def]
    def write(data: object) -> Path:
        path = tmp_path / "charts-lock.yaml"
        path.write_text(data if isinstance(data, str) else yaml.safe_dump(data))
        return path

    return write
