"""``kbc lock refresh`` and ``kbc lock check`` against real registries on 127.0.0.1.

No stand-in: distribution's registry at its pinned version holds every image the lock pins
(pushed through the registry API, as index + manifest) and the Kueue and JobSet charts
(packaged from their pinned modules and pushed with the pinned helm); Volcano's chart is
served from a ``helm repo index``-ed HTTP chart repository. ``--mirror`` points each
upstream at them, as an air-gapped user would. The digests written must be the ones the
registry and helm state; a tag moved afterwards must turn ``check`` red, naming the field.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import io
import json
import os
import re
import shutil
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from kbc import apis
from kbc.cluster.charts.helm import install_chart, pull_chart, released_app_version
from kbc.cluster.charts.images import pinned_images_file
from kbc.cluster.charts.source import kustomize_for, resolve_chart
from kbc.cluster.providers import LocalProvider
from kbc.errors import ChartError, DigestMismatchError, RegistryError
from kbc.kube import connect
from kbc.supply.digests import DigestField, digest_fields
from kbc.supply.lock import default_lock_path, load_lock
from kbc.supply.oci import http_chart_digest, manifest_digest, mirrored, parse_mirrors, registry_host
from kbc.supply.pins import ChartsLock, Component
from kbc.supply.toolchain import Toolchain
from tests.integration.commands import kbc
from tests.integration.registries import Registry, chart_repository, running_registry

REPO = Path(__file__).resolve().parents[2]
DEPLOYMENT = apis.Kind("apps", "v1", "Deployment")
_HELM_DIGEST = re.compile(r"^Digest: (sha256:[0-9a-f]{64})$", re.MULTILINE)


@dataclass(frozen=True)
class Upstreams:
    """Every upstream of the lock, mirrored on 127.0.0.1, and the digests they serve."""

    mirrors: list[str]
    expected: dict[str, str]
    """Digest field path → what the mirror serves for it."""
    registry: Registry
    registry_mirrors: dict[str, str]


def package(lock: ChartsLock, name: str, helm: Path, into: Path) -> Path:
    """The pinned chart of *name*, from its module, packaged as ``<chart>-<version>.tgz``."""
    component = lock.components[name]
    source = resolve_chart(
        component, "module", into / f"{name}-work", lock.components, kustomize_for(component, lock)
    )
    into.mkdir(parents=True, exist_ok=True)
    subprocess.run(
        [str(helm), "package", str(source.path), "--destination", str(into)], check=True, capture_output=True
    )
    return into / f"{component.chart.name}-{component.chart.version}.tgz"


def upstream_hosts(lock: ChartsLock, fields: list[DigestField]) -> set[str]:
    """The registries the lock's images (its digest *fields*) and OCI charts name."""
    hosts = {registry_host(f.reference) for f in fields if f.kind == "image"}
    oci = [c.chart.reference for c in lock.components.values() if c.chart.reference.startswith("oci://")]
    return hosts | {registry_host(reference) for reference in oci}


@pytest.fixture(scope="module")
def upstreams(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Upstreams]:
    lock = load_lock()
    work = tmp_path_factory.mktemp("supply-chain")
    helm = Toolchain(lock).ensure(["helm"])["helm"]
    fields = digest_fields(default_lock_path().read_text())
    with running_registry(lock, work / "registry") as registry:
        registry_mirrors = {
            "registry.k8s.io": f"{registry.host}/k8s",
            "docker.io": f"{registry.host}/dockerhub",
        }
        # Every other registry the lock's images and charts name (ghcr.io: Kubeflow Trainer's) plays
        # upstream under a path of its own too.
        for host in upstream_hosts(lock, fields):
            registry_mirrors.setdefault(host, f"{registry.host}/{host}")
        mirrors = [f"{source}={target}" for source, target in registry_mirrors.items()]
        parsed = parse_mirrors(mirrors)
        expected: dict[str, str] = {}
        for field in fields:
            if field.kind == "image":
                image = mirrored(field.reference, parsed).split("/", 1)[1]
                expected[field.path] = registry.push_image(image, field.version)
        # Each component's chart where its reference says: an OCI registry (pushed with helm), or an HTTP
        # chart repository (one per upstream URL, served here).
        repositories: dict[str, Path] = {}
        for name, component in lock.components.items():
            chart = component.chart
            archive = package(lock, name, helm, work / "charts" / name)
            if chart.reference.startswith("oci://"):
                target = (
                    "oci://" + mirrored(chart.reference.removeprefix("oci://"), parsed).rpartition("/")[0]
                )
                pushed = subprocess.run(
                    [str(helm), "push", str(archive), target, "--plain-http"],
                    capture_output=True,
                    text=True,
                    check=False,
                )
                assert pushed.returncode == 0, pushed.stderr
                found = _HELM_DIGEST.search(pushed.stdout + pushed.stderr)
                assert found, f"helm push reported no digest:\n{pushed.stdout}{pushed.stderr}"
                expected[f"components.{name}.chart.digest"] = found.group(1)
            else:
                upstream = chart.reference.rpartition("/")[0]
                repository = repositories.setdefault(upstream, work / f"chart-repository-{len(repositories)}")
                repository.mkdir(exist_ok=True)
                shutil.copy(archive, repository / archive.name)
                expected[f"components.{name}.chart.digest"] = (
                    "sha256:" + hashlib.sha256(archive.read_bytes()).hexdigest()
                )
        with contextlib.ExitStack() as served:
            for upstream, repository in repositories.items():
                url = served.enter_context(chart_repository(repository, helm))
                mirrors.append(f"{upstream}={url}")
            assert set(expected) == {f.path for f in fields}, "every digest field has an upstream"
            yield Upstreams(mirrors, expected, registry, registry_mirrors)


