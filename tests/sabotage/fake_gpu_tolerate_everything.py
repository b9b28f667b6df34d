"""Every pod tolerates every taint (``operator: Exists`` with no key).

A GPU pod without the GPU toleration must be refused by the GPU nodes' taint; tolerating everything, it
is placed, and the scenario must fail.
"""

from __future__ import annotations

from typing import Any

from kbc.kube import Kube


def pytest_kbc_mutate_object(obj: dict[str, Any], kube: Kube) -> None:
    if obj["kind"] == "Pod":
        obj["spec"]["tolerations"] = [{"operator": "Exists"}]
