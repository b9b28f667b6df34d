"""Every ClusterQueue the scenario makes gets 100 times the nominal quota it asks for (as
``quota_far_too_high`` does for the Job gangs).

Both RayJobs then fit, so "the second waits suspended without a pod" cannot hold: the scenario must fail
and say the second RayJob's Workload was admitted.
"""

from __future__ import annotations

from tests.sabotage import Expect
from tests.sabotage.quota_far_too_high import pytest_kbc_mutate_object

__all__ = ["EXPECT", "pytest_kbc_mutate_object"]

EXPECT = Expect(
    scenario="suites/test_rayjob.py::test_a_rayjob_is_admitted_whole_and_a_second_waits_without_a_pod",
    because=(
        "kbc.errors.WaitGaveUp",
        "Workload rayjob-second-",
        "to report why it is pending: Kueue reserved quota for it instead",
    ),
)