@pytest.fixture
def lock_copy(tmp_path: Path) -> Path:
    path = tmp_path / "charts-lock.yaml"
    shutil.copy(default_lock_path(), path)
    return path


def versions(lock: ChartsLock) -> list[str]:
    """Every version and tag the lock pins (and no digest)."""
    pinned = [lock.kubernetes.version, *(pin.version for pin in lock.tools.values())]
    for component in lock.components.values():
        pinned += [component.app_version, component.chart.version, component.previous.app_version]
        pinned += [image.tag for image in component.images]
    return pinned + [image.tag for image in lock.test_images.values()]


def mirror_args(upstreams: Upstreams) -> list[str]:
    return [arg for mirror in upstreams.mirrors for arg in ("--mirror", mirror)]


def test_refresh_writes_the_digests_the_registries_serve_and_check_agrees(
    upstreams: Upstreams, lock_copy: Path
) -> None:
    before = load_lock(lock_copy)
    refreshed = kbc("--lock", str(lock_copy), "lock", "refresh", *mirror_args(upstreams))
    assert refreshed.returncode == 0, refreshed.stdout + refreshed.stderr
    written = {f.path: f.value for f in digest_fields(lock_copy.read_text())}
    assert written == upstreams.expected
    cuda = upstreams.expected["testImages.cuda.digest"]
    cuda_image = before.test_images["cuda"].repository
    assert f"wrote   testImages.cuda.digest ({cuda_image} " in refreshed.stdout, refreshed.stdout
    assert f"(none) → {cuda}" in refreshed.stdout, refreshed.stdout
    assert versions(load_lock(lock_copy)) == versions(before), "no version may change"
    checked = kbc("--lock", str(lock_copy), "lock", "check", *mirror_args(upstreams))
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert f"all {len(written)} digests match their registries" in checked.stderr


def test_check_fails_naming_a_missing_digest_and_a_tag_that_moved(
    upstreams: Upstreams, lock_copy: Path
) -> None:
    assert kbc("--lock", str(lock_copy), "lock", "refresh", *mirror_args(upstreams)).returncode == 0
    lock = load_lock(lock_copy)
    kueue_image = lock.components["kueue"].images[0]
    # The release's tag now points at other content, and one digest was never recorded.
    repository = mirrored(kueue_image.repository, parse_mirrors(upstreams.mirrors)).split("/", 1)[1]
    moved = upstreams.registry.push_image(repository, kueue_image.tag, build=2)
    assert moved != kueue_image.digest
    lock_copy.write_text(lock_copy.read_text().replace(lock.test_images["cuda"].digest, "", 1))
    try:
        checked = kbc("--lock", str(lock_copy), "lock", "check", *mirror_args(upstreams))
    finally:
        upstreams.registry.push_image(repository, kueue_image.tag)  # as the other tests expect it
    assert checked.returncode == 1, checked.stdout + checked.stderr
    problems = [line for line in checked.stdout.splitlines() if line.startswith("PROBLEM")]
    assert len(problems) == 2, checked.stdout
    (missing,) = [p for p in problems if "testImages.cuda.digest" in p]
    assert "no digest recorded; the registry serves sha256:" in missing
    (stale,) = [p for p in problems if "components.kueue.images[0].digest" in p]
    assert f"the lock pins {kueue_image.digest}, the registry serves {moved}" in stale
    assert "run kbc lock refresh" in checked.stderr


