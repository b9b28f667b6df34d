"""The kbc command line, as the harness's own tests run it: a child process in the repository."""

from __future__ import annotations

import secrets
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
KBC = [sys.executable, "-m", "kbc.cli"]

# kbc as a user types it at a terminal. A shell that starts a job in the background makes it
# ignore SIGINT and children inherit that (so under CI Ctrl-C would be a no-op); Ctrl-C reaches an
# interactive process, whose Python turns SIGINT into KeyboardInterrupt.
KBC_AS_TYPED = [
    sys.executable,
    "-c",
    "import signal, sys; signal.signal(signal.SIGINT, signal.default_int_handler); "
    "signal.signal(signal.SIGTERM, signal.SIG_DFL); from kbc.cli import main; sys.exit(main(sys.argv[1:]))",
]


def unique_name(prefix: str) -> str:
    """A cluster name no other test uses."""
    return f"{prefix}-{secrets.token_hex(3)}"


def kbc(
    *args: str, timeout: float = 300, env: Mapping[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """Run ``kbc *args`` (in *env*, else this process's environment); the caller checks the exit code."""
    return subprocess.run(
        [*KBC, *args], cwd=REPO, env=env, check=False, capture_output=True, text=True, timeout=timeout
    )
