"""A ClusterQueue the scenario makes with a nominal quota of zero gets one CPU instead.

The quota-zero scenario's group then fits at once, so "it waits with every pod gated" cannot hold: the
scenario must fail and say the group's Workload was admitted.
"""

from __future__ import annotations

from typing import Any

from kubernetes.utils.quantity import parse_quantity

from kbc.kube import Kube
from tests.sabotage import Expect, quotas


def pytest_kbc_mutate_object(obj: dict[str, Any], kube: Kube) -> None:
    for resource in quotas(obj):
        if parse_quantity(resource["nominalQuota"]) == 0:
            resource["nominalQuota"] = "1"


EXPECT = Expect(
    scenario="suites/test_leaderworkerset.py::test_quota_zero_holds_the_group_gated_until_the_quota_is_raised",
    because=(
        "kbc.errors.WaitGaveUp",
        "Workload leaderworkerset-waits-0-",
        "to report why it is pending: Kueue reserved quota for it instead",
    ),
)
