"""Every ClusterQueue the suites build has no borrowingLimit: a borrower may use all the idle quota.

A workload larger than nominal + the limit the scenario asked for then fits the idle
lender's quota, so the borrowingLimit scenario must fail and say Kueue reserved quota for it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

import pytest

import kbc.kueue
from kbc.kueue import Quota, QuotaLike


def pytest_configure(config: pytest.Config) -> None:
    original = kbc.kueue.build_cluster_queue

    def unlimited(
        name: str, namespace: str, flavors: Mapping[str, Mapping[str, QuotaLike]], **kw: Any
    ) -> Any:
        lifted = {
            flavor: {
                res: dataclasses.replace(q, borrowing_limit=None) if isinstance(q, Quota) else q
                for res, q in quotas.items()
            }
            for flavor, quotas in flavors.items()
        }
        return original(name, namespace, lifted, **kw)

    kbc.kueue.build_cluster_queue = unlimited
