"""Every ClusterQueue the scenario makes gets 100 times the nominal quota it asks for (as
``quota_far_too_high`` does for the Job gangs).

Both LeaderWorkerSets' groups then fit, so "the second group waits with every pod gated" cannot hold: the
scenario must fail and say the second group's Workload was admitted.
"""

from __future__ import annotations

from tests.sabotage import Expect
from tests.sabotage.quota_far_too_high import pytest_kbc_mutate_object

__all__ = ["EXPECT", "pytest_kbc_mutate_object"]

EXPECT = Expect(
    scenario="suites/test_leaderworkerset.py::test_a_group_is_admitted_whole_and_a_second_waits_with_every_pod_gated",
    because=(
        "kbc.errors.WaitGaveUp",
        "to report why it is pending: Kueue reserved quota for it instead",
        "so it was not held back as this scenario requires",
    ),
)
