"""``kbc verify --platform``: the example platform's promises hold on its twin; each misconfiguration the
issue names, seeded into a copy, makes its promise fail with words that name the object, the file and
what happened; the API server's refusal names the file and document; the queue-change canary prints
what changed in observed behaviour."""

from __future__ import annotations

import secrets
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.integration.platform_runner import EXAMPLE, copy_example, edit, outcomes, verify

pytestmark = pytest.mark.cluster


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
        "queueing-strategy",
    }, kinds
    assert all(p["held"] for p in found.values()), [p for p in found.values() if not p["held"]]
    borrow = found["research/a100/nvidia.com/gpu/borrow"]
    assert borrow["measures"]["admitted"] == 24 and borrow["measures"]["borrowed"] == 8, borrow
    assert "admitted 24 (16 nominal + 8 borrowed)" in borrow["did"], borrow
    assert "25 waited" in borrow["did"], borrow
    assert found["training/a100/nvidia.com/gpu/reclaim"]["measures"]["reclaimed"] is True
    assert "platform example: 21 of 21 promises hold" in done.stdout, done.stdout[-3000:]
    summary = (report / "summary.md").read_text()
    assert "## Platform example: 21 of 21 promises hold" in summary, summary
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
    failed = {pid: p["did"] for pid, p in found.items() if p["state"] == "fails"}
    assert set(failed) == {
        "flavor/h100",
        "team-research/resource-quota/gpu-budget/limits.nvidia.com/gpu",
        "sandbox/resource-quota/gpu-cap/nvidia.com/gpu",
        "team-research/interns/local-queue",
        "research/a100/nvidia.com/gpu/borrow",
    }, failed
    # The h100 gangs, admitted by quota, cannot run on the flavor's nodes: not proven, naming why.
    unproven = {pid: p for pid, p in found.items() if p["state"] == "not proven"}
    assert unproven["research/h100/nvidia.com/gpu/nominal"]["depends_on"] == ["flavor/h100"], unproven
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


def _typo_in_a_flavor_s_labels(platform: Path) -> None:
    edit(
        platform / "queues" / "flavors.yaml",
        lambda d: (
            d["spec"]["nodeLabels"].update({"nvidia.com/gpu.product": "NVIDIA-H100-80GB"})
            if d["metadata"]["name"] == "h100"
            else None
        ),
    )


def _flavor_without_the_toleration(platform: Path) -> None:
    edit(
        platform / "queues" / "flavors.yaml",
        lambda d: d["spec"].pop("tolerations") if d["metadata"]["name"] == "a100" else None,
    )


def _local_queue_naming_a_missing_cluster_queue(platform: Path) -> None:
    teams = platform / "teams" / "teams.yaml"
    data = yaml.safe_load(teams.read_text())
    for item in data["items"]:
        if item["kind"] == "LocalQueue" and item["metadata"]["name"] == "training":
            item["spec"]["clusterQueue"] = "trainnig"
    teams.write_text(yaml.safe_dump(data, sort_keys=False))


def root_of(found: dict[str, dict[str, Any]], pid: str) -> str:
    """The promise at the end of *pid*'s not-proven chain: what kept it from being proven."""
    seen = [pid]
    while found[seen[-1]]["state"] == "not proven" and found[seen[-1]]["depends_on"]:
        seen.append(found[seen[-1]]["depends_on"][0])
        assert len(seen) < 10, seen
    return seen[-1]


@pytest.mark.parametrize(
    ("seed", "failing", "words"),
    [
        pytest.param(
            _typo_in_a_flavor_s_labels,
            "flavor/h100",
            ["match none of the twin's 10 nodes", "NVIDIA-H100-80GB-HBM3"],
            id="typo-in-flavor-labels",
        ),
        pytest.param(
            _flavor_without_the_toleration,
            "flavor/a100",
            [
                "ResourceFlavor a100 (queues/flavors.yaml, document 1",
                "does not tolerate the taint nvidia.com/gpu=present:NoSchedule that 4 of its 4 nodes carry",
                "{key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}",
            ],
            id="flavor-without-toleration",
        ),
        pytest.param(
            _local_queue_naming_a_missing_cluster_queue,
            "team-training/training/local-queue",
            ["names ClusterQueue trainnig, which the platform does not define"],
            id="local-queue-naming-a-missing-cluster-queue",
        ),
    ],
)
def test_one_misconfiguration_gives_one_failure_and_the_promises_it_keeps_from_being_proven_say_so(
    tmp_path: Path, seed: Any, failing: str, words: list[str]
) -> None:
    platform = copy_example(tmp_path, "one")
    seed(platform)
    report = tmp_path / "report"
    done = verify(platform, report)
    assert done.returncode == 1, done.stdout[-6000:] + done.stderr[-3000:]
    found = outcomes(report)
    states = {pid: p["state"] for pid, p in found.items()}
    failed = [pid for pid, state in states.items() if state == "fails"]
    assert failed == [failing], {pid: found[pid]["did"] for pid in failed}
    assert "broken" not in states.values(), {pid: p["did"] for pid, p in found.items() if p["broken"]}
    said = found[failing]["did"]
    assert all(w in said for w in words), said
    unproven = [pid for pid, state in states.items() if state == "not proven"]
    assert unproven, "the failure keeps some promise from being proven"
    strays = {pid: found[pid]["did"] for pid in unproven if root_of(found, pid) != failing}
    assert not strays, strays
    assert all("not proven: " in found[pid]["did"] for pid in unproven)
    assert f"1 fails, {len(unproven)} not proven" in done.stdout, done.stdout[-3000:]


def test_placement_is_kueue_s_a_flavor_promise_shows_the_labels_and_tolerations_it_injected(
    tmp_path: Path,
) -> None:
    report = tmp_path / "report"
    done = verify(EXAMPLE, report, "-k", "flavor/")
    assert done.returncode == 0, done.stdout[-6000:] + done.stderr[-3000:]
    found = outcomes(report)
    h100 = found["flavor/h100"]
    assert h100["state"] == "holds", h100
    assert "2 nodes carry its nodeLabels, tolerating their taints" in h100["did"], h100
    assert "nodeSelector nvidia.com/gpu.product=NVIDIA-H100-80GB-HBM3 and its 1 toleration(s)" in h100["did"]
    assert "injected by Kueue (the Job carried none)" in h100["did"], h100


def test_a_flavor_kueue_places_nowhere_in_particular_fails_its_promise(tmp_path: Path) -> None:
    # The twin's flavors lose their nodeLabels (the platform's files keep them): Kueue injects no selector,
    # and h100's gangs may run on any GPU node. A probe that selected the flavor's nodes itself would pass.
    report = tmp_path / "report"
    done = verify(EXAMPLE, report, "-k", "flavor/h100", "-p", "tests.sabotage.platform_flavor_labels_dropped")
    assert done.returncode == 1, done.stdout[-6000:] + done.stderr[-3000:]
    h100 = outcomes(report)["flavor/h100"]
    assert h100["state"] == "fails", h100
    assert (
        "its pods do not carry the flavor's nodeLabels {'nvidia.com/gpu.product': 'NVIDIA-H100-80GB-HBM3'}"
        in (h100["did"])
    ), h100


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
