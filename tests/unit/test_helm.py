"""Chart pulls are verified against the lock's digest before anything is installed."""

from __future__ import annotations

import dataclasses
import hashlib
import io
import json
import tarfile
from pathlib import Path

import pytest

from kbc.charts.helm import chart_crds, install_chart, pull_chart, released_app_version
from kbc.errors import ChartError, DigestMismatchError
from kbc.lockfile import Component, load_lock

FAKE_HELM = """#!/usr/bin/env python3
# Stand-in for helm: records its arguments; `pull` writes a fixed archive named like helm's and, for an
# OCI chart, reports a fixed manifest digest as helm does.
import json, os, sys
args = sys.argv[1:]
with open(os.environ["FAKE_HELM_LOG"], "a") as log:
    log.write(json.dumps(args) + "\\n")
if os.environ.get("FAKE_HELM_FAIL"):
    sys.stderr.write("Error: " + os.environ["FAKE_HELM_FAIL"] + "\\n")
    sys.exit(1)
if args[0] == "pull":
    dest = args[args.index("--destination") + 1]
    version = args[args.index("--version") + 1]
    name = args[1].rsplit("/", 1)[-1]
    with open(os.path.join(dest, f"{name}-{version}.tgz"), "wb") as fh:
        fh.write(b"chart-archive-bytes")
    if args[1].startswith("oci://"):
        print("Pulled: " + args[1] + ":" + version)
        print("Digest: sha256:" + "d" * 64)
"""
ARCHIVE_DIGEST = "sha256:" + hashlib.sha256(b"chart-archive-bytes").hexdigest()
MANIFEST_DIGEST = "sha256:" + "d" * 64


@pytest.fixture
def helm(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "helm"
    path.write_text(FAKE_HELM)
    path.chmod(0o755)
    monkeypatch.setenv("FAKE_HELM_LOG", str(tmp_path / "helm.log"))
    return path


def calls(tmp_path: Path) -> list[list[str]]:
    return [json.loads(line) for line in (tmp_path / "helm.log").read_text().splitlines()]


def with_digest(component: Component, digest: str) -> Component:
    return dataclasses.replace(component, chart=dataclasses.replace(component.chart, digest=digest))


def test_oci_chart_with_the_pinned_digest_is_accepted(helm: Path, tmp_path: Path) -> None:
    kueue = with_digest(load_lock().components["kueue"], MANIFEST_DIGEST)
    pulled = pull_chart(helm, kueue, tmp_path / "charts")
    assert pulled.verified and pulled.digest == MANIFEST_DIGEST
    assert calls(tmp_path)[0][:4] == ["pull", kueue.chart.reference, "--version", kueue.chart.version]


def test_http_repository_chart_is_pulled_by_name(helm: Path, tmp_path: Path) -> None:
    volcano = with_digest(load_lock().components["volcano"], ARCHIVE_DIGEST)
    pull_chart(helm, volcano, tmp_path / "charts")
    args = calls(tmp_path)[0]
    assert args[:2] == ["pull", "volcano"]
    assert args[args.index("--repo") + 1] == volcano.chart.reference.rsplit("/", 1)[0]


def test_a_digest_mismatch_fails_closed(helm: Path, tmp_path: Path) -> None:
    kueue = with_digest(load_lock().components["kueue"], "sha256:" + "0" * 64)
    with pytest.raises(DigestMismatchError, match="nothing was installed") as info:
        pull_chart(helm, kueue, tmp_path / "charts")
    assert MANIFEST_DIGEST in str(info.value) and "components.kueue.chart.digest" in str(info.value)
    assert [c[0] for c in calls(tmp_path)] == ["pull"], "no install may follow a mismatch"


def test_an_unrecorded_digest_needs_an_explicit_opt_in(helm: Path, tmp_path: Path) -> None:
    jobset = with_digest(load_lock().components["jobset"], "")
    with pytest.raises(DigestMismatchError, match="records no digest"):
        pull_chart(helm, jobset, tmp_path / "charts")
    pulled = pull_chart(helm, jobset, tmp_path / "charts2", allow_unpinned=True)
    assert not pulled.verified and pulled.digest == MANIFEST_DIGEST


def test_install_layers_values_and_names_the_component_on_failure(
    helm: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    kueue = load_lock().components["kueue"]
    values = [tmp_path / "a.yaml", tmp_path / "b.yaml"]
    install_chart(helm, tmp_path / "kubeconfig", "ctx", kueue, tmp_path / "kueue.tgz", values)
    args = calls(tmp_path)[-1]
    assert args[:4] == ["upgrade", "--install", "kueue", str(tmp_path / "kueue.tgz")]
    assert args[args.index("--namespace") + 1] == kueue.namespace
    assert args[args.index("--kube-context") + 1] == "ctx"
    assert [args[i + 1] for i, a in enumerate(args) if a == "--values"] == [str(p) for p in values]
    monkeypatch.setenv("FAKE_HELM_FAIL", "UPGRADE FAILED: timed out")
    with pytest.raises(ChartError, match="kueue: helm upgrade --install failed: Error: UPGRADE FAILED"):
        install_chart(helm, tmp_path / "kubeconfig", None, kueue, tmp_path / "kueue.tgz", [])


def test_chart_crds_are_the_crds_folder_only(tmp_path: Path) -> None:
    """What the kind/existing upgrade applies before ``helm upgrade``: the chart's ``crds/``, nothing else."""
    crd = "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata: {name: jobsets.x}\n"
    files = {
        "jobset/Chart.yaml": "name: jobset\n",
        "jobset/crds/jobset.yaml": crd + "---\n",
        "jobset/templates/crd-in-templates.yaml": crd.replace("jobsets.x", "templated.x"),
        "jobset/charts/sub/crds/other.yaml": crd.replace("jobsets.x", "subchart.x"),
    }
    archive = tmp_path / "jobset.tgz"
    with tarfile.open(archive, "w:gz") as tar:
        for name, text in files.items():
            data = text.encode()
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    assert [c["metadata"]["name"] for c in chart_crds(archive)] == ["jobsets.x"]


def test_the_released_app_version_is_read_from_helm(
    helm: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    jobset = load_lock().components["jobset"]
    answer = 'if args[0] == "get":\n    print(json.dumps({"appVersion": os.environ["FAKE_APP_VERSION"]}))\n'
    script = helm.read_text().replace('if args[0] == "pull":', answer + 'if args[0] == "pull":')
    helm.write_text(script)
    monkeypatch.setenv("FAKE_APP_VERSION", jobset.app_version.removeprefix("v"))
    assert released_app_version(helm, tmp_path / "kubeconfig", "ctx", jobset) == jobset.app_version
    assert calls(tmp_path)[-1] == [
        "get",
        "metadata",
        "jobset",
        "--namespace",
        jobset.namespace,
        "--kubeconfig",
        str(tmp_path / "kubeconfig"),
        "--output",
        "json",
        "--kube-context",
        "ctx",
    ]
    monkeypatch.setenv("FAKE_HELM_FAIL", "release: not found")
    assert released_app_version(helm, tmp_path / "kubeconfig", None, jobset) == ""
