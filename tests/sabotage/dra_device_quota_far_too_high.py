"""Every ResourceQuota the scenario makes caps at a hundred times what it asked for.

A claim beyond a DeviceClass's device quota must be refused; under a cap a hundred times higher it is
accepted, and the scenario must fail saying the API server accepted it.
"""

from __future__ import annotations

from typing import Any

from kbc.kube import Kube


def pytest_kbc_mutate_object(obj: dict[str, Any], kube: Kube) -> None:
    if obj["kind"] == "ResourceQuota":
        hard = obj["spec"]["hard"]
        for key, value in hard.items():
            hard[key] = str(int(value) * 100)
