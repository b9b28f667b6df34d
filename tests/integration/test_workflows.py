"""The workflows in .github/workflows: actionlint (built from its pinned module) finds nothing, every
action is pinned by commit, and each workflow runs only what the README shows."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest
import yaml

from kbc.supply.lock import load_lock
from kbc.supply.toolchain import Toolchain

REPO = Path(__file__).resolve().parents[2]
WORKFLOWS = sorted((REPO / ".github" / "workflows").glob("*.yml"))
_PINNED = re.compile(r"^[\w.-]+/[\w.-]+(/[\w./-]+)?@[0-9a-f]{40}$")


def test_the_four_workflows_exist() -> None:
    assert {w.name for w in WORKFLOWS} == {"ci.yml", "nightly.yml", "canary.yml", "platform.yml"}


def test_actionlint_finds_nothing() -> None:
    actionlint = Toolchain(load_lock()).ensure(["actionlint"])["actionlint"]
    proc = subprocess.run(
        [str(actionlint), "-no-color", *map(str, WORKFLOWS)],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr


@pytest.mark.parametrize("workflow", WORKFLOWS, ids=lambda p: p.name)
def test_every_action_is_pinned_by_commit_with_its_release_named(workflow: Path) -> None:
    text = workflow.read_text()
    uses = re.findall(r"^\s*(?:-\s*)?uses:\s*(\S+)(.*)$", text, re.MULTILINE)
    assert uses, f"{workflow.name} uses no action"
    for action, rest in uses:
        assert _PINNED.match(action), f"{workflow.name}: {action} is not pinned by a 40-hex commit"
        assert re.match(r"\s*#\s*v\d", rest), f"{workflow.name}: {action} names no release in a comment"


def test_the_workflows_run_the_readme_commands() -> None:
    """ci runs make test; nightly make conformance for local and kind, and both tiers of the harness's own
    tests; canary kbc canary from the base branch's lock, then kbc lock check; platform kbc verify against
    the base branch's platform."""
    readme = (REPO / "README.md").read_text()
    runs = {w.name: "\n".join(_run_lines(w)) for w in WORKFLOWS}
    assert "make test" in runs["ci.yml"]
    assert "make conformance PROVIDER=${{ matrix.provider }}" in runs["nightly.yml"]
    matrix = yaml.safe_load((REPO / ".github/workflows/nightly.yml").read_text())["jobs"]["conformance"]
    assert matrix["strategy"]["matrix"]["provider"] == ["local", "kind"]
    selftest = yaml.safe_load((REPO / ".github/workflows/nightly.yml").read_text())["jobs"]["selftest"]
    assert selftest["strategy"]["matrix"]["tier"] == ["test", "test-e2e"]
    assert "make ${{ matrix.tier }}" in runs["nightly.yml"]
    assert 'kbc canary --from "git:origin/$BASE_REF"' in runs["canary.yml"]
    assert ".venv/bin/kbc lock check" in runs["canary.yml"]
    assert (
        'kbc verify --platform manifests/platforms/example --against "git:origin/$BASE_REF"'
        in runs["platform.yml"]
    )
    for command in (
        "make test",
        "make test-e2e",
        "make conformance",
        "kbc canary --from",
        "kbc lock check",
        "kbc verify --platform",
    ):
        assert command in readme, f"the README does not show {command!r}, which a workflow runs"


def _run_lines(workflow: Path) -> list[str]:
    data = yaml.safe_load(workflow.read_text())
    return [str(step.get("run", "")) for job in data["jobs"].values() for step in job.get("steps", [])]
