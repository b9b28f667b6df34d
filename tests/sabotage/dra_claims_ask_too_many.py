"""Every ResourceClaimTemplate asks for 32 devices (the most a claim may), more than any node offers.

A claim that a node can satisfy must be allocated a device of that node; asking for 99 it is not, the pod
is never placed, and the scenario must fail saying the scheduler cannot allocate its claims.
"""

from __future__ import annotations

from typing import Any

from kbc.kube import Kube


def pytest_kbc_mutate_object(obj: dict[str, Any], kube: Kube) -> None:
    if obj["kind"] == "ResourceClaimTemplate":
        for request in obj["spec"]["spec"]["devices"]["requests"]:
            request["exactly"]["count"] = 32  # the most a claim may ask; more than any node offers