def test_refresh_that_cannot_reach_a_registry_changes_nothing(upstreams: Upstreams, lock_copy: Path) -> None:
    text = lock_copy.read_text()
    only_registry = [
        m for m in upstreams.mirrors if not m.startswith("https://")
    ]  # the chart repository left out
    refreshed = kbc(
        "--lock", str(lock_copy), "lock", "refresh", *[a for m in only_registry for a in ("--mirror", m)]
    )
    assert refreshed.returncode == 1
    assert "could not be resolved" in refreshed.stderr and "is unchanged" in refreshed.stderr
    assert lock_copy.read_text() == text


@pytest.mark.parametrize("name", ["kueue", "volcano"])
def test_a_chart_pull_is_verified_against_the_refreshed_digest_and_fails_closed_otherwise(
    upstreams: Upstreams, tmp_path: Path, name: str
) -> None:
    """The real helm pulls through the mirror: an OCI chart (Kueue) is checked by the manifest digest helm
    reports, an HTTP repository's (Volcano) by the archive's sha256; the lock pins what refresh wrote."""
    lock = load_lock()
    helm = Toolchain(lock).ensure(["helm"])["helm"]
    mirrors = parse_mirrors(upstreams.mirrors)
    component = lock.components[name]
    pinned = upstreams.expected[f"components.{name}.chart.digest"]
    pulled = pull_chart(helm, with_chart_digest(component, pinned), tmp_path / "ok", mirrors=mirrors)
    assert pulled.verified and pulled.digest == pinned
    wrong = "sha256:" + "0" * 64
    with pytest.raises(DigestMismatchError, match="nothing was installed") as info:
        pull_chart(helm, with_chart_digest(component, wrong), tmp_path / "wrong", mirrors=mirrors)
    assert pinned in str(info.value) and f"components.{name}.chart.digest" in str(info.value)
    with pytest.raises(DigestMismatchError, match="records no digest"):
        pull_chart(helm, with_chart_digest(component, ""), tmp_path / "unpinned", mirrors=mirrors)
    accepted = pull_chart(
        helm, with_chart_digest(component, ""), tmp_path / "opted-in", allow_unpinned=True, mirrors=mirrors
    )
    assert not accepted.verified and accepted.digest == pinned


def with_chart_digest(component: Component, digest: str) -> Component:
    return dataclasses.replace(component, chart=dataclasses.replace(component.chart, digest=digest))


@pytest.fixture
def bare_cluster() -> Iterator[Path]:
    """A local cluster of its own, kwok nodes and no component: the "existing" cluster a chart goes on."""
    provider = LocalProvider(load_lock(), out=io.StringIO())
    name = f"kbc-selftest-helm-{os.getpid()}"
    cluster = provider.up(name, components=())
    try:
        yield cluster.kubeconfig
    finally:
        provider.down(name)


