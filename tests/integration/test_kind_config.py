"""The real pinned ``kind`` reads and validates every cluster config the kind provider writes.

There is no Docker daemon on the machines this is developed on, so ``docker`` is a stand-in
(the one thing kind needs that cannot run here): it answers ``docker info``, ``ps``, image
``inspect`` and ``network`` as an empty daemon would, and lists no container afterwards. Everything
before that is kind's own code at the lock's version: decoding the config strictly,
validating it, and planning one node container per configured node. So a config kind would
reject fails here with kind's words, and the ``docker run`` calls kind makes show the nodes it
understood the config to ask for.
"""

from __future__ import annotations

import dataclasses
import io
import json
import os
from pathlib import Path
from typing import Any

import pytest

from kbc.cluster.pools import load_pools
from kbc.cluster.providers.kind import MARKER, KindProvider, kind_config
from kbc.errors import ClusterError, ClusterNotFoundError, CommandError
from kbc.supply import paths
from kbc.supply.lock import load_lock
from kbc.supply.oci import parse_mirrors
from kbc.supply.toolchain import Toolchain

STAND_IN_DOCKER = """#!/usr/bin/env python3
import json, os, sys
args = sys.argv[1:]
with open(os.environ["STAND_IN_DOCKER_LOG"], "a") as log:
    log.write(json.dumps(args) + "\\n")
command = args[0] if args else ""
if command in ("-v", "version"):
    print("Docker version 0.0.0, build stand-in")
elif command == "info":
    print(json.dumps({"CgroupDriver": "systemd", "CgroupVersion": "2", "MemoryLimit": True, "PidsLimit": True,
                      "CPUShares": True, "SecurityOptions": ["name=seccomp,profile=builtin"]}))
elif command == "inspect":
    print("[]")
elif command in ("ps", "run", "rm"):
    # Containers of clusters that "exist": STAND_IN_CONTAINERS="cluster:node,..." plus what run made.
    state = os.environ["STAND_IN_DOCKER_LOG"] + ".containers"
    made = open(state).read().split() if os.path.exists(state) else []
    listed = [c.split(":", 1) for c in os.environ.get("STAND_IN_CONTAINERS", "").split(",") + made if c]
    if command == "run":
        cluster = next(a.split("=", 1)[1] for a in args if a.startswith("io.x-k8s.kind.cluster="))
        with open(state, "a") as fh:
            fh.write(f"{cluster}:{args[args.index('--name') + 1]}\\n")
        if os.environ.get("STAND_IN_RUN_FAILS"):
            sys.stderr.write("stand-in docker: could not run a privileged container\\n")
            sys.exit(125)
        print("0" * 64)  # "started": kind creates every node before it looks inside one
    elif command == "rm":
        with open(state, "w") as fh:
            fh.write("".join(f"{c}:{n}\\n" for c, n in listed if n not in args and f"{c}:{n}" in made))
    else:
        label = "label=io.x-k8s.kind.cluster="
        wanted = next((a.removeprefix(label) for a in args if a.startswith(label)), None)
        names = sorted({c for c, _ in listed}) if wanted is None else [n for c, n in listed if c == wanted]
        if names:
            print("\\n".join(names))
elif command == "logs":
    print("[  OK  ] Reached target multi-user.target - Multi-User System.")  # what kind waits for
elif command in ("exec", "cp"):
    sys.stderr.write("stand-in docker: no container runs on this machine\\n")
    sys.exit(125)
"""


