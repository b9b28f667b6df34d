"""Every ResourceClaimTemplate loses its CEL selectors: any device of the class will do.

A selector that no device matches must leave the pod unschedulable; without it the pod is placed, and the
negative control must fail.
"""

from __future__ import annotations

from typing import Any

from kbc.kube import Kube


def pytest_kbc_mutate_object(obj: dict[str, Any], kube: Kube) -> None:
    if obj["kind"] == "ResourceClaimTemplate":
        for request in obj["spec"]["spec"]["devices"]["requests"]:
            request["exactly"].pop("selectors", None)
