"""The kbc command line, as the harness's own tests run it: a child process in the repository."""

from __future__ import annotations

import contextlib
import os
import secrets
import signal
import subprocess
import sys
from collections.abc import Mapping, Sequence
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


STOP_GRACE = 120.0
"""Seconds a command past its time gets to unwind on SIGTERM (kbc removes its clusters) before SIGKILL."""


class TimedOut(AssertionError):
    """A command the test ran went past its time; carries what it printed until it was stopped."""

    def __init__(self, command: Sequence[str], timeout: float, output: str) -> None:
        self.command = list(command)
        self.output = output
        super().__init__(
            f"{' '.join(self.command)} ran past {timeout:.0f} s and was stopped (SIGTERM to its process "
            f"group, SIGKILL {STOP_GRACE:.0f} s later); what it printed until then, its end:\n"
            f"{output[-8000:]}"
        )


def run_bounded(
    command: Sequence[str],
    *,
    timeout: float,
    cwd: Path = REPO,
    env: Mapping[str, str] | None = None,
) -> subprocess.CompletedProcess[str]:
    """*command* to its end, output captured; past *timeout* its whole process group is stopped as a user's
    Ctrl-C would (so it unwinds and leaves nothing running) and :class:`TimedOut` carries its output."""
    proc = subprocess.Popen(
        list(command),
        cwd=cwd,
        env=dict(env) if env is not None else None,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        _signal_group(proc.pid, signal.SIGTERM)
        try:
            out, err = proc.communicate(timeout=STOP_GRACE)
        except subprocess.TimeoutExpired:
            _signal_group(proc.pid, signal.SIGKILL)
            out, err = proc.communicate()
        raise TimedOut(command, timeout, (out or "") + (err or "")) from None
    except BaseException:  # the test itself interrupted: the command unwinds with it
        _signal_group(proc.pid, signal.SIGTERM)
        # Its output is read while it unwinds, as on a timeout: a command that prints its report on the
        # way out (a bench names what it left unfinished) would otherwise block on a full pipe, be
        # killed, and leave its cluster behind.
        try:
            proc.communicate(timeout=STOP_GRACE)
        except subprocess.TimeoutExpired:
            _signal_group(proc.pid, signal.SIGKILL)
            proc.communicate()
        raise
    return subprocess.CompletedProcess(list(command), proc.returncode, out, err)


def _signal_group(pgid: int, signum: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError):  # the group is gone already
        os.killpg(pgid, signum)


def kbc(
    *args: str, timeout: float = 300, env: Mapping[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """Run ``kbc *args`` (in *env*, else this process's environment); the caller checks the exit code."""
    return run_bounded([*KBC, *args], timeout=timeout, env=env)
