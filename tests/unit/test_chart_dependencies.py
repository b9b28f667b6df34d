"""A chart's dependencies, offline: each comes from the module of the lock's component of that name, at
the version the chart asks for, into ``charts/`` of a working copy, as ``helm dependency build`` puts them
before a release is packaged; one no component provides is refused, naming it."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from kbc.cluster.charts.source import resolve_chart
from kbc.errors import ChartError
from kbc.supply.pins import ChartsLock


def _chart_yaml(path: Path) -> dict[str, object]:
    loaded = yaml.safe_load(path.read_text())
    assert isinstance(loaded, dict)
    return loaded


def test_trainer_s_chart_gets_jobset_and_lws_from_their_modules_at_the_chart_s_versions(
    charts_lock: ChartsLock, tmp_path: Path
) -> None:
    trainer = charts_lock.components["trainer"]
    source = resolve_chart(trainer, "module", tmp_path, charts_lock.components)
    assert source.path == tmp_path / "chart", "the module's own folder is never written to"
    dependencies = _chart_yaml(source.path / "Chart.yaml")["dependencies"]
    assert isinstance(dependencies, list)
    asked = {d["name"]: str(d["version"]) for d in dependencies}
    assert set(asked) == {"jobset", "lws"}
    for name, version in asked.items():
        vendored = _chart_yaml(source.path / "charts" / name / "Chart.yaml")
        assert vendored["name"] == name
        # LeaderWorkerSet's module says 0.1.0: its release stamps the version, and so does the harness.
        assert vendored["version"] == version
        module = charts_lock.components[name].build.module
        assert f"{name} {version} from {module}@v{version.removeprefix('v')}" in source.note


def test_a_dependency_no_component_of_the_lock_provides_is_refused_naming_it(
    charts_lock: ChartsLock, tmp_path: Path
) -> None:
    others = {k: v for k, v in charts_lock.components.items() if k != "lws"}
    with pytest.raises(ChartError) as caught:
        resolve_chart(charts_lock.components["trainer"], "module", tmp_path, others)
    message = str(caught.value)
    assert "depends on chart 'lws' 0.8.0" in message
    assert "no component of charts-lock.yaml provides" in message


def test_a_chart_that_carries_its_dependencies_is_used_as_it_is(
    charts_lock: ChartsLock, tmp_path: Path
) -> None:
    # Volcano's module carries its jobflow sub-chart in charts/; nothing is fetched for it.
    volcano = charts_lock.components["volcano"]
    source = resolve_chart(volcano, "module", tmp_path, {})
    assert "dependencies" not in source.note
    assert (source.path / "charts" / "jobflow").is_dir()
