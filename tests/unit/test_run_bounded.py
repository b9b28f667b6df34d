"""How the harness's own tests stop a kbc command when the test itself is interrupted: the command gets
SIGTERM and its output is read while it unwinds, so it can print its report and remove its cluster."""

from __future__ import annotations

import signal
import sys
import threading
from pathlib import Path

import pytest

from tests.integration.commands import run_bounded

# On SIGTERM it prints more than a pipe holds (a bench naming what it left unfinished), then does what
# removing a cluster stands for here: writes its marker. Blocked on a full pipe, it never gets there.
UNWINDS_LOUDLY = """
import signal, sys, time
from pathlib import Path

def unwind(*_):
    sys.stdout.write("x" * 1_000_000)
    sys.stdout.flush()
    Path(sys.argv[1]).write_text("cleaned up")
    sys.exit(0)

signal.signal(signal.SIGTERM, unwind)
print("started", flush=True)
time.sleep(60)
"""


def test_an_interrupted_test_lets_its_command_print_its_report_and_clean_up(tmp_path: Path) -> None:
    marker = tmp_path / "marker"
    # Ctrl-C as a terminal sends it: a real SIGINT to the main thread, turned into KeyboardInterrupt
    # (an xdist worker may have set SIGINT aside).
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    main = threading.main_thread().ident
    assert main is not None
    timer = threading.Timer(1.0, signal.pthread_kill, (main, signal.SIGINT))
    timer.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            run_bounded([sys.executable, "-c", UNWINDS_LOUDLY, str(marker)], timeout=30)
    finally:
        timer.cancel()
        signal.signal(signal.SIGINT, previous)
    assert marker.read_text() == "cleaned up"
