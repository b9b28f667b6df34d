"""The ResourceFlavors the scenario makes lose their tolerations.

Kueue's runtime patch then gives the TrainJob's pods the flavor's nodeSelector but no toleration of the
GPU taint, so "the flavor's toleration reaches every pod" cannot hold: the scenario must fail and say the
patch lacks the toleration.
"""

from __future__ import annotations

from typing import Any

from kbc.kube import Kube
from tests.sabotage import Expect


def pytest_kbc_mutate_object(obj: dict[str, Any], kube: Kube) -> None:
    if obj["kind"] == "ResourceFlavor":
        (obj.get("spec") or {}).pop("tolerations", None)


EXPECT = Expect(
    scenario=(
        "suites/test_trainjob.py::"
        "test_a_flavor_s_node_labels_and_toleration_reach_every_pod_through_kueue_s_runtime_patch"
    ),
    because=(
        "AssertionError",
        "Kueue's runtime patch should carry the flavor's toleration of nvidia.com/gpu",
    ),
)
