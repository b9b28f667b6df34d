"""The DeviceClass that backs the extended resource selects the devices of a driver nobody runs.

kube-scheduler then has no device to allocate for a pod asking for the extended resource: the pod must stay
unplaced, and the scenario that expects it allocated a device must fail saying so.
"""

from __future__ import annotations

from typing import Any

from kbc.kube import Kube
from kbc.labels import EXTENDED_CLASS


def pytest_kbc_mutate_object(obj: dict[str, Any], kube: Kube) -> None:
    if obj["kind"] == "DeviceClass" and obj["metadata"]["name"] == EXTENDED_CLASS:
        obj["spec"]["selectors"] = [{"cel": {"expression": "device.driver == 'nobody.example.com'"}}]
