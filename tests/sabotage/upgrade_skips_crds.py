"""Helm's crds/ trap, reproduced on the local provider: the upgrade applies everything of the new
charts except their CRDs, so the old CRDs stay while the new controllers run.

The canary must fail and name the CRDs that are not the new release's.
"""

from __future__ import annotations

from typing import Any

from kbc.kube import Kube


def pytest_kbc_upgrade_objects(
    component: str, objects: list[dict[str, Any]], kube: Kube
) -> list[dict[str, Any]]:
    return [obj for obj in objects if obj.get("kind") != "CustomResourceDefinition"]
