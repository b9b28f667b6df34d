"""Every ClusterQueue the suites build refuses preemption inside itself (``withinClusterQueue: Never``).

A higher-priority Job then waits behind a lower-priority one that holds the quota, so the
priority scenario must fail and say the low-priority Job was not evicted.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

import pytest

import kbc.kueue
from kbc.kueue import Preemption


def pytest_configure(config: pytest.Config) -> None:
    original = kbc.kueue.build_cluster_queue

    def no_priority(*args: Any, preemption: Preemption | Mapping[str, Any] | None = None, **kw: Any) -> Any:
        if isinstance(preemption, Preemption):
            preemption = dataclasses.replace(preemption, within_cluster_queue="Never")
        elif preemption is not None:
            preemption = {**preemption, "withinClusterQueue": "Never"}
        return original(*args, preemption=preemption, **kw)

    kbc.kueue.build_cluster_queue = no_priority
