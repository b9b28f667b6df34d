"""Every CEL selector that names a GPU product names another product the cluster's devices carry.

A claim routed to one product must be allocated a device of that product; pointed at another it lands on
the other, and the scenario must fail naming the device it got.
"""

from __future__ import annotations

import re
from typing import Any

from kbc.dra import devices
from kbc.kube import Kube
from kbc.labels import DRA_DRIVER

_PRODUCT = re.compile(r'\.productName == "([^"]+)"')


def pytest_kbc_mutate_object(obj: dict[str, Any], kube: Kube) -> None:
    if obj["kind"] != "ResourceClaimTemplate":
        return
    products = sorted(
        {str(d.attribute("productName")) for d in devices(kube, DRA_DRIVER) if d.attribute("productName")}
    )
    for request in obj["spec"]["spec"]["devices"]["requests"]:
        for selector in request["exactly"].get("selectors") or []:
            expression = selector["cel"]["expression"]
            asked = _PRODUCT.search(expression)
            others = [p for p in products if asked and p != asked.group(1)]
            if asked and others:
                selector["cel"]["expression"] = expression.replace(asked.group(1), others[0])
