"""Run suite scenarios in a separate pytest process against the session's cluster.

The "prove the suites can fail" tests use this: the inner run reuses the cluster by
name (it neither installs nor removes anything) and loads one sabotage plugin from
``tests/sabotage``. The inner run is judged by its outcomes as its JUnit XML records
them, and by the words that explain its failure.
"""

from __future__ import annotations

import shutil
import sys
import tempfile
import warnings
import xml.etree.ElementTree as ET
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

from kbc.cluster.providers import Cluster
from tests.integration.commands import run_bounded

REPO = Path(__file__).resolve().parents[2]
T = TypeVar("T")


@dataclass
class InnerRun:
    """The outcome of an inner pytest run: its exit code, outcomes, failure texts and terminal output."""

    args: list[str]
    returncode: int
    output: str
    outcomes: dict[str, int] = field(default_factory=dict)
    """``passed``, ``failed``, ``errors``, ``skipped`` counts from the JUnit XML."""
    failures: list[str] = field(default_factory=list)
    """Each failed or erroring test case's message and text, from the JUnit XML."""

    def explain(self) -> str:
        return (
            f"inner run {' '.join(self.args)} exited {self.returncode} with {self.outcomes}:\n"
            f"{self.output[-6000:]}"
        )


def run_scenario(
    cluster: Cluster,
    target: str,
    *,
    sabotage: str | None,
    timeout: float = 300,
    extra: Sequence[str] = (),
    junit: Path | None = None,
) -> InnerRun:
    """Run *target* (``suites/test_x.py::test_y``) with the sabotage plugin *sabotage* loaded."""
    return run_pytest(
        [target, "--cluster-name", cluster.name, "--components", "none"],
        extra,
        sabotage=sabotage,
        timeout=timeout,
        junit=junit,
    )


def run_pytest(
    args: Sequence[str],
    extra: Sequence[str] = (),
    *,
    sabotage: str | None,
    timeout: float = 300,
    junit: Path | None = None,
    env: Mapping[str, str] | None = None,
) -> InnerRun:
    """Run pytest with *args* in the repository (in *env*, else this process's environment), the sabotage
    plugin *sabotage* loaded; judge it by its JUnit XML."""
    # A folder of its own for the JUnit XML unless the caller keeps it: removed once read (make test ran
    # about 120 inner runs, and left a folder in /tmp for each).
    scratch = None
    if junit is None:
        scratch = Path(tempfile.mkdtemp(prefix="kbc-inner-"))
        junit = scratch / "junit.xml"
    command = [sys.executable, "-m", "pytest", *args]
    command += ["-p", "no:cacheprovider", "--tb=short", "-q", "--junitxml", str(junit), *extra]
    if sabotage:
        command += ["-p", f"tests.sabotage.{sabotage}"]
    try:
        # `python -m` puts the working directory on sys.path, which makes tests.sabotage importable.
        proc = run_bounded(command, timeout=timeout, env=env)
        run = InnerRun(command, proc.returncode, proc.stdout + proc.stderr)
        if junit.is_file():
            run.outcomes, run.failures = read_junit(junit)
        return run
    finally:
        if scratch is not None:
            shutil.rmtree(scratch, ignore_errors=True)


OVER_ADMITTED = "kbc.errors.OverAdmitted"


class KueueOverAdmittedWarning(UserWarning):
    """An inner run met Kueue's over-admission after a restart (a component finding, docs/canary.md)."""


def past_the_finding(
    attempt: Callable[[], T], failures: Callable[[T], Sequence[str]], *, attempts: int = 3
) -> T:
    """*attempt* run again while its only failures are Kueue's over-admission after a restart.

    That finding is Kueue's (the canary reports it, docs/canary.md): in a run that meets it the upgrade
    scenario stops at it, before the checks this project's own test is about, so the test needs a run
    that got past it. Every such run is reported as a warning, never hidden; the last run is returned
    whatever it holds.
    """
    for number in range(1, attempts + 1):
        run = attempt()
        found = failures(run)
        if not found or not all(OVER_ADMITTED in failure for failure in found):
            return run
        warnings.warn(
            KueueOverAdmittedWarning(
                f"run {number} of at most {attempts} met Kueue's over-admission after a restart (a "
                f"component finding, not this harness's): {found[0].splitlines()[0][:400]}"
            ),
            stacklevel=2,
        )
    return run


def run_pytest_past_the_finding(
    args: Sequence[str],
    extra: Sequence[str] = (),
    *,
    sabotage: str | None,
    timeout: float = 300,
    env: Mapping[str, str] | None = None,
    attempts: int = 3,
) -> InnerRun:
    """:func:`run_pytest`, run again while its only failures are Kueue's over-admission after a restart
    (:func:`past_the_finding`)."""
    return past_the_finding(
        lambda: run_pytest(args, extra, sabotage=sabotage, timeout=timeout, env=env),
        lambda run: run.failures,
        attempts=attempts,
    )


def read_junit(path: Path) -> tuple[dict[str, int], list[str]]:
    """Outcome counts (one per test case) and the failure and error texts of a pytest JUnit XML file.

    A test case that failed or errored in setup or teardown counts as ``errors``.
    """
    outcomes = {"passed": 0, "failed": 0, "errors": 0, "skipped": 0}
    failures = []
    for case in ET.parse(path).getroot().iter("testcase"):
        tags = {child.tag for child in case}
        outcome = (
            "failed"
            if "failure" in tags
            else "errors"
            if "error" in tags
            else "skipped"
            if "skipped" in tags
            else "passed"
        )
        outcomes[outcome] += 1
        failures += [
            f"{child.get('message', '')}\n{child.text or ''}"
            for child in case
            if child.tag in ("failure", "error")
        ]
    return outcomes, failures


def expect_failure(
    cluster: Cluster,
    target: str,
    *,
    sabotage: str | None,
    because: list[str],
    or_because: Sequence[list[str]] = (),
    timeout: float = 300,
    extra: Sequence[str] = (),
    junit: Path | None = None,
) -> InnerRun:
    """Run *target* with *sabotage*: exactly one test must fail (none pass, none error), and its failure
    must say every text in *because* (the words that explain the broken behaviour), or every text of one
    list in *or_because* (where the sabotage can surface at two checks, depending on timing)."""
    run = run_scenario(cluster, target, sabotage=sabotage, timeout=timeout, extra=extra, junit=junit)
    assert run.outcomes == {"passed": 0, "failed": 1, "errors": 0, "skipped": 0}, run.explain()
    assert run.returncode == 1, run.explain()
    (failure,) = run.failures
    explanations = [because, *or_because]
    missing = [[text for text in words if text not in failure] for words in explanations]
    assert not all(missing), (
        f"the failure does not explain itself with {' or '.join(map(str, missing))}:\n{failure}\n"
        + run.explain()
    )
    return run
