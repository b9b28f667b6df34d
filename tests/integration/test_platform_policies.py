"""``kbc verify --platform``: the promises of a ClusterQueue's ``queueingStrategy`` and of a Volcano Queue's
``guarantee`` hold on a twin running Kueue and Volcano; a ``deserved`` share is listed as not proven, saying
why."""

from __future__ import annotations

import secrets
from pathlib import Path

import pytest

from tests.integration.platform_runner import outcomes, verify

pytestmark = pytest.mark.cluster

POLICIES_PLATFORM = """\
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
apiVersion: v1
kind: Namespace
metadata: {name: ml}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata: {name: a100}
spec:
  nodeLabels: {nvidia.com/gpu.product: NVIDIA-A100-SXM4-80GB}
  tolerations:
  - {key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: strict}
spec:
  namespaceSelector: {}
  queueingStrategy: StrictFIFO
  resourceGroups:
  - coveredResources: [nvidia.com/gpu]
    flavors:
    - name: a100
      resources: [{name: nvidia.com/gpu, nominalQuota: 8}]
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: best-effort}
spec:
  namespaceSelector: {}
  resourceGroups:
  - coveredResources: [nvidia.com/gpu]
    flavors:
    - name: a100
      resources: [{name: nvidia.com/gpu, nominalQuota: 8}]
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata: {name: strict, namespace: ml}
spec: {clusterQueue: strict}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata: {name: best-effort, namespace: ml}
spec: {clusterQueue: best-effort}
---
apiVersion: scheduling.volcano.sh/v1beta1
kind: Queue
metadata: {name: reserved}
spec:
  weight: 1
  reclaimable: true
  deserved: {nvidia.com/gpu: "4"}
  guarantee:
    resource: {nvidia.com/gpu: "4"}
"""


def test_queueing_strategies_and_a_volcano_guarantee_hold_and_deserved_says_why_not(tmp_path: Path) -> None:
    platform = tmp_path / f"policies-{secrets.token_hex(2)}"
    platform.mkdir()
    (platform / "platform.yaml").write_text(POLICIES_PLATFORM)
    report = tmp_path / "report"
    done = verify(platform, report)
    assert done.returncode == 0, done.stdout[-6000:] + done.stderr[-3000:]
    found = outcomes(report)
    strict = found["strict/queueing-strategy"]
    assert strict["state"] == "holds" and strict["measures"]["past_head"] is False, strict
    assert "waited" in strict["did"] and "after the head was removed" in strict["did"], strict
    best = found["best-effort/queueing-strategy"]
    assert best["state"] == "holds" and best["measures"]["past_head"] is True, best
    guarantee = found["volcano/reserved/guarantee/nvidia.com/gpu"]
    assert guarantee["state"] == "holds", guarantee
    assert guarantee["measures"]["others_got"] == 12 and guarantee["measures"]["free"] == 4, guarantee
    deserved = found["volcano/reserved/deserved"]
    assert deserved["state"] == "not proven", deserved
    assert "never reads spec.deserved" in deserved["did"], deserved
    assert "8 of 9 promises hold, 1 not proven" in done.stdout, done.stdout[-3000:]
