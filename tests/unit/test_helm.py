"""A chart's ``crds/`` folder: what the kind and existing providers apply before ``helm upgrade``.

Everything else about helm (pulls and their digests, mirrors, installs, values layering,
the released version) is proven with the real pinned helm against a real registry and API
server in tests/integration/test_supply_chain.py.
"""

from __future__ import annotations

import io
import tarfile
from pathlib import Path

from kbc.cluster.charts.helm import chart_crds


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
