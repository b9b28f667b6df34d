"""A ClusterQueue the scenario makes with a nominal quota of zero gets one CPU instead.

The quota-zero scenario's RayJob then fits at once, so "it stays suspended without a pod" cannot hold:
the scenario must fail and say the RayJob's Workload was admitted.
"""

from __future__ import annotations

from tests.sabotage import Expect
from tests.sabotage.leaderworkerset_quota_given import pytest_kbc_mutate_object

__all__ = ["EXPECT", "pytest_kbc_mutate_object"]

EXPECT = Expect(
    scenario=("suites/test_rayjob.py::test_quota_zero_holds_the_rayjob_suspended_until_the_quota_is_raised"),
    because=(
        "kbc.errors.WaitGaveUp",
        "Workload rayjob-waits-",
        "to report why it is pending: Kueue reserved quota for it instead",
    ),
)
