"""Prove the suites can fail: each capability's scenario, run against a deliberately broken setup,
fails with a message that names the broken behaviour.

Each test runs one suite scenario in a separate pytest process against this
session's cluster, with one plugin from ``tests/sabotage`` loaded.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from kbc.components._chart import resolve_chart
from kbc.lockfile import ChartsLock
from kbc.providers import Cluster
from tests.integration.suite_runner import expect_failure

pytestmark = pytest.mark.cluster


def test_gang_fails_when_the_quota_is_far_too_high(cluster: Cluster) -> None:
    expect_failure(
        cluster,
        "suites/test_gang.py::test_two_job_gangs_one_runs_whole_the_other_waits_whole",
        sabotage="quota_far_too_high",
        because=[
            "Kueue reserved quota for it instead (Quota reserved in ClusterQueue",
            "so it was not held back as this scenario requires",
        ],
    )


def test_gpu_quota_fails_when_the_namespace_cap_is_far_too_high(cluster: Cluster) -> None:
    expect_failure(
        cluster,
        "suites/test_gpu_quota.py::test_pod_over_the_gpu_cap_is_refused_and_one_within_is_admitted",
        sabotage="gpu_quota_cap_far_too_high",
        because=[
            "the API server accepted Pod greedy, which it had to refuse (6 GPUs in a namespace capped at 4)",
            "'requests.nvidia.com/gpu': '400'",  # the quota as it really stands
        ],
    )


@pytest.fixture
def kueue_without_batch_job(tmp_path: Path, charts_lock: ChartsLock) -> Iterator[Cluster]:
    """A cluster whose Kueue has the batch/job integration turned off through a values file."""
    chart = resolve_chart(charts_lock.components["kueue"], "module").path
    values = yaml.safe_load((chart / "values.yaml").read_text())
    config = yaml.safe_load(values["managerConfig"]["controllerManagerConfigYaml"])
    frameworks = config["integrations"]["frameworks"]
    assert "batch/job" in frameworks, "the chart's default config manages Jobs"
    config["integrations"]["frameworks"] = [f for f in frameworks if f != "batch/job"]
    broken = tmp_path / "kueue-without-batch-job.yaml"
    broken.write_text(
        yaml.safe_dump({"managerConfig": {"controllerManagerConfigYaml": yaml.safe_dump(config)}})
    )
    name = f"kbc-nojob-{os.getpid()}"
    kbc = [sys.executable, "-m", "kbc.cli", "cluster"]
    up = [*kbc, "up", "--name", name, "--provider", "local", "--components", "kueue"]
    proc = subprocess.run(
        [*up, "--values", f"kueue={broken}"],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
        stdin=subprocess.DEVNULL,
    )
    try:
        assert proc.returncode == 0, proc.stderr
        kubeconfig = Path(proc.stdout.strip().splitlines()[-1].removeprefix("KUBECONFIG="))
        yield Cluster(name, "local", kubeconfig, True)
    finally:
        down = subprocess.run(
            [*kbc, "down", "--name", name, "--provider", "local"],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
            stdin=subprocess.DEVNULL,
        )
        assert down.returncode == 0, f"cluster {name} was not removed: {down.stderr}"


def test_quota_zero_fails_when_kueue_does_not_manage_jobs(kueue_without_batch_job: Cluster) -> None:
    expect_failure(
        kueue_without_batch_job,
        "suites/test_quota.py::test_quota_zero_waits_then_runs_when_quota_is_raised",
        sabotage=None,
        because=[
            "Kueue's webhook suspends a Job that names a LocalQueue",
        ],
    )
