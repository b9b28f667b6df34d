"""Every Job loses its Kueue queue-name label: Kueue does not manage it, and nothing holds it back.

A Job naming a LocalQueue that does not exist must wait suspended, saying why; without the label its
webhook does not suspend it and its pods run, so the scenario must fail.
"""

from __future__ import annotations

from typing import Any

from kbc.kube import Kube
from kbc.kueue.labels import QUEUE_LABEL


def pytest_kbc_mutate_object(obj: dict[str, Any], kube: Kube) -> None:
    if obj["kind"] == "Job":
        (obj["metadata"].get("labels") or {}).pop(QUEUE_LABEL, None)