def test_a_pinned_chart_from_the_registry_is_installed_with_helm_and_its_objects_applied(
    upstreams: Upstreams, bare_cluster: Path, tmp_path: Path
) -> None:
    """What the kind and existing providers do per component: pull through the mirror, verify the digest,
    ``helm upgrade --install`` with the pinned helm onto a real API server. The controller's pod cannot
    run on kwok nodes, so this asserts what helm applied (release, CRDs, Deployment, webhooks), not that
    JobSet works; a digest mismatch must leave the cluster without the chart."""
    lock = load_lock()
    helm = Toolchain(lock).ensure(["helm"])["helm"]
    mirrors = parse_mirrors(upstreams.mirrors)
    jobset = lock.components["jobset"]
    wrong = with_chart_digest(jobset, "sha256:" + "0" * 64)
    with pytest.raises(DigestMismatchError):
        pull_chart(helm, wrong, tmp_path / "wrong", mirrors=mirrors)
    with connect(bare_cluster) as kube:
        assert kube.find(apis.CUSTOM_RESOURCE_DEFINITION, "jobsets.jobset.x-k8s.io") is None
    pinned = with_chart_digest(jobset, upstreams.expected["components.jobset.chart.digest"])
    pulled = pull_chart(helm, pinned, tmp_path / "ok", mirrors=mirrors)
    # Values files layer in order, the last one winning, as --values does.
    first, second = tmp_path / "first.yaml", tmp_path / "second.yaml"
    first.write_text("kbcLayer: first\nkbcOnlyFirst: kept\n")
    second.write_text("kbcLayer: second\n")
    unreachable = tmp_path / "unreachable-kubeconfig"
    config = yaml.safe_load(bare_cluster.read_text())
    config["clusters"][0]["cluster"]["server"] = "https://127.0.0.1:9"  # nothing listens on discard
    unreachable.write_text(yaml.safe_dump(config))
    with pytest.raises(ChartError, match=r"jobset: helm upgrade --install failed: .*Error"):
        install_chart(helm, unreachable, None, pinned, pulled.archive, [], timeout_s=10)
    # The lock's image, refreshed and mirrored, as the provider layers it between harness and user values.
    image = pinned.images[0]
    pinned = dataclasses.replace(
        pinned,
        images=(dataclasses.replace(image, digest=upstreams.expected["components.jobset.images[0].digest"]),),
    )
    images_file, images = pinned_images_file(pinned, mirrors, tmp_path / "images")
    install_chart(
        helm, bare_cluster, None, pinned, pulled.archive, [images_file, first, second], timeout_s=180
    )
    listed = subprocess.run(
        [str(helm), "list", "--namespace", jobset.namespace, "--kubeconfig", str(bare_cluster), "-o", "json"],
        capture_output=True,
        text=True,
        check=True,
    )
    (release,) = json.loads(listed.stdout)
    assert release["name"] == "jobset" and release["status"] == "deployed", release
    assert release["chart"] == f"{jobset.chart.name}-{jobset.chart.version}", release
    supplied = subprocess.run(
        [
            str(helm),
            "get",
            "values",
            "jobset",
            "-n",
            jobset.namespace,
            "--kubeconfig",
            str(bare_cluster),
            "-o",
            "json",
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    assert json.loads(supplied.stdout) == {"kbcLayer": "second", "kbcOnlyFirst": "kept", **images.values}
    # What the kind/existing upgrade reads to know what it upgrades from.
    assert released_app_version(helm, bare_cluster, None, jobset) == jobset.app_version
    assert released_app_version(helm, bare_cluster, None, lock.components["kueue"]) == ""
    with connect(bare_cluster) as kube:
        assert kube.find(apis.CUSTOM_RESOURCE_DEFINITION, "jobsets.jobset.x-k8s.io") is not None
        deployments = kube.list(DEPLOYMENT, namespace=jobset.namespace)
        assert deployments, f"helm applied no Deployment in {jobset.namespace}"
        managed = {d["metadata"].get("labels", {}).get("app.kubernetes.io/managed-by") for d in deployments}
        assert managed == {"Helm"}, managed
        # The node would pull the lock's image from the mirror, by digest (the module chart alone names a
        # staging ":main" image).
        ran = {c["image"] for d in deployments for c in d["spec"]["template"]["spec"]["containers"]}
        digest = pinned.images[0].digest
        assert ran == {f"{upstreams.registry.host}/k8s/jobset/jobset:{image.tag}@{digest}"}, ran
        webhooks = [
            w["metadata"]["name"]
            for kind in (apis.MUTATING_WEBHOOK_CONFIGURATION, apis.VALIDATING_WEBHOOK_CONFIGURATION)
            for w in kube.list(kind)
        ]
        assert any("jobset" in name for name in webhooks), webhooks


def test_an_image_or_chart_missing_from_a_mirror_names_it_and_how_to_fill_the_mirror(
    upstreams: Upstreams,
) -> None:
    mirrors = parse_mirrors(upstreams.mirrors)
    with pytest.raises(RegistryError) as image:
        manifest_digest("registry.k8s.io/kueue/kueue", "v0.0.0-never-pushed", mirrors)
    said = str(image.value)
    assert "has no k8s/kueue/kueue:v0.0.0-never-pushed (404)" in said
    assert "the mirror of registry.k8s.io/kueue/kueue:v0.0.0-never-pushed" in said
    assert "kbc images build --push REGISTRY" in said
    volcano = load_lock().components["volcano"].chart
    with pytest.raises(RegistryError) as chart:
        http_chart_digest(volcano.reference, "0.0.0-never-pushed", mirrors)
    assert "lists no volcano 0.0.0-never-pushed: put the chart there" in str(chart.value)
