"""Every Volcano Queue the suite makes is created without its ``capability``.

The quota scenario's queue then caps nothing, so proportion enqueues the GPU job at
once: the scenario must fail and say the PodGroup went Inqueue although its queue's
capability allows 0 GPUs.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

import pytest

import kbc.volcano


def pytest_configure(config: pytest.Config) -> None:
    original = kbc.volcano.make_queue

    def uncapped(
        client: Any, name: str, *, capability: Mapping[str, str] | None = None, **kw: Any
    ) -> Iterator[str]:
        return original(client, name, **kw)

    kbc.volcano.make_queue = uncapped
