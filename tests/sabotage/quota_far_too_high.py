"""Every ClusterQueue the suites make gets 100 times the quota they ask for.

A gang scenario then has room for both gangs, so "the second gang waits with zero
pods" cannot hold; the scenario must fail and say the second gang was admitted.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from lightkube.utils.quantity import parse_quantity

import kbc.kueue


def pytest_configure(config: pytest.Config) -> None:
    original = kbc.kueue.make_queues

    def generous(
        client: Any, namespace: str, suffix: str, quotas: dict[str, str], *a: Any, **kw: Any
    ) -> Iterator[Any]:
        inflated = {res: str(int((parse_quantity(q) or 0) * 100)) for res, q in quotas.items()}
        return original(client, namespace, suffix, inflated, *a, **kw)

    kbc.kueue.make_queues = generous
