"""Every ResourceClaimTemplate asks the harness's DeviceClass, which Kueue's configuration maps, instead of
the class the scenario named.

A Workload claiming devices of a class Kueue cannot map must be held with Kueue's reason; mapped, it is
admitted, and the scenario must fail saying Kueue reserved quota for it.
"""

from __future__ import annotations

from typing import Any

from kbc.kube import Kube
from kbc.labels import DRA_CLASS


def pytest_kbc_mutate_object(obj: dict[str, Any], kube: Kube) -> None:
    if obj["kind"] == "ResourceClaimTemplate":
        for request in obj["spec"]["spec"]["devices"]["requests"]:
            request["exactly"]["deviceClassName"] = DRA_CLASS
