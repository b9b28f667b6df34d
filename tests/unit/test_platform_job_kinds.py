"""The job kinds a platform's teams submit, read from its job templates (``manifests/platforms/ml-jobs``):
a promise per team and kind, the operators the twin then installs, the probe of each kind asking only for
the promise's resource, and what is refused or said about a template."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml

from kbc.errors import PlatformError
from kbc.platform import derive, load_platform
from kbc.platform._kind_promise import lacking_integration
from kbc.platform._kinds import JOB_KINDS, probe_of
from kbc.platform.promises import JOB_KIND, KINDS
from kbc.supply import paths

ML_JOBS = paths.repo_root() / "manifests" / "platforms" / "ml-jobs"
GPU = "nvidia.com/gpu"


def test_each_team_s_kinds_become_one_promise_each_and_their_operators_are_installed() -> None:
    platform = load_platform(ML_JOBS)
    assert set(platform.job_kinds) == {"research/train", "inference/serve"}
    assert sorted(platform.job_kinds["research/train"]) == ["PyTorchJob", "TrainJob"]
    assert not platform.ignored, "job templates are read, not left out"
    assert platform.components == ["jobset", "kuberay", "lws", "trainer", "trainingoperator", "kueue"]
    promises = {p.id: p for p in derive(platform) if p.kind == JOB_KIND}
    assert JOB_KIND in KINDS
    trainjob = promises["research/train/job-kind/TrainJob"]
    assert trainjob.lane == "cohort/ml" and trainjob.source.startswith("jobs/research.yaml")
    assert trainjob.depends_on == (
        "research/train/local-queue",
        "flavor/a100",
        "training/a100/nvidia.com/gpu/nominal",
    )
    # 16 of its own and 16 the serving queue lends: 33 can never be held.
    assert trainjob.params["beyond"] == 33 and trainjob.params["quota"].nominal == 16
    assert "one of 16 nvidia.com/gpu is admitted whole on a100 as one Workload" in trainjob.says
    assert any("research/train submits PyTorchJob, TrainJob" in w for w in platform.warnings)


def test_a_template_naming_a_local_queue_the_platform_lacks_is_refused(tmp_path: Path) -> None:
    platform = tmp_path / "p"
    shutil.copytree(ML_JOBS, platform)
    path = platform / "jobs" / "research.yaml"
    docs = list(yaml.safe_load_all(path.read_text()))
    docs[0]["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] = "trian"
    path.write_text(yaml.safe_dump_all(docs))
    with pytest.raises(
        PlatformError, match="TrainJob llama-finetune names LocalQueue trian in namespace research"
    ):
        load_platform(platform)


def test_a_template_without_a_queue_is_left_out_like_any_other_kind(tmp_path: Path) -> None:
    platform = tmp_path / "p"
    shutil.copytree(ML_JOBS, platform)
    path = platform / "jobs" / "research.yaml"
    docs = list(yaml.safe_load_all(path.read_text()))
    del docs[1]["metadata"]["labels"]
    path.write_text(yaml.safe_dump_all(docs))
    loaded = load_platform(platform)
    assert sorted(loaded.job_kinds["research/train"]) == ["TrainJob"]
    assert [d.kind for d in loaded.ignored] == ["PyTorchJob"]


@pytest.mark.parametrize("kind", sorted(JOB_KINDS))
def test_a_probe_asks_for_the_promise_s_resource_alone_and_tolerates_nothing(kind: str) -> None:
    job_kind = JOB_KINDS[kind]
    probe = probe_of(job_kind, "p", queue="train", resource=GPU, pods=3, each=8)
    assert probe["kind"] == kind and probe["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] == "train"
    text = yaml.safe_dump(probe)
    assert "cpu" not in text and "toleration" not in text and "nodeSelector" not in text, text
    asks = {"requests": {GPU: "8"}, "limits": {GPU: "8"}}
    if kind == "TrainJob":
        assert (
            probe["spec"]["trainer"]["numNodes"] == 3 and probe["spec"]["trainer"]["resourcesPerNode"] == asks
        )
        return
    containers: list[dict[str, object]] = []

    def walk(obj: object) -> None:
        if isinstance(obj, dict):
            containers.extend(c["resources"] for c in obj.get("containers") or [])
            for value in obj.values():
                walk(value)
        elif isinstance(obj, list):
            for value in obj:
                walk(value)

    walk(probe["spec"])
    gang = [c for c in containers if c]
    assert all(c == asks for c in gang), containers
    # A PyTorchJob's master and workers, a LeaderWorkerSet's one template, a RayJob's worker group: 3 pods
    # ask 8 each; a Ray head and submitter ask for nothing.
    replicas = {
        "PyTorchJob": lambda s: sum(r["replicas"] for r in s["pytorchReplicaSpecs"].values()),
        "LeaderWorkerSet": lambda s: s["leaderWorkerTemplate"]["size"],
        "RayJob": lambda s: s["rayClusterSpec"]["workerGroupSpecs"][0]["replicas"],
    }
    assert replicas[kind](probe["spec"]) == 3


def test_a_kueue_configuration_that_names_its_integrations_without_a_kind_s_says_so(tmp_path: Path) -> None:
    platform = tmp_path / "p"
    shutil.copytree(ML_JOBS, platform)
    config = {
        "apiVersion": "config.kueue.x-k8s.io/v1beta2",
        "kind": "Configuration",
        "integrations": {"frameworks": ["batch/job", "trainer.kubeflow.org/trainjob"]},
    }
    (platform / "kueue-config.yaml").write_text(yaml.safe_dump(config))
    loaded = load_platform(platform)
    assert lacking_integration(loaded, JOB_KINDS["TrainJob"]) == ""
    said = lacking_integration(loaded, JOB_KINDS["PyTorchJob"])
    assert "without 'kubeflow.org/pytorchjob'" in said and "kueue-config.yaml" in said, said
    assert lacking_integration(load_platform(ML_JOBS), JOB_KINDS["PyTorchJob"]) == ""
