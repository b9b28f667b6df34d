"""make test's worker groups: tests that share the session's cluster, the Docker engine or a module fixture
are scheduled as one unit by pytest-xdist, whatever file they are in; the rest go anywhere."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest_plugins = ["pytester"]

REPO = Path(__file__).resolve().parents[2]

CONFTEST = """
import os
import pytest
from tests.conftest import (
    pytest_configure, pytest_unconfigure, pytest_collection_modifyitems, pytest_configure_node,
    pytest_xdist_make_scheduler,
)

@pytest.fixture(scope="session")
def cluster():
    return "the session's cluster"

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
        out.write(f"{os.environ['PYTEST_XDIST_WORKER']} {request.node.nodeid}\\n")
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
}
GROUPS = {
    "session-cluster": {"test_scenarios.py::test_takes_kube", "test_suite.py::test_scenario"},
    "docker-engine": {
        "test_engine.py::test_starts_an_engine_of_its_own",
        "test_engine.py::test_stops_it",
        "test_kind.py::test_uses_the_kind_cluster",
        # A module fixture's users go with the most binding group among them, so it is made once.
        "test_kind.py::test_uses_the_registry_only",
    },
    "test_registry.py": {"test_registry.py::test_one", "test_registry.py::test_two"},
}


@pytest.fixture
def tree(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    monkeypatch.setenv("PYTHONPATH", str(REPO))
    monkeypatch.setenv("RAN", str(pytester.path / "ran.txt"))
    pytester.makeconftest(CONFTEST)
    for name, text in TESTS.items():
        pytester.makepyfile(**{name.removesuffix(".py"): text})
    return pytester


def test_the_workers_find_the_groups_and_each_group_runs_in_one_worker(tree: pytest.Pytester) -> None:
    collected = tree.runpytest_subprocess("--collect-only", "-q", "-p", "no:cacheprovider")
    items = [line for line in collected.outlines if "::" in line]
    result = tree.runpytest_subprocess("-n", "2", "--dist", "loadgroup", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=len(items))
    ran: dict[str, str] = {}
    for line in (tree.path / "ran.txt").read_text().splitlines():
        worker, nodeid = line.split()
        ran[nodeid] = worker
    assert set(ran) == set(items)
    for group, members in GROUPS.items():
        assert len({ran[nodeid] for nodeid in members}) == 1, f"{group} split: {ran}"
    assert set(ran.values()) == {"gw0", "gw1"}, "both workers ran tests"


def test_a_distribution_that_splits_groups_is_refused(tree: pytest.Pytester) -> None:
    result = tree.runpytest_subprocess("-n", "2", "--dist", "load", "-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--dist load would split across workers*--dist loadgroup*"])
