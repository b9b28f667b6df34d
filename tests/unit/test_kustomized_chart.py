"""A component that ships a kustomize overlay instead of a chart (the training operator): rendered with
the pinned kustomize into a chart the harness installs like any other, its CRDs in ``crds/``, its image a
value; an overlay that is not what the lock says is refused, naming the field and what to do. A chart that
lacks the component's own custom resources at its version (Trainer v2.1.0's runtimes) gets them from the
module's kustomize folder, as that release's install applied them."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest
import yaml

from kbc import components as registry
from kbc.cluster.charts import kustomized
from kbc.cluster.charts._yaml import load_all
from kbc.cluster.charts.kustomized import kustomized_chart
from kbc.cluster.charts.package import package_chart
from kbc.cluster.charts.source import kustomize_for, render, resolve_chart
from kbc.components.trainer import CLUSTER_TRAINING_RUNTIME, TORCH_DISTRIBUTED
from kbc.errors import ChartError
from kbc.labels import INIT_IMAGE
from kbc.supply.lock import load_lock
from kbc.supply.pins import ChartsLock, Component, Image
from kbc.supply.toolchain import Toolchain
from tests.locks import lock_with


@pytest.fixture(scope="module")
def kustomize(charts_lock: ChartsLock) -> Path:
    found = kustomize_for(charts_lock.components["trainingoperator"], charts_lock)
    assert found is not None
    return found


def test_the_training_operator_s_overlay_becomes_a_chart_of_the_pinned_name_and_version(
    charts_lock: ChartsLock, kustomize: Path, tmp_path: Path
) -> None:
    operator = charts_lock.components["trainingoperator"]
    source = resolve_chart(operator, "module", tmp_path, charts_lock.components, kustomize)
    assert source.path == tmp_path / "chart" and source.digest.startswith("h1:")
    assert "kustomize overlay manifests/overlays/standalone" in source.note
    meta = yaml.safe_load((source.path / "Chart.yaml").read_text())
    pinned = (operator.chart.name, operator.chart.version, operator.app_version)
    assert (meta["name"], meta["version"], meta["appVersion"]) == pinned
    crds = [d["metadata"]["name"] for d in load_all((source.path / "crds" / "crds.yaml").read_text())]
    assert "pytorchjobs.kubeflow.org" in crds
    template = (source.path / "templates" / "manifests.yaml").read_text()
    assert ".Values.image.repository" in template and "kind: Namespace" not in template
    values = yaml.safe_load((source.path / "values.yaml").read_text())
    assert values == {
        "image": {"repository": operator.images[0].repository, "tag": operator.app_version},
        "extraArgs": [],
    }


def test_the_training_operator_takes_its_kind_arguments_as_a_value_and_none_elsewhere(
    charts_lock: ChartsLock, kustomize: Path, tmp_path: Path
) -> None:
    operator = charts_lock.components["trainingoperator"]
    source = resolve_chart(operator, "module", tmp_path / "work", charts_lock.components, kustomize)
    helm = Toolchain(charts_lock).ensure(["helm"])["helm"]

    def args(*values: str) -> list[list[str]]:
        files = []
        for number, text in enumerate(values):
            files.append(tmp_path / f"values-{number}.yaml")
            files[-1].write_text(text)
        objects = render(helm, source, "trainingoperator", operator.namespace, files, tmp_path / "render.log")
        deployments = [o for o in objects if o["kind"] == "Deployment"]
        return [c.get("args") for d in deployments for c in d["spec"]["template"]["spec"]["containers"]]

    assert args() == [[]], "upstream gives the controller no arguments"
    kind = yaml.safe_dump(dict(registry.get("trainingoperator").kind_values))
    (flag,) = args(kind)[0]
    assert flag == f"--pytorch-init-container-image={INIT_IMAGE}", flag


def test_a_chart_component_needs_no_kustomize(charts_lock: ChartsLock) -> None:
    assert kustomize_for(charts_lock.components["kueue"], charts_lock) is None


def _overlay(root: Path, namespace: str, image: str) -> Path:
    root.mkdir(parents=True)
    (root / "kustomization.yaml").write_text(
        yaml.safe_dump({"namespace": namespace, "resources": ["ns.yaml", "deploy.yaml"]})
    )
    (root / "ns.yaml").write_text(
        yaml.safe_dump({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}})
    )
    pod = {"containers": [{"name": "m", "image": image}]}
    deployment = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "m"},
        "spec": {
            "selector": {"matchLabels": {"a": "b"}},
            "template": {"metadata": {"labels": {"a": "b"}}, "spec": pod},
        },
    }
    (root / "deploy.yaml").write_text(yaml.safe_dump(deployment))
    return root


def _component(charts_lock: ChartsLock) -> Component:
    operator = charts_lock.components["trainingoperator"]
    return dataclasses.replace(operator, images=(Image("example.test/op", operator.app_version, ""),))


def test_an_overlay_of_another_namespace_is_refused_naming_both(
    charts_lock: ChartsLock, kustomize: Path, tmp_path: Path
) -> None:
    overlay = _overlay(tmp_path / "o", "elsewhere", "example.test/op:v1")
    with pytest.raises(ChartError, match=r"installs into namespace 'elsewhere'.*namespace is 'kubeflow'"):
        kustomized_chart(_component(charts_lock), overlay, kustomize, tmp_path / "chart")


def test_an_overlay_that_runs_another_image_is_refused_naming_the_lock_s(
    charts_lock: ChartsLock, kustomize: Path, tmp_path: Path
) -> None:
    overlay = _overlay(tmp_path / "o", "kubeflow", "example.test/other:v1")
    with pytest.raises(ChartError, match=r"no Deployment .* runs example.test/op, the first image"):
        kustomized_chart(_component(charts_lock), overlay, kustomize, tmp_path / "chart")
    made = kustomized_chart(
        _component(charts_lock),
        _overlay(tmp_path / "p", "kubeflow", "example.test/op:v1"),
        kustomize,
        tmp_path / "c",
    )
    assert "example.test/op" not in (made / "templates" / "manifests.yaml").read_text()


def test_a_module_folder_without_a_kustomization_is_refused_naming_the_field(
    charts_lock: ChartsLock, kustomize: Path, tmp_path: Path
) -> None:
    with pytest.raises(ChartError, match=r"chart.moduleDir: .* has no kustomization.yaml"):
        kustomized_chart(_component(charts_lock), tmp_path, kustomize, tmp_path / "chart")


def test_text_that_looks_like_a_go_template_stays_text(
    charts_lock: ChartsLock, kustomize: Path, tmp_path: Path
) -> None:
    overlay = _overlay(tmp_path / "o", "kubeflow", "example.test/op:v1")
    (overlay / "cm.yaml").write_text(
        yaml.safe_dump(
            {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {"t": "{{ x }}"}}
        )
    )
    kustomization = yaml.safe_load((overlay / "kustomization.yaml").read_text())
    kustomization["resources"].append("cm.yaml")
    (overlay / "kustomization.yaml").write_text(yaml.safe_dump(kustomization))
    made = kustomized_chart(_component(charts_lock), overlay, kustomize, tmp_path / "chart")
    assert '{{ "{{" }} x }}' in (made / "templates" / "manifests.yaml").read_text()


def test_a_trainer_whose_chart_lacks_its_runtimes_gets_them_from_its_module_in_both_installs(
    charts_lock: ChartsLock, tmp_path: Path
) -> None:
    old = load_lock(lock_with(charts_lock, tmp_path, "trainer", "2.1.0"))
    trainer = old.components["trainer"]
    kustomize = kustomize_for(trainer, old)
    assert kustomize is not None
    source = resolve_chart(trainer, "module", tmp_path / "work", old.components, kustomize)
    assert "renders no ClusterTrainingRuntime: added from the module's manifests/base/runtimes" in source.note
    helm = Toolchain(old).ensure(["helm"])["helm"]

    def rendered(*values: str) -> list[dict[str, Any]]:
        files = []
        for number, text in enumerate(values):
            files.append(tmp_path / f"values-{number}.yaml")
            files[-1].write_text(text)
        return render(helm, source, "trainer", trainer.namespace, files, tmp_path / "render.log")

    def runtimes(objects: list[dict[str, Any]]) -> list[str]:
        return [o["metadata"]["name"] for o in objects if o["kind"] == CLUSTER_TRAINING_RUNTIME.kind]

    def policies(objects: list[dict[str, Any]]) -> set[str]:
        """Trainer's validating webhooks' failure policies (the API server's default is Fail); not those of
        the JobSet its chart may carry."""
        validating = [o for o in objects if o["kind"] == "ValidatingWebhookConfiguration"]
        hooks = [w for o in validating for w in o["webhooks"] if w["name"].endswith(".trainer.kubeflow.org")]
        return {w.get("failurePolicy", "Fail") for w in hooks}

    full = rendered()
    first = rendered(yaml.safe_dump(dict(registry.get("trainer").first_install)))
    assert TORCH_DISTRIBUTED in runtimes(full) and runtimes(first) == runtimes(full), (
        "both installs carry the runtimes: the second adds no object that Trainer's webhook must admit"
    )
    assert policies(full) == {"Fail"} and policies(first) == {"Ignore"}, (
        "the first install, before Trainer's pod answers, ignores its validating webhooks' failures; the "
        "second is upstream's"
    )


def test_the_pinned_trainer_s_chart_carries_its_runtimes_and_gets_nothing_added(
    charts_lock: ChartsLock, tmp_path: Path
) -> None:
    trainer = charts_lock.components["trainer"]
    source = resolve_chart(
        trainer, "module", tmp_path, charts_lock.components, kustomize_for(trainer, charts_lock)
    )
    assert "manifests/base/runtimes" not in source.note
    assert not (source.path / "templates" / "kbc-module-resources.yaml").exists()


def test_a_chart_the_harness_renders_differently_is_packaged_again(
    charts_lock: ChartsLock, kustomize: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The packaged chart is cached by what it holds: a harness that lays out the same overlay differently
    (a new value) never installs the archive an older harness packaged."""
    monkeypatch.setenv("KBC_CACHE_DIR", str(tmp_path / "cache"))
    operator = charts_lock.components["trainingoperator"]
    helm = Toolchain(charts_lock).ensure(["helm"])["helm"]
    first = package_chart(operator, helm, charts_lock.components, kustomize)
    assert package_chart(operator, helm, charts_lock.components, kustomize) == first, (
        "the same chart is reused"
    )
    monkeypatch.setattr(kustomized, "_ARGS_TEMPLATE", "{{ list | toJson }}")
    second = package_chart(operator, helm, charts_lock.components, kustomize)
    assert second != first and first.is_file() and second.is_file()
