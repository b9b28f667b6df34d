"""Prove the fake_gpu suite can fail: each scenario, run with one ``tests/sabotage/fake_gpu_*`` plugin
loaded in a separate pytest process against this session's cluster, fails and says why (with its product
flavors pointed at the wrong GPU product, the routing scenario says the pods landed on the wrong pool,
naming both products).
"""

from __future__ import annotations

import pytest

from kbc.cluster.providers import Cluster
from kbc.flavors import gpu_products
from kbc.kube import Kube
from tests.integration.suite_runner import expect_failure

pytestmark = pytest.mark.cluster


@pytest.mark.sabotages("suites/test_fake_gpu.py::test_product_flavor_routes_a_job_to_its_pool")
def test_product_routing_fails_when_flavors_point_at_the_wrong_product(cluster: Cluster, kube: Kube) -> None:
    products = [p.product for p in gpu_products(kube)]
    assert len(products) >= 2, f"the sabotage swaps one GPU product for another; this cluster has {products}"
    asked, given = products[0], products[1]
    expect_failure(
        cluster,
        "suites/test_fake_gpu.py::test_product_flavor_routes_a_job_to_its_pool",
        sabotage="fake_gpu_wrong_product",
        because=[
            "kbc.errors.WrongPool",
            "pods of Job routed landed on the wrong pool",
            f"expected nvidia.com/gpu.product={asked}, got {given}",
        ],
    )


SUITE = "suites/test_fake_gpu.py"
SHORTER_WAITS = ["--timeout-scale", "0.25"]


@pytest.mark.sabotages(f"{SUITE}::test_gpu_pods_land_only_on_gpu_nodes")
def test_gpu_placement_fails_when_gpu_pods_are_bound_to_a_cpu_node(cluster: Cluster) -> None:
    expect_failure(
        cluster,
        f"{SUITE}::test_gpu_pods_land_only_on_gpu_nodes",
        sabotage="fake_gpu_pods_bound_to_a_cpu_node",
        because=["kbc.errors.WaitGaveUp", "GPU pods were bound to nodes without allocatable nvidia.com/gpu"],
    )


@pytest.mark.sabotages(f"{SUITE}::test_pod_asking_more_gpus_than_any_node_has_stays_unschedulable")
def test_unschedulable_fails_when_the_request_is_shrunk_to_one_gpu(cluster: Cluster) -> None:
    expect_failure(
        cluster,
        f"{SUITE}::test_pod_asking_more_gpus_than_any_node_has_stays_unschedulable",
        sabotage="fake_gpu_request_shrunk",
        because=["kbc.errors.WaitGaveUp", "the scheduler bound it (greedy on"],
        extra=SHORTER_WAITS,
    )


@pytest.mark.sabotages(f"{SUITE}::test_gpu_pod_without_the_toleration_is_refused_by_the_taint")
def test_the_taint_fails_to_refuse_a_pod_that_tolerates_everything(cluster: Cluster) -> None:
    expect_failure(
        cluster,
        f"{SUITE}::test_gpu_pod_without_the_toleration_is_refused_by_the_taint",
        sabotage="fake_gpu_tolerate_everything",
        because=["kbc.errors.WaitGaveUp", "the scheduler bound it (untolerated on"],
        extra=SHORTER_WAITS,
    )


@pytest.mark.sabotages(f"{SUITE}::test_second_flavor_takes_a_job_when_the_first_is_full")
def test_flavor_fallback_fails_when_there_is_no_second_flavor(cluster: Cluster) -> None:
    expect_failure(
        cluster,
        f"{SUITE}::test_second_flavor_takes_a_job_when_the_first_is_full",
        sabotage="fake_gpu_no_second_flavor",
        because=["kbc.errors.WaitTimeout", "waiting for Workload job-falls-back-", "to be admitted"],
        extra=SHORTER_WAITS,
    )


@pytest.mark.sabotages(f"{SUITE}::test_flavor_matching_no_node_admits_by_quota_and_its_pods_never_schedule")
def test_the_phantom_flavor_fails_when_it_points_at_real_nodes(cluster: Cluster) -> None:
    expect_failure(
        cluster,
        f"{SUITE}::test_flavor_matching_no_node_admits_by_quota_and_its_pods_never_schedule",
        sabotage="fake_gpu_phantom_flavor_points_at_a_product",
        because=[
            "kbc.errors.WaitGaveUp",
            "didn't match Pod's node affinity/selector",
            "the scheduler bound it",
        ],
        extra=SHORTER_WAITS,
    )
