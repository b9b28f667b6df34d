"""Scenarios side by side (kbc.plugins.workers): tests that share a cluster of the session (one group per
profile), a plugin's group (make test's Docker engine) or a module fixture are scheduled as one unit by
pytest-xdist, whatever file they are in; the other tests of a module go together; the longest group left is
handed out first; a second worker names its clusters apart; the canary and kbc verify refuse workers."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest

from kbc.plugins.workers import SECOND_LANE, _second_lane, cluster_group

pytest_plugins = ["pytester"]

REPO = Path(__file__).resolve().parents[2]

CONFTEST = """
import os
import pytest
from tests.conftest import pytest_kbc_worker_group

pytest_plugins = ["kbc.plugin"]

@pytest.fixture(scope="session")
def cluster(request):
    return getattr(request, "param", "the session's cluster")

@pytest.fixture
def kube(cluster):
    return cluster

@pytest.fixture(scope="session")
def docker_env():
    return {}

@pytest.fixture(autouse=True)
def worker(request):
    # Each test says which worker ran it; a little work each, so that both workers take some.
    import time
    time.sleep(0.05)
    with open(os.environ["RAN"], "a") as out:
        out.write(f"{os.environ.get('PYTEST_XDIST_WORKER', 'none')} {request.node.nodeid}\\n")
"""

# Three grouped sets spread over files and interleaved with tests in no group: xdist's plain load
# scheduling, which the groups replace, splits them across the two workers.
TESTS = {
    "test_scenarios.py": "\n".join(
        ["def test_takes_kube(kube): pass", *(f"def test_free_{i}(): pass" for i in range(8))]
    ),
    "test_engine.py": """
import pytest
pytestmark = pytest.mark.xdist_group("docker-engine")
def test_starts_an_engine_of_its_own(): pass
def test_stops_it(): pass
""",
    "test_kind.py": """
import pytest
@pytest.fixture(scope="module")
def kind_cluster(docker_env):
    return "kind"
def test_uses_the_kind_cluster(kind_cluster): pass
def test_free_a(): pass
def test_free_b(): pass
@pytest.fixture(scope="module")
def registry():
    return "registry"
def test_uses_the_registry_only(registry): pass
""",
    "test_registry.py": """
import pytest
@pytest.fixture(scope="module")
def registry():
    return "registry"
def test_one(registry): pass
def test_free_c(): pass
def test_two(registry): pass
""",
    "test_suite.py": "\n".join(
        [*(f"def test_free_{i}(): pass" for i in range(8)), "def test_scenario(kube): pass"]
    ),
    "test_profiles.py": """
import pytest
from kbc.kueue.settings import FAIR_SHARING
from kbc.plugins.cluster import Profile
FAIR = pytest.mark.parametrize("cluster", [Profile((FAIR_SHARING,))], indirect=True, ids=["fair"])
@FAIR
def test_on_a_profile(cluster): pass
def test_on_the_default(cluster): pass
@FAIR
def test_on_the_same_profile(kube): pass
""",
}
GROUPS = {
    "cluster:default": {
        "test_scenarios.py::test_takes_kube",
        "test_suite.py::test_scenario",
        "test_profiles.py::test_on_the_default",
    },
    # Another profile's cluster: a group of its own, which may run in the other worker.
    "cluster:kueue-fair-sharing": {
        "test_profiles.py::test_on_a_profile[fair]",
        "test_profiles.py::test_on_the_same_profile[fair]",
    },
    "docker-engine": {
        "test_engine.py::test_starts_an_engine_of_its_own",
        "test_engine.py::test_stops_it",
        "test_kind.py::test_uses_the_kind_cluster",
        # A module fixture's users go with the most binding group among them, so it is made once.
        "test_kind.py::test_uses_the_registry_only",
    },
    # A module's other tests go together: they may share names of their own.
    "test_registry.py": {
        "test_registry.py::test_one",
        "test_registry.py::test_two",
        "test_registry.py::test_free_c",
    },
    "test_kind.py": {"test_kind.py::test_free_a", "test_kind.py::test_free_b"},
}


@pytest.fixture
def tree(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    monkeypatch.setenv("PYTHONPATH", str(REPO))
    monkeypatch.setenv("KBC_CACHE_DIR", str(pytester.path / "cache"))
    monkeypatch.setenv("RAN", str(pytester.path / "ran.txt"))
    pytester.makeconftest(CONFTEST)
    # The existing provider: the one the harness never starts a cluster for (on the local one the plugin would
    # start the next profile's cluster beside the last test of the one before, for real).
    pytester.makeini("[pytest]\naddopts = --provider existing\n")
    for name, text in TESTS.items():
        pytester.makepyfile(**{name.removesuffix(".py"): text})
    return pytester


def test_the_workers_find_the_groups_each_runs_in_one_worker_and_the_longest_go_first(
    tree: pytest.Pytester,
) -> None:
    collected = tree.runpytest_subprocess("--collect-only", "-q", "-p", "no:cacheprovider")
    items = [line for line in collected.outlines if "::" in line]
    result = tree.runpytest_subprocess("-n", "2", "--dist", "loadgroup", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=len(items))
    ran = _ran(tree)
    assert set(ran) == set(items)
    for group, members in GROUPS.items():
        assert len({ran[nodeid][0] for nodeid in members}) == 1, f"{group} split: {ran}"
    assert {worker for worker, _ in ran.values()} == {"gw0", "gw1"}, "both workers ran tests"

    durations = tree.path / "cache" / "test-durations.json"
    recorded = json.loads(durations.read_text())
    assert set(recorded) == set(items) and all(seconds > 0 for seconds in recorded.values()), recorded
    # As if the registry's module and the engine's tests had taken longest last time: each worker starts
    # with one of them.
    recorded.update({"test_registry.py::test_one": 50.0, "test_engine.py::test_stops_it": 40.0})
    durations.write_text(json.dumps(recorded))
    (tree.path / "ran.txt").unlink()
    again = tree.runpytest_subprocess("-n", "2", "--dist", "loadgroup", "-p", "no:cacheprovider")
    again.assert_outcomes(passed=len(items))
    first = {worker: min(nodes)[1] for worker, nodes in _by_worker(_ran(tree)).items()}
    assert sorted(first.values()) == ["test_engine.py", "test_registry.py"], first


def _ran(tree: pytest.Pytester) -> dict[str, tuple[str, int]]:
    """Each test's worker and the place it ran at in that worker's order."""
    ran: dict[str, tuple[str, int]] = {}
    for index, line in enumerate((tree.path / "ran.txt").read_text().splitlines()):
        worker, nodeid = line.split()
        ran[nodeid] = (worker, index)
    return ran


def _by_worker(ran: dict[str, tuple[str, int]]) -> dict[str, list[tuple[int, str]]]:
    found: dict[str, list[tuple[int, str]]] = {}
    for nodeid, (worker, index) in ran.items():
        found.setdefault(worker, []).append((index, nodeid.split("::")[0]))
    return found


def test_a_second_worker_names_its_clusters_apart_from_the_first(tree: pytest.Pytester) -> None:
    # Two modules, two units: each worker is handed one first.
    said = """
