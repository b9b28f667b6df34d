"""``kbc bench upgrade-load`` on local clusters of its own: Kueue upgraded from the lock's previous pins
under a (small) live state, every time measured and everything kept; and its checks able to fail: an
"upgrade" that loses a Workload, makes one again under another uid and reserves quota for one beyond
the ClusterQueue's is reported as exactly that."""

from __future__ import annotations

import io
import json
import time
from pathlib import Path
from typing import Any

import pytest

from kbc import apis
from kbc.cluster.providers.local import LocalProvider
from kbc.kube import connect, is_true, wait_gone
from kbc.perf import LiveSize, LiveState
from kbc.supply.lock import load_lock
from kbc.supply.paths import clusters_dir
from tests.integration.commands import kbc, unique_name

pytestmark = pytest.mark.cluster

ADMISSION_MANAGER = "kueue-admission"


def test_kueue_upgraded_under_load_keeps_every_object_and_admission(tmp_path: Path) -> None:
    output = tmp_path / "runs.jsonl"
    done = kbc(
        *["bench", "upgrade-load", "--provider", "local", "--runs", "1"],
        *["--cluster-queues", "4", "--workloads", "40", "--output", str(output)],
        timeout=1200,
    )
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-4000:]
    (record,) = [json.loads(line) for line in output.read_text().splitlines() if '"run"' in line]
    assert record["held"] is True and record["findings"] == {}, record
    assert record["kueue_old"] != record["kueue_new"]
    seconds = record["seconds"]
    assert set(seconds) == {
        "upgrade",
        "answered",
        "webhook_unanswered",
        "watch_current_Workload",
        "watch_current_ClusterQueue",
        "watch_current_LocalQueue",
        "watch_current_ResourceFlavor",
        "pending_admitted",
    }, seconds
    assert all(v is not None for v in seconds.values()), seconds
    # 4 queues of 10 (4 admitted each): one freed per queue, and one pending admitted in its place, once.
    assert record["counts"]["freed"] == 4 and record["counts"]["admitted_after_upgrade"] == 4, record
    assert "kept: every object" in done.stderr
    assert not list(clusters_dir().glob("kbc-upgrade-load-*")), "the run's cluster is removed"


def test_an_upgrade_that_loses_remakes_or_over_admits_is_reported_as_such() -> None:
    provider = LocalProvider(load_lock(), out=io.StringIO())
    name = unique_name("kbc-upgrade-sabotage")
    cluster = provider.up(name, components=("kueue",))
    try:
        with connect(cluster.kubeconfig) as kube:
            live = LiveState(
                kube, LiveSize(cluster_queues=2, workloads=20, freed_per_queue=1), say=lambda _: None
            )
            live.make()
            queue = live.queues[0]
            # Pending workloads only: the quota is full, so Kueue changes nothing of theirs on its own.
            pending = sorted(
                wl["metadata"]["name"]
                for wl in live.workloads()
                if wl["metadata"]["namespace"] == queue and not is_true(wl, "QuotaReserved")
            )

            def sabotage() -> None:
                kube.delete(apis.WORKLOAD, pending[0], namespace=queue)  # lost
                again = kube.get(apis.WORKLOAD, pending[1], queue)
                kube.delete(apis.WORKLOAD, pending[1], namespace=queue)
                wait_gone(
                    kube, apis.WORKLOAD, pending[1], namespace=queue, timeout=60, what="the Workload to go"
                )
                kube.create(_manifest(again))  # made again, under a new uid
                # Quota reserved beyond the ClusterQueue's nominal quota, as Kueue's admission writes it.
                kube.apply(_reservation(kube.get(apis.WORKLOAD, pending[2], queue), live.flavor),
                           subresource="status", field_manager=ADMISSION_MANAGER)  # fmt: skip
                provider.restart_controllers(name, "kueue", graceful=True)

            result = live.upgrade(sabotage)
    finally:
        provider.down(name)
    assert not result.held
    findings = result.findings
    assert findings["lost"] == [f"Workload/{queue}/{pending[0]}"], findings
    assert [line.split(":")[0] for line in findings["made_again"]] == [f"Workload/{queue}/{pending[1]}"], (
        findings
    )
    (over,) = findings["over_admitted"]
    assert over.startswith(f"ClusterQueue {queue}: 5 workloads") and f"{queue}/{pending[2]}" in over, over


def _manifest(wl: dict[str, Any]) -> dict[str, Any]:
    meta = wl["metadata"]
    return {
        "apiVersion": wl["apiVersion"],
        "kind": "Workload",
        "metadata": {"name": meta["name"], "namespace": meta["namespace"], "labels": meta.get("labels", {})},
        "spec": wl["spec"],
    }


def _reservation(wl: dict[str, Any], flavor: str) -> dict[str, Any]:
    meta = wl["metadata"]
    return {
        "apiVersion": wl["apiVersion"],
        "kind": "Workload",
        "metadata": {"name": meta["name"], "namespace": meta["namespace"]},
        "status": {
            "admission": {
                "clusterQueue": meta["namespace"],
                "podSetAssignments": [
                    {"name": "main", "flavors": {"cpu": flavor}, "resourceUsage": {"cpu": "1"}, "count": 1}
                ],
            },
            "conditions": [
                {
                    "type": "QuotaReserved",
                    "status": "True",
                    "reason": "QuotaReserved",
                    "message": "reserved by the sabotage",
                    "lastTransitionTime": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                }
            ],
        },
    }
