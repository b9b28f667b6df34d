"""helm's command lines and a chart's crds/ folder, without a registry or a cluster.

Pulls (digest checks, fail-closed, mirrors), installs and the released version are proven
with the real pinned helm against a real registry and API server in
tests/integration/test_supply_chain.py; the stand-in here only shows how values files are
layered onto ``helm upgrade --install``, which a real helm does not echo back.
"""

from __future__ import annotations

import io
import json
import tarfile
from pathlib import Path

import pytest

from kbc.charts.helm import chart_crds, install_chart
from kbc.errors import ChartError
from kbc.lockfile import load_lock

FAKE_HELM = """#!/usr/bin/env python3
# Stand-in for helm: records its arguments, and fails with FAKE_HELM_FAIL's message when that is set.
import json, os, sys
with open(os.environ["FAKE_HELM_LOG"], "a") as log:
    log.write(json.dumps(sys.argv[1:]) + "\\n")
if os.environ.get("FAKE_HELM_FAIL"):
    sys.stderr.write("Error: " + os.environ["FAKE_HELM_FAIL"] + "\\n")
    sys.exit(1)
"""


@pytest.fixture
def helm(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "helm"
    path.write_text(FAKE_HELM)
    path.chmod(0o755)
    monkeypatch.setenv("FAKE_HELM_LOG", str(tmp_path / "helm.log"))
    return path


def calls(tmp_path: Path) -> list[list[str]]:
    return [json.loads(line) for line in (tmp_path / "helm.log").read_text().splitlines()]


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