@pytest.fixture
def docker_log(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    docker = bin_dir / "docker"
    docker.write_text(STAND_IN_DOCKER)
    docker.chmod(0o755)
    log = tmp_path / "docker.log"
    monkeypatch.setenv("STAND_IN_DOCKER_LOG", str(log))
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    # The real pinned kind, from where it was built; everything kbc records goes to a scratch cache.
    kind = Toolchain(load_lock()).ensure(["kind"])["kind"]
    monkeypatch.setenv("KBC_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr("kbc.supply.toolchain.Toolchain.ensure", lambda self, names: {"kind": kind})
    return log


def docker_runs(log: Path) -> list[list[str]]:
    return [args for args in map(json.loads, log.read_text().splitlines()) if args[:1] == ["run"]]


def option(args: list[str], name: str) -> str:
    return args[args.index(name) + 1]


@pytest.mark.parametrize("api_port", [0, 46443], ids=["default", "fixed-api-port"])
def test_kind_accepts_the_config_and_plans_a_node_per_pool_replica(docker_log: Path, api_port: int) -> None:
    lock = load_lock()
    provider = KindProvider(lock, out=io.StringIO())
    name = "kbc-kindcheck"
    with pytest.raises(CommandError) as failed:
        provider.up(name, api_port=api_port)
    # Past kind's decoding, validation and node creation: it stops once it looks for the nodes it made.
    assert "✓ Preparing nodes" in str(failed.value), str(failed.value)
    runs = docker_runs(docker_log)
    workers = sum(pool.replicas for pool in load_pools(paths.manifests_dir() / "nodes"))
    expected = {
        f"{name}-control-plane",
        f"{name}-worker",
        *(f"{name}-worker{i}" for i in range(2, workers + 1)),
    }
    assert {option(run, "--name") for run in runs} == expected
    image = lock.kubernetes.node_image
    assert image is not None
    assert {run[-1] for run in runs} == {f"{image.repository}:{image.tag}"}, (
        "every node runs the lock's node image"
    )
    control_plane = next(run for run in runs if option(run, "--name").endswith("control-plane"))
    if api_port:
        assert f"--publish=127.0.0.1:{api_port}:6443/TCP" in control_plane, control_plane
    assert not (paths.clusters_dir() / f"kind-{name}").exists(), "a failed create leaves nothing of kbc's"


def test_the_node_image_comes_through_the_mirror_by_tag_and_digest(docker_log: Path) -> None:
    """``--mirror docker.io=…`` makes kind pull its node image from the mirror; a refreshed digest rides on
    the tag, so what runs is what the lock pins."""
    lock = load_lock()
    image = lock.kubernetes.node_image
    assert image is not None and image.repository.startswith("docker.io/")
    digest = "sha256:" + "ab" * 32
    pinned = dataclasses.replace(
        lock,
        kubernetes=dataclasses.replace(lock.kubernetes, node_image=dataclasses.replace(image, digest=digest)),
    )
    provider = KindProvider(
        pinned, mirrors=parse_mirrors(["docker.io=127.0.0.1:5000/hub"]), out=io.StringIO()
    )
    with pytest.raises(CommandError):
        provider.up("kbc-kindmirror")
    wanted = f"127.0.0.1:5000/hub/{image.repository.removeprefix('docker.io/')}:{image.tag}@{digest}"
    runs = docker_runs(docker_log)
    assert runs and {run[-1] for run in runs} == {wanted}, runs


def test_a_config_kind_rejects_fails_with_kinds_words(
    docker_log: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The check above can fail: a node role kind does not know is reported by kind, before any container."""

    def broken(*args: Any, **kwargs: Any) -> dict[str, Any]:
        config: dict[str, Any] = kind_config(*args, **kwargs)
        config["nodes"][1]["role"] = "gpu-worker"
        return config

    monkeypatch.setattr("kbc.cluster.providers.kind.kind_config", broken)
    with pytest.raises(CommandError) as failed:
        KindProvider(load_lock(), out=io.StringIO()).up("kbc-kindcheck")
    assert '"gpu-worker" is not a valid node role' in str(failed.value), str(failed.value)
    assert docker_runs(docker_log) == []


def docker_calls(log: Path) -> list[list[str]]:
    return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []


def test_a_failed_create_is_deleted_with_kind_and_leaves_nothing_of_kbcs(
    docker_log: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("STAND_IN_RUN_FAILS", "1")
    with pytest.raises(CommandError, match="could not run a privileged container") as failed:
        KindProvider(load_lock(), out=io.StringIO()).up("kbc-kindcheck")
    assert "Docker" in str(failed.value), "the error says what kind needs"
    made = [run[run.index("--name") + 1] for run in docker_runs(docker_log)]
    removed = {name for call in docker_calls(docker_log) if call[:1] == ["rm"] for name in call}
    assert made and set(made) <= removed, f"kind made {made} and removed {sorted(removed)}"
    assert Path(f"{docker_log}.containers").read_text().split() == [], "every container kind made is gone"
    assert not (paths.clusters_dir() / "kind-kbc-kindcheck").exists()


def test_kind_clusters_kbc_did_not_create_are_left_alone(
    docker_log: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(
        "STAND_IN_CONTAINERS", "someone-elses:someone-elses-control-plane,mine:mine-control-plane"
    )
    provider = KindProvider(load_lock(), out=io.StringIO())
    with pytest.raises(ClusterError, match="was not created by kbc; it is left alone"):
        provider.up("someone-elses")
    with pytest.raises(ClusterNotFoundError, match="kbc deletes only its own"):
        provider.down("someone-elses")
    assert provider.get("someone-elses") is None
    assert not [c for c in docker_calls(docker_log) if c[:1] in (["run"], ["rm"])]
    (paths.clusters_dir() / "kind-mine").mkdir(parents=True)
    (paths.clusters_dir() / "kind-mine" / MARKER).write_text("mine\n")
    provider.down("mine")
    removed = [c for c in docker_calls(docker_log) if c[:1] == ["rm"]]
    assert len(removed) == 1 and "mine-control-plane" in removed[0], docker_calls(docker_log)
    assert "someone-elses-control-plane" not in removed[0]
