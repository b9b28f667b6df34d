"""The canary's upgrade under load (``kbc canary --upgrade-load``, which runs ``kbc bench upgrade-load`` on
a local cluster of its own): Kueue upgraded from the lock's previous pins under a (small) live state, every
time measured and everything kept, in the canary's terminal, ``summary.md`` and ``summary.json``; and its
checks able to fail: an "upgrade" that loses a Workload, makes one again under another uid and reserves
quota for one beyond the ClusterQueue's fails the canary's scenario, reported as exactly that."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from kbc.cluster.providers.local import LocalProvider
from kbc.supply.lock import load_lock
from kbc.supply.paths import clusters_dir
from tests.integration.commands import kbc

pytestmark = pytest.mark.cluster

SCENARIO = "suites/test_upgrade.py::test_an_upgrade_under_load_keeps_every_object_admission_and_quota"
SABOTAGE = "upgrade_load_loses_remakes_over_admits"


def canary(size: str, reports: Path, *extra: str) -> tuple[int, str]:
    """``kbc canary --upgrade-load SIZE`` running its upgrade-under-load scenario only (no suite, no upgrade
    of a cluster of the canary's own); its exit code and output."""
    done = kbc(
        "canary", "--upgrade-load", size, "--provider", "local", "--cluster-name", "kbc-selftest-load",
        "--components", "kueue", "-m", "upgrade and upgrade_load", "--report-dir", str(reports),
        "-p", "no:cacheprovider", *extra,
        timeout=1200,
    )  # fmt: skip
    assert not list(clusters_dir().glob("kbc-upgrade-load-*")), "the run's cluster is removed"
    assert "kbc-selftest-load" not in {name for name, _ in LocalProvider.list_clusters()}
    return done.returncode, done.stdout + done.stderr


def run_records(load: dict[str, Any]) -> list[dict[str, Any]]:
    """The bench's run lines in the runs file the canary's summary.json names."""
    lines = Path(load["runs_file"]).read_text().splitlines()
    return [json.loads(line) for line in lines if '"run"' in line]


def test_kueue_upgraded_under_load_keeps_every_object_and_admission(tmp_path: Path) -> None:
    reports = tmp_path / "reports"
    returncode, output = canary("4x40", reports)
    assert returncode == 0 and "1 passed" in output, output[-6000:]
    load = json.loads((reports / "summary.json").read_text())["upgrade"]["load"]
    (record,) = run_records(load)
    assert record["held"] is True and record["findings"] == {}, record
    kueue = load_lock().components["kueue"]
    assert (record["kueue_old"], record["kueue_new"]) == (kueue.previous.app_version, kueue.app_version)
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
    assert load["held"] is True and load["runs_seconds"] == [seconds], load
    old, new = kueue.previous.app_version, kueue.app_version
    headline = f"Kueue {old} → {new} on local under 4 ClusterQueues and 40"
    assert "upgrade canary: Kueue upgraded under load" in output and headline in output, output[-6000:]
    assert "kept: every object" in output, output[-6000:]
    summary = (reports / "summary.md").read_text()
    assert "## Upgrade canary: Kueue upgraded under load" in summary and headline in summary, summary
    assert f"| upgrade | {seconds['upgrade']:.2f}s |" in summary, summary


@pytest.mark.sabotages(SCENARIO)
def test_an_upgrade_that_loses_remakes_or_over_admits_is_reported_as_such(tmp_path: Path) -> None:
    reports = tmp_path / "reports"
    returncode, output = canary("2x20", reports, "-p", f"tests.sabotage.{SABOTAGE}")
    assert returncode == 1 and "1 failed" in output, output[-6000:]
    assert "the upgrade under load did not keep what the cluster held" in output, output[-6000:]
    # What the sabotage did, as the bench's log (beside the report) has it.
    log = (reports / "upgrade-load-canary.log").read_text()
    said = next(line for line in log.splitlines() if line.startswith("[sabotage] before the upgrade: "))
    done = json.loads(said.split(": ", 1)[1])
    queue = done["queue"]
    load = json.loads((reports / "summary.json").read_text())["upgrade"]["load"]
    assert load["held"] is False, load
    (record,) = run_records(load)
    findings = record["findings"]
    assert findings["lost"] == [f"Workload/{queue}/{done['lost']}"], findings
    remade = [line.split(":")[0] for line in findings["made_again"]]
    assert remade == [f"Workload/{queue}/{done['made_again']}"], findings
    (over,) = findings["over_admitted"]
    assert over.startswith(f"ClusterQueue {queue}: 5 workloads"), over
    assert f"{queue}/{done['over_admitted']}" in over, over
    assert "NOT KEPT" in (reports / "summary.md").read_text()
