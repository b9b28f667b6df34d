"""The component-configuration seam without a cluster: settings merge into a chart's own configuration
structurally (nothing of the default is lost), say what a configuration lacks, and reach the values
file the chart is installed with."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from kbc.cluster.charts.config import SURFACES, chart_values, effective_config, running_config
from kbc.cluster.charts.source import resolve_chart
from kbc.cluster.components import CONFIGURABLE, HARNESS_SETTINGS, parse_settings
from kbc.configuration import (
    CONTROL_PLANE,
    Remove,
    Setting,
    conflicts,
    feature_gate,
    feature_gates,
    gates_flag,
    merge,
    missing,
    parse_config,
    render_config,
)
from kbc.errors import ComponentError
from kbc.kube import Kube
from kbc.kueue.settings import (
    DRA_EXTENDED_DEVICES,
    FAIR_SHARING,
    integration,
    wait_for_pods_ready,
    without_integration,
)
from kbc.supply.pins import ChartsLock
from kbc.volcano.settings import PREEMPT_AND_RECLAIM, scheduler_plugin

KUEUE_DEFAULT = {
    "apiVersion": "config.kueue.x-k8s.io/v1beta2",
    "kind": "Configuration",
    "webhook": {"port": 9443},
    "integrations": {"frameworks": ["batch/job", "jobset.x-k8s.io/jobset"]},
}


def test_a_setting_merges_in_and_keeps_everything_else() -> None:
    merged = merge(KUEUE_DEFAULT, FAIR_SHARING.patch)
    assert merged["fairSharing"] == {
        "preemptionStrategies": ["LessThanOrEqualToFinalShare", "LessThanInitialShare"]
    }
    assert {k: v for k, v in merged.items() if k != "fairSharing"} == KUEUE_DEFAULT
    assert "fairSharing" not in KUEUE_DEFAULT, "the default is not changed in place"


def test_lists_of_values_gain_what_they_lack_and_remove_takes_out() -> None:
    merged = merge(KUEUE_DEFAULT, integration("pod").patch)
    assert merged["integrations"]["frameworks"] == ["batch/job", "jobset.x-k8s.io/jobset", "pod"]
    assert merge(merged, integration("pod").patch) == merged, "merging twice changes nothing"
    without = merge(KUEUE_DEFAULT, without_integration("batch/job").patch)
    assert without["integrations"]["frameworks"] == ["jobset.x-k8s.io/jobset"]
    assert missing(KUEUE_DEFAULT, without_integration("batch/job").patch) == [
        'integrations.frameworks without ["batch/job"]'
    ]


def test_what_a_configuration_lacks_is_said_by_path() -> None:
    assert missing(KUEUE_DEFAULT, FAIR_SHARING.patch) == [
        'fairSharing.preemptionStrategies=["LessThanOrEqualToFinalShare","LessThanInitialShare"] (has null)'
    ]
    half = {"fairSharing": {"preemptionStrategies": ["LessThanInitialShare"]}}
    assert missing(half, FAIR_SHARING.patch) == [
        'fairSharing.preemptionStrategies with "LessThanOrEqualToFinalShare"'
    ]
    assert missing(merge(KUEUE_DEFAULT, FAIR_SHARING.patch), FAIR_SHARING.patch) == []
    ready = wait_for_pods_ready("5m")
    assert missing({"waitForPodsReady": {"timeout": "10m"}}, ready.patch) == [
        'waitForPodsReady.timeout="5m" (has "10m")',
        "waitForPodsReady.blockAdmission=false (has null)",
    ]
    assert missing(None, integration("pod").patch) == ['integrations.frameworks=["pod"] (has null)']
    assert missing(KUEUE_DEFAULT, integration("pod").patch) == ['integrations.frameworks with "pod"']


VOLCANO_DEFAULT = """actions: "enqueue, allocate, backfill"
tiers:
- plugins:
  - name: priority
  - name: gang
    enablePreemptable: false
- plugins:
  - name: drf
  - name: proportion
