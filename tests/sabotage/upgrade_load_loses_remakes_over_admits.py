"""The upgrade under load goes wrong three ways at once: after the snapshot, just before Kueue's new pins
are applied, one pending Workload is deleted (lost), another deleted and made again under a new uid, and
quota reserved for a third beyond its ClusterQueue's nominal quota, as Kueue's admission writes it. The
canary's upgrade-under-load scenario must fail naming exactly those three.

Loaded into the canary (``-p``), it has the canary run ``kbc bench upgrade-load`` through this module
(``python -m``), which sabotages the bench's upgrade and then runs ``kbc`` as it is.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from typing import Any

import pytest

from kbc import apis
from kbc.cli import main as kbc
from kbc.kube import is_true, wait_gone
from kbc.perf import LiveState, UpgradeResult
from kbc.plugins import canary_load
from tests.sabotage import ADMISSION_MANAGER, quota_reserved

MODULE = "tests.sabotage.upgrade_load_loses_remakes_over_admits"


def pytest_configure(config: pytest.Config) -> None:
    original = canary_load.bench_command

    def through_this_module(config: pytest.Config, output: Any) -> list[str]:
        python, _, _, *args = original(config, output)  # [python, -m, kbc.cli, ...]
        return [python, "-m", MODULE, *args]

    canary_load.bench_command = through_this_module


def sabotage(live: LiveState) -> dict[str, str]:
    """Lose, remake and over-admit one pending Workload each of the first ClusterQueue; their names."""
    kube, queue = live.kube, live.queues[0]
    # Pending workloads only: the quota is full, so Kueue changes nothing of theirs on its own.
    pending = sorted(
        wl["metadata"]["name"]
        for wl in live.workloads()
        if wl["metadata"]["namespace"] == queue and not is_true(wl, "QuotaReserved")
    )
    lost, remade, over = pending[:3]
    kube.delete(apis.WORKLOAD, lost, namespace=queue)
    again = kube.get(apis.WORKLOAD, remade, queue)
    kube.delete(apis.WORKLOAD, remade, namespace=queue)
    wait_gone(kube, apis.WORKLOAD, remade, namespace=queue, timeout=60, what="the Workload to go")
    kube.create(manifest(again))
    kube.apply(
        reservation(kube.get(apis.WORKLOAD, over, queue), live.flavor),
        subresource="status",
        field_manager=ADMISSION_MANAGER,
    )
    return {"queue": queue, "lost": lost, "made_again": remade, "over_admitted": over}


def manifest(wl: dict[str, Any]) -> dict[str, Any]:
    """*wl* as it was created: to create it again under a new uid."""
    meta = wl["metadata"]
    return {
        "apiVersion": wl["apiVersion"],
        "kind": "Workload",
        "metadata": {"name": meta["name"], "namespace": meta["namespace"], "labels": meta.get("labels", {})},
        "spec": wl["spec"],
    }


def reservation(wl: dict[str, Any], flavor: str) -> dict[str, Any]:
    """Quota reserved for *wl* in its ClusterQueue, as Kueue's admission writes it."""
    main = {"name": "main", "flavors": {"cpu": flavor}, "resourceUsage": {"cpu": "1"}, "count": 1}
    return quota_reserved(wl, wl["metadata"]["namespace"], [main])


def main() -> int:
    real = LiveState.upgrade

    def upgrade(self: LiveState, upgrade: Callable[[], object]) -> UpgradeResult:
        def sabotaged() -> object:
            done = sabotage(self)
            print(f"[sabotage] before the upgrade: {json.dumps(done)}", file=sys.stderr, flush=True)
            return upgrade()

        return real(self, sabotaged)

    LiveState.upgrade = upgrade  # type: ignore[method-assign]
    return kbc(sys.argv[1:])


if __name__ == "__main__":
    sys.exit(main())
