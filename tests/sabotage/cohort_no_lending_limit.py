"""Every ClusterQueue the scenario makes has no lendingLimit: a lender lends all its idle quota.

The borrower that needs more than the lender was to lend is then admitted at once, so the lendingLimit
scenario must fail and say Kueue reserved quota for it.
"""

from __future__ import annotations

from typing import Any

from kbc.kube import Kube
from tests.sabotage import Expect, quotas


def pytest_kbc_mutate_object(obj: dict[str, Any], kube: Kube) -> None:
    for resource in quotas(obj):
        resource.pop("lendingLimit", None)


EXPECT = Expect(
    scenario="suites/test_cohort.py::test_lending_limit_caps_what_the_lender_lends_and_raising_it_admits_the_"
    "borrower",
    because=("kbc.errors.WaitGaveUp", "Kueue reserved quota for it instead", "so it was not held back"),
)
