"""Shared helpers of the harness's own tests."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from kbc.supply.lock import default_lock_path
from tests import tiers, xdist_groups


def pytest_kbc_worker_group(item: pytest.Item) -> str | None:
    return xdist_groups.group_of(item)


# First: pytest's own -m deselection, in the same hook, must see the tiers' marks.
@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    tiers.mark_tiers(items)


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
