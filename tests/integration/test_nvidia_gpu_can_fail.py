"""Prove the real-GPU suite can fail: without its GPU request a queued Job sees no GPU; given one, the pod
that asks for none sees it. Both need nodes whose GPUs come from a real device plugin, and skip elsewhere,
saying so (the scenarios themselves skip there too).
"""

from __future__ import annotations

import pytest

from kbc.cluster.providers import Cluster
from kbc.gpu import real_gpu_nodes
from kbc.kube import Kube
from tests.integration.suite_runner import expect_failure

pytestmark = pytest.mark.cluster

SUITE = "suites/test_nvidia_gpu.py"


@pytest.fixture
def real_gpus(kube: Kube) -> None:
    found = real_gpu_nodes(kube)
    if not found:
        pytest.skip(f"the sabotage of a real-GPU scenario needs real GPUs: {found.why_none()}")


@pytest.mark.sabotages(f"{SUITE}::test_queued_gpu_job_sees_its_gpu")
def test_seeing_a_gpu_fails_when_the_job_asks_for_none(cluster: Cluster, real_gpus: None) -> None:
    expect_failure(
        cluster,
        f"{SUITE}::test_queued_gpu_job_sees_its_gpu",
        sabotage="nvidia_gpu_request_dropped",
        because=["nvidia-smi"],
        extra=["--timeout-scale", "0.25"],
    )


@pytest.mark.sabotages(f"{SUITE}::test_only_a_pod_that_requests_a_gpu_sees_one")
def test_isolation_fails_when_every_pod_is_given_a_gpu(cluster: Cluster, real_gpus: None) -> None:
    expect_failure(
        cluster,
        f"{SUITE}::test_only_a_pod_that_requests_a_gpu_sees_one",
        sabotage="nvidia_gpu_every_pod_gets_one",
        because=["devices:"],
        extra=["--timeout-scale", "0.25"],
    )
