"""charts-lock.yaml: the real file loads, and every kind of damage names its field."""

from __future__ import annotations

import copy
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest

from kbc.errors import LockFileError, UnknownKubernetesMinor
from kbc.supply.lock import (
    REQUIRED_COMPONENTS,
    REQUIRED_TEST_IMAGES,
    REQUIRED_TOOLS,
    default_lock_path,
    load_lock,
)
from kbc.supply.pins import parse_image
from kbc.supply.upgrade_from import load_upgrade_source


def test_repository_lock_loads_with_every_pin() -> None:
    lock = load_lock()
    assert re.fullmatch(r"v1\.\d+\.\d+", lock.kubernetes.version)
    assert set(REQUIRED_TOOLS) <= set(lock.tools)
    assert set(REQUIRED_COMPONENTS) <= set(lock.components)
    for comp in lock.components.values():
        assert comp.chart.version.removeprefix("v") == comp.app_version.removeprefix("v")
        assert comp.build.version == comp.app_version
        assert comp.images and all(img.tag for img in comp.images)
        assert comp.previous.app_version != comp.app_version
    kube = lock.kubernetes.build
    assert {b.name for b in kube.binaries} == {"kube-apiserver", "kube-controller-manager", "kube-scheduler"}
    assert kube.expand("v0.{minor}.{patch}").startswith("v0.")
    assert set(REQUIRED_TEST_IMAGES) <= set(lock.test_images)
    cuda = lock.test_images["cuda"]
    assert cuda.repository.endswith("/cuda") and "base" in cuda.tag
    # Pulled by digest once one is recorded, by tag until then.
    assert cuda.ref == (
        f"{cuda.repository}@{cuda.digest}" if cuda.digest else f"{cuda.repository}:{cuda.tag}"
    )


def test_versions_live_only_in_the_lock() -> None:
    """No pinned version string is repeated in code, manifests or the Makefile."""
    lock = load_lock()
    versions = {lock.kubernetes.version, *lock.kubernetes.lanes, *(p.version for p in lock.tools.values())}
    for comp in lock.components.values():
        versions |= {comp.app_version, comp.chart.version, comp.previous.app_version}
    versions |= {image.tag for image in lock.test_images.values()}
    versions |= {tool.version for tool in lock.node_tools.values()}
    versions |= {driver.version for driver in lock.dra_drivers.values()}
    assert lock.kubernetes.debian is not None
    versions.add(lock.kubernetes.debian.suite)
    root = default_lock_path().parent
    offenders = []
    for folder in ("fixtures", "suites", "manifests", "tests", ".github"):
        for path in (root / folder).rglob("*"):
            if path.is_file() and path.suffix in {".py", ".yaml", ".yml", ".json", ".toml"}:
                text = path.read_text(errors="replace")
                offenders += [
                    f"{path.relative_to(root)}: {v}"
                    for v in versions
                    if re.search(rf"(?<![\w.]){re.escape(v)}(?![\w.])", text)
                ]
    makefile = (root / "Makefile").read_text()
    offenders += [f"Makefile: {v}" for v in versions if v in makefile]
    renovate = (root / "renovate.json").read_text()
    offenders += [f"renovate.json: {v}" for v in versions if v in renovate]
    assert not offenders, "pins repeated outside charts-lock.yaml:\n" + "\n".join(offenders)


def _break(data: dict[str, Any], dotted: str, value: Any) -> dict[str, Any]:
    broken = copy.deepcopy(data)
    *parents, last = dotted.split(".")
    node = broken
    for key in parents:
        node = node[key]
    if value is _DELETE:
        del node[last]
    else:
        node[last] = value
    return broken


