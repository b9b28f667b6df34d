"""An upgrade that installs Kueue's configuration without the ``kubeflow.org/pytorchjob`` integration, as
an upgrade with Kueue's default values does (they leave it commented out).

Kueue's new configuration then no longer manages PyTorchJobs: the canary's new PyTorchJob on an old
LocalQueue gets no Workload, and the canary must fail naming the integration.
"""

from __future__ import annotations

from typing import Any

from kbc.components.trainingoperator import PYTORCHJOB_INTEGRATION
from kbc.configuration import parse_config, render_config
from kbc.kube import Kube

DROPPED = PYTORCHJOB_INTEGRATION.patch["integrations"]["frameworks"][0]


def pytest_kbc_upgrade_objects(
    component: str, objects: list[dict[str, Any]], kube: Kube
) -> list[dict[str, Any]] | None:
    if component != "kueue":
        return None
    dropped = 0
    for obj in objects:
        if obj.get("kind") != "ConfigMap":
            continue
        for key, text in (obj.get("data") or {}).items():
            if not key.endswith(".yaml") or DROPPED not in text:
                continue
            config = parse_config("kueue", text)
            frameworks = config["integrations"]["frameworks"]
            config["integrations"]["frameworks"] = [f for f in frameworks if f != DROPPED]
            obj["data"][key] = render_config("kueue", config)
            dropped += 1
    assert dropped, f"no ConfigMap of Kueue's new chart names {DROPPED}; this sabotage needs one"
    return objects
