"""The ResourceFlavors the scenario makes lose their tolerations (as ``trainjob_flavor_without_toleration``
does for the TrainJob's).

Kueue then gives the RayJob's head and workers the flavor's nodeSelector but no toleration of the GPU
taint, so "the flavor's toleration reaches every pod" cannot hold: the scenario must fail and say the
workers' pods lack it.
"""

from __future__ import annotations

from tests.sabotage import Expect
from tests.sabotage.trainjob_flavor_without_toleration import pytest_kbc_mutate_object

__all__ = ["EXPECT", "pytest_kbc_mutate_object"]

EXPECT = Expect(
    scenario="suites/test_rayjob.py::test_a_flavor_s_node_labels_and_toleration_reach_every_pod_of_a_rayjob",
    because=(
        "AssertionError",
        "Kueue should give the workers' pods the flavor's toleration of nvidia.com/gpu",
    ),
)
