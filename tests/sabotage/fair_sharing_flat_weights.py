"""Every ClusterQueue the scenario makes gets the same fair-sharing weight (its weight is flattened to 1).

Kueue then shares the contended pool evenly, so the scenario that expects the weighted split (1:3)
must fail and say that fair sharing settled at the even split.
"""

from __future__ import annotations

from typing import Any

from kbc.kube import Kube
from kbc.kueue.settings import FAIR_SHARING
from tests.sabotage import Expect


def pytest_kbc_mutate_object(obj: dict[str, Any], kube: Kube) -> None:
    if obj["kind"] == "ClusterQueue" and "fairSharing" in obj["spec"]:
        obj["spec"]["fairSharing"]["weight"] = "1"


EXPECT = Expect(
    scenario="suites/test_fair_sharing.py::test_weights_divide_a_contended_pool_in_proportion",
    because=(
        "kbc.errors.WaitGaveUp",
        "Kueue's weighted shares are equal (500 and 500) with the teams holding 4 and 4 GPUs",
        "fair sharing settled there, not at 2 and 6",
    ),
    needs=(FAIR_SHARING,),
)
