"""Every plain pod of a Kueue pod group declares the group complete at two pods (its total annotation says 2).

The scenario's incomplete group of 2 out of 3 is then a whole group to Kueue, which admits it at once:
"the incomplete group stays gated" must fail.
"""

from __future__ import annotations

from typing import Any

from kbc.kube import Kube
from kbc.kueue.labels import POD_GROUP_TOTAL_ANNOTATION


def pytest_kbc_mutate_object(obj: dict[str, Any], kube: Kube) -> None:
    annotations = obj["metadata"].get("annotations") or {}
    if obj["kind"] == "Pod" and POD_GROUP_TOTAL_ANNOTATION in annotations:
        annotations[POD_GROUP_TOTAL_ANNOTATION] = "2"
