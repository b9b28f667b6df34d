"""Fair sharing's preemption strategies swapped in what the scenarios need: Kueue's default pair
(``LessThanOrEqualToFinalShare`` first) where ``LessThanInitialShare`` alone is asked for, and back.

On the same state the other strategy evicts the other of the borrowing team's two Workloads, so each
strategy's scenario must fail naming the Workload Kueue preempted instead.
"""

from __future__ import annotations

import pytest

from kbc.configuration import Setting
from kbc.kueue.settings import FAIR_SHARING, FAIR_SHARING_INITIAL_SHARE

SWAPPED = {FAIR_SHARING.key: FAIR_SHARING_INITIAL_SHARE, FAIR_SHARING_INITIAL_SHARE.key: FAIR_SHARING}


def pytest_kbc_needs(node: pytest.Item, settings: list[Setting]) -> list[Setting]:
    return [SWAPPED.get(s.key, s) for s in settings]
