"""An interrupt anywhere in ``kbc docker up`` after dockerd was spawned stops it (no engine outlives the
command), with the kernel settings raised so far recorded for ``down`` to put back."""

from __future__ import annotations

import io
import subprocess
from pathlib import Path

import pytest

from kbc.cluster import docker
from kbc.cluster.docker import DockerEngine, EngineState


@pytest.mark.parametrize("where", ["first save", "sysctls", "second save", "wait"])
def test_an_interrupt_after_the_spawn_stops_the_engine_and_keeps_what_to_put_back(
    where: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    engine = DockerEngine(tmp_path / "docker", out=io.StringIO())
    spawned: list[subprocess.Popen[bytes]] = []
    downs: list[EngineState | None] = []
    saves = 0

    def spawn(command: list[str], log: Path) -> subprocess.Popen[bytes]:
        spawned.append(subprocess.Popen(["sleep", "60"]))
        return spawned[-1]

    def save(state: EngineState) -> None:
        nonlocal saves
        saves += 1
        if (where, saves) in (("first save", 1), ("second save", 2)):
            raise KeyboardInterrupt
        real_save(state)

    def raise_sysctls(state: EngineState) -> None:
        state.sysctls["fs.inotify.max_user_instances"] = [128, 512]
        if where == "sysctls":
            raise KeyboardInterrupt

    def wait(state: EngineState) -> None:
        raise KeyboardInterrupt

    def down() -> None:
        downs.append(engine.state())
        spawned[-1].kill()
        spawned[-1].wait()

    real_save = engine._save
    monkeypatch.setattr(docker, "ensure_docker_installed", lambda say: "dockerd")
    monkeypatch.setattr(docker, "missing_capabilities", lambda: [])
    monkeypatch.setattr(docker, "spawn_detached", spawn)
    monkeypatch.setattr(engine, "running", lambda: False)
    monkeypatch.setattr(engine, "_save", save)
    monkeypatch.setattr(engine, "_raise_sysctls", raise_sysctls)
    monkeypatch.setattr(engine, "_await", wait)
    monkeypatch.setattr(engine, "down", down)

    try:
        with pytest.raises(KeyboardInterrupt):
            engine.up()
    finally:
        for process in spawned:
            process.kill()
            process.wait()

    assert len(downs) == 1, "the engine spawned is stopped"
    (recorded,) = downs
    assert recorded is not None and recorded.pid == spawned[0].pid
    if where != "first save":
        assert recorded.sysctls == {"fs.inotify.max_user_instances": [128, 512]}
