"""The second team's ClusterQueue gets three times the fair-sharing weight of the first.

Where the scenario expects an even split (its negative control, equal weights), Kueue now splits the pool
1:3, and the scenario must fail and say where fair sharing settled.
"""

from __future__ import annotations

from typing import Any

from kbc.kube import Kube
from kbc.kueue.settings import FAIR_SHARING
from tests.sabotage import Expect


def pytest_kbc_mutate_object(obj: dict[str, Any], kube: Kube) -> None:
    if obj["kind"] == "ClusterQueue" and "fairSharing" in obj["spec"] and "team-b" in obj["metadata"]["name"]:
        obj["spec"]["fairSharing"]["weight"] = "3"


EXPECT = Expect(
    scenario="suites/test_fair_sharing.py::test_equal_weights_divide_a_contended_pool_evenly",
    because=("kbc.errors.WaitGaveUp", "fair sharing settled there, not at 4 and 4"),
    # Preempting team-a down to 2 while team-b climbs to 6 can pass through 4 and 4 for an instant: then the
    # split is reached but does not hold.
    or_because=(("kbc.errors.ConsistencyViolation", "to keep using team-a-", "stopped holding after"),),
    needs=(FAIR_SHARING,),
)