_DELETE = object()


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("schemaVersion", 2, "this harness reads schema 1"),
        ("schemaVersion", _DELETE, "is missing"),
        ("kubernetes.version", "1.35", "is not a Go module version"),
        ("kubernetes.version", 135, "expected a string"),
        ("tools.helm", _DELETE, "is missing"),
        ("tools.kwok.build.binaries", {}, "names no binary"),
        ("components.kueue.chart.version", "0.0.1", "does not match appVersion"),
        ("components.kueue.chart.digest", "sha256:abc", "empty or sha256"),
        ("components.jobset.chart.reference", "registry.k8s.io/jobset", "chart reference"),
        ("components.volcano.images", [], "non-empty list"),
        ("components.volcano.previous", _DELETE, "expected a mapping, got nothing"),
        ("components.kueue.namespace", "", "is empty"),
        ("components.kueue.chartt", {}, "unknown field"),
        ("kubernetes.build.ldflags", ["-X a={nope}"], "unknown placeholder"),
        ("testImages", _DELETE, "expected a mapping, got nothing"),
        ("testImages", ["docker.io/nvidia/cuda"], "expected a mapping"),
        ("testImages.cuda", _DELETE, "is missing"),
        ("testImages.cuda.tag", _DELETE, "is missing"),
        ("testImages.cuda.repository", "", "is empty"),
        ("testImages.cuda.digest", "sha256:abc", "empty or sha256"),
        ("testImages.cuda.image", "docker.io/nvidia/cuda", "unknown field"),
        ("tools.runc.build.cgo", "yes", "expected true or false"),
        ("tools.runc.build.tags", "seccomp", "expected a list of Go build tags"),
        ("tools.runc.build.needs", {"seccomp.h": ""}, "expected `<header>.h: <Debian package>`"),
        ("tools.containerd.build.binaries.ctr", {"package": "cmd/ctr", "tags": ["a b"]}, "Go build tags"),
        ("kubernetes.nodeBinaries.binaries", {}, "names no binary"),
        ("kubernetes.lanes", "v1.30.2", "expected a list of Kubernetes versions"),
        ("kubernetes.lanes", ["1.30"], "expected a Kubernetes version like v1.30.2"),
        ("kubernetes.lanes", ["v1.30.2", "v1.30.1"], "second version of Kubernetes 1.30"),
        ("kubernetes.lanes", ["v1.34.1"], "second version of Kubernetes 1.34"),
        ("kubernetes.nodeBinaries.optional", _DELETE, "is missing"),
        ("kubernetes.kindRootfs.debianSuite", "Debian 12", "a Debian suite's code name"),
        ("kubernetes.kindRootfs.debianMirror", "deb.debian.org", "an http(s):// URL"),
        ("kubernetes.kindRootfs.suite", "x", "unknown field"),
        ("draDrivers", ["dra-example-driver"], "expected a mapping"),
        ("draDrivers.dra-example-driver.version", "2.1", "is not a Go module version"),
        ("draDrivers.dra-example-driver.driver", "gpu", "is not a DRA driver name"),
        ("draDrivers.dra-example-driver.driver", _DELETE, "is missing"),
        ("draDrivers.dra-example-driver.optional", _DELETE, "is missing"),
        ("draDrivers.dra-example-driver.namespace", "DRA_Driver", "is not a namespace name"),
        ("draDrivers.dra-example-driver.chart.moduleDir", "", "is empty"),
        ("draDrivers.dra-example-driver.chart.reference", "oci://x/y", "unknown field"),
        ("draDrivers.dra-example-driver.chart", _DELETE, "expected a mapping, got nothing"),
        ("draDrivers.dra-example-driver.image.tag", "v9.9.9", "does not match version"),
        ("draDrivers.dra-example-driver.image.repository", _DELETE, "is missing"),
        ("draDrivers.dra-example-driver.image.digest", "", "unknown field"),
        ("draDrivers.dra-example-driver.build.sum", _DELETE, "is missing: goModSum pins the go.mod"),
        ("draDrivers.dra-example-driver.build.sum", "sha256:abc", "a go.sum hash"),
        ("draDrivers.dra-example-driver.build.goModSum", "h1:short=", "a go.sum hash"),
        ("draDrivers.dra-example-driver.build.binaries", {}, "names no binary"),
        ("draDrivers.dra-example-driver.images", [], "unknown field"),
    ],
)
def test_bad_field_is_named(
    lock_data: dict[str, Any], write_lock: Any, field: str, value: Any, message: str
) -> None:
    path = write_lock(_break(lock_data, field, value))
    with pytest.raises(LockFileError) as info:
        load_lock(path)
    err = info.value
    assert message in str(err)
    expected_field = {
        "does not match appVersion": "components.kueue.chart.version",
        "unknown placeholder": "kubernetes.build.ldflags[0]",
        "Go build tags": "tools.containerd.build.binaries.ctr.tags",
        "expected `<header>.h: <Debian package>`": "tools.runc.build.needs.seccomp.h",
        "does not match version": "draDrivers.dra-example-driver.image.tag",
        "expected a Kubernetes version like v1.30.2": "kubernetes.lanes[0]",
        "second version of Kubernetes 1.30": "kubernetes.lanes[1]",
        "second version of Kubernetes 1.34": "kubernetes.lanes[0]",
    }.get(message, field)
    assert err.field == expected_field, str(err)
    assert str(path) in str(err)
    assert "Fix the lock file" in str(err)


