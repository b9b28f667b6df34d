"""A scenario that needs a component configuration (``@pytest.mark.needs``): on a cluster the user asked
to reuse that lacks it, it skips and names the setting and how to get it; ``kbc cluster up --config``
on a running cluster without it refuses, rather than pretend."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kbc.cluster.providers import Cluster
from kbc.supply import paths
from tests.integration.commands import kbc, unique_name
from tests.integration.suite_runner import run_pytest, run_scenario

pytestmark = pytest.mark.cluster

FAIR = 'kueue:fairSharing.preemptionStrategies=["LessThanOrEqualToFinalShare","LessThanInitialShare"]'


def test_a_scenario_skips_on_a_reused_cluster_without_its_setting_and_says_which(cluster: Cluster) -> None:
    # This session's default cluster runs Kueue as the chart configures it: no fair sharing.
    run = run_scenario(cluster, "suites/test_fair_sharing.py", sabotage=None)
    assert run.outcomes == {"passed": 0, "failed": 0, "errors": 0, "skipped": 2}, run.explain()
    for words in (
        "needs kueue fair sharing (fairSharing.preemptionStrategies=",
        f"the running cluster {cluster.name} (reused, not made by this session) lacks",
        f"kbc cluster up --name NAME --config '{FAIR}'",
    ):
        assert words in run.output, f"{words!r} not in:\n{run.explain()}"


def test_cluster_up_with_a_setting_a_running_cluster_lacks_refuses(cluster: Cluster) -> None:
    done = kbc("cluster", "up", "--name", cluster.name, "--provider", "local", "--config", FAIR)
    assert done.returncode == 1, done.stderr
    assert f"cluster {cluster.name} is already running, and its configuration is not what --config asks" in (
        done.stderr
    )
    assert "kueue from --config (fairSharing.preemptionStrategies=" in done.stderr and "lacks" in done.stderr
    assert f"kbc cluster down --name {cluster.name}" in done.stderr


def test_the_next_profiles_cluster_starts_beside_the_last_scenario_and_nothing_is_left(
    cleanup_names: list[str], tmp_path: Path
) -> None:
    # Two scenarios of two profiles on a session of its own: the second profile's cluster is started while
    # the first profile's scenario runs, and both are removed at the end.
    base = unique_name("kbc-pre")
    run = run_pytest(
        ["suites/test_pods_ready.py", "-k", "without_wait_for_pods_ready or block_admission"],
        [
            "--provider",
            "local",
            "--cluster-name",
            base,
            "--components",
            "kueue",
            "--report-dir",
            str(tmp_path),
        ],
        sabotage=None,
        timeout=600,
    )
    left = sorted(p.name for p in paths.clusters_dir().glob(f"{base}*"))
    cleanup_names.extend(left)
    assert run.outcomes == {"passed": 2, "failed": 0, "errors": 0, "skipped": 0}, run.explain()
    summary = json.loads((tmp_path / "summary.json").read_text())
    beside = summary["cluster_seconds_beside_scenarios"]
    assert 0 < beside <= summary["cluster_seconds"], summary
    assert "s of it beside the scenarios before)" in run.output, run.explain()
    assert not left, f"the session left {left}"
