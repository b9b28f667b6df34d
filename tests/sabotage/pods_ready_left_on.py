"""waitForPodsReady left on, with the short timeout, where the negative control needs it off.

Kueue then evicts the stuck gang at the timeout, so the control that expects it to keep its quota past
the timeout must fail.
"""

from __future__ import annotations

import pytest

from kbc.configuration import Setting
from kbc.kueue.settings import PODS_READY_SHORT, WAIT_FOR_PODS_READY_OFF


def pytest_kbc_needs(node: pytest.Item, settings: list[Setting]) -> list[Setting]:
    return [PODS_READY_SHORT if s.key == WAIT_FOR_PODS_READY_OFF.key else s for s in settings]
