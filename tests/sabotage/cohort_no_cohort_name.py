"""Every ClusterQueue the suites build names no cohort (and so may not carry borrowing or lending limits).

Each ClusterQueue then stands alone: nothing is lent, and a borrower can never use more
than its nominal quota. The borrowing scenario must fail and say the borrower was held
at its nominal quota.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest

import kbc.kueue
from kbc.kueue import Quota, QuotaLike


def pytest_configure(config: pytest.Config) -> None:
    original = kbc.kueue.build_cluster_queue

    def alone(name: str, namespace: str, flavors: Mapping[str, Mapping[str, QuotaLike]], **kw: Any) -> Any:
        kw.pop("cohort", None)
        # Kueue refuses borrowingLimit/lendingLimit without a cohort; keep only the nominal quotas.
        nominal = {
            flavor: {res: q.nominal if isinstance(q, Quota) else q for res, q in quotas.items()}
            for flavor, quotas in flavors.items()
        }
        return original(name, namespace, nominal, **kw)

    kbc.kueue.build_cluster_queue = alone
