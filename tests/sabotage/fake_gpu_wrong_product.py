"""Every GPU product flavor the scenario makes selects another product than the one asked for.

This is the misconfiguration a product flavor exists to prevent: a flavor named for one GPU pool whose
nodeLabels point at another. Kueue admits as asked and injects the (wrong) labels, the scheduler obeys
them, and the pods run on the other pool; the routing scenario must fail and name both products.
"""

from __future__ import annotations

from typing import Any

from kbc.flavors import gpu_products
from kbc.kube import Kube
from kbc.nodepools import PRODUCT_LABEL


def pytest_kbc_mutate_object(obj: dict[str, Any], kube: Kube) -> None:
    if obj["kind"] != "ResourceFlavor":
        return
    labels = (obj.get("spec") or {}).get("nodeLabels") or {}
    asked = labels.get(PRODUCT_LABEL)
    others = [p.product for p in gpu_products(kube) if p.product != asked]
    if asked is not None and others:
        labels[PRODUCT_LABEL] = others[0]
