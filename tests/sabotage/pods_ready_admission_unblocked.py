"""waitForPodsReady without ``blockAdmission`` where the scenarios need it.

Kueue then admits a workload that fits its quota while an admitted gang's pods are not Ready, so the
scenario that expects the second gang held must fail.
"""

from __future__ import annotations

import pytest

from kbc.configuration import Setting
from kbc.kueue.settings import PODS_READY_BLOCKING, wait_for_pods_ready

UNBLOCKED = wait_for_pods_ready("1m")


def pytest_kbc_needs(node: pytest.Item, settings: list[Setting]) -> list[Setting]:
    return [UNBLOCKED if s.key == PODS_READY_BLOCKING.key else s for s in settings]
