"""Every namespace GPU cap the scenario sets is 100 times what it asks for.

The "a pod over the cap is refused" scenario then sees its over-cap pod accepted
and must fail saying so, with the quota as it really stands.
"""

from __future__ import annotations

from typing import Any

from kbc.kube import Kube


def pytest_kbc_mutate_object(obj: dict[str, Any], kube: Kube) -> None:
    if obj["kind"] != "ResourceQuota":
        return
    hard = obj["spec"]["hard"]
    for key, value in hard.items():
        if key.endswith("nvidia.com/gpu"):
            hard[key] = str(int(value) * 100)
