"""``kbc verify`` on a platform whose teams submit TrainJobs, PyTorchJobs, RayJobs and LeaderWorkerSets
(``manifests/platforms/ml-jobs``: the job templates in its ``jobs/``): each team's gang is proven with each
kind it names, on the kind's operator at its pin; a platform whose Kueue does not queue a kind, or whose
objects make the API server refuse one, fails that kind's promise alone, in words that say why."""

from __future__ import annotations

import secrets
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml

from tests.integration.commands import REPO
from tests.integration.platform_runner import outcomes, verify

pytestmark = pytest.mark.cluster

ML_JOBS = REPO / "manifests" / "platforms" / "ml-jobs"
KINDS = {
    "research/train/job-kind/TrainJob",
    "research/train/job-kind/PyTorchJob",
    "inference/serve/job-kind/RayJob",
    "inference/serve/job-kind/LeaderWorkerSet",
}


def test_each_job_kind_a_team_submits_is_proven_with_a_gang_of_that_kind(tmp_path: Path) -> None:
    report = tmp_path / "report"
    done = verify(ML_JOBS, report)
    assert done.returncode == 0, done.stdout[-6000:] + done.stderr[-3000:]
    found = outcomes(report)
    assert {pid for pid, p in found.items() if p["kind"] == "job-kind"} == KINDS, sorted(found)
    assert all(p["held"] for p in found.values()), [p for p in found.values() if not p["held"]]
    for pid in KINDS:
        did, kind = found[pid]["did"], pid.rsplit("/", 1)[1]
        for words in (f"{kind} probe-", "of 16 nvidia.com/gpu admitted whole on a100", "as one Workload"):
            assert words in did, f"{pid} should say {words!r}: {did}"
        assert "one of 33 waited" in did and "with no pod placed" in did, did
    # The RayJob's gang is its 2 GPU workers, and its head runs beside them asking for nothing.
    assert "its 3 pods running" in found["inference/serve/job-kind/RayJob"]["did"]
    assert "platform ml-jobs" in done.stdout and "15 of 15 promises hold" in done.stdout, done.stdout[-3000:]


def _without_pytorchjob(platform: Path) -> None:
    frameworks = [
        "batch/job",
        "jobset.x-k8s.io/jobset",
        "trainer.kubeflow.org/trainjob",
        "ray.io/rayjob",
        "ray.io/raycluster",
        "leaderworkerset.x-k8s.io/leaderworkerset",
    ]
    config = {
        "apiVersion": "config.kueue.x-k8s.io/v1beta2",
        "kind": "Configuration",
        "integrations": {"frameworks": frameworks},
    }
    (platform / "kueue-config.yaml").write_text(yaml.safe_dump(config))


def _pytorchjobs_capped_at_zero(platform: Path) -> None:
    quota = {
        "apiVersion": "v1",
        "kind": "ResourceQuota",
        "metadata": {"name": "no-pytorchjobs", "namespace": "research"},
        "spec": {"hard": {"count/pytorchjobs.kubeflow.org": "0"}},
    }
    (platform / "teams" / "quota.yaml").write_text(yaml.safe_dump(quota))


@pytest.mark.parametrize(
    ("seed", "words"),
    [
        pytest.param(
            _without_pytorchjob,
            ["without 'kubeflow.org/pytorchjob'", "Kueue does not queue PyTorchJobs", "outside every quota"],
            id="kueue-configuration-without-its-integration",
        ),
        pytest.param(
            _pytorchjobs_capped_at_zero,
            ["the API server refused the team's PyTorchJob in namespace research", "exceeded quota"],
            id="object-count-quota-of-zero",
        ),
    ],
)
def test_a_platform_that_cannot_run_a_kind_fails_that_kind_s_promise_alone(
    tmp_path: Path, seed: Callable[[Path], None], words: list[str]
) -> None:
    platform = tmp_path / f"kinds-{secrets.token_hex(2)}"
    shutil.copytree(ML_JOBS, platform)
    seed(platform)
    report = tmp_path / "report"
    done = verify(platform, report)
    assert done.returncode == 1, done.stdout[-6000:] + done.stderr[-3000:]
    found = outcomes(report)
    failed = {pid: p["did"] for pid, p in found.items() if p["state"] != "holds"}
    assert list(failed) == ["research/train/job-kind/PyTorchJob"], failed
    said = failed["research/train/job-kind/PyTorchJob"]
    assert all(w in said for w in words), said
