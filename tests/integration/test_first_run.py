"""The shipped nightly workflow's kind job on its first run, and on the run after its digests are
committed: the workflow's own ``run:`` steps, in order, in a copy of the repository whose lock records
no digest, against a registry on this host playing upstream.

No GitHub and no upstream registry answer here, so "upstream" is the pinned ``distribution`` registry
on a Docker network gateway of the harness's engine (the nodes' containerd, the engine and helm all
reach it) filled by ``kbc images build --push``, with Volcano's HTTP chart repository on 127.0.0.1; the
runner's environment is what these tests set: the engine's ``DOCKER_HOST``, ``KBC_MIRRORS`` pointing at
that registry, ``KBC_KIND_IMAGES=pull`` (a runner pulls, as ``auto`` decides where registry.k8s.io
answers), ``GITHUB_ACTIONS`` and ``GITHUB_STEP_SUMMARY``. The steps that ``uses:`` an action are not
run (no GitHub); what they read is checked to exist.
"""

from __future__ import annotations

import shutil
import subprocess
import tarfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from kbc.cluster.charts.package import package_chart, push_oci_chart
from kbc.cluster.registry import LocalRegistry, RegistryState
from kbc.supply import paths
from kbc.supply.images.own import toolbox_image
from kbc.supply.images.push import push_archive
from kbc.supply.lock import load_lock
from kbc.supply.oci import parse_mirrors
from kbc.supply.toolchain import Toolchain
from tests.integration.commands import REPO, run_bounded
from tests.integration.kind_runs import SCENARIOS, assert_nothing_left, containers_of, docker

pytestmark = pytest.mark.cluster

NIGHTLY = REPO / ".github" / "workflows" / "nightly.yml"
CLUSTER = "kbc-selftest-first-run"
NETWORK = "kbc-selftest-upstream"
# The nightly job on kind runs every suite; here one scenario: what this test proves is the workflow's first
# run (digests pinned by first use, named where a reader looks) and the run after it. The representative
# scenarios pass on kind in test_kind.py; running them again here cost make test minutes and proved nothing
# more.
FIRST_RUN_SCENARIOS = [s for s in SCENARIOS if "test_quota_zero" in s]
# What the steps that use an action would read: checked, since they are not run here.
ACTIONS_READ = {
    "actions/checkout": [],
    "actions/setup-go": [],
    "actions/cache": [],
    "mikepenz/action-junit-report": ["reports/junit.xml"],
    "actions/upload-artifact": ["allure-results", "reports"],
}


@dataclass
class Upstream:
    """The registry playing upstream, and the mirrors that reach it."""

    state: RegistryState
    mirrors: str
    """``KBC_MIRRORS`` as ``kbc images build --push`` printed it."""


@dataclass
class StepRun:
    name: str
    returncode: int
    stdout: str
    stderr: str

    def explain(self) -> str:
        return f"step {self.name!r} exited {self.returncode}:\n{self.stdout[-6000:]}\n{self.stderr[-6000:]}"


@pytest.fixture(scope="module")
def upstream(docker_env: dict[str, str], tmp_path_factory: pytest.TempPathFactory) -> Iterator[Upstream]:
    """The pinned registry on a gateway of the engine's, with everything a kind run pulls pushed to it."""
    made = docker(docker_env, "network", "create", NETWORK)
    assert made.returncode == 0, made.stderr
    try:
        gateway = docker(
            docker_env, "network", "inspect", "--format", "{{(index .IPAM.Config 0).Gateway}}", NETWORK
        ).stdout.strip()
        assert gateway, f"network {NETWORK} has no gateway"
        home = tmp_path_factory.mktemp("upstream")
        binary = Toolchain(load_lock()).ensure(["registry"])["registry"]
        registry = LocalRegistry(home, binary, storage=home / "storage")
        state = registry.start(gateway)
        try:
            push = run_bounded(
                [
                    *[str(REPO / ".venv" / "bin" / "kbc"), "images", "build"],
                    *["--push", f"http://{state.registry}"],
                    *["--charts-dir", str(registry.chart_dir), "--charts-url", state.charts],
                ],
                timeout=1800,
                env=docker_env,
            )
            assert push.returncode == 0, push.stderr[-6000:]
            last = push.stdout.strip().splitlines()[-1]
            assert last.startswith("KBC_MIRRORS="), push.stdout
            mirrors = last.removeprefix("KBC_MIRRORS=")
            # Upstream also answers for the lock's test image, which nothing here can build (CUDA): the
            # toolbox under its name, so that `kbc lock refresh` finds every field served. No scenario
            # of these runs pulls it.
            cuda = load_lock().test_images["cuda"].ref
            push_archive(str(toolbox_image().path), cuda, parse_mirrors(mirrors.split()))
            yield Upstream(state, mirrors)
        finally:
            registry.stop()
    finally:
        docker(docker_env, "network", "rm", NETWORK)


