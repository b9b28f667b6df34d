"""What the kueue-perf unit tests share: Kueue's baseline config and rangespec as the pinned module writes
them, and a stand-in for the API client where the runner writes."""

from __future__ import annotations

from pathlib import Path
from typing import Any

# Kueue's configs/baseline/generator.yaml of the pinned module, as it is written there.
BASELINE = """\
cohorts:
  - className: cohort
    count: 5
    queuesSets:
    - className: cq
      count: 6
      nominalQuota: 20
      borrowingLimit: 100
      reclaimWithinCohort: Any
      withinClusterQueue: LowerPriority
      workloadsSets:
      - count: 350
        creationIntervalMs: 100
        workloads:
        - className: small
          runtimeMs: 200
          priority: 50
          request: 1
      - count: 100
        creationIntervalMs: 500
        workloads:
        - className: medium
          runtimeMs: 500
          priority: 100
          request: 5
      - count: 50
        creationIntervalMs: 1200
        workloads:
        - className: large
          runtimeMs: 1000
          priority: 200
          request: 20
"""

# The three ways Kueue's rangespec comments give the mean a limit was set from (baseline, large-scale, tas).
RANGESPEC = """\
cmd:
  # Average value 351116.4 (+/- 0.9%), setting at +20%
  maxWallMs: 425_000

clusterQueueClassesMinUsage:
  # mean=38.64%, mean-7% rounded down to 0.1%
  cq: 31.6 #%

wlClassesMaxAvgTimeToAdmissionMs:
  large:    46_000        # 37862 / 1573 / 4.15%
  medium: 90_000
"""


def write_config(tmp_path: Path, text: str, name: str = "generator.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


class Applies:
    """Stands in for the API client where the runner writes: records what it applies."""

    def __init__(self) -> None:
        self.applied: list[tuple[dict[str, Any], str | None, str]] = []
        self.listed: list[dict[str, Any]] = []

    def apply(self, obj: dict[str, Any], *, subresource: str | None = None, field_manager: str = "") -> Any:
        self.applied.append((obj, subresource, field_manager))
        return obj

    def list_at(self, kind: Any, *, labels: Any = None) -> tuple[list[dict[str, Any]], str]:
        return self.listed, "1"


def workload_object(admitted: bool, evicted: bool = False) -> dict[str, Any]:
    conditions = [
        {"type": "QuotaReserved", "status": "True", "reason": "QuotaReserved"},
        {"type": "Admitted", "status": "True" if admitted else "False", "reason": "Admitted"},
    ]
    if evicted:
        conditions.append({"type": "Evicted", "status": "True", "reason": "Preempted"})
    return {
        "metadata": {
            "name": "small-0-0-0",
            "namespace": "cq",
            "uid": "u1",
            "resourceVersion": "7",
            "generation": 1,
        },
        "status": {"conditions": conditions, "admission": {"clusterQueue": "cq"}},
    }