"""


def test_volcano_actions_join_in_volcano_s_order_and_plugins_merge_by_name() -> None:
    config = parse_config("volcano", VOLCANO_DEFAULT)
    merged = merge(config, PREEMPT_AND_RECLAIM.patch)
    assert (
        yaml.safe_load(render_config("volcano", merged))["actions"]
        == "enqueue, allocate, preempt, reclaim, backfill"
    )
    capacity = scheduler_plugin("capacity")
    with_capacity = merge(merged, capacity.patch)
    assert [p["name"] for p in with_capacity["tiers"][1]["plugins"]] == ["drf", "proportion", "capacity"]
    assert with_capacity["tiers"][0] == config["tiers"][0]
    gang = scheduler_plugin("gang", tier=0, enablePreemptable=True)
    assert missing(config, gang.patch) == ["tiers[0].plugins[name=gang].enablePreemptable=true (has false)"]
    assert merge(config, gang.patch)["tiers"][0]["plugins"][1] == {"name": "gang", "enablePreemptable": True}


def test_settings_that_want_different_values_at_one_place_conflict() -> None:
    five, ten = wait_for_pods_ready("5m"), wait_for_pods_ready("10m")
    assert conflicts([five, ten]), "two timeouts for the same field"
    assert not conflicts([FAIR_SHARING, integration("pod"), five])
    assert five.key != ten.key and five.key == wait_for_pods_ready("5m").key
    assert FAIR_SHARING.slug == "kueue-fair-sharing"


def test_config_options_become_settings(tmp_path: Path) -> None:
    (one,) = parse_settings(["kueue:waitForPodsReady.timeout=5m"])
    assert (one.component, one.patch) == ("kueue", {"waitForPodsReady": {"timeout": "5m"}})
    (strategies,) = parse_settings(["kueue:fairSharing.preemptionStrategies=[LessThanOrEqualToFinalShare]"])
    assert strategies.patch == {"fairSharing": {"preemptionStrategies": ["LessThanOrEqualToFinalShare"]}}
    file = tmp_path / "fair.yaml"
    file.write_text(yaml.safe_dump(FAIR_SHARING.patch))
    (from_file,) = parse_settings([f"kueue={file}"])
    assert from_file.key == FAIR_SHARING.key
    with pytest.raises(ComponentError, match="expected COMPONENT=FILE or COMPONENT:PATH=VALUE"):
        parse_settings(["kueue"])
    with pytest.raises(ComponentError, match="'jobset' has no configuration the harness can merge into"):
        parse_settings(["jobset:a=1"])
    with pytest.raises(ComponentError, match="PATH must be dotted field names"):
        parse_settings(["kueue:a..b=1"])
    with pytest.raises(ComponentError, match=r"cannot read .*absent.yaml"):
        parse_settings([f"kueue={tmp_path / 'absent.yaml'}"])


def test_every_configurable_component_has_a_surface() -> None:
    assert set(SURFACES) == set(CONFIGURABLE)
    assert {s.component for s in HARNESS_SETTINGS} <= set(CONFIGURABLE)


@pytest.mark.parametrize("component", ["kueue", "volcano"])
def test_the_pinned_chart_installs_the_merged_configuration_and_keeps_its_own(
    component: str, charts_lock: ChartsLock, tmp_path: Path
) -> None:
    """Against the pinned chart's own default (the module copy): the settings' values file, layered last,
    gives the chart a configuration that has the settings and every key the default had."""
    chart = resolve_chart(charts_lock.components[component], "module", tmp_path / "chart").path
    default = effective_config(component, chart, [])
    wanted: list[Setting] = [FAIR_SHARING] if component == "kueue" else [scheduler_plugin("capacity")]
    files = chart_values(component, chart, {}, wanted, tmp_path / "work")
    merged = effective_config(component, chart, files)
    for setting in [*wanted, *(s for s in HARNESS_SETTINGS if s.component == component)]:
        assert missing(merged, setting.patch) == [], setting.describe()
        assert missing(default, setting.patch), f"the chart's default already had {setting.describe()}"
    assert set(default) <= set(merged)
    # What a harness setting adds to (Kueue's integrations: the training operator's pytorchjob) keeps all
    # the default had; Volcano's actions and tiers are rewritten as a whole.
    added = {key for s in HARNESS_SETTINGS if s.component == component for key in s.patch}
    for key, value in default.items():
        if key in added:
            assert missing(merged, {key: value}) == [], key
        elif key not in ("actions", "tiers"):
            assert merged[key] == value, key
    assert files[-1].name == f"{component}-settings.yaml"
    assert "# The component's configuration with these settings merged in" in files[-1].read_text()


def test_remove_is_its_own_kind_of_value() -> None:
    assert Remove("a", "b").values == ("a", "b")
    assert Setting("kueue", "x", {"a": Remove("b")}).key == 'kueue:{a:remove["b"]}'


class MetricsKube(Kube):
    """Answers ``/metrics`` as kube-apiserver v1.34 does, and nothing else."""

    def __init__(self, text: str) -> None:
        self.text = text

    def get_text(self, path: str) -> str:
        assert path == "/metrics"
        return self.text


def test_control_plane_settings_are_feature_gates_for_its_components() -> None:
    on = feature_gate("DRAExtendedResource")
    assert on.component == CONTROL_PLANE and on.slug == "kubernetes-draextendedresource-on"
    later = feature_gate("DRAExtendedResource", enabled=False)
    assert feature_gates([FAIR_SHARING, on]) == {"DRAExtendedResource": True}
    assert feature_gates([on, later]) == {"DRAExtendedResource": False}, "a later setting wins"
    assert gates_flag({"A": True, "B": False}) == ["--feature-gates=A=true,B=false"]
    assert gates_flag({}) == []
    with pytest.raises(ComponentError, match="feature gates are not a component configuration"):
        parse_settings(["kubernetes:featureGates.DRAExtendedResource=true"])
    extended = [*HARNESS_SETTINGS, DRA_EXTENDED_DEVICES]
    assert not conflicts(extended), "the extended class joins the harness's mapping"


def test_the_control_plane_s_gates_are_read_from_the_api_server_s_metric() -> None:
    metrics = (
        "# HELP kubernetes_feature_enabled [BETA] This metric records the data about the stage and "
        "enablement of a k8s feature.\n"
        "# TYPE kubernetes_feature_enabled gauge\n"
        'kubernetes_feature_enabled{name="DRAExtendedResource",stage="ALPHA"} 1\n'
        'kubernetes_feature_enabled{name="DRAAdminAccess",stage="BETA"} 0\n'
        'apiserver_request_total{code="200"} 1\n'
    )
    running = running_config(MetricsKube(metrics), CONTROL_PLANE)
    assert running == {"featureGates": {"DRAExtendedResource": True, "DRAAdminAccess": False}}
    assert not missing(running, feature_gate("DRAExtendedResource").patch)
    assert missing(running, feature_gate("DRAAdminAccess").patch) == [
        "featureGates.DRAAdminAccess=true (has false)"
    ]
