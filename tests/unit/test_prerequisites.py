"""A prerequisite the chosen provider needs and this host lacks is reported once, before any cluster or image
work, and the run ends there: not one error per scenario (issue 40 item 5)."""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys
from pathlib import Path

import pytest

from kbc.cluster.providers.kind.docker import NO_DOCKER
from kbc.supply import paths
from kbc.supply.lock import load_lock
from kbc.supply.toolchain import STAMP, Toolchain

ROOT = paths.repo_root()


def test_a_cgo_header_missing_for_a_binary_not_yet_built_is_named_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("KBC_CACHE_DIR", str(tmp_path / "cache"))
    lock = load_lock()
    runc = lock.tools["runc"]
    assert runc.build.cgo and runc.build.needs, "the lock's runc is a cgo build that needs C headers"
    broken = dataclasses.replace(
        lock,
        tools={
            **lock.tools,
            "runc": dataclasses.replace(
                runc, build=dataclasses.replace(runc.build, needs={"kbc-no-such-header.h": "libkbc-dev"})
            ),
        },
    )
    missing = Toolchain(broken).missing_prerequisites(["runc", "containerd", "kubelet"])
    assert [str(m) for m in missing] == [str(missing[0])] and len(missing) == 1
    assert "<kbc-no-such-header.h>" in str(missing[0]) and "apt-get install libkbc-dev" in str(missing[0])


def test_a_binary_already_built_needs_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KBC_CACHE_DIR", str(tmp_path / "cache"))
    lock = load_lock()
    runc = lock.tools["runc"]
    broken = dataclasses.replace(
        lock,
        tools={
            **lock.tools,
            "runc": dataclasses.replace(
                runc, build=dataclasses.replace(runc.build, needs={"kbc-no-such-header.h": "libkbc-dev"})
            ),
        },
    )
    toolchain = Toolchain(broken)
    directory = toolchain.directory("runc")
    directory.mkdir(parents=True)
    (directory / "runc").write_text("#!/bin/sh\n")
    (directory / "runc").chmod(0o755)
    (directory / STAMP).write_text(f'{{"fingerprint": "{toolchain._fingerprint(toolchain.builds["runc"])}"}}')
    assert toolchain.missing_prerequisites(["runc"]) == []


def test_kind_without_docker_ends_the_run_once_before_any_scenario(tmp_path: Path) -> None:
    env = {**os.environ, "DOCKER_HOST": f"unix://{tmp_path}/no-docker.sock", "KBC_CACHE_DIR": str(tmp_path)}
    env.pop("PYTEST_XDIST_WORKER", None)
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "suites",
            "-m",
            "gang",
            "--provider",
            "kind",
            "--kind-images",
            "pull",
            "-p",
            "no:cacheprovider",
            "-n",
            "0",
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    output = proc.stdout + proc.stderr
    assert proc.returncode == pytest.ExitCode.USAGE_ERROR, output
    assert output.count(NO_DOCKER) == 1, output
    assert "nothing was started" in output
    assert "ERROR at setup" not in output and " passed" not in output and " error" not in output, output
    assert not list(tmp_path.glob("clusters/*")), "no cluster was started"
