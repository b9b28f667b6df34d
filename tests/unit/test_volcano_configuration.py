"""A Volcano scheduler configuration naming an action or plugin the pinned Volcano lacks is refused before
any cluster starts, naming it; every configuration the harness itself gives Volcano, and the pinned chart's
own, is accepted. The names are read from the pinned module's factories."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from kbc.cli import commands as cli
from kbc.cluster.charts.config import effective_config, refuse_unknown
from kbc.cluster.charts.source import resolve_chart
from kbc.cluster.components import HARNESS_SETTINGS, parse_settings
from kbc.components._volcano_conf import registered, unknown_names
from kbc.errors import ComponentError
from kbc.supply.pins import ChartsLock
from kbc.supply.toolchain import module_source
from kbc.volcano import settings as volcano_settings
from kbc.volcano.settings import VOLCANO, scheduler_actions, scheduler_plugin


def _source(lock: ChartsLock) -> Path:
    pinned = lock.components[VOLCANO]
    return module_source(pinned.build.module, pinned.app_version).directory


def test_the_pinned_volcano_s_actions_and_plugins_are_read_from_its_factories(
    charts_lock: ChartsLock,
) -> None:
    actions, plugins = registered(_source(charts_lock))
    assert {"enqueue", "allocate", "backfill", "preempt", "reclaim"} <= actions
    assert {"gang", "priority", "drf", "proportion", "binpack", "network-topology-aware"} <= plugins
    assert not actions & plugins


def test_the_chart_s_configuration_and_every_one_the_harness_gives_are_accepted(
    charts_lock: ChartsLock, tmp_path: Path
) -> None:
    chart = resolve_chart(charts_lock.components[VOLCANO], "module", tmp_path / "chart").path
    default = effective_config(VOLCANO, chart, [])
    assert default["actions"] and default["tiers"], "the chart's default configuration was read"
    assert unknown_names(default, _source(charts_lock)) == []
    ours = [s for s in HARNESS_SETTINGS if s.component == VOLCANO]
    ours += [v for v in vars(volcano_settings).values() if getattr(v, "component", None) == VOLCANO]
    assert len(ours) >= 3
    refuse_unknown(charts_lock, ours)


def test_an_unknown_action_and_plugin_are_refused_naming_each_where_it_was_given(
    charts_lock: ChartsLock, tmp_path: Path
) -> None:
    values = tmp_path / "volcano-values.yaml"
    values.write_text(
        'custom:\n  scheduler_config_override: |\n    actions: "enqueue, allocate"\n'
        "    tiers:\n    - plugins:\n      - name: gangx\n"
    )
    with pytest.raises(ComponentError) as caught:
        refuse_unknown(
            charts_lock,
            [scheduler_actions("preempt", "gang-preempt"), scheduler_plugin("drfx")],
            {VOLCANO: [values]},
        )
    message = str(caught.value)
    version = charts_lock.components[VOLCANO].app_version
    assert f"volcano {version} (charts-lock.yaml) lacks what its configuration names" in message
    assert "action 'gang-preempt' is not one it has (allocate, backfill, enqueue, preempt, reclaim" in message
    assert "refuse the whole configuration and go on with its built-in default" in message
    assert "plugin 'drfx' is not one it has (binpack," in message
    assert f"{values} (custom.scheduler_config_override): plugin 'gangx'" in message
    assert "'preempt'" not in message and "Nothing was started" in message


def test_cluster_up_refuses_it_and_starts_nothing(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("KBC_CACHE_DIR", str(tmp_path / "cache"))
    config = "volcano:tiers=[{plugins: [{name: gang}, {name: proportionx}]}]"
    assert parse_settings([config]), "the option itself is well formed"
    rc = cli.main(["cluster", "up", "--cluster-name", "refused", "--config", config])
    assert rc == 1
    err = capsys.readouterr().err
    assert "plugin 'proportionx' is not one it has" in err and "'gang'" not in err
    assert not (tmp_path / "cache" / "clusters").exists() or not any(
        (tmp_path / "cache" / "clusters").iterdir()
    )


def test_a_pytest_session_refuses_it_before_collecting_anything(tmp_path: Path) -> None:
    """The plugin checks at session start: a usage error (exit code 4) naming the plugin, nothing started."""
    repo = Path(__file__).resolve().parents[2]
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "suites/test_volcano.py",
            "-p",
            "no:randomly",
            "-n",
            "0",
            "-k",
            "no_such_scenario",
            "--config",
            "volcano:tiers=[{plugins: [{name: gangx}]}]",
        ],
        cwd=repo,
        env={**os.environ, "KBC_CACHE_DIR": str(tmp_path / "cache")},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 4, done.stdout + done.stderr
    assert "plugin 'gangx' is not one it has" in done.stderr, done.stderr
    assert not (tmp_path / "cache" / "clusters").exists()
