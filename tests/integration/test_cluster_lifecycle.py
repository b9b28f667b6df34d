"""`kbc cluster up/down` and the failure paths of the local provider: nothing is ever left behind."""

from __future__ import annotations

import io
import json
import os
import signal
import socket
import subprocess
import time
from pathlib import Path

import pytest

from kbc import apis
from kbc.cluster.net import port_is_free
from kbc.cluster.providers.local import LocalProvider
from kbc.errors import ClusterError, ProcessStartError
from kbc.kube import connect
from kbc.process import ProcessRef, command_lines
from kbc.supply import paths
from kbc.supply.lock import load_lock
from tests.integration.commands import KBC_AS_TYPED, kbc, unique_name

pytestmark = pytest.mark.cluster


def recorded(name: str) -> tuple[list[ProcessRef], list[int]]:
    """Processes and ports the cluster's state file records."""
    state = json.loads((paths.clusters_dir() / name / "state.json").read_text())
    refs = [ProcessRef(c["pid"], c["start_ticks"]) for c in state["components"].values()]
    return refs, list(state["ports"].values())


def processes_of(name: str) -> list[str]:
    """Command lines of running processes that use the cluster's directory."""
    marker = str(paths.clusters_dir() / name) + "/"
    return [f"{pid}: {cmdline[:120]}" for pid, cmdline in command_lines() if marker in cmdline]


def assert_nothing_left(name: str, refs: list[ProcessRef], ports: list[int]) -> None:
    alive = [r.pid for r in refs if r.alive()]
    assert not alive, f"processes still running: {alive}"
    assert not processes_of(name), processes_of(name)
    taken = [p for p in ports if not port_is_free(p)]
    assert not taken, f"ports still taken: {taken}"
    assert not (paths.clusters_dir() / name / "state.json").exists()


def test_up_prints_kubeconfig_last_and_down_removes_everything(cleanup_names: list[str]) -> None:
    name = unique_name("life")
    cleanup_names.append(name)
    up = kbc("cluster", "up", "--name", name, "--components", "none", timeout=300)
    assert up.returncode == 0, up.stderr
    last = up.stdout.strip().splitlines()[-1]
    assert last.startswith("KUBECONFIG=")
    kubeconfig = Path(last.removeprefix("KUBECONFIG="))
    assert kubeconfig.is_file()
    with connect(kubeconfig) as kube:
        assert len(kube.list(apis.NODE)) >= 4
    refs, ports = recorded(name)
    assert all(r.alive() for r in refs) and len(refs) == 5

    again = kbc("cluster", "up", "--name", name, "--components", "none", timeout=60)
    assert again.returncode == 0 and "already running" in again.stderr
    assert again.stdout.strip().splitlines()[-1] == last

    down = kbc("cluster", "down", "--name", name, timeout=120)
    assert down.returncode == 0, down.stderr
    assert_nothing_left(name, refs, ports)
    assert not (paths.clusters_dir() / name).exists()


@pytest.mark.parametrize(
    ("sig", "started"),
    [
        (signal.SIGINT, "kube-apiserver"),  # Ctrl-C once the apiserver runs, before the cluster is ready
        (signal.SIGTERM, "etcd"),  # a CI cancellation right after the first process started
    ],
)
def test_a_signal_during_startup_stops_everything(
    cleanup_names: list[str], sig: signal.Signals, started: str
) -> None:
    name = unique_name(sig.name.lower())
    cleanup_names.append(name)
    state_file = paths.clusters_dir() / name / "state.json"
    proc = subprocess.Popen(
        [*KBC_AS_TYPED, "cluster", "up", "--name", name, "--components", "none"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    refs: list[ProcessRef] = []
    ports: list[int] = []
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and not refs:
        if state_file.exists():
            state = json.loads(state_file.read_text())
            if started in state["components"] and state["status"] == "starting":
                refs, ports = recorded(name)
        assert proc.poll() is None, proc.communicate()
        time.sleep(0.02)
    assert refs, "never saw the cluster mid-startup"
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert "interrupted" in err
    assert_nothing_left(name, refs, ports)


def test_taken_api_port_is_reported_with_its_holder(cleanup_names: list[str]) -> None:
    name = unique_name("port")
    cleanup_names.append(name)
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        port = holder.getsockname()[1]
        up = kbc(
            "cluster", "up", "--name", name, "--components", "none", "--api-port", str(port), timeout=120
        )
    assert up.returncode == 1
    assert f"port 127.0.0.1:{port} is already in use by pid {os.getpid()}" in up.stderr, up.stderr
    assert "choose another port" in up.stderr
    assert not (paths.clusters_dir() / name / "state.json").exists()


def test_component_failing_at_start_shows_its_log_and_stops_the_rest(cleanup_names: list[str]) -> None:
    name = unique_name("crash")
    cleanup_names.append(name)
    provider = LocalProvider(load_lock(), extra_args={"kube-apiserver": ["--no-such-flag=1"]})
    with pytest.raises(ProcessStartError) as info:
        provider.up(name)
    err = info.value
    assert err.component == "kube-apiserver"
    assert "exited during start-up" in str(err)
    assert "unknown flag: --no-such-flag" in err.log_tail
    assert err.log_path.is_file(), "the failed component's log is kept for the user"
    assert not (paths.clusters_dir() / name / "state.json").exists()
    etcd_log = paths.clusters_dir() / name / "logs" / "etcd.log"
    assert etcd_log.is_file()


def test_down_of_an_unknown_cluster_says_so() -> None:
    down = kbc("cluster", "down", "--name", "never-created-x", timeout=30)
    assert down.returncode == 1
    assert "no local cluster named 'never-created-x' was created by kbc" in down.stderr


def test_a_cluster_started_from_other_pins_is_not_reused(cleanup_names: list[str]) -> None:
    name = unique_name("pins")
    cleanup_names.append(name)
    provider = LocalProvider(load_lock(), out=io.StringIO())
    provider.up(name)
    state_file = paths.clusters_dir() / name / "state.json"
    state = json.loads(state_file.read_text())
    state["versions"]["kubernetes"] = "v1.0.0"  # as if started before a pin bump
    state_file.write_text(json.dumps(state))
    with pytest.raises(ClusterError) as refused:
        provider.up(name)
    assert f"cluster {name} runs kubernetes v1.0.0 (pinned: {load_lock().kubernetes.version})" in str(
        refused.value
    )
    assert f"kbc cluster down --name {name}" in str(refused.value)
