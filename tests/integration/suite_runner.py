"""Run suite scenarios in a separate pytest process against the session's cluster.

The "prove the suites can fail" tests use this: the inner run reuses the cluster
by name (it neither installs nor removes anything) and loads one sabotage plugin
from ``tests/sabotage``.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from kbc.providers import Cluster

REPO = Path(__file__).resolve().parents[2]


@dataclass
class InnerRun:
    """The outcome of an inner pytest run: exit code and everything it printed."""

    args: list[str]
    returncode: int
    output: str

    def explain(self) -> str:
        return f"inner run {' '.join(self.args)} exited {self.returncode}:\n{self.output[-6000:]}"


def run_scenario(
    cluster: Cluster, target: str, *, sabotage: str | None, timeout: float = 300, extra: Sequence[str] = ()
) -> InnerRun:
    """Run *target* (``suites/test_x.py::test_y``) with the sabotage plugin *sabotage* loaded."""
    args = [sys.executable, "-m", "pytest", target, "--cluster-name", cluster.name, "--components", "none"]
    args += ["-p", "no:cacheprovider", "--tb=short", "-q", *extra]
    if sabotage:
        args += ["-p", f"tests.sabotage.{sabotage}"]
    # `python -m` puts the working directory on sys.path, which makes tests.sabotage importable.
    proc = subprocess.run(
        args, cwd=REPO, capture_output=True, text=True, timeout=timeout, check=False, stdin=subprocess.DEVNULL
    )
    return InnerRun(args, proc.returncode, proc.stdout + proc.stderr)


def expect_failure(
    cluster: Cluster,
    target: str,
    *,
    sabotage: str | None,
    because: list[str],
    timeout: float = 300,
    extra: Sequence[str] = (),
) -> InnerRun:
    """Run *target* with *sabotage*: exactly one test must fail, and its output must say every text in
    *because* (the words that explain the broken behaviour)."""
    run = run_scenario(cluster, target, sabotage=sabotage, timeout=timeout, extra=extra)
    assert run.returncode == 1 and "1 failed" in run.output, run.explain()
    missing = [text for text in because if text not in run.output]
    assert not missing, f"the failure does not explain itself with {missing}; " + run.explain()
    return run
