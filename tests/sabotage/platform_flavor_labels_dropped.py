"""The twin's ResourceFlavors lose their nodeLabels (``kbc verify`` only; the platform's files keep them).

Kueue then injects no node selector into what it admits on a flavor, and the pods of a gang admitted on
``h100`` may land on any GPU node. The flavor promise, which observes where Kueue placed the pods and what
it injected, must fail; a probe that selected the flavor's nodes itself would have passed.
"""

from __future__ import annotations

from typing import Any

from kbc.kube import Kube


def pytest_kbc_mutate_object(obj: dict[str, Any], kube: Kube) -> None:
    if obj["kind"] == "ResourceFlavor":
        obj["spec"].pop("nodeLabels", None)
