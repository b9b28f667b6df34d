"""The kbc command line, as the harness's own tests run it: a child process in the repository."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
KBC = [sys.executable, "-m", "kbc.cli"]


def kbc(*args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    """Run ``kbc *args``; the caller checks the exit code."""
    return subprocess.run(
        [*KBC, *args], cwd=REPO, check=False, capture_output=True, text=True, timeout=timeout
    )
