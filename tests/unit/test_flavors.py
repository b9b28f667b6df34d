"""The flavor-without-nodes diagnostic: flavors whose nodeLabels no Ready node carries."""

from __future__ import annotations

from typing import Any

from kbc import apis
from kbc.flavors import find_flavors_without_nodes, product_key
from kbc.labels import PRODUCT_LABEL


def flavor(name: str, labels: dict[str, str] | None = None) -> dict[str, Any]:
    return apis.RESOURCE_FLAVOR.manifest(name, spec={"nodeLabels": labels} if labels else {})


def node(name: str, labels: dict[str, str], ready: bool = True) -> dict[str, Any]:
    status = {"conditions": [{"type": "Ready", "status": "True" if ready else "False"}]}
    return {"metadata": {"name": name, "labels": labels}, "status": status}


def test_only_flavors_no_ready_node_satisfies_are_named() -> None:
    nodes = [
        node("a", {PRODUCT_LABEL: "NVIDIA-H100-80GB-HBM3", "zone": "z1"}),
        node("b", {PRODUCT_LABEL: "NVIDIA-B200"}, ready=False),
    ]
    flavors = [
        flavor("any"),  # no nodeLabels: matches every node
        flavor("h100", {PRODUCT_LABEL: "NVIDIA-H100-80GB-HBM3"}),
        flavor("h100-z2", {PRODUCT_LABEL: "NVIDIA-H100-80GB-HBM3", "zone": "z2"}),  # all labels must match
        flavor("b200", {PRODUCT_LABEL: "NVIDIA-B200"}),  # only a node that is not Ready has it
    ]
    found = find_flavors_without_nodes(flavors, nodes)
    assert [f.name for f in found] == ["b200", "h100-z2"]
    assert found[0].nodes_seen == 1
    assert "no node has labels {nvidia.com/gpu.product: NVIDIA-B200}" in str(found[0].warning())
    assert "none of the 1 Ready nodes carries them" in found[0].explain()


def test_product_keys_are_short_model_names() -> None:
    assert product_key("NVIDIA-H100-80GB-HBM3") == "h100"
    assert product_key("NVIDIA-A100-SXM4-80GB") == "a100"
    assert product_key("Tesla-T4") == "tesla-t4", "no model token: the product as a slug"
    assert product_key("weird product!") == "weird-product"
