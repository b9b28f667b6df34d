"""Every ResourceFlavor loses its topologyName: Kueue has no topology to place a gang in.

A gang that asks to land in one rack must be placed by Kueue's topology-aware scheduling; on a flavor
without a topology it cannot be, and each topology scenario must fail.
"""

from __future__ import annotations

from typing import Any

from kbc.kube import Kube


def pytest_kbc_mutate_object(obj: dict[str, Any], kube: Kube) -> None:
    if obj["kind"] == "ResourceFlavor":
        obj["spec"].pop("topologyName", None)
