"""Each pinned chart, rendered by the pinned helm, runs exactly the lock's images through ``--mirror``.

The values keys that name a chart's images are the chart's own; this renders the real charts (from
their pinned modules, as ``kbc`` resolves them) with the harness's values and the values
:func:`kbc.cluster.charts.images.pinned_images` writes, and reads every container image of every object.
Without those values the same charts run other images (staging repositories, an older tag), which
is the negative control: a wrong key leaves the chart's own image in place and fails here.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest

from kbc import components as registry
from kbc.cluster.charts.images import describe, pinned_images, pinned_images_file
from kbc.cluster.charts.source import kustomize_for, render, resolve_chart
from kbc.cluster.components import values_files
from kbc.components import OneImage
from kbc.errors import ChartError
from kbc.supply.lock import load_lock
from kbc.supply.oci import mirrored, parse_mirrors
from kbc.supply.pins import Component
from kbc.supply.toolchain import Toolchain

MIRRORS = parse_mirrors(
    ["registry.k8s.io=127.0.0.1:5000/k8s", "docker.io=mirror.example:443/hub", "ghcr.io=127.0.0.1:5000/ghcr"]
)
# The kinds that run a chart's controllers. A custom resource's pod template is not one: Trainer's chart
# renders ClusterTrainingRuntimes whose image (PyTorch's) is what a TrainJob runs unless it names its own.
WORKLOAD_KINDS = ("Deployment", "DaemonSet", "StatefulSet", "Job", "CronJob", "Pod")


def with_digests(component: Component) -> Component:
    """*component* with a distinct made-up digest on each image (what ``kbc lock refresh`` would write)."""
    images = tuple(
        dataclasses.replace(image, digest="sha256:" + f"{i + 1:x}" * 64)
        for i, image in enumerate(component.images)
    )
    return dataclasses.replace(component, images=images)


def container_images(objects: list[dict[str, Any]]) -> set[str]:
    found: set[str] = set()

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            for key in ("containers", "initContainers"):
                for container in node.get(key) or []:
                    found.add(container["image"])
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    for obj in objects:
        if obj.get("kind") in WORKLOAD_KINDS:
            walk(obj.get("spec", {}))
    return found


@pytest.fixture(scope="module")
def helm() -> Path:
    return Toolchain(load_lock()).ensure(["helm"])["helm"]


@pytest.mark.parametrize("name", registry.names())
def test_the_chart_runs_the_pinned_images_through_the_mirror(helm: Path, tmp_path: Path, name: str) -> None:
    lock = load_lock()
    component = with_digests(lock.components[name])
    chart = resolve_chart(
        component, "module", tmp_path / "chart", lock.components, kustomize_for(component, lock)
    )
    values_file, pinned = pinned_images_file(component, MIRRORS, tmp_path)
    layered = values_files(name, {}, pinned=[values_file])
    rendered = container_images(render(helm, chart, name, component.namespace, layered, tmp_path / "log"))
    # A chart that writes registry/name:tag for all its images (Volcano's) lets no digest ride along.
    by_digest = isinstance(registry.get(name).chart_images, OneImage)
    expected = {
        f"{mirrored(image.repository, MIRRORS)}:{image.tag}" + (f"@{image.digest}" if by_digest else "")
        for image in component.images
    }
    assert rendered == expected, describe(pinned)
    assert set(pinned.references) == expected and pinned.by_digest == by_digest
    if not by_digest:
        assert "no per-image digest" in describe(pinned)

    # The negative control: the chart's own values name other images.
    own = container_images(
        render(helm, chart, name, component.namespace, values_files(name, {}), tmp_path / "log")
    )
    assert own and not own & rendered, f"the {name} chart already runs {own} without the pinned values"


def test_volcano_images_that_cannot_share_one_registry_and_tag_are_refused() -> None:
    volcano = load_lock().components["volcano"]
    first, *rest = volcano.images
    split = dataclasses.replace(volcano, images=(dataclasses.replace(first, tag="v0.0.1"), *rest))
    with pytest.raises(ChartError, match="one registry and one tag") as info:
        pinned_images(split)
    assert "v0.0.1" in str(info.value)
    unknown = dataclasses.replace(
        volcano, images=(*volcano.images, dataclasses.replace(first, repository="x/y/vc-agent"))
    )
    with pytest.raises(ChartError, match="has no value for"):
        pinned_images(unknown)
