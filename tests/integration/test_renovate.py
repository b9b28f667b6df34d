"""renovate.json, proven with Renovate itself: its config validator accepts it, and an offline extract
(``--platform=local --dry-run=extract``) finds every pin of charts-lock.yaml with the right datasource
and current version. Node and Renovate come from the npm registry at the lock's ``nodeTools`` pins."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest

from kbc.supply.lock import load_lock
from kbc.supply.pins import ChartsLock
from kbc.supply.toolchain.npm import ensure_node_tool, node_binary
from tests.integration.commands import run_bounded

REPO = Path(__file__).resolve().parents[2]
Dep = tuple[str, str, str, tuple[str, ...]]
"""(datasource, packageName, currentValue, registryUrls)"""


@pytest.fixture(scope="module")
def renovate() -> tuple[Path, dict[str, str]]:
    lock = load_lock()
    node = node_binary(lock)
    modules = ensure_node_tool(lock, "renovate")
    env = dict(
        os.environ,
        PATH=f"{node.parent}{os.pathsep}{os.environ['PATH']}",
        LOG_LEVEL="warn",
        # Its optional native regex module is left out (it would be built for the machine's older Node).
        RENOVATE_X_IGNORE_RE2="true",
    )
    return modules / ".bin", env


def expected_deps(lock: ChartsLock) -> set[Dep]:
    """Every version the lock pins, as Renovate must see it."""
    deps: set[Dep] = {("go", lock.kubernetes.build.module, lock.kubernetes.version, ())}
    image = lock.kubernetes.node_image
    assert image is not None
    deps.add(("docker", image.repository, image.tag, ()))
    deps |= {("go", pin.build.module, pin.version, ()) for pin in lock.tools.values()}
    for component in lock.components.values():
        deps.add(("go", component.build.module, component.app_version, ()))
        deps.add(("go", component.build.module, component.previous.app_version, ()))
        reference = component.chart.reference
        for version in (component.chart.version, component.previous.chart_version):
            if reference.startswith("oci://"):
                deps.add(("docker", reference.removeprefix("oci://"), version, ()))
            else:
                repository, _, name = reference.rpartition("/")
                deps.add(("helm", name, version, (repository,)))
        deps |= {("docker", i.repository, i.tag, ()) for i in component.images}
        deps |= {
            ("go", module, version, ())
            for module, version in component.build.directory_replacements.items()
            if "*" not in module and "{" not in version
        }
    deps |= {("docker", i.repository, i.tag, ()) for i in lock.test_images.values()}
    deps |= {
        ("npm", tool.package.replace("{arch}", "x64"), tool.version, ()) for tool in lock.node_tools.values()
    }
    for driver in lock.dra_drivers.values():
        deps |= {
            ("go", driver.build.module, driver.version, ()),
            ("docker", driver.image.repository, driver.version, ()),
        }
    return deps


def run(repo: Path, env: dict[str, str], *command: str, timeout: float) -> None:
    """Run a Renovate command in *repo*; it must exit 0 within *timeout* seconds."""
    done = run_bounded(command, timeout=timeout, cwd=repo, env=env)
    assert done.returncode == 0, done.stdout + done.stderr


def extract(renovate: tuple[Path, dict[str, str]], config: dict[str, Any], tmp_path: Path) -> dict[str, Any]:
    """Validate *config* and extract the repository's lock with it; the report's ``local`` repository."""
    binaries, env = renovate
    repo = tmp_path / "repo"
    repo.mkdir()
    shutil.copy(REPO / "charts-lock.yaml", repo / "charts-lock.yaml")
    (repo / "renovate.json").write_text(json.dumps(config, indent=2))
    env = dict(env, RENOVATE_BASE_DIR=str(tmp_path / "renovate-base"))
    run(repo, env, str(binaries / "renovate-config-validator"), "--strict", timeout=120)
    report = tmp_path / "report.json"
    run(
        repo,
        env,
        str(binaries / "renovate"),
        "--platform=local",
        "--dry-run=extract",
        "--report-type=file",
        f"--report-path={report}",
        timeout=300,
    )
    data = json.loads(report.read_text())
    # Renovate exits 0 on an invalid repository config: the report's problems say so.
    assert data.get("problems") == [], data.get("problems")
    local: dict[str, Any] = data["repositories"]["local"]
    assert local.get("problems") == [], local.get("problems")
    return local


# Renovate's packageRules applied to each extracted dependency by Renovate's own code (its lookup stage
# does the same before it names branches), and the group name compiled by its template engine.
_GROUPS = """
import { readFileSync } from "node:fs";
import { pathToFileURL } from "node:url";
const [dist, configPath, depsPath] = process.argv.slice(2);
const { applyPackageRules } = await import(pathToFileURL(`${dist}/util/package-rules/index.js`));
const { compile } = await import(pathToFileURL(`${dist}/util/template/index.js`));
const config = JSON.parse(readFileSync(configPath, "utf8"));
const out = [];
for (const dep of JSON.parse(readFileSync(depsPath, "utf8"))) {
  const applied = await applyPackageRules({ ...config, ...dep, manager: "custom.jsonata" });
  out.push([dep.depName, dep.depType, applied.groupName ? compile(applied.groupName, applied) : null]);
}
console.log(JSON.stringify(out));
"""


def group_names(
    renovate: tuple[Path, dict[str, str]], config: dict[str, Any], deps: list[dict[str, Any]], tmp_path: Path
) -> dict[tuple[str, str], str | None]:
    """(depName, depType) → the group Renovate puts that update in, ``None`` for none."""
    binaries, env = renovate
    script, config_file, deps_file = tmp_path / "groups.mjs", tmp_path / "config.json", tmp_path / "deps.json"
    script.write_text(_GROUPS)
    config_file.write_text(json.dumps(config))
    deps_file.write_text(json.dumps(deps))
    dist = binaries.parent / "renovate" / "dist"
    node = shutil.which("node", path=env["PATH"])
    assert node, env["PATH"]
    done = run_bounded([node, str(script), str(dist), str(config_file), str(deps_file)], timeout=120, env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    return {(name, dep_type): group for name, dep_type, group in json.loads(done.stdout.splitlines()[-1])}


def deps_of(local: dict[str, Any]) -> list[dict[str, Any]]:
    files = local["packageFiles"].get("jsonata", [])
    assert {f["packageFile"] for f in files} <= {"charts-lock.yaml"}
    return [dep for f in files for dep in f["deps"]]


def as_set(deps: list[dict[str, Any]]) -> set[Dep]:
    return {
        (
            d["datasource"],
            d.get("packageName") or d["depName"],
            d["currentValue"],
            tuple(d.get("registryUrls", ())),
        )
        for d in deps
    }


def test_renovate_extracts_every_pin_with_its_datasource_and_groups_each_component(
    renovate: tuple[Path, dict[str, str]], tmp_path: Path
) -> None:
    config = json.loads((REPO / "renovate.json").read_text())
    deps = deps_of(extract(renovate, config, tmp_path))
    lock = load_lock()
    found, wanted = as_set(deps), expected_deps(lock)
    assert found == wanted, f"missing: {sorted(wanted - found)}\nunexpected: {sorted(found - wanted)}"
    # One update per component: its app version, chart and images carry the component's name as depType,
    # which the packageRules group on.
    for name, component in lock.components.items():
        mine = {d.get("packageName") or d["depName"] for d in deps if d["depType"] == name}
        chart = component.chart.reference.removeprefix("oci://")
        assert component.build.module in mine, (name, mine)
        assert {i.repository for i in component.images} <= mine, (name, mine)
        assert chart in mine or component.chart.name in mine, (name, mine)
    # Grouped by Renovate's own package rules and template compiler, as its lookup stage groups them: one
    # templated rule names each component's group, so a component added to the lock needs no rule.
    groups = group_names(renovate, config, deps, tmp_path)
    for name in lock.components:
        assert {groups[(d["depName"], d["depType"])] for d in deps if d["depType"] == name} == {name}, name
    others = {groups[(d["depName"], d["depType"])] for d in deps if d["depType"] not in lock.components}
    assert not others & set(lock.components), f"a pin that is not a component's is in its group: {others}"
    # The check can fail: without the templated rule, no component's pins are grouped.
    bare = dict(
        config, packageRules=[r for r in config["packageRules"] if r.get("groupName") != "{{depType}}"]
    )
    (tmp_path / "bare").mkdir()
    ungrouped = group_names(renovate, bare, deps, tmp_path / "bare")
    assert {ungrouped[(d["depName"], d["depType"])] for d in deps if d["depType"] in lock.components} == {
        None
    }
    assert config["postUpgradeTasks"]["commands"] == ["kbc lock refresh"]


def test_a_query_left_out_shows_as_missing_pins(
    renovate: tuple[Path, dict[str, str]], tmp_path: Path
) -> None:
    """The comparison above can fail: without the images query, the images are reported missing."""
    config = json.loads((REPO / "renovate.json").read_text())
    manager = config["customManagers"][0]
    manager["matchStrings"] = [q for q in manager["matchStrings"] if ".images." not in q]
    found = as_set(deps_of(extract(renovate, config, tmp_path)))
    lock = load_lock()
    missing = expected_deps(lock) - found
    images = {("docker", i.repository, i.tag, ()) for c in lock.components.values() for i in c.images}
    assert missing == images
