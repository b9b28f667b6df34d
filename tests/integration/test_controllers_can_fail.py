"""Prove the controller suite can fail: with every invalid object made valid on its way, each webhook
scenario fails saying the API server accepted what the webhook had to refuse; with the restarted Kueue's
Workloads lost, the restart scenario fails saying what changed.

Each test runs one scenario of ``suites/test_controllers.py`` in a separate pytest process against this
session's cluster, with one ``tests/sabotage/controller_*`` plugin loaded.
"""

from __future__ import annotations

import pytest

from kbc.cluster.providers import Cluster
from tests.integration.suite_runner import expect_failure

pytestmark = pytest.mark.cluster

SUITE = "suites/test_controllers.py"
WEBHOOKS = {
    "test_kueue_webhook_refuses_a_lending_limit_above_the_nominal_quota": (
        "the API server accepted ClusterQueue overlends-",
        "vclusterqueue.kb.io",
    ),
    "test_jobset_webhook_refuses_a_success_policy_naming_no_replicated_job": (
        "the API server accepted JobSet targets-ghosts",
        "validate-jobset-x-k8s-io-v1alpha2-jobset.x-k8s.io",
    ),
    "test_volcano_webhook_refuses_min_available_above_the_replicas": (
        "the API server accepted Job more-than-whole",
        "validatejob.volcano.sh",
    ),
    "test_trainer_webhook_refuses_a_trainjob_that_sets_torchrun_s_own_variables": (
        "the API server accepted TrainJob sets-pet-nnodes",
        "validator.trainjob.trainer.kubeflow.org",
    ),
}


@pytest.mark.sabotages(*(f"{SUITE}::{name}" for name in WEBHOOKS))
@pytest.mark.parametrize("scenario", list(WEBHOOKS))
def test_a_webhook_refusal_fails_when_the_invalid_object_is_made_valid(
    cluster: Cluster, scenario: str
) -> None:
    accepted, webhook = WEBHOOKS[scenario]
    expect_failure(
        cluster,
        f"{SUITE}::{scenario}",
        sabotage="controller_objects_made_valid",
        because=["kbc.errors.NotRefused", accepted, f"which webhook {webhook} had to refuse"],
    )


@pytest.mark.sabotages(f"{SUITE}::test_a_killed_kueue_comes_back_and_reconciles_what_waits_with_nothing_lost")
def test_the_restart_fails_when_the_restarted_kueue_has_lost_its_workloads(cluster: Cluster) -> None:
    expect_failure(
        cluster,
        f"{SUITE}::test_a_killed_kueue_comes_back_and_reconciles_what_waits_with_nothing_lost",
        sabotage="controller_restart_loses_workloads",
        because=["Workloads changed across the restart"],
    )
