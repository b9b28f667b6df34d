"""Prove the real-node suite can fail: with the gang outgrowing its node while Kueue admits it by quota,
the gang never meets and the scenario fails; with the negative control's gang fitting its node, the
control fails.

Each test runs one scenario of ``suites/test_real_nodes.py`` in a separate pytest process against this
session's cluster (which needs a real node: ``make test`` starts one), with one
``tests/sabotage/real_node_*`` plugin loaded.
"""

from __future__ import annotations

import pytest

from kbc import apis
from kbc.cluster.providers import Cluster
from kbc.kube import Kube
from kbc.labels import REAL_NODE_LABEL
from tests.integration.suite_runner import expect_failure

pytestmark = pytest.mark.cluster

SUITE = "suites/test_real_nodes.py"


@pytest.fixture
def real_node(kube: Kube) -> None:
    if not kube.list(apis.NODE, labels={REAL_NODE_LABEL: "true"}):
        pytest.skip("no real node in this cluster: start one with --real-nodes 1 (make test does)")


@pytest.mark.sabotages(f"{SUITE}::test_a_gang_admitted_whole_meets_and_completes")
def test_the_real_gang_fails_when_it_outgrows_its_node(cluster: Cluster, real_node: None) -> None:
    expect_failure(
        cluster,
        f"{SUITE}::test_a_gang_admitted_whole_meets_and_completes",
        sabotage="real_node_gang_overcommitted",
        because=["kbc.errors.WaitTimeout", "Job meet"],
        extra=["--timeout-scale", "0.25"],
    )


@pytest.mark.sabotages(f"{SUITE}::test_without_kueue_a_partly_placed_gang_hangs_at_its_rendezvous")
def test_the_hang_control_fails_when_the_gang_fits_its_node(cluster: Cluster, real_node: None) -> None:
    expect_failure(
        cluster,
        f"{SUITE}::test_without_kueue_a_partly_placed_gang_hangs_at_its_rendezvous",
        sabotage="real_node_gang_fits",
        because=["two workers of the gang running and the third unplaced"],
        extra=["--timeout-scale", "0.25"],
    )