def test_a_lane_is_the_default_pin_at_another_minor_s_version() -> None:
    lock = load_lock()
    minors = lock.kubernetes_minors()
    assert next(iter(minors)) == lock.kubernetes.minor and len(minors) == 1 + len(lock.kubernetes.lanes)
    minor, version = list(minors.items())[-1]
    lane = lock.on_kubernetes(minor).kubernetes
    assert lane.version == version
    builds = [lane.build, lane.node_build, lane.kind_build]
    assert all(b is not None and b.version == version and not b.sum for b in builds)
    assert lane.build.module == lock.kubernetes.build.module
    assert lane.build.ldflags == lock.kubernetes.build.ldflags
    assert lane.node_image is not None and (lane.node_image.tag, lane.node_image.digest) == (version, "")
    assert lock.on_kubernetes(f"v{minor}").kubernetes == lane
    assert lock.on_kubernetes(None) is lock
    assert lock.on_kubernetes(lock.kubernetes.minor) is lock
    assert lock.on_kubernetes(minor).components == lock.components


@pytest.mark.parametrize("minor", ["1.99", "1.35.4", "latest"])
def test_a_minor_the_lock_does_not_carry_is_refused_naming_those_it_does(minor: str) -> None:
    lock = load_lock()
    with pytest.raises(UnknownKubernetesMinor) as info:
        lock.on_kubernetes(minor)
    said = str(info.value)
    assert said.startswith(f"--kubernetes {minor}: {lock.path} carries Kubernetes "), said
    for carried, version in lock.kubernetes_minors().items():
        assert f"{carried} ({version}" in said, said
    assert "kubernetes.lanes" in said, said


def test_the_dra_driver_is_pinned_by_its_module_hash_and_built_only_when_asked() -> None:
    lock = load_lock()
    (driver,) = lock.dra_drivers.values()
    assert lock.dra_driver_for(driver.driver) is driver and lock.dra_driver_for("other.example.com") is None
    assert driver.build.version == driver.version == driver.image.tag
    assert driver.build.go_sum_lines() == [
        f"{driver.build.module} {driver.version} {driver.build.sum}",
        f"{driver.build.module} {driver.version}/go.mod {driver.build.go_mod_sum}",
    ]
    assert driver.name in lock.optional_builds(), "make conformance on local must never build it"
    assert lock.builds()[driver.name] == driver.build


def test_a_dra_driver_named_like_a_tool_or_pinned_twice_is_refused(
    lock_data: dict[str, Any], write_lock: Any
) -> None:
    drivers = lock_data["draDrivers"]
    again = _break(lock_data, "draDrivers.helm", copy.deepcopy(drivers["dra-example-driver"]))
    with pytest.raises(LockFileError, match="a tool or component already owns") as info:
        load_lock(write_lock(again))
    assert info.value.field == "draDrivers.helm"
    twice = _break(lock_data, "draDrivers.another", copy.deepcopy(drivers["dra-example-driver"]))
    with pytest.raises(LockFileError, match="is pinned twice") as info:
        load_lock(write_lock(twice))
    assert info.value.field.endswith(".driver")


def test_a_dra_driver_without_its_module_hash_is_refused(lock_data: dict[str, Any], write_lock: Any) -> None:
    build = "draDrivers.dra-example-driver.build"
    unpinned = _break(_break(lock_data, f"{build}.sum", _DELETE), f"{build}.goModSum", _DELETE)
    with pytest.raises(LockFileError, match="not against the checksum database") as info:
        load_lock(write_lock(unpinned))
    assert info.value.field == f"{build}.sum"


