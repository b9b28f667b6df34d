"""``kbc verify --platform``: the example platform's promises hold on its twin; each misconfiguration the
issue names, seeded into a copy, makes its promise fail with words that name the object, the file and
what happened; the API server's refusal names the file and document; the queue-change canary prints
what changed in observed behaviour."""

from __future__ import annotations

import json
import secrets
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.integration.commands import KBC, REPO

pytestmark = pytest.mark.cluster

EXAMPLE = REPO / "manifests" / "platforms" / "example"


def copy_example(tmp_path: Path, prefix: str) -> Path:
    """A copy of the example platform under a name no other run uses (it names the twin)."""
    target = tmp_path / f"{prefix}-{secrets.token_hex(2)}"
    shutil.copytree(EXAMPLE, target)
    return target


def verify(
    platform: Path, report: Path, *args: str, timeout: float = 900
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [
            *KBC,
            "verify",
            "--platform",
            str(platform),
            "--report-dir",
            str(report),
            *args,
            "-p",
            "no:cacheprovider",
        ],
        cwd=REPO,
        check=False,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def outcomes(report: Path) -> dict[str, dict[str, Any]]:
    data = json.loads((report / "summary.json").read_text())
    return {p["id"]: p for p in data["platform"]["promises"]}


def edit(path: Path, change: Any) -> None:
    """Rewrite the YAML documents of *path* with *change* (document -> None)."""
    docs = list(yaml.safe_load_all(path.read_text()))
    for doc in docs:
        change(doc)
    path.write_text(yaml.safe_dump_all(docs, sort_keys=False))


def test_the_example_platform_holds_every_promise(tmp_path: Path) -> None:
    report = tmp_path / "report"
    done = verify(EXAMPLE, report, "--junitxml", str(report / "junit.xml"))
    assert done.returncode == 0, done.stdout[-6000:] + done.stderr[-3000:]
    found = outcomes(report)
    kinds = {p["kind"] for p in found.values()}
    assert kinds == {
        "local-queue",
        "resource-quota",
        "flavor",
        "nominal",
        "borrow",
        "reclaim",
        "priority",
        "quota-zero",
    }, kinds
    assert all(p["held"] for p in found.values()), [p for p in found.values() if not p["held"]]
    borrow = found["research/a100/nvidia.com/gpu/borrow"]
    assert borrow["measures"]["admitted"] == 24 and borrow["measures"]["borrowed"] == 8, borrow
    assert "admitted 24 (16 nominal + 8 borrowed)" in borrow["did"], borrow
    assert "25 waited" in borrow["did"], borrow
    assert found["training/a100/nvidia.com/gpu/reclaim"]["measures"]["reclaimed"] is True
    assert "platform example: 19 of 19 promises hold" in done.stdout, done.stdout[-3000:]
    summary = (report / "summary.md").read_text()
    assert "## Platform example: 19 of 19 promises hold" in summary, summary
    junit = (report / "junit.xml").read_text()
    assert 'name="test_promise[research/a100/nvidia.com/gpu/borrow]"' in junit


def test_each_seeded_misconfiguration_fails_naming_the_object_the_file_and_what_happened(
    tmp_path: Path,
) -> None:
    platform = copy_example(tmp_path, "seeded")
    # A ResourceFlavor whose nodeLabels match no node (a typo in the product).
    edit(
        platform / "queues" / "flavors.yaml",
        lambda d: (
            d["spec"]["nodeLabels"].update({"nvidia.com/gpu.product": "NVIDIA-H100-80GB"})
            if d["metadata"]["name"] == "h100"
            else None
        ),
    )
    # A ResourceQuota written with limits. (caps nothing) and one with the bare key (caps nothing either).
    teams = platform / "teams" / "teams.yaml"
    data = yaml.safe_load(teams.read_text())
    quota = next(i for i in data["items"] if i["kind"] == "ResourceQuota")
    quota["spec"]["hard"] = {"limits.nvidia.com/gpu": "1"}
    sandbox_quota = {
        "apiVersion": "v1",
        "kind": "ResourceQuota",
        "metadata": {"name": "gpu-cap", "namespace": "sandbox"},
        "spec": {"hard": {"nvidia.com/gpu": "1"}},
    }
    # A LocalQueue naming a ClusterQueue that does not exist.
    typo = {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "LocalQueue",
        "metadata": {"name": "interns", "namespace": "team-research"},
        "spec": {"clusterQueue": "reserch"},
    }
    data["items"] += [sandbox_quota, typo]
    teams.write_text(yaml.safe_dump(data, sort_keys=False))
    # A borrowingLimit larger than anyone lends (training lends 16 A100 GPUs).
    edit(
        platform / "queues" / "cluster-queues.yaml",
        lambda d: (
            d["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0].update({"borrowingLimit": 20})
            if d["metadata"]["name"] == "research"
            else None
        ),
    )
    report = tmp_path / "report"
    done = verify(
        platform,
        report,
        "-k",
        "flavor/h100 or resource-quota or interns or research/a100/nvidia.com/gpu/borrow",
    )
    assert done.returncode == 1, done.stdout[-6000:] + done.stderr[-3000:]
    found = outcomes(report)
    failed = {pid: p["did"] for pid, p in found.items() if not p["held"]}
    assert set(failed) == {
        "flavor/h100",
        "team-research/resource-quota/gpu-budget/limits.nvidia.com/gpu",
        "sandbox/resource-quota/gpu-cap/nvidia.com/gpu",
        "team-research/interns/local-queue",
        "research/a100/nvidia.com/gpu/borrow",
    }, failed
    flavor = failed["flavor/h100"]
    assert "ResourceFlavor h100 (queues/flavors.yaml, document 2" in flavor, flavor
    assert "match none of the twin's 10 nodes" in flavor and "NVIDIA-H100-80GB-HBM3" in flavor, flavor
    limits = failed["team-research/resource-quota/gpu-budget/limits.nvidia.com/gpu"]
    assert "ResourceQuota team-research/gpu-budget (teams/teams.yaml, document 1, item 6" in limits, limits
    assert "caps nothing: the API server admitted a pod asking for 2 nvidia.com/gpu" in limits, limits
    assert "only requests.nvidia.com/gpu caps an extended resource" in limits, limits
    assert "caps nothing" in failed["sandbox/resource-quota/gpu-cap/nvidia.com/gpu"]
    lq = failed["team-research/interns/local-queue"]
    assert "LocalQueue team-research/interns (teams/teams.yaml, document 1, item 8" in lq, lq
    assert "names ClusterQueue reserch, which the platform does not define" in lq and "queue forever" in lq, (
        lq
    )
    borrow = failed["research/a100/nvidia.com/gpu/borrow"]
    assert "lends only 16 nvidia.com/gpu of a100" in borrow and "borrowingLimit 20" in borrow, borrow
    assert "(queues/cluster-queues.yaml, document 1" in borrow and "is never reached" in borrow, borrow
    # The terminal says the same, and the test ids name the promises.
    assert "FAILED" in done.stdout and "test_promise[flavor/h100]" in done.stdout


def test_an_object_the_api_server_refuses_names_the_file_the_document_and_the_server_s_words(
    tmp_path: Path,
) -> None:
    platform = copy_example(tmp_path, "refused")
    edit(
        platform / "queues" / "cluster-queues.yaml",
        lambda d: (
            d["spec"]["preemption"].update({"withinClusterQueue": "Sometimes"})
            if d["metadata"]["name"] == "training"
            else None
        ),
    )
    done = verify(platform, tmp_path / "report", "-k", "sandbox")
    assert done.returncode != 0, done.stdout[-3000:]
    output = done.stdout + done.stderr
    assert "queues/cluster-queues.yaml, document 2 (line" in output, output[-4000:]
    assert "the API server refused ClusterQueue training: HTTP 422" in output, output[-4000:]
    assert "Sometimes" in output and "supported values" in output, output[-4000:]


def test_a_platform_needing_a_component_the_session_leaves_out_says_which(tmp_path: Path) -> None:
    platform = copy_example(tmp_path, "volcano")
    (platform / "queues" / "volcano.yaml").write_text(
        "apiVersion: scheduling.volcano.sh/v1beta1\nkind: Queue\nmetadata: {name: research}\n"
        "spec: {weight: 1, capability: {nvidia.com/gpu: 8}}\n"
    )
    done = verify(platform, tmp_path / "report", "--components", "kueue", timeout=120)
    assert done.returncode == 4, done.stdout + done.stderr
    assert "needs volcano" in done.stderr and "--components kueue leaves out" in done.stderr, done.stderr


def test_the_queue_change_canary_prints_what_changed_promise_by_promise(tmp_path: Path) -> None:
    platform = copy_example(tmp_path, "changed")
    edit(
        platform / "queues" / "cluster-queues.yaml",
        lambda d: (
            d["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0].update({"borrowingLimit": 4})
            if d["metadata"]["name"] == "research"
            else None
        ),
    )
    report = tmp_path / "report"
    done = verify(platform, report, "--against", str(EXAMPLE), "-k", "research/a100/nvidia.com/gpu/borrow")
    assert done.returncode == 0, done.stdout[-6000:] + done.stderr[-3000:]
    assert "What changed in observed behaviour" in done.stdout, done.stdout[-3000:]
    line = next(line for line in done.stdout.splitlines() if "research/a100/nvidia.com/gpu/borrow" in line)
    assert line.startswith("~ team-research/research"), line
    assert "admitted 24 → 20" in line and "borrowed 8 → 4" in line, line
    assert "borrowingLimit 8" in line and "borrowingLimit 4" in line, line
    assert (report / "platform-diff.md").read_text().count("research/a100/nvidia.com/gpu/borrow") == 1


VOLCANO_PLATFORM = """\
apiVersion: conformance.kbatch.dev/v1
kind: NodePool
metadata: {name: gpu}
spec:
  count: 2
  labels: {nvidia.com/gpu.product: NVIDIA-A100-SXM4-80GB}
  taints:
  - {key: nvidia.com/gpu, value: present, effect: NoSchedule}
  allocatable: {cpu: "64", memory: 512Gi, pods: "110", nvidia.com/gpu: "8"}
---
apiVersion: scheduling.volcano.sh/v1beta1
kind: Queue
metadata: {name: batch}
spec:
  weight: 2
  reclaimable: true
  capability: {nvidia.com/gpu: "4"}
"""


def test_a_volcano_queue_s_capability_is_proven_on_a_twin_with_volcano(tmp_path: Path) -> None:
    platform = tmp_path / f"volcano-{secrets.token_hex(2)}"
    platform.mkdir()
    (platform / "platform.yaml").write_text(VOLCANO_PLATFORM)
    report = tmp_path / "report"
    done = verify(platform, report)
    assert done.returncode == 0, done.stdout[-6000:] + done.stderr[-3000:]
    [promise] = outcomes(report).values()
    assert promise["id"] == "volcano/batch/capability/nvidia.com/gpu", promise
    assert promise["measures"] == {"admitted": 4, "waited": 5}, promise
    assert "5 waited" in promise["did"] and "queue resource quota insufficient" in promise["did"], promise


FAIR_PLATFORM = """\
apiVersion: conformance.kbatch.dev/v1
kind: NodePool
metadata: {name: gpu}
spec:
  count: 2
  labels: {nvidia.com/gpu.product: NVIDIA-A100-SXM4-80GB}
  allocatable: {cpu: "64", memory: 512Gi, pods: "110", nvidia.com/gpu: "8"}
---
apiVersion: config.kueue.x-k8s.io/v1beta2
kind: Configuration
fairSharing:
  preemptionStrategies: [LessThanOrEqualToFinalShare, LessThanInitialShare]
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata: {name: a100}
spec:
  nodeLabels: {nvidia.com/gpu.product: NVIDIA-A100-SXM4-80GB}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: team-a}
spec:
  cohortName: shared
  namespaceSelector: {}
  fairSharing: {weight: "1"}
  preemption: {reclaimWithinCohort: Any}
  resourceGroups:
  - coveredResources: [nvidia.com/gpu]
    flavors:
    - name: a100
      resources: [{name: nvidia.com/gpu, nominalQuota: 0}]
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: team-b}
spec:
  cohortName: shared
  namespaceSelector: {}
  fairSharing: {weight: "3"}
  preemption: {reclaimWithinCohort: Any}
  resourceGroups:
  - coveredResources: [nvidia.com/gpu]
    flavors:
    - name: a100
      resources: [{name: nvidia.com/gpu, nominalQuota: 0}]
---
# The pool: 8 GPUs no team submits to, lent to the cohort.
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: pool}
spec:
  cohortName: shared
  namespaceSelector: {}
  resourceGroups:
  - coveredResources: [nvidia.com/gpu]
    flavors:
    - name: a100
      resources: [{name: nvidia.com/gpu, nominalQuota: 8}]
---
apiVersion: v1
kind: List
items:
- {apiVersion: v1, kind: Namespace, metadata: {name: ml}}
- apiVersion: kueue.x-k8s.io/v1beta2
  kind: LocalQueue
  metadata: {name: team-a, namespace: ml}
  spec: {clusterQueue: team-a}
- apiVersion: kueue.x-k8s.io/v1beta2
  kind: LocalQueue
  metadata: {name: team-b, namespace: ml}
  spec: {clusterQueue: team-b}
"""


def test_fair_sharing_weights_split_what_the_cohort_lends_in_proportion(tmp_path: Path) -> None:
    platform = tmp_path / f"fair-{secrets.token_hex(2)}"
    platform.mkdir()
    (platform / "platform.yaml").write_text(FAIR_PLATFORM)
    report = tmp_path / "report"
    done = verify(platform, report, "-k", "fair-sharing")
    assert done.returncode == 0, done.stdout[-6000:] + done.stderr[-3000:]
    [promise] = outcomes(report).values()
    assert promise["id"] == "shared/fair-sharing/a100/nvidia.com/gpu", promise
    assert "borrow 2 and 6 of it" in promise["says"], promise
    assert promise["measures"] == {"borrowed_a": 2, "borrowed_b": 6}, promise
