"""Child processes are stopped with their whole group, and pid reuse is detected."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from kbc.errors import CommandError
from kbc.process import ProcessRef, _is_zombie, run_logged, spawn_detached, tail


def test_terminate_stops_the_whole_process_group(tmp_path: Path) -> None:
    # The child starts a grandchild and records its pid; terminate() must end both.
    # Written aside and renamed: the file appears with the pid in it, never empty (a gate run read it empty).
    script = (
        "import os,subprocess,sys,time;"
        f"p=subprocess.Popen([sys.executable,'-c','import time; time.sleep(60)']);"
        f"open({str(tmp_path / 'gc.tmp')!r},'w').write(str(p.pid));"
        f"os.rename({str(tmp_path / 'gc.tmp')!r},{str(tmp_path / 'gc')!r});time.sleep(60)"
    )
    proc = spawn_detached([sys.executable, "-c", script], tmp_path / "log")
    ref = ProcessRef.of(proc.pid)
    deadline = time.monotonic() + 10
    while not (tmp_path / "gc").exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    grandchild = ProcessRef.of(int((tmp_path / "gc").read_text()))
    assert ref.alive() and grandchild.alive()
    ref.terminate(grace=5)
    proc.wait()
    deadline = time.monotonic() + 5
    while grandchild.alive() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not ref.alive() and not grandchild.alive()


def test_a_reused_pid_is_not_taken_for_the_recorded_process() -> None:
    me = ProcessRef.of(os.getpid())
    assert me.alive()
    assert not ProcessRef(me.pid, me.start_ticks + 1).alive()


def test_run_logged_raises_with_the_log_tail(tmp_path: Path) -> None:
    log = tmp_path / "build.log"
    with pytest.raises(CommandError) as info:
        run_logged(
            [sys.executable, "-c", "print('step one'); print('it broke'); raise SystemExit(3)"],
            log,
            hint="do the thing",
        )
    err = info.value
    assert err.returncode == 3 and "it broke" in err.output_tail
    assert "do the thing" in str(err) and str(log) in str(err)
    assert "it broke" in tail(log)


def test_a_process_says_the_cpu_and_peak_memory_it_used_and_nothing_once_gone() -> None:
    child = subprocess.Popen([sys.executable, "-c", "sum(range(3_000_000))"], start_new_session=True)
    ref = ProcessRef.of(child.pid)
    used = ref.usage()
    assert used is not None and used[1] > 0
    child.wait()
    assert ref.usage() is None
    mine = ProcessRef.of(os.getpid()).usage()
    assert mine is not None and mine[0] > 0 and mine[1] > 10 * 2**20


def _fake_proc(root: Path, pid: int, state: str, threads: int) -> None:
    (root / str(pid) / "task").mkdir(parents=True)
    (root / str(pid) / "stat").write_text(f"{pid} (kueue) {state} 1 {pid} {pid} 0")
    for n in range(threads):
        (root / str(pid) / "task" / str(pid + n)).mkdir()


@pytest.mark.parametrize(
    ("state", "threads", "gone"),
    [("S", 12, False), ("Z", 12, False), ("Z", 1, True), ("R", 1, False)],
    ids=["running", "a zombie leader whose threads still exit", "a zombie alone", "running alone"],
)
def test_a_process_is_gone_only_once_its_last_thread_has_exited(
    tmp_path: Path, state: str, threads: int, gone: bool
) -> None:
    # Its listening sockets close with the last thread, not when the leader turns zombie.
    _fake_proc(tmp_path, 4242, state, threads)
    assert _is_zombie(4242, proc=tmp_path) is gone
    assert _is_zombie(4343, proc=tmp_path), "a pid /proc does not know is gone"
