"""Loopback ports: picked where no outgoing connection can take them, and waited for after a kill."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from kbc.cluster.net import free_port, listen_range, listening_ports, wait_ports_free, worker_share
from kbc.errors import PortInUseError
from kbc.process import ProcessRef, spawn_detached


def _range_file(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "ip_local_port_range"
    path.write_text(text)
    return path


@pytest.mark.parametrize(
    ("kernel", "expected"),
    [
        ("32768\t60999\n", range(10000, 32768)),
        ("49152 65535", range(10000, 49152)),
        ("1024 40000", range(40001, 65536)),
        ("1024 65000", range(0)),
        ("not numbers", range(10000, 32768)),
    ],
    ids=["Linux's default", "IANA's", "low: above it", "almost all: the kernel's choice", "unreadable"],
)
def test_listening_ports_are_picked_outside_the_kernels_ephemeral_range(
    tmp_path: Path, kernel: str, expected: range
) -> None:
    assert listen_range(_range_file(tmp_path, kernel)) == expected


def test_a_free_port_lies_outside_the_ephemeral_range_and_can_be_bound() -> None:
    picked = {free_port() for _ in range(20)}
    assert all(port in listen_range() for port in picked) or not listen_range()
    port = free_port(exclude=picked)
    assert port not in picked
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", port))


def _listener(tmp_path: Path, port: int) -> subprocess.Popen[bytes]:
    script = (
        "import socket,time;s=socket.socket();"
        f"s.setsockopt(socket.SOL_SOCKET,socket.SO_REUSEADDR,1);s.bind(('127.0.0.1',{port}));s.listen();"
        f"open({str(tmp_path / 'up')!r},'w').write('1');time.sleep(60)"
    )
    proc = spawn_detached([sys.executable, "-c", script], tmp_path / "log")
    deadline = time.monotonic() + 10
    while not (tmp_path / "up").exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    return proc


def test_the_ports_a_process_listens_on_are_free_again_once_it_is_killed(tmp_path: Path) -> None:
    port = free_port()
    proc = _listener(tmp_path, port)
    ref = ProcessRef.of(proc.pid)
    assert listening_ports(proc.pid) == {port}
    with pytest.raises(PortInUseError, match=rf"127\.0\.0\.1:{port} is already in use by pid {proc.pid}"):
        wait_ports_free({port}, timeout=0.2)
    ref.kill()
    proc.wait()
    wait_ports_free({port}, timeout=0.2)


def test_the_workers_of_a_parallel_run_pick_from_ports_of_their_own() -> None:
    ports = range(10000, 32768)
    first = worker_share(ports, {"PYTEST_XDIST_WORKER": "gw0", "PYTEST_XDIST_WORKER_COUNT": "2"})
    second = worker_share(ports, {"PYTEST_XDIST_WORKER": "gw1", "PYTEST_XDIST_WORKER_COUNT": "2"})
    assert len(first) > 10000 and len(second) > 10000
    assert not set(first) & set(second)
    assert worker_share(ports, {}) == ports


def test_a_port_handed_out_is_not_handed_out_again_before_its_server_binds_it() -> None:
    picked = [free_port() for _ in range(50)]
    assert len(set(picked)) == len(picked)
