"""The negative control's gang fits its real node: its workers ask for 100m CPU each instead of 45 % of the
node.

All three workers then run and meet at the rendezvous; the control, which shows a gang placed in part
hanging there, must fail.
"""

from __future__ import annotations

from typing import Any

from kbc.kube import Kube


def pytest_kbc_mutate_object(obj: dict[str, Any], kube: Kube) -> None:
    if obj["kind"] == "Job" and obj["metadata"]["name"] == "stuck":
        for container in obj["spec"]["template"]["spec"]["containers"]:
            container["resources"] = {"requests": {"cpu": "100m"}, "limits": {"cpu": "100m"}}
