"""Every ResourceClaimTemplate asks for one device, whatever the scenario asked for.

The claim no node can satisfy is then satisfied: its pod is placed, and the negative control, which holds
it unschedulable, must fail.
"""

from __future__ import annotations

from typing import Any

from kbc.kube import Kube


def pytest_kbc_mutate_object(obj: dict[str, Any], kube: Kube) -> None:
    if obj["kind"] == "ResourceClaimTemplate":
        for request in obj["spec"]["spec"]["devices"]["requests"]:
            request["exactly"]["count"] = 1
