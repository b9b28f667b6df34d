"""The Ray that KubeRay's pods run on kind: the image's recipe from the lock (PyPI's wheels for the Debian
layer's Python), the layer's pip arguments, and the RayJob builder and program that run on it."""

from __future__ import annotations

import ast
import base64
import dataclasses
import re
from pathlib import Path

import pytest

from kbc.components.kuberay import (
    HOLD,
    RayRuntime,
    joined,
    joins,
    ran_gpu_tasks_on,
    ray_job,
)
from kbc.errors import HarnessError
from kbc.supply.images import python
from kbc.supply.images.catalogue import DEBIAN_PACKAGES, RAY, ray
from kbc.supply.lock import load_lock
from kbc.supply.pins import Image


def test_the_lock_s_ray_becomes_an_image_of_its_name_with_ray_default_at_its_tag() -> None:
    lock = load_lock()
    pinned = lock.test_images[RAY]
    (recipe,) = ray(lock)
    assert recipe.name == f"{pinned.repository}:{pinned.tag}"
    assert recipe.python == f"ray[default]=={pinned.tag}"
    assert recipe.preload, "preloaded into kind's node image: nothing is pulled on kind"
    assert set(recipe.debian_packages) >= {"python3", "python-is-python3", "wget", "bash"}
    assert recipe.debian_packages == DEBIAN_PACKAGES, "the one Debian layer every image shares"
    assert not recipe.config.entrypoint, "KubeRay gives every container its command"


def test_a_lock_that_pins_ray_by_digest_alone_builds_no_ray_image() -> None:
    lock = load_lock()
    by_digest = Image("docker.io/rayproject/ray", "", "sha256:" + "0" * 64)
    assert ray(dataclasses.replace(lock, test_images={RAY: by_digest})) == []
    assert ray(dataclasses.replace(lock, test_images={})) == []


def test_the_wheels_are_for_the_debian_layer_s_python_and_glibc() -> None:
    packages = python.PythonPackages.for_debian(
        "ray[default]==1.2.3", {"python3": "3.11.2-1+b1", "libc6": "2.36-9+deb12u13"}
    )
    assert (packages.python, packages.glibc) == ("3.11", "2.36")


def test_a_debian_layer_without_python_is_named_as_what_to_add() -> None:
    with pytest.raises(HarnessError, match=r"python3 and libc6: add them .*DEBIAN_PACKAGES"):
        python.PythonPackages.for_debian("ray==1", {"bash": "5.2"})


def test_pip_is_given_every_manylinux_tag_the_glibc_runs() -> None:
    tags = python.platforms("2.36")
    assert tags[0] == "manylinux_2_36_x86_64" and tags[-1] == "manylinux1_x86_64"
    # Ray's wheel is manylinux2014, cryptography's manylinux_2_34: both must be accepted on glibc 2.36.
    assert {"manylinux2014_x86_64", "manylinux_2_34_x86_64", "manylinux_2_17_x86_64"} <= set(tags)
    assert "manylinux_2_37_x86_64" not in tags


def test_console_scripts_are_pointed_at_debian_s_python(tmp_path: Path) -> None:
    source, target = tmp_path / "bin", tmp_path / "usr/local/bin"
    source.mkdir()
    (source / "ray").write_text("#!/root/.pyenv/versions/3.11.7/bin/python3\nimport ray\n")
    (source / "py-spy").write_bytes(b"\x7fELF...")
    python._scripts(source, target)
    assert (target / "ray").read_text() == "#!/usr/bin/python3\nimport ray\n"
    assert (target / "py-spy").read_bytes() == b"\x7fELF..."
    assert (target / "ray").stat().st_mode & 0o111 and not source.exists()


def test_a_runtime_s_version_is_its_image_s_tag() -> None:
    assert RayRuntime.of("docker.io/rayproject/ray:1.2.3").version == "1.2.3"
    assert RayRuntime.of("127.0.0.1:5000/ray:4.5.6@sha256:" + "0" * 64).version == "4.5.6"
    assert RayRuntime.of("127.0.0.1:5000/ray").version == ""


def test_with_a_runtime_every_pod_runs_ray_s_image_and_kuberay_gives_the_commands() -> None:
    runtime = RayRuntime("example.test/ray:1.2.3", "1.2.3")
    job = ray_job("r", workers=2, gpus=1, runtime=runtime)
    spec = job["spec"]
    cluster = spec["rayClusterSpec"]
    templates = [
        cluster["headGroupSpec"]["template"],
        *(g["template"] for g in cluster["workerGroupSpecs"]),
        spec["submitterPodTemplate"],
    ]
    for template in templates:
        (container,) = template["spec"]["containers"]
        assert container["image"] == runtime.image
        # KubeRay runs a template's own command before `ray start`: a sleep there keeps Ray from starting.
        assert "command" not in container
    assert cluster["rayVersion"] == "1.2.3"
    assert spec["entrypoint"] == HOLD
    for group in (cluster["headGroupSpec"], *cluster["workerGroupSpecs"]):
        assert int(group["rayStartParams"]["object-store-memory"]) >= 75 * 1024 * 1024


def test_without_a_runtime_the_pods_are_the_toolbox_s_as_before() -> None:
    job = ray_job("r", workers=1)
    (container,) = job["spec"]["rayClusterSpec"]["headGroupSpec"]["template"]["spec"]["containers"]
    assert "command" in container and "rayVersion" not in job["spec"]["rayClusterSpec"]


def test_the_join_program_is_python_the_shell_leaves_alone_and_its_log_is_read_back() -> None:
    entrypoint = joins(5, 4)
    (encoded,) = re.findall(r"b64decode\('([A-Za-z0-9+/=]+)'\)", entrypoint)
    program = base64.b64decode(encoded).decode()
    ast.parse(program)
    assert "NODES, TASKS = 5, 4" in program and "STRICT_SPREAD" in program
    assert "'" not in entrypoint.replace(f"'{encoded}'", ""), "one pair of quotes, around base64 alone"
    log = "waiting for 2 of 5 Ray nodes\nall 5 Ray nodes joined\nGPU tasks ran on w-b w-a\n"
    assert joined(log, 5) and not joined(log, 4)
    assert ran_gpu_tasks_on(log) == ["w-b", "w-a"] and ran_gpu_tasks_on("all 5 Ray nodes joined") == []
