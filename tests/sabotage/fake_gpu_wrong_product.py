"""Every GPU product flavor the suites make selects another product than the one asked for.

This is the misconfiguration a product flavor exists to prevent: a flavor named for one GPU pool whose
nodeLabels point at another. Kueue admits as asked and injects the (wrong) labels, the scheduler obeys
them, and the pods run on the other pool; the routing scenario must fail and name both products.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import pytest

import kbc.flavors
from kbc.gpu import PRODUCT_LABEL


def pytest_configure(config: pytest.Config) -> None:
    original = kbc.flavors.make_gpu_queues

    def misrouted(
        client: Any,
        namespace: str,
        suffix: str,
        flavors: Sequence[kbc.flavors.FlavorSpec],
        *a: Any,
        **kw: Any,
    ) -> Iterator[Any]:
        products = [p.product for p in kbc.flavors.gpu_products(client)]
        swapped = []
        for spec in flavors:
            asked = spec.node_labels.get(PRODUCT_LABEL)
            others = [p for p in products if p != asked]
            if asked is not None and others:
                labels = {**spec.node_labels, PRODUCT_LABEL: others[0]}
                swapped.append(kbc.flavors.FlavorSpec(spec.key, labels, spec.quotas))
            else:
                swapped.append(spec)
        return original(client, namespace, suffix, swapped, *a, **kw)

    kbc.flavors.make_gpu_queues = misrouted
