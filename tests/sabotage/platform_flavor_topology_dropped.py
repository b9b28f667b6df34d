"""The twin's ResourceFlavors lose their topologyName (``kbc verify`` only; the platform's files keep it).

Kueue then has no topology to place a gang in: the topology promise's gang that requires one rack cannot
be placed by rack, and the larger one that no rack holds is admitted by quota alone; the promise must
fail.
"""

from __future__ import annotations

from typing import Any

from kbc.kube import Kube


def pytest_kbc_mutate_object(obj: dict[str, Any], kube: Kube) -> None:
    if obj["kind"] == "ResourceFlavor":
        obj["spec"].pop("topologyName", None)
