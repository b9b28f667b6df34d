"""The inner pytest runs of the harness's own tests: judged by their JUnit XML, which is removed once read
unless the caller keeps it."""

from __future__ import annotations

import subprocess
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from tests.integration import suite_runner

PASSED = '<testsuites><testsuite><testcase classname="t" name="a"/></testsuite></testsuites>'


def test_an_inner_run_is_judged_by_its_junit_which_goes_once_read(monkeypatch: pytest.MonkeyPatch) -> None:
    written: list[Path] = []

    def inner(command: Sequence[str], **_: Any) -> subprocess.CompletedProcess[str]:
        junit = Path(command[command.index("--junitxml") + 1])
        junit.write_text(PASSED)
        written.append(junit)
        return subprocess.CompletedProcess(list(command), 0, "1 passed", "")

    monkeypatch.setattr(suite_runner, "run_bounded", inner)
    run = suite_runner.run_pytest(["suites/test_x.py"], sabotage=None)
    assert run.outcomes["passed"] == 1 and run.returncode == 0
    (junit,) = written
    assert junit.name == "junit.xml" and not junit.parent.exists()


def test_a_junit_the_caller_names_is_kept(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    def inner(command: Sequence[str], **_: Any) -> subprocess.CompletedProcess[str]:
        Path(command[command.index("--junitxml") + 1]).write_text(PASSED)
        return subprocess.CompletedProcess(list(command), 0, "", "")

    monkeypatch.setattr(suite_runner, "run_bounded", inner)
    suite_runner.run_pytest(["suites/test_x.py"], sabotage=None, junit=tmp_path / "kept.xml")
    assert (tmp_path / "kept.xml").is_file()
