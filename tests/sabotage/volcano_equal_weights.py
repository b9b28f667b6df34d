"""Every Volcano Queue the suite makes gets weight 1, whatever weight the scenario asks for.

The reclaim scenario's queues (asked for with weights 1 and 3) then deserve equal
halves of the cluster, so the weight-3 queue stops reclaiming at half the GPUs: the
scenario must fail and report how many GPUs each queue holds against its weighted share.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

import kbc.volcano


def pytest_configure(config: pytest.Config) -> None:
    original = kbc.volcano.make_queue

    def unweighted(client: Any, name: str, *, weight: int = 1, **kw: Any) -> Iterator[str]:
        return original(client, name, weight=1, **kw)

    kbc.volcano.make_queue = unweighted
