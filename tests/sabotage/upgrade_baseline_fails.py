"""On the old pins only (the canary's baseline runs), every ClusterQueue names no cohort.

The baseline of the reclaim scenario then fails (nothing is lent, nothing reclaimed),
while the canary itself and the scenario's run on the new pins are untouched. The canary
must report the baseline as an expected failure of the old pins, pass the session, and
mark the outcome's change in the comparison.
"""

from __future__ import annotations

from typing import Any

import pytest

from kbc.kube import Kube
from tests.sabotage import cohort_no_cohort_name

_running: list[str] = [""]  # the node id of the test now running


def pytest_runtest_setup(item: pytest.Item) -> None:
    _running[0] = item.nodeid


def pytest_kbc_mutate_object(obj: dict[str, Any], kube: Kube) -> None:
    if "[old-pins]" in _running[0]:
        cohort_no_cohort_name.pytest_kbc_mutate_object(obj, kube)
