"""The example of docs/writing-scenarios.md runs as written, in a directory of its own with
--strict-markers: it passes on the session's cluster, and fails with its sabotage plugin loaded."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from kbc.cluster.providers import Cluster
from kbc.supply import paths
from tests.integration.suite_runner import read_junit

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
    proc = subprocess.run(
        args,
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
        stdin=subprocess.DEVNULL,
    )
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
