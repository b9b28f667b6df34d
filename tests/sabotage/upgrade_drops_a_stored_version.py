"""A new release that stops serving a version objects are still stored at.

Just before Kueue's new chart is applied, the Workload CRD records that objects were once
stored at the version it serves besides its storage version (as an older release whose storage
version that was would have left it in status.storedVersions), and the new chart stops serving
that version. The canary must fail and name the CRD and the version.
"""

from __future__ import annotations

from typing import Any

from kbc import apis
from kbc.kube import Kube

CRD = "workloads.kueue.x-k8s.io"


def pytest_kbc_upgrade_objects(
    component: str, objects: list[dict[str, Any]], kube: Kube
) -> list[dict[str, Any]] | None:
    if component != "kueue":
        return None
    for obj in objects:
        if obj.get("kind") != "CustomResourceDefinition" or obj["metadata"]["name"] != CRD:
            continue
        older = [v for v in obj["spec"]["versions"] if not v.get("storage")]
        assert older, f"{CRD} serves only its storage version; this sabotage needs a second one"
        dropped = older[0]["name"]
        installed = kube.get(apis.CUSTOM_RESOURCE_DEFINITION, CRD)
        stored = sorted({*(installed.get("status") or {}).get("storedVersions", []), dropped})
        kube.patch(
            apis.CUSTOM_RESOURCE_DEFINITION,
            CRD,
            {"status": {"storedVersions": stored}},
            subresource="status",
        )
        older[0]["served"] = False
    return objects
