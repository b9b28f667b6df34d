"""waitForPodsReady's timeout flattened back to Kueue's default of 30 minutes in what the scenarios need.

Nothing is evicted within a scenario's waits then, so the scenario that expects the stuck gang evicted at
its timeout must fail waiting for the eviction.
"""

from __future__ import annotations

import pytest

from kbc.configuration import Setting
from kbc.kueue.settings import PODS_READY_SHORT, wait_for_pods_ready

FLATTENED = wait_for_pods_ready("30m", requeue_base_seconds=1)


def pytest_kbc_needs(node: pytest.Item, settings: list[Setting]) -> list[Setting]:
    return [FLATTENED if s.key == PODS_READY_SHORT.key else s for s in settings]