@pytest.fixture(scope="module")
def checkout(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The repository as actions/checkout gives it: tracked and untracked files that git does not
    ignore (so the working tree under test), nothing built."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=REPO,
        capture_output=True,
        check=True,
    ).stdout.decode()
    target = tmp_path_factory.mktemp("checkout") / "kbatch-conformance"
    for name in filter(None, listed.split("\0")):
        source = REPO / name
        if source.is_file():
            (target / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target / name)
    lock = load_lock(target / "charts-lock.yaml")
    assert lock.kubernetes.node_image is not None and not lock.kubernetes.node_image.digest
    assert all(not c.chart.digest for c in lock.components.values()), "the shipped lock records no digest"
    return target


def runner_env(docker_env: dict[str, str], upstream: Upstream, summary: Path) -> dict[str, str]:
    """A runner's environment: none of this session's KBC_ settings or virtualenv."""
    # Nor the make that runs these tests: its MAKEFLAGS hand its command line (`make test PYTEST_ARGS=...`)
    # to the job's `make conformance`, whose own PYTEST_ARGS it would override.
    env = {
        k: v
        for k, v in docker_env.items()
        if not k.startswith("KBC_") and k not in ("VIRTUAL_ENV", "MAKEFLAGS", "MFLAGS", "MAKELEVEL")
    }
    env.update(
        {
            "GITHUB_ACTIONS": "true",
            "GITHUB_STEP_SUMMARY": str(summary),
            "KBC_MIRRORS": upstream.mirrors,
            "KBC_KIND_IMAGES": "pull",
            "KBC_CLUSTER_NAME": CLUSTER,
            "PYTEST_ARGS": selecting(FIRST_RUN_SCENARIOS),
        }
    )
    return env


def selecting(scenarios: list[str]) -> str:
    """``PYTEST_ARGS`` that select *scenarios* from ``make conformance``'s ``pytest suites`` (a node id
    there would run in addition to every suite, not instead)."""
    names = " or ".join(s.rsplit("::", 1)[1] for s in scenarios)
    return f'-k "{names}"'


def run_steps(checkout: Path, env: dict[str, str]) -> list[StepRun]:
    """The kind job's steps, in order, as the runner runs them (``bash -e``; ``if: always()`` steps run
    after a failure, others do not)."""
    steps: list[dict[str, Any]] = yaml.safe_load(NIGHTLY.read_text())["jobs"]["conformance"]["steps"]
    runs: list[StepRun] = []
    failed = False
    for step in steps:
        if "uses" in step:
            action = step["uses"].split("@")[0]
            assert action in ACTIONS_READ, f"nightly.yml uses {action}, which this test does not know"
            if not failed:
                for path in ACTIONS_READ[action]:
                    assert (checkout / path).exists(), f"{action} would find no {path}"
            continue
        if failed and step.get("if") != "always()":
            continue
        script = step["run"].replace("${{ matrix.provider }}", "kind")
        assert "${{" not in script, f"step {step.get('name')!r} uses an expression this test cannot give"
        done = run_bounded(["bash", "-e", "-c", script], timeout=2400, cwd=checkout, env=env)
        runs.append(StepRun(step.get("name", script), done.returncode, done.stdout, done.stderr))
        failed = failed or done.returncode != 0
    return runs


def pinned_lines(summary: str) -> dict[str, str]:
    """The digests the summary's first-use block lists, by lock field."""
    block = summary.split("## Digests pinned by first use", 1)[1]
    found = {}
    for line in block.splitlines():
        if line.startswith("- ") and " = sha256:" in line:
            field, _, rest = line.removeprefix("- ").strip("`").partition(" = ")
            found[field.strip("`")] = rest.split()[0].strip("`")
    return found


@pytest.fixture(scope="module")
def first_run(
    checkout: Path, upstream: Upstream, docker_env: dict[str, str], tmp_path_factory: pytest.TempPathFactory
) -> tuple[list[StepRun], str]:
    summary = tmp_path_factory.mktemp("github") / "step-summary.md"
    runs = run_steps(checkout, runner_env(docker_env, upstream, summary))
    return runs, summary.read_text() if summary.is_file() else ""


