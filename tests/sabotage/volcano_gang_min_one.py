"""Every vcjob the Volcano suite builds asks for a gang of one (``minAvailable: 1``).

The gang scenario's 4-pod job then fits "enough" with one pod, so vc-scheduler binds
the 3 pods that fit beside the filler: the scenario must fail and say pods were bound
while the gang did not fit (partial placement).
"""

from __future__ import annotations

from typing import Any

import pytest

import kbc.volcano


def pytest_configure(config: pytest.Config) -> None:
    original = kbc.volcano.vcjob

    def gang_of_one(name: str, queue: str, *, min_available: int, **kw: Any) -> Any:
        return original(name, queue, min_available=1, **kw)

    kbc.volcano.vcjob = gang_of_one
