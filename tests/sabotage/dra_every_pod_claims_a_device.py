"""Every pod claims a device, also the one the scenario makes to claim none: a pod without
``spec.resourceClaims`` is given a claim from the namespace's ResourceClaimTemplate, for its containers.

The negative control (a pod without a claim sees no device) must then fail: given a claim, the pod is
allocated a device, the driver prepares it, and its container sees it.
"""

from __future__ import annotations

from typing import Any

from kbc import apis
from kbc.dra import CLAIM
from kbc.kube import Kube


def pytest_kbc_mutate_object(obj: dict[str, Any], kube: Kube) -> None:
    if obj["kind"] != "Pod" or obj["spec"].get("resourceClaims"):
        return
    templates = kube.list(apis.RESOURCE_CLAIM_TEMPLATE, namespace=obj["metadata"].get("namespace"))
    if not templates:
        return
    template = templates[0]["metadata"]["name"]
    obj["spec"]["resourceClaims"] = [{"name": CLAIM, "resourceClaimTemplateName": template}]
    for container in obj["spec"]["containers"]:
        container.setdefault("resources", {})["claims"] = [{"name": CLAIM}]
