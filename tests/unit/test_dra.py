"""``kbc.dra`` without a cluster: the API server's DRA version named when it is missing, the devices read
off ResourceSlices and told apart (the harness's, a driver's on a kwok node, a driver's that prepares them),
a claim's allocation, and what a container says it was given."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, cast

import pytest

from kbc import apis
from kbc.dra import devices, devices_seen, prepared_by_a_driver, quota_key, results, serves_dra
from kbc.kube import Kube
from kbc.labels import DRA_CLASS, DRA_DRIVER, HARNESS_SLICE_LABEL, KWOK_ANNOTATION


class _Cluster:
    """Answers the reads these functions make."""

    def __init__(
        self, served: list[str], slices: Sequence[dict[str, Any]] = (), nodes: Sequence[dict[str, Any]] = ()
    ) -> None:
        self.served, self.objects = served, {apis.RESOURCE_SLICE: list(slices), apis.NODE: list(nodes)}

    def served_versions(self, group: str) -> list[str]:
        assert group == apis.DRA_GROUP
        return self.served

    def list(self, kind: apis.Kind, **_: Any) -> list[dict[str, Any]]:
        return self.objects[kind]


def cluster(
    served: list[str], slices: Sequence[dict[str, Any]] = (), nodes: Sequence[dict[str, Any]] = ()
) -> Kube:
    return cast(Kube, _Cluster(served, slices, nodes))


def piece(node: str, *names: str, harness: bool = False, driver: str = DRA_DRIVER) -> dict[str, Any]:
    labels = {HARNESS_SLICE_LABEL[0]: HARNESS_SLICE_LABEL[1]} if harness else {}
    return {
        "metadata": {"name": f"{node}-slice", "labels": labels},
        "spec": {
            "driver": driver,
            "nodeName": node,
            "pool": {"name": node},
            "devices": [{"name": n, "attributes": {"productName": {"string": "H100"}}} for n in names],
        },
    }


@pytest.mark.parametrize(
    ("served", "said"),
    [
        ([], f"it serves no {apis.DRA_GROUP} API"),
        (["v1beta1", "v1beta2"], f"it serves {apis.DRA_GROUP} v1beta1, v1beta2"),
    ],
)
def test_a_cluster_without_the_ga_dra_api_is_told_what_it_serves_and_what_is_needed(
    served: list[str], said: str
) -> None:
    why = serves_dra(cluster(served))
    assert why is not None and f"does not serve {apis.DRA_GROUP}/v1 ({said})" in why, why
    assert "GA from Kubernetes 1.34" in why
    assert serves_dra(cluster(["v1", "v1beta2"])) is None


def test_devices_are_read_per_driver_and_only_a_drivers_on_a_real_node_count_as_prepared() -> None:
    kwok = {"metadata": {"name": "kwok-1", "annotations": {KWOK_ANNOTATION[0]: KWOK_ANNOTATION[1]}}}
    offered = cluster(
        ["v1"],
        slices=[
            piece("kwok-1", "gpu-0", "gpu-1", harness=True),
            piece("kwok-1", "gpu-2"),
            piece("worker", "gpu-0"),
            piece("worker", "nic-0", driver="net.example.com"),
        ],
        nodes=[kwok, {"metadata": {"name": "worker"}}],
    )
    found = devices(offered, DRA_DRIVER)
    assert [(d.node, d.name, d.by_harness) for d in found] == [
        ("kwok-1", "gpu-0", True),
        ("kwok-1", "gpu-1", True),
        ("kwok-1", "gpu-2", False),
        ("worker", "gpu-0", False),
    ]
    assert found[0].attribute("productName") == "H100" and found[0].attribute("memory") is None
    assert len(devices(offered)) == 5
    prepared = prepared_by_a_driver(offered, found)
    assert [(d.node, d.name) for d in prepared] == [("worker", "gpu-0")]


def test_a_claims_allocation_and_its_quota_key() -> None:
    allocated = {"status": {"allocation": {"devices": {"results": [{"device": "gpu-3", "pool": "n1"}]}}}}
    assert results(allocated) == [{"device": "gpu-3", "pool": "n1"}]
    assert results({"status": {}}) == results(None) == []
    assert quota_key() == f"{DRA_CLASS}.deviceclass.resource.k8s.io/devices"


def test_what_a_container_saw_pairs_each_device_with_its_claim() -> None:
    seen = devices_seen(
        "GPU_DEVICE_0=gpu-3\nGPU_DEVICE_0_RESOURCE_CLAIM=uid-1\nsomething else\nGPU_DEVICE_1=gpu-4\n"
    )
    assert seen.devices == {"GPU_DEVICE_0": "gpu-3", "GPU_DEVICE_1": "gpu-4"}
    assert seen.claims == {"GPU_DEVICE_0": "uid-1"}
