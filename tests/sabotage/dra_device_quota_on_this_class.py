"""Every ResourceQuota on another DeviceClass's devices caps the harness's DeviceClass instead.

The negative control shows that a quota on another class caps nothing of this one; with the cap moved onto
this class its claim is refused, and the control must fail.
"""

from __future__ import annotations

from typing import Any

from kbc.dra import quota_key
from kbc.kube import Kube
from kbc.labels import DRA_CLASS

_SUFFIX = ".deviceclass.resource.k8s.io/devices"


def pytest_kbc_mutate_object(obj: dict[str, Any], kube: Kube) -> None:
    if obj["kind"] == "ResourceQuota":
        hard = obj["spec"]["hard"]
        for key in [k for k in hard if k.endswith(_SUFFIX) and k != quota_key(DRA_CLASS)]:
            hard[quota_key(DRA_CLASS)] = hard.pop(key)
