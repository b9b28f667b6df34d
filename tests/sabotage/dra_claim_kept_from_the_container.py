"""Every pod's claim is kept from its containers: the pod still claims the devices (``spec.resourceClaims``,
so kube-scheduler allocates them and the kubelet has the driver prepare them), but no container names the
claim (``resources.claims`` dropped), so none is given the prepared device.

The scenario that proves a DRA driver prepares the allocated device for the container must then fail,
naming the device the claim was allocated and that the container sees none.
"""

from __future__ import annotations

from typing import Any

from kbc.kube import Kube


def pytest_kbc_mutate_object(obj: dict[str, Any], kube: Kube) -> None:
    if obj["kind"] != "Pod" or not obj["spec"].get("resourceClaims"):
        return
    for container in obj["spec"]["containers"]:
        (container.get("resources") or {}).pop("claims", None)