def test_the_nightly_kind_job_passes_on_its_first_run_and_names_the_digests_to_commit(
    first_run: tuple[list[StepRun], str], docker_env: dict[str, str]
) -> None:
    runs, summary = first_run
    assert [r.name for r in runs] == ["make conformance", "summary"]
    for run in runs:
        assert run.returncode == 0, run.explain()
    make = runs[0]
    # The run pinned what the lock leaves empty, and says so where a workflow's reader looks.
    warnings = [line for line in make.stdout.splitlines() if line.startswith("::warning ")]
    assert any("digests pinned by first use" in line for line in warnings), make.stdout[-4000:]
    assert summary.startswith("## kind\n"), summary[:500]
    assert summary.count(" | passed | ") == len(FIRST_RUN_SCENARIOS), summary
    pinned = pinned_lines(summary)
    lock = load_lock()
    expected = {"kubernetes.kindNodeImage.digest"}
    for name, component in lock.components.items():
        expected.add(f"components.{name}.chart.digest")
        expected |= {f"components.{name}.images[{i}].digest" for i in range(len(component.images))}
    assert set(pinned) == expected, summary
    # The report's environment names each image of the run with the digest pinned for it.
    node = lock.kubernetes.node_image
    assert node is not None
    images = [node, *(i for c in lock.components.values() for i in c.images)]
    for image in images:
        short = image.repository.rsplit("/", 1)[-1]
        assert f"| cluster.image.{short} | {image.repository}:{image.tag}@sha256:" in summary, summary
    assert containers_of(docker_env, CLUSTER) == [], "the session removed the cluster it made"


def test_the_digests_it_names_are_what_lock_refresh_commits_and_a_changed_chart_then_fails_closed(
    first_run: tuple[list[StepRun], str],
    checkout: Path,
    upstream: Upstream,
    docker_env: dict[str, str],
    tmp_path: Path,
) -> None:
    runs, summary = first_run
    assert runs and runs[0].returncode == 0, runs[0].explain() if runs else "no step ran"
    env = runner_env(docker_env, upstream, tmp_path / "step-summary.md")
    refresh = run_bounded(
        [str(checkout / ".venv" / "bin" / "kbc"), "lock", "refresh"], timeout=600, cwd=checkout, env=env
    )
    assert refresh.returncode == 0, refresh.stdout + refresh.stderr
    refreshed = yaml.safe_load((checkout / "charts-lock.yaml").read_text())
    for field, digest in pinned_lines(summary).items():
        assert _field(refreshed, field) == digest, f"{field}: the run pinned {digest}"

    # Upstream now serves another kueue chart under the same version: the committed digest refuses it.
    lock = load_lock(checkout / "charts-lock.yaml")
    kueue = lock.components["kueue"]
    helm = Toolchain(lock).ensure(["helm"])["helm"]
    changed = _changed_chart(package_chart(kueue, helm, lock.components), helm, tmp_path)
    pushed = push_oci_chart(helm, changed, kueue, upstream.state.registry, True)
    assert pushed != kueue.chart.digest
    env["PYTEST_ARGS"] = selecting(FIRST_RUN_SCENARIOS[:1])
    # The changed chart is Kueue's: it is refused before a cluster is made to install it.
    env["KBC_COMPONENTS"] = "kueue"
    again = run_steps(checkout, env)
    make = again[0]
    assert make.name == "make conformance" and make.returncode != 0, make.explain()
    output = make.stdout + make.stderr
    assert f"has manifest digest {pushed}" in output and f"pins {kueue.chart.digest}" in output, output[
        -6000:
    ]
    assert "nothing was installed and no cluster was made" in output
    assert f"creating kind cluster {CLUSTER}" not in output, "the digest is asked before kind create"
    assert "pinned by first use" not in output, "a committed digest is verified, never pinned again"
    assert_nothing_left(docker_env, CLUSTER)
    assert not (paths.clusters_dir() / f"kind-{CLUSTER}").exists()


def _field(data: Any, path: str) -> Any:
    """``components.kueue.images[0].digest`` of the lock's YAML."""
    for part in path.split("."):
        name, _, index = part.partition("[")
        data = data[name]
        if index:
            data = data[int(index.rstrip("]"))]
    return data


def _changed_chart(archive: Path, helm: Path, work: Path) -> Path:
    """*archive* with one file more, packaged again under the same version."""
    unpacked = work / "unpacked"
    with tarfile.open(archive) as tar:
        tar.extractall(unpacked, filter="data")
    (chart,) = [p for p in unpacked.iterdir() if p.is_dir()]
    (chart / "CHANGED-UPSTREAM.txt").write_text("the same version, other content\n")
    out = work / "changed"
    subprocess.run(
        [str(helm), "package", str(chart), "--destination", str(out)], check=True, capture_output=True
    )
    (packaged,) = out.glob("*.tgz")
    return packaged
