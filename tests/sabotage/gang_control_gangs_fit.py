"""The negative control's two gangs ask for no GPU (the Jobs gang-a and gang-b: their GPU requests and limits
are dropped).

Both gangs then fit on the node whole, and nothing is deadlocked: the control, which shows the default
scheduler leaving two contending gangs partially placed, must fail.
"""

from __future__ import annotations

from typing import Any

from kbc.kube import Kube
from kbc.labels import GPU


def pytest_kbc_mutate_object(obj: dict[str, Any], kube: Kube) -> None:
    if obj["kind"] != "Job" or obj["metadata"]["name"] not in ("gang-a", "gang-b"):
        return
    for container in obj["spec"]["template"]["spec"]["containers"]:
        for part in ("requests", "limits"):
            (container.get("resources") or {}).get(part, {}).pop(GPU, None)
