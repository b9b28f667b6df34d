"""The harness's own Docker Engine (``kbc docker up/down/status``): it runs privileged containers on this
host, never becomes the machine's Docker, and leaves nothing behind, also after SIGINT."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from kbc.cluster.docker import CAPABILITIES as CAPS
from kbc.cluster.docker import KIND_SYSCTLS, DockerEngine, missing_capabilities
from tests.integration.commands import KBC_AS_TYPED, REPO, kbc

# It starts and stops engines of its own, changing the host sysctls and bridges the session's engine relies
# on: never beside the tests that use that engine (tests/xdist_groups.py).
pytestmark = [pytest.mark.cluster, pytest.mark.xdist_group("docker-engine")]

BUSYBOX = Path("/bin/busybox")


@pytest.fixture
def engine(tmp_path: Path) -> Iterator[DockerEngine]:
    """An engine of its own for the test (not the session's), removed whatever happens."""
    made = DockerEngine(Path(f"/tmp/kbc-docker-{os.getpid()}"))
    try:
        yield made
    finally:
        made.down(purge=True)
        shutil.rmtree(made.directory, ignore_errors=True)


def docker(
    engine: DockerEngine, *args: str, stdin: bytes | None = None
) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        ["docker", *args], env=engine.env(), input=stdin, capture_output=True, check=False, timeout=120
    )


def busybox_image(engine: DockerEngine, tmp_path: Path) -> str:
    root = tmp_path / "rootfs" / "bin"
    root.mkdir(parents=True)
    shutil.copy(BUSYBOX, root / "busybox")
    for applet in ("sh", "sleep", "grep", "cat"):
        (root / applet).symlink_to("busybox")
    archive = subprocess.run(
        ["tar", "-C", str(root.parent), "-c", "."], capture_output=True, check=True
    ).stdout
    done = docker(engine, "import", "-", "kbc-test/busybox:1", stdin=archive)
    assert done.returncode == 0, done.stderr
    return "kbc-test/busybox:1"


def test_the_engine_runs_privileged_containers_and_leaves_nothing(
    engine: DockerEngine, tmp_path: Path
) -> None:
    default_socket = Path("/var/run/docker.sock").exists()
    before = {key: _sysctl(key) for key in KIND_SYSCTLS}
    state = engine.up()
    # What kind's nodes need of the host while the engine runs (kind's known issues).
    assert all(_sysctl(key) >= wanted for key, wanted in KIND_SYSCTLS.items())
    assert {k: old for k, (old, _) in state.sysctls.items()} == {
        k: v for k, v in before.items() if v < KIND_SYSCTLS[k]
    }
    assert engine.running() and engine.status()["state"] == "running"
    assert state.dropped_capabilities == missing_capabilities()
    image = busybox_image(engine, tmp_path)
    assert docker(engine, "network", "create", "kbc-test").returncode == 0
    run = docker(
        engine, "run", "-d", "--name", "priv", "--network", "kbc-test", "--privileged", image, "sleep", "600"
    )
    assert run.returncode == 0, run.stderr
    caps = docker(engine, "exec", "priv", "grep", "CapEff", "/proc/self/status")
    assert caps.returncode == 0, caps.stderr
    effective = int(caps.stdout.split()[1], 16)
    # Privileged: CAP_SYS_ADMIN (21) and CAP_NET_ADMIN (12), as kind's nodes need; and none of those the
    # host cannot grant (the reason the engine drops them).
    assert effective >> 21 & 1 and effective >> 12 & 1, caps.stdout
    assert not any(effective >> CAPS.index(c.removeprefix("CAP_")) & 1 for c in state.dropped_capabilities)
    bridges = engine.bridges()
    assert bridges and all(Path(f"/sys/class/net/{b}").exists() for b in bridges)
    assert Path("/var/run/docker.sock").exists() == default_socket, (
        "the engine must not become the machine's Docker"
    )
    left = engine.down()
    assert not left, left.describe()
    assert not any(Path(f"/sys/class/net/{b}").exists() for b in bridges)
    assert not engine.running()
    assert {key: _sysctl(key) for key in KIND_SYSCTLS} == before, "the host's settings are put back"


def _sysctl(key: str) -> int:
    return int((Path("/proc/sys") / key.replace(".", "/")).read_text())


def test_docker_up_prints_its_docker_host_last_and_down_removes_it(tmp_path: Path) -> None:
    cache = Path(f"/tmp/kbc-cache-{os.getpid()}")  # short: the engine's sockets live under it
    env = {**os.environ, "KBC_CACHE_DIR": str(cache)}

    try:
        up = kbc("docker", "up", env=env)
        assert up.returncode == 0, up.stderr
        assert up.stdout.strip().splitlines()[-1] == f"DOCKER_HOST=unix://{cache}/docker/docker.sock"
        status = kbc("docker", "status", env=env)
        assert "state: running" in status.stdout, status.stdout + status.stderr
        down = kbc("docker", "down", env=env)
        assert down.returncode == 0, down.stderr
        assert "nothing of it is left" in down.stderr
        assert "state: not started" in kbc("docker", "status", env=env).stdout
    finally:
        DockerEngine(cache / "docker").down(purge=True)
        shutil.rmtree(cache, ignore_errors=True)


def test_sigint_while_the_engine_starts_leaves_nothing(engine: DockerEngine) -> None:
    env = {**os.environ, "KBC_CACHE_DIR": f"/tmp/kbc-sigint-{os.getpid()}"}
    proc = subprocess.Popen(
        [*KBC_AS_TYPED, "docker", "up"], cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    started = DockerEngine(Path(env["KBC_CACHE_DIR"]) / "docker")
    # Interrupt once dockerd was started and while kbc waits for it to answer.
    deadline = time.monotonic() + 60
    while started.state() is None and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=120)
    try:
        assert proc.returncode == 130, err.decode()
        assert "interrupted; everything this command started has been stopped" in err.decode()
        assert not started.leftovers(), started.leftovers().describe()
        assert not started.running()
    finally:
        started.down(purge=True)
        shutil.rmtree(env["KBC_CACHE_DIR"], ignore_errors=True)


def test_missing_capabilities_are_read_from_the_bounding_set() -> None:
    full = "CapBnd:\t000001ffffffffff\n"
    assert missing_capabilities(full, 40) == []
    assert missing_capabilities("CapBnd:\t000001fffeffffff\n", 40) == ["CAP_SYS_RESOURCE"]
    assert missing_capabilities("CapBnd:\t000001fffeffefff\n", 40) == ["CAP_NET_ADMIN", "CAP_SYS_RESOURCE"]
    assert missing_capabilities("CapBnd:\t0000003fffffffff\n", 37) == []
