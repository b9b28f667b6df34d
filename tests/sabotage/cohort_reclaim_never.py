"""Every ClusterQueue the suites build refuses to reclaim lent quota (``reclaimWithinCohort: Never``).

A lender then waits for its own quota instead of taking it back, so the reclaim
scenario must fail and say the borrower was not evicted.
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

    def never_reclaim(*args: Any, preemption: Preemption | Mapping[str, Any] | None = None, **kw: Any) -> Any:
        if isinstance(preemption, Preemption):
            preemption = dataclasses.replace(preemption, reclaim_within_cohort="Never")
        elif preemption is not None:
            preemption = {**preemption, "reclaimWithinCohort": "Never"}
        return original(*args, preemption=preemption, **kw)

    kbc.kueue.build_cluster_queue = never_reclaim
