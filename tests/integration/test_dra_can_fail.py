"""Prove the DRA suite can fail: each scenario, run with one ``tests/sabotage/dra_*`` plugin (or the quota
one) in a separate pytest process against this session's cluster, fails and says why.

One scenario is not here: ``test_a_driver_prepares_the_allocated_device_and_the_pod_sees_it`` passes only
where a DRA driver's kubelet plugin prepares the devices, and skips on the local cluster this module runs
on. Its two sabotages (``dra_claim_kept_from_the_container``, ``dra_every_pod_claims_a_device``) run on kind
in ``tests/integration/test_kind.py`` (``test_the_dra_driver_scenario_fails_with_each_sabotage_on_kind``),
which ``make test`` runs.
"""

from __future__ import annotations

import pytest

from kbc import apis
from kbc.cluster.providers import Cluster
from kbc.kube import connect
from kbc.labels import DRA_CLASS
from tests.integration.suite_runner import expect_failure, run_scenario

pytestmark = pytest.mark.cluster

SUITE = "suites/test_dra.py"
SHORTER_WAITS = ["--timeout-scale", "0.25"]
CASES = {
    "test_a_claim_is_allocated_a_device_that_a_node_offers": (
        "dra_claims_ask_too_many",
        ["kbc.errors.WaitGaveUp", "cannot be placed", "cannot allocate all claims"],
    ),
    "test_a_claim_no_node_can_satisfy_leaves_its_pod_unschedulable": (
        "dra_claims_ask_one",
        ["kbc.errors.WaitGaveUp", "the scheduler bound it", "its claims were allocated"],
    ),
    "test_a_cel_selector_routes_a_claim_to_one_product": (
        "dra_selector_points_at_another_product",
        ["AssertionError", "for a claim of NVIDIA-A100-SXM4-80GB"],
    ),
    "test_a_selector_no_device_matches_leaves_the_pod_unschedulable": (
        "dra_selectors_dropped",
        [
            "kbc.errors.WaitGaveUp",
            "no device has productName NVIDIA-B200-does-not-exist",
            "the scheduler bound it",
        ],
    ),
    "test_a_device_class_quota_refuses_a_claim_beyond_it": (
        "dra_device_quota_far_too_high",
        ["kbc.errors.NotRefused", "the API server accepted ResourceClaim three (3 devices)"],
    ),
    "test_a_quota_on_another_device_class_caps_nothing": (
        "dra_device_quota_on_this_class",
        ["kbc.errors.Refused", "although the namespace caps only other.example.com", "exceeded quota"],
    ),
    "test_kueue_admits_a_claim_gang_whole_within_its_dra_quota_and_the_next_waits_whole": (
        "quota_far_too_high",
        ["kbc.errors.WaitGaveUp", "Workload job-gang-b-", "Kueue reserved quota for it instead"],
    ),
    "test_a_quota_zero_dra_cluster_queue_holds_its_workload": (
        "dra_quota_given",
        ["kbc.errors.WaitGaveUp", "Workload job-waits-", "Kueue reserved quota for it instead"],
    ),
    "test_kueue_holds_a_workload_whose_device_class_it_cannot_map": (
        "dra_device_class_mapped",
        ["kbc.errors.WaitGaveUp", "Workload job-unmapped-", "Kueue reserved quota for it instead"],
    ),
}


@pytest.mark.sabotages(*(f"{SUITE}::{name}" for name in CASES))
@pytest.mark.parametrize("scenario", list(CASES))
def test_each_dra_scenario_fails_with_its_sabotage(cluster: Cluster, scenario: str) -> None:
    sabotage, because = CASES[scenario]
    expect_failure(cluster, f"{SUITE}::{scenario}", sabotage=sabotage, because=because, extra=SHORTER_WAITS)


def test_a_cluster_without_the_device_class_is_named_not_waited_out(cluster: Cluster) -> None:
    """The devices are there, the DeviceClass every claim names is not: the scenario is broken at once,
    naming the class and how to make it, instead of each claim waiting out its deadline."""
    with connect(cluster.kubeconfig) as kube:
        kept = kube.get(apis.DEVICE_CLASS, DRA_CLASS)
        kube.delete(apis.DEVICE_CLASS, DRA_CLASS)
        try:
            run = run_scenario(
                cluster, f"{SUITE}::test_a_claim_is_allocated_a_device_that_a_node_offers", sabotage=None
            )
        finally:
            kept["metadata"] = {"name": DRA_CLASS, "labels": kept["metadata"].get("labels") or {}}
            kept.pop("status", None)
            kube.create(kept)
    assert run.outcomes == {"passed": 0, "failed": 0, "errors": 1, "skipped": 0}, run.explain()
    (error,) = run.failures
    for words in ("kbc.errors.ClusterError", f"has no DeviceClass {DRA_CLASS}", "install the driver's chart"):
        assert words in error, error