def test_a_lock_without_dra_drivers_still_loads(lock_data: dict[str, Any], write_lock: Any) -> None:
    """An older lock (the canary's start) pins none: the kind provider then installs none and says so."""
    lock = load_lock(write_lock(_break(lock_data, "draDrivers", _DELETE)))
    assert lock.dra_drivers == {} and "dra-example-driver" not in lock.builds()


def test_unparsable_yaml_names_the_line(write_lock: Any) -> None:
    path = write_lock("schemaVersion: 1\nkubernetes: [unclosed\n")
    with pytest.raises(LockFileError, match=r"not valid YAML at line \d+"):
        load_lock(path)


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(LockFileError, match="cannot be read"):
        load_lock(tmp_path / "nope.yaml")


def test_environment_lists_every_pin() -> None:
    env = load_lock().environment()
    assert env["kubernetes"].startswith("v1.")
    assert {"kueue.appVersion", "jobset.appVersion", "volcano.appVersion", "tool.helm"} <= set(env)
    assert env["testImage.cuda"] == load_lock().test_images["cuda"].ref


def test_a_recorded_cuda_digest_is_what_the_test_pulls(lock_data: dict[str, Any], write_lock: Any) -> None:
    digest = "sha256:" + "0" * 64
    path = write_lock(_break(lock_data, "testImages.cuda.digest", digest))
    cuda = load_lock(path).test_images["cuda"]
    assert cuda.ref == f"{cuda.repository}@{digest}"


def test_previous_pins_every_component_one_release_back() -> None:
    lock = load_lock()
    old = load_upgrade_source("previous", lock)
    assert old.kubernetes == lock.kubernetes and old.tools == lock.tools
    for name, comp in lock.components.items():
        was = old.components[name]
        assert was.app_version == comp.previous.app_version
        assert was.chart.version == comp.previous.chart_version
        assert was.build.version == comp.previous.app_version, "the old controllers are built at the old tag"
        assert was.build.module == comp.build.module and was.chart.module_dir == comp.chart.module_dir
        assert all(img.tag == comp.previous.app_version and not img.digest for img in was.images)


def _git(repo: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True)


def test_an_upgrade_starts_from_the_lock_at_a_git_ref(
    lock_data: dict[str, Any], write_lock: Any, tmp_path: Path
) -> None:
    """git:REF reads the lock as the pull request's base had it, beside the lock in use."""
    old = copy.deepcopy(lock_data)
    old["components"]["kueue"]["appVersion"] = "v0.0.1"
    old["components"]["kueue"]["chart"]["version"] = "0.0.1"
    path = write_lock(old)
    _git(tmp_path, "init", "-q")
    _git(tmp_path, "add", path.name)
    _git(tmp_path, "-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-qm", "base")
    path.write_text(default_lock_path().read_text())
    current = load_lock(path)
    base = load_upgrade_source("git:HEAD", current)
    assert base.components["kueue"].app_version == "v0.0.1"
    assert str(base.path) == "git:HEAD:charts-lock.yaml"
    assert load_upgrade_source(str(path), current).components["kueue"] == current.components["kueue"]


@pytest.mark.parametrize(
    ("source", "words"),
    [
        ("git:no-such-ref", "fetch the ref first"),
        ("git:", "names no git ref"),
        ("/nonexistent/charts-lock.yaml", "cannot be read"),
    ],
)
def test_an_unreadable_upgrade_source_says_what_to_do(source: str, words: str) -> None:
    with pytest.raises(LockFileError, match=words):
        load_upgrade_source(source, load_lock())


@pytest.mark.parametrize(
    ("ref", "repository", "tag", "digest"),
    [
        ("registry.example:5000/nvidia/cuda:12.6", "registry.example:5000/nvidia/cuda", "12.6", ""),
        ("registry.example:5000/cuda", "registry.example:5000/cuda", "", ""),
        (
            "localhost/kbatch-conformance/toolbox:abc@sha256:" + "1" * 64,
            "localhost/kbatch-conformance/toolbox",
            "abc",
            "sha256:" + "1" * 64,
        ),
    ],
)
def test_an_image_override_is_parsed_as_the_node_would_pull_it(
    ref: str, repository: str, tag: str, digest: str
) -> None:
    image = parse_image(ref)
    assert (image.repository, image.tag, image.digest) == (repository, tag, digest)
    assert image.ref == (f"{repository}@{digest}" if digest else ref)