import os
def test_name(pytestconfig):
    with open(os.environ["RAN"] + ".names", "a") as out:
        out.write(f"{os.environ['PYTEST_XDIST_WORKER']} {pytestconfig.option.cluster_name}\\n")
"""
    tree.makepyfile(test_names_a=said, test_names_b=said)
    result = tree.runpytest_subprocess(
        "-n", "2", "--dist", "loadgroup", "--cluster-name", "kbc-selftest", "-p", "no:cacheprovider",
        "test_names_a.py", "test_names_b.py",
    )  # fmt: skip
    result.assert_outcomes(passed=2)
    names = dict(line.split() for line in (tree.path / "ran.txt.names").read_text().splitlines())
    assert names == {"gw0": "kbc-selftest", "gw1": "kbc-selftest-gw1"}, names


def test_auto_is_two_workers_on_the_local_provider_and_none_elsewhere(tree: pytest.Pytester) -> None:
    for provider, expected in (("local", "2 workers [2 items]"), ("existing", "collected 2 items")):
        result = tree.runpytest_subprocess(
            "-n", "auto", "--dist", "loadgroup", "--provider", provider, "-p", "no:cacheprovider",
            "test_engine.py",
        )  # fmt: skip
        result.assert_outcomes(passed=2)
        result.stdout.fnmatch_lines([expected])
    # A session a plugin runs in one process gets one from auto, where -n 2 is refused (below).
    canary = tree.runpytest_subprocess(
        "-n", "auto", "--dist", "loadgroup", "--provider", "local", "-m", "upgrade", "--collect-only",
        "-p", "no:cacheprovider", "test_engine.py",
    )  # fmt: skip
    assert canary.ret == pytest.ExitCode.OK, canary.stdout.str() + canary.stderr.str()
    assert "created: " not in canary.stdout.str(), canary.stdout.str()  # xdist says how many it made


def test_a_split_distribution_the_canary_and_kbc_verify_refuse_workers(tree: pytest.Pytester) -> None:
    for given, words in (
        (["--dist", "load"], "--dist load would split tests that share a cluster across workers"),
        (["--dist", "loadgroup", "-m", "upgrade"], "the canary starts its clusters from the old pins"),
        (["--dist", "loadgroup", "--platform", str(tree.path)], "kbc verify proves one twin"),
    ):
        result = tree.runpytest_subprocess("-n", "2", *given, "-p", "no:cacheprovider")
        assert result.ret == pytest.ExitCode.USAGE_ERROR, result.stdout.str()
        assert words in result.stderr.str(), result.stderr.str()


def test_the_default_profiles_scenarios_split_into_two_lanes_of_whole_modules_about_equally_long() -> None:
    default = cluster_group("default")
    nodeids = [
        "suites/test_a.py::one", "suites/test_a.py::two", "suites/test_b.py::one",
        "suites/test_c.py::one", "suites/test_d.py::one", "tests/test_plain.py::one",
    ]  # fmt: skip
    items = [SimpleNamespace(nodeid=n) for n in nodeids]
    groups = {n: default for n in nodeids[:5]} | {"tests/test_plain.py::one": "tests/test_plain.py"}
    took = {"suites/test_a.py::one": 50.0, "suites/test_a.py::two": 40.0, "suites/test_b.py::one": 60.0}
    took |= {"suites/test_c.py::one": 30.0, "suites/test_d.py::one": 20.0}
    _second_lane(items, groups, took)  # type: ignore[arg-type]
    # a (90 s) then b (60 s) then c (30 s) go to the shorter lane each time; d (20 s) to the first again.
    lanes = {
        module: {groups[n] for n in nodeids if n.startswith(module)}
        for module in ("suites/test_a", "suites/test_b", "suites/test_c", "suites/test_d")
    }
    assert lanes == {
        "suites/test_a": {default}, "suites/test_b": {SECOND_LANE}, "suites/test_c": {SECOND_LANE},
        "suites/test_d": {default},
    }, lanes  # fmt: skip
    assert groups["tests/test_plain.py::one"] == "tests/test_plain.py"
    # One module of the default profile: nothing to split.
    alone = {"suites/test_a.py::one": default, "suites/test_a.py::two": default}
    _second_lane([SimpleNamespace(nodeid=n) for n in alone], alone, took)  # type: ignore[misc]
    assert set(alone.values()) == {default}
