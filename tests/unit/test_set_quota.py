"""set_quota edits a ClusterQueue as a platform team does, and reads it again when Kueue's status write made
the version it read stale (409 Conflict)."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from kbc.errors import KubeApiError
from kbc.kueue.queues import set_quota

CQ = {
    "apiVersion": "kueue.x-k8s.io/v1beta2",
    "kind": "ClusterQueue",
    "metadata": {"name": "team"},
    "spec": {
        "resourceGroups": [
            {"flavors": [{"name": "a100", "resources": [{"name": "gpu", "nominalQuota": "2"}]}]}
        ]
    },
}


class FakeKube:
    """Answers get with the ClusterQueue, and replace with a 409 for each of *conflicts* first."""

    def __init__(self, conflicts: int) -> None:
        self.conflicts = conflicts
        self.replaced: list[dict[str, Any]] = []

    def get(self, kind: object, name: str) -> dict[str, Any]:
        return copy.deepcopy(CQ)

    def replace(self, obj: dict[str, Any]) -> dict[str, Any]:
        if self.conflicts:
            self.conflicts -= 1
            raise KubeApiError(
                "replace", "ClusterQueue team", 409, "Conflict", "the object has been modified"
            )
        self.replaced.append(obj)
        return obj


def quota_of(cq: dict[str, Any]) -> str:
    return str(cq["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0]["nominalQuota"])


def test_a_conflict_reads_the_queue_again_and_changes_it() -> None:
    kube = FakeKube(conflicts=2)
    replaced = set_quota(kube, "team", "a100", "gpu", nominal="4")  # type: ignore[arg-type]
    assert quota_of(replaced) == "4"
    assert len(kube.replaced) == 1


def test_conflicts_that_do_not_end_are_the_error() -> None:
    with pytest.raises(KubeApiError) as raised:
        set_quota(FakeKube(conflicts=100), "team", "a100", "gpu", nominal="4")  # type: ignore[arg-type]
    assert raised.value.status == 409


def test_a_quota_the_queue_lacks_is_named() -> None:
    with pytest.raises(ValueError, match="no quota of cpu in flavor a100"):
        set_quota(FakeKube(conflicts=0), "team", "a100", "cpu", nominal="4")  # type: ignore[arg-type]
