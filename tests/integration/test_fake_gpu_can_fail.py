"""Prove the fake_gpu suite can fail: with its product flavors pointed at the wrong GPU product, the
routing scenario fails and says the pods landed on the wrong pool, naming both products.

The scenario runs in a separate pytest process against this session's cluster with the sabotage
plugin ``tests/sabotage/fake_gpu_wrong_product.py`` loaded.
"""

from __future__ import annotations

import pytest

from kbc.cluster.providers import Cluster
from kbc.flavors import gpu_products
from kbc.kube import Kube
from tests.integration.suite_runner import expect_failure

pytestmark = pytest.mark.cluster


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
