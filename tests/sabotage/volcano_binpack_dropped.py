"""The binpack scenario does not get the binpack weighted for GPUs it asks for: it runs on the chart's
configuration (reusing the cluster of the test that runs it).

The chart's configuration spreads its one-GPU vcjobs (they ask for memory too): the binpack scenario must
fail with them on more than one node.
"""

from __future__ import annotations

import pytest

from kbc.configuration import Setting
from kbc.volcano.settings import BINPACK_GPUS


def pytest_kbc_needs(node: pytest.Item, settings: list[Setting]) -> list[Setting]:
    return [s for s in settings if s.key != BINPACK_GPUS.key]
