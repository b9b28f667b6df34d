"""The example of docs/writing-scenarios.md runs as written, in a directory of its own with
--strict-markers: it passes on the session's cluster, and fails with its sabotage plugin loaded."""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path
from xml.etree import ElementTree

import pytest

from kbc.cluster.providers import Cluster
from kbc.supply import paths
from tests.integration.commands import run_bounded
from tests.integration.suite_runner import past_the_finding, read_junit

pytestmark = pytest.mark.cluster


def readme_files() -> dict[str, str]:
    """The python blocks of docs/writing-scenarios.md that start with a ``# <file name>`` line, by name."""
    readme = (paths.repo_root() / "docs" / "writing-scenarios.md").read_text()
    blocks = re.findall(r"```python\n(# (\S+\.py)[^\n]*\n.*?)```", readme, flags=re.S)
    return {name: text for text, name in blocks}


def run_example(tmp_path: Path, cluster: Cluster, *plugins: str) -> tuple[dict[str, int], list[str], str]:
    for name, text in readme_files().items():
        (tmp_path / name).write_text(text)
    junit = tmp_path / "junit.xml"
    args = [sys.executable, "-m", "pytest", "test_team_queue.py", "--cluster-name", cluster.name]
    args += ["--components", "none", "-p", "no:cacheprovider", "--strict-markers", "--junitxml", str(junit)]
    for plugin in plugins:
        args += ["-p", plugin]
    env = {**os.environ, "PYTHONPATH": str(tmp_path)}
    proc = run_bounded(args, timeout=300, cwd=tmp_path, env=env)
    outcomes, failures = read_junit(junit)
    return outcomes, failures, proc.stdout + proc.stderr


def test_the_readme_names_its_three_files() -> None:
    assert set(readme_files()) == {"conftest.py", "test_team_queue.py", "sabotage_double_quota.py"}


def test_the_readme_scenario_passes(tmp_path: Path, cluster: Cluster) -> None:
    outcomes, _, output = run_example(tmp_path, cluster)
    assert outcomes == {"passed": 1, "failed": 0, "errors": 0, "skipped": 0}, output


def test_the_readme_scenario_fails_with_its_sabotage(tmp_path: Path, cluster: Cluster) -> None:
    outcomes, failures, output = run_example(tmp_path, cluster, "sabotage_double_quota")
    assert outcomes == {"passed": 0, "failed": 1, "errors": 0, "skipped": 0}, output
    (failure,) = failures
    assert "kbc.errors.WaitGaveUp" in failure and "Kueue reserved quota for it instead" in failure, failure


def test_the_readme_scenario_runs_under_the_canary_from_a_directory_of_its_own(tmp_path: Path) -> None:
    # A platform team's scenario is a scenario by its marker, wherever it lives: the canary runs it on the
    # old pins and on the new ones (adding the harness's own upgrade scenario, which the directory lacks),
    # the terminal summary lists it, and the old-against-new table compares it.
    for name, text in readme_files().items():
        (tmp_path / name).write_text(text)
    reports = tmp_path / "reports"
    junit = tmp_path / "junit.xml"
    args = [sys.executable, "-m", "pytest", "--upgrade-from", "previous", "--provider", "local"]
    args += ["--cluster-name", f"kbc-rdme-canary-{os.getpid()}", "--components", "kueue,jobset"]
    args += [
        "-p",
        "no:cacheprovider",
        "--strict-markers",
        "--junitxml",
        str(junit),
        "--report-dir",
        str(reports),
    ]
    env = {**os.environ, "PYTHONPATH": str(tmp_path)}

    def canary() -> tuple[dict[str, int], list[str], str]:
        done = run_bounded(args, timeout=900, cwd=tmp_path, env=env)
        return (*read_junit(junit), done.stdout + done.stderr)

    # The upgrade scenario the canary adds meets Kueue's over-admission after a restart in a few runs in a
    # hundred (a finding the canary reports, docs/canary.md); this test is about the user's scenario.
    outcomes, _, output = past_the_finding(canary, lambda run: run[1])
    assert outcomes == {"passed": 3, "failed": 0, "errors": 0, "skipped": 0}, output[-6000:]
    story = "test_team_queue_runs_one_training_job_at_a_time"
    # What ran, from the JUnit report: the terminal lists node ids only by accident (its warnings summary
    # names each test while fewer than ten warnings are raised, and counts them by file past that).
    ran = {str(case.get("name")) for case in ElementTree.parse(junit).getroot().iter("testcase")}
    assert {f"{story}[old-pins]", f"{story}[new-pins]"} <= ran, (sorted(ran), output[-6000:])
    summary = output.split("kbatch-conformance summary", 1)[-1]
    assert story.replace("_", " ")[:40] in summary or story in summary, summary[:3000]
    table = (reports / "summary.md").read_text().split("### Old pins against new pins", 1)
    assert len(table) == 2 and story in table[1], (reports / "summary.md").read_text()[-3000:]
