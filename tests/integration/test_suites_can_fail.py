"""Prove the suites can fail: each capability's scenario, run against a deliberately broken setup,
fails with a message that names the broken behaviour.

Each test runs one suite scenario in a separate pytest process against this
session's cluster, with one plugin from ``tests/sabotage`` loaded.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from kbc.cluster.charts.config import running_config
from kbc.cluster.providers import Cluster, get_provider
from kbc.kube import connect
from kbc.kueue.settings import without_integration
from kbc.supply.pins import ChartsLock
from tests.integration.suite_runner import expect_failure

pytestmark = pytest.mark.cluster


@pytest.mark.sabotages("suites/test_gang.py::test_two_job_gangs_one_runs_whole_the_other_waits_whole")
def test_gang_fails_when_the_quota_is_far_too_high(
    cluster: Cluster, charts_lock: ChartsLock, tmp_path: Path
) -> None:
    allure_dir, report_dir, junit = tmp_path / "allure", tmp_path / "reports", tmp_path / "junit.xml"
    # A test image replaced with --image is named wherever the run is reported (the gang suite runs no
    # such image: only the reporting is under test here).
    pinned_cuda = charts_lock.test_images["cuda"].ref
    mirrored_cuda = "registry.example/mirror/cuda:override"
    run = expect_failure(
        cluster,
        "suites/test_gang.py::test_two_job_gangs_one_runs_whole_the_other_waits_whole",
        sabotage="quota_far_too_high",
        because=[
            "kbc.errors.WaitGaveUp",
            "Kueue reserved quota for it instead (Quota reserved in ClusterQueue",
            "so it was not held back as this scenario requires",
        ],
        extra=[
            "--alluredir",
            str(allure_dir),
            "--report-dir",
            str(report_dir),
            "--image",
            f"cuda={mirrored_cuda}",
        ],
        junit=junit,
    )
    # Under the failure on the terminal: the condition timeline, with the second gang's Workload admitted.
    for text in (
        "Captured condition timeline",
        "condition QuotaReserved=True QuotaReserved, condition Admitted=True Admitted",
        "kbatch-conformance summary",
        "Wait gave up (the opposite outcome appeared): gave up waiting for Workload",
        f"test image cuda: {mirrored_cuda} (--image; the lock pins {pinned_cuda})",
    ):
        assert text in run.output, f"{text!r} is not in the inner run's output:\n{run.explain()}"
    # The report of that failure carries its evidence (this also tests the report plugins).
    (result,) = [json.loads(p.read_text()) for p in allure_dir.glob("*-result.json")]
    assert result["status"] == "failed", "a wait that gave up is a failed scenario, not a broken one"
    categories = json.loads((allure_dir / "categories.json").read_text())
    gave_up = next(c for c in categories if c["name"].startswith("Wait gave up"))
    assert re.match(gave_up["messageRegex"], result["statusDetails"]["message"]), (
        gave_up,
        result["statusDetails"],
    )
    labels = {(label["name"], label["value"]) for label in result["labels"]}
    assert {("epic", "Kueue"), ("feature", "gang")} <= labels, labels
    attachments = {a["name"]: allure_dir / a["source"] for a in result["attachments"]}
    for name in ("condition timeline", "objects", "events", "admission latency"):
        assert name in attachments, f"no {name!r} attachment: {sorted(attachments)}"
    assert "log: kueue-controller-manager (since the test began)" in attachments, sorted(attachments)
    assert "kind: Workload" in attachments["objects"].read_text()
    assert "kind: ClusterQueue" in attachments["objects"].read_text(), "the cluster-scoped objects it made"
    assert "Job gang-a (Workload job-gang-a-" in attachments["admission latency"].read_text()
    environment = (allure_dir / "environment.properties").read_text()
    for key in (
        "provider=local",
        "kubernetes.server=v",
        "kueue.appVersion=v",
        "volcano.chart=",
        f"testImage.cuda={mirrored_cuda}\n",
        f"testImage.cuda.pinned={pinned_cuda}\n",
    ):
        assert key in environment, environment
    summary_md = (report_dir / "summary.md").read_text()
    assert f"- Test image cuda: {mirrored_cuda} (--image; the lock pins {pinned_cuda})" in summary_md, (
        summary_md
    )
    summary = json.loads((report_dir / "summary.json").read_text())
    (row,) = summary["scenarios"]
    assert (row["outcome"], row["category"]) == ("failed", gave_up["name"]), row
    assert "gave up waiting for Workload" in row["reason"], row
    assert row["latencies"]["Job gang-a"] is not None, row
    assert "admission_latency_s[Job gang-a]" in junit.read_text()


@pytest.mark.sabotages(
    "suites/test_gpu_quota.py::test_pod_over_the_gpu_cap_is_refused_and_one_within_is_admitted"
)
def test_gpu_quota_fails_when_the_namespace_cap_is_far_too_high(cluster: Cluster) -> None:
    expect_failure(
        cluster,
        "suites/test_gpu_quota.py::test_pod_over_the_gpu_cap_is_refused_and_one_within_is_admitted",
        sabotage="gpu_quota_cap_far_too_high",
        because=[
            "kbc.errors.NotRefused",
            "the API server accepted Pod greedy, which it had to refuse (6 GPUs in a namespace capped at 4)",
            "'requests.nvidia.com/gpu': '400'",  # the quota as it really stands
        ],
    )


@pytest.fixture
def kueue_without_batch_job(charts_lock: ChartsLock) -> Iterator[Cluster]:
    """A cluster whose Kueue does not manage Jobs: the batch/job integration taken out of the chart's own
    configuration through the configuration seam (every other framework kept)."""
    name = f"kbc-nojob-{os.getpid()}"
    provider = get_provider("local", charts_lock)
    try:
        made = provider.up(name, components=("kueue",), config=[without_integration("batch/job")])
        with connect(made.kubeconfig) as kube:
            running = running_config(kube, "kueue", charts_lock.components["kueue"].namespace) or {}
        frameworks = (running.get("integrations") or {}).get("frameworks") or []
        assert "batch/job" not in frameworks and "pod" in frameworks, frameworks
        yield made
    finally:
        provider.down(name)


@pytest.mark.sabotages("suites/test_quota.py::test_quota_zero_waits_then_runs_when_quota_is_raised")
def test_quota_zero_fails_when_kueue_does_not_manage_jobs(kueue_without_batch_job: Cluster) -> None:
    expect_failure(
        kueue_without_batch_job,
        "suites/test_quota.py::test_quota_zero_waits_then_runs_when_quota_is_raised",
        sabotage=None,
        because=[
            "Kueue's webhook suspends a Job that names a LocalQueue",
        ],
    )


@pytest.mark.sabotages("suites/test_gang.py::test_jobset_is_admitted_whole_and_a_second_one_waits_whole")
def test_jobset_gang_fails_when_the_quota_is_far_too_high(cluster: Cluster) -> None:
    expect_failure(
        cluster,
        "suites/test_gang.py::test_jobset_is_admitted_whole_and_a_second_one_waits_whole",
        sabotage="quota_far_too_high",
        because=["kbc.errors.WaitGaveUp", "Kueue reserved quota for it instead"],
    )


@pytest.mark.sabotages("suites/test_gang.py::test_plain_pod_group_is_admitted_only_when_complete")
def test_pod_group_fails_when_an_incomplete_group_says_it_is_complete(cluster: Cluster) -> None:
    expect_failure(
        cluster,
        "suites/test_gang.py::test_plain_pod_group_is_admitted_only_when_complete",
        sabotage="gang_group_declared_complete",
        because=[
            "kbc.errors.ConsistencyViolation",
            "the 2 pods of the incomplete group gated and unscheduled",
        ],
    )


@pytest.mark.sabotages("suites/test_gang.py::test_without_kueue_two_gangs_on_six_gpus_end_partially_placed")
def test_the_deadlock_control_fails_when_the_gangs_do_not_contend(cluster: Cluster) -> None:
    expect_failure(
        cluster,
        "suites/test_gang.py::test_without_kueue_two_gangs_on_six_gpus_end_partially_placed",
        sabotage="gang_control_gangs_fit",
        because=["kbc.errors.WaitTimeout", "both gangs to be partially placed"],
        extra=["--timeout-scale", "0.25"],
    )


@pytest.mark.sabotages("suites/test_quota.py::test_gpu_quota_admits_what_fits_and_holds_what_does_not")
def test_gpu_quota_fails_when_the_quota_is_far_too_high(cluster: Cluster) -> None:
    expect_failure(
        cluster,
        "suites/test_quota.py::test_gpu_quota_admits_what_fits_and_holds_what_does_not",
        sabotage="quota_far_too_high",
        because=["kbc.errors.WaitGaveUp", "Workload job-too-big-", "Kueue reserved quota for it instead"],
    )


@pytest.mark.sabotages("suites/test_quota.py::test_job_naming_a_missing_local_queue_stays_suspended")
def test_missing_queue_fails_when_kueue_does_not_manage_the_job(cluster: Cluster) -> None:
    expect_failure(
        cluster,
        "suites/test_quota.py::test_job_naming_a_missing_local_queue_stays_suspended",
        sabotage="quota_queue_name_dropped",
        because=["Kueue's webhook suspends a Job that names a LocalQueue"],
    )


@pytest.mark.sabotages("suites/test_gpu_quota.py::test_job_over_the_gpu_cap_reports_failed_create")
def test_failed_create_fails_when_the_namespace_cap_is_far_too_high(cluster: Cluster) -> None:
    expect_failure(
        cluster,
        "suites/test_gpu_quota.py::test_job_over_the_gpu_cap_reports_failed_create",
        sabotage="gpu_quota_cap_far_too_high",
        because=["kbc.errors.WaitTimeout", "FailedCreate"],
        extra=["--timeout-scale", "0.25"],
    )


@pytest.mark.sabotages("suites/test_gpu_quota.py::test_gpu_request_without_a_matching_limit_is_invalid")
def test_validation_fails_when_every_gpu_limit_is_made_equal_to_its_request(cluster: Cluster) -> None:
    expect_failure(
        cluster,
        "suites/test_gpu_quota.py::test_gpu_request_without_a_matching_limit_is_invalid",
        sabotage="gpu_quota_limit_made_equal",
        because=["kbc.errors.NotRefused", "the API server accepted Pod no-limit"],
    )
