"""A flavor selecting a GPU product no node has is pointed at a product the cluster's nodes do have.

The scenario proves that such a flavor admits by quota while its pods never schedule; pointed at real
nodes, its pods run, and the scenario must fail.
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
    products = {labels_of(n).get(PRODUCT_LABEL) for n in kube.list(apis.NODE) if allocatable_gpus(n)} - {None}
    if labels.get(PRODUCT_LABEL) and labels[PRODUCT_LABEL] not in products and products:
        labels[PRODUCT_LABEL] = sorted(str(p) for p in products)[0]
