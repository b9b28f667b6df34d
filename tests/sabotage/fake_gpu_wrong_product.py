"""Every GPU product flavor the scenario makes selects another product than the one asked for.

This is the misconfiguration a product flavor exists to prevent: a flavor named for one GPU pool whose
nodeLabels point at another. Kueue admits as asked and injects the (wrong) labels, the scheduler obeys
them, and the pods run on the other pool; the routing scenario must fail and name both products.
"""

from __future__ import annotations

from typing import Any

from kbc import apis
from kbc.gpu import allocatable_gpus
from kbc.kube import Kube, labels_of
from kbc.labels import PRODUCT_LABEL


def pytest_kbc_mutate_object(obj: dict[str, Any], kube: Kube) -> None:
    if obj["kind"] != "ResourceFlavor":
        return
    labels = (obj.get("spec") or {}).get("nodeLabels") or {}
    asked = labels.get(PRODUCT_LABEL)
    # Every GPU product the cluster's nodes carry, whatever their state at this moment.
    products = sorted(
        {labels_of(n).get(PRODUCT_LABEL, "") for n in kube.list(apis.NODE) if allocatable_gpus(n)}
    )
    others = [p for p in products if p and p != asked]
    if asked is None:
        return
    if not others:
        raise RuntimeError(f"sabotage: the cluster has no GPU product besides {asked} to point the flavor at")
    labels[PRODUCT_LABEL] = others[0]
