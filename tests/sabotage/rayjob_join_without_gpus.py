"""The workers of the RayJob that forms its cluster (``joins``) advertise no GPU to Ray (``num-gpus: "0"``
in their ``rayStartParams``, over what KubeRay derives from their pods' GPU limits).

Every worker still joins the head, but Ray has no GPU to place the job's GPU tasks on: its placement group
never becomes ready, the job never ends, and the scenario that proves KubeRay's wiring (on kind, where
pods run Ray) must fail. Loaded by ``tests/integration/test_kind.py``.
"""

from __future__ import annotations

from typing import Any

from kbc.kube import Kube


def pytest_kbc_mutate_object(obj: dict[str, Any], kube: Kube) -> None:
    if obj["kind"] == "RayJob" and obj["metadata"]["name"] == "joins":
        for group in obj["spec"]["rayClusterSpec"]["workerGroupSpecs"]:
            group["rayStartParams"]["num-gpus"] = "0"
