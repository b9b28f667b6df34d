"""Which of ``make test``'s tests must run in the same pytest-xdist worker, derived from what they use,
and the order the groups are handed out in.

``make test`` runs on two workers (``-n 2 --dist loadgroup``): most of its time is tests waiting on
clusters, so two at once keep both cores busy. A worker is a pytest session of its own, with its own
session and module fixtures, so tests that share one of these must share a worker:

- a cluster of the session (the ``cluster`` fixture, one per profile: ``kbc-selftest`` and its profiles'
  clusters, which the suites and the integration tests that take ``kube`` use): the tests of one profile
  share its cluster, so a profile is a group (``session-cluster:default``, ``session-cluster:kueue-...``);
  two profiles may run in two workers, each worker naming its clusters apart (:func:`worker_cluster_name`);
- the harness's Docker Engine (``docker_env``) and what runs on it (kind clusters, the upstream
  registry), and the tests marked ``xdist_group("docker-engine")`` that start and stop an engine of their
  own: each changes host sysctls and bridges that the other's engine relies on;
- a module: the tests of one module go together unless they are in a group above, since a module's tests
  share its fixtures and often a cluster name of their own (the canary's ``kbc-selftest-canary``).

A new test that takes ``kube`` or ``docker_env`` lands in its group without being listed anywhere.

The groups are handed out longest first (by the durations the last runs recorded, see
:func:`record_durations`), so that the longest does not start last and leave one worker idle at the end.

pytest-xdist's own ``loadgroup`` renames each grouped item's node id, which pytest 9 no longer lets a
plugin do (the id is not ``_nodeid`` any more), so its groups are silently ignored. Here the workers write
the groups they collected to a file the controller names, and the controller's scheduler
(:class:`GroupScheduling`) reads them: node ids stay as pytest made them.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest
from xdist.scheduler import LoadScopeScheduling

from kbc.cluster.options import BY_NAME
from kbc.plugins.cluster import DEFAULT, profile_param
from kbc.supply import paths

SESSION_CLUSTER = "session-cluster"
DOCKER_ENGINE = "docker-engine"
_GROUPS_FILE = "kbc_xdist_groups"
_groups_dir_key = pytest.StashKey[Path]()
UNKNOWN_SECONDS = 2.0
"""What a test no run has recorded is taken to last, when the groups are ordered."""


def check_distribution(config: pytest.Config) -> None:
    """Refuse a distribution that would split a group across workers."""
    workers = getattr(config.option, "numprocesses", None)
    dist = getattr(config.option, "dist", "no")
    if workers and dist not in ("loadgroup", "no"):
        raise pytest.UsageError(
            "the harness's tests share clusters and a Docker engine in groups (tests/xdist_groups.py), "
            f"which --dist {dist} would split across workers: run them with --dist loadgroup, as make test "
            "does"
        )


def groups_of(items: list[pytest.Item]) -> dict[str, str]:
    """The group of every item, by node id."""
    by_module: dict[str, list[pytest.Item]] = defaultdict(list)
    groups: dict[str, str] = {}
    for item in items:
        module = item.nodeid.split("::", 1)[0]
        groups[item.nodeid] = _own_group(item) or module
        if _uses_module_fixture(item):
            by_module[module].append(item)
    for members in by_module.values():
        # A module fixture is made once only if all its users share one worker: the most binding group among
        # them (the engine's, then a session cluster's, the default profile's first), else the module's own.
        found = {groups[item.nodeid] for item in members}
        shared = min(found, key=_binding)
        for item in members:
            groups[item.nodeid] = shared
    return groups


def _binding(group: str) -> tuple[int, str]:
    if group == DOCKER_ENGINE:
        return (0, group)
    if group == _cluster_group(DEFAULT.id):
        return (1, group)
    return (2 if group.startswith(SESSION_CLUSTER) else 3, group)


def _cluster_group(profile: str) -> str:
    return f"{SESSION_CLUSTER}:{profile}"


def write_groups(config: pytest.Config, items: list[pytest.Item]) -> None:
    """In a worker: the groups of the collected items, where the controller's scheduler reads them."""
    workerinput: dict[str, Any] | None = getattr(config, "workerinput", None)
    if workerinput is None or _GROUPS_FILE not in workerinput:
        return
    path = Path(workerinput[_GROUPS_FILE])
    # Every worker collects the same items and writes the same groups; a rename keeps a reader from seeing
    # half a file.
    partial = path.with_name(f"{path.name}.{os.getpid()}")
    partial.write_text(json.dumps(groups_of(items)))
    partial.replace(path)


def configure_controller(config: pytest.Config) -> None:
    """In the controller: a directory for the workers' groups file, removed when the session ends."""
    if getattr(config.option, "numprocesses", None) and not hasattr(config, "workerinput"):
        config.stash[_groups_dir_key] = Path(tempfile.mkdtemp(prefix="kbc-xdist-groups-"))


def configure_node(config: pytest.Config, workerinput: dict[str, Any]) -> None:
    """Tell a worker where to write its groups."""
    directory = config.stash.get(_groups_dir_key, None)
    if directory is not None:
        workerinput[_GROUPS_FILE] = str(directory / "groups.json")


def make_scheduler(config: pytest.Config, log: Any) -> GroupScheduling | None:
    """The scheduler of ``--dist loadgroup``; other modes are xdist's own."""
    directory = config.stash.get(_groups_dir_key, None)
    if config.getvalue("dist") != "loadgroup" or directory is None:
        return None
    return GroupScheduling(config, log, directory / "groups.json", read_durations())


def unconfigure(config: pytest.Config) -> None:
    directory = config.stash.get(_groups_dir_key, None)
    if directory is not None:
        shutil.rmtree(directory, ignore_errors=True)


class GroupScheduling(LoadScopeScheduling):  # type: ignore[misc]
    """xdist's scope scheduling with the groups the workers found as scopes: a group is sent whole to one
    worker, the longest of those left first."""

    def __init__(
        self, config: pytest.Config, log: Any, groups_file: Path, durations: dict[str, float]
    ) -> None:
        super().__init__(config, log)
        self._groups_file = groups_file
        self._groups: dict[str, str] | None = None
        self._durations = durations

    def _split_scope(self, nodeid: str) -> str:
        if self._groups is None:
            # Read once every worker has finished collecting (xdist schedules only then), so it is there.
            self._groups = json.loads(self._groups_file.read_text())
        return self._groups.get(nodeid, nodeid)

    def _assign_work_unit(self, node: Any) -> None:
        # xdist hands out the first unit of its queue: make it the longest left.
        longest = max(self.workqueue, key=lambda scope: self.seconds(self.workqueue[scope]))
        self.workqueue.move_to_end(longest, last=False)
        super()._assign_work_unit(node)

    def seconds(self, unit: dict[str, bool]) -> float:
        """How long the last runs took over *unit*'s tests (UNKNOWN_SECONDS for each one they did not run)."""
        return sum(self._durations.get(nodeid, UNKNOWN_SECONDS) for nodeid in unit)


def durations_file() -> Path:
    """Where ``make test`` keeps how long each test took when it last ran (outside the repository)."""
    return paths.cache_dir() / "make-test-durations.json"


def read_durations(path: Path | None = None) -> dict[str, float]:
    """Seconds per node id as the last runs recorded them; none where no run did (or the file is unreadable:
    it only orders the groups)."""
    try:
        data = json.loads((path or durations_file()).read_text())
    except (OSError, ValueError):
        return {}
    return {str(k): float(v) for k, v in data.items()} if isinstance(data, dict) else {}


def record_durations(config: pytest.Config, path: Path | None = None) -> None:
    """In the controller (or a run without workers): keep how long each test takes, for the next run's
    order (:class:`DurationRecorder`)."""
    if not hasattr(config, "workerinput"):
        config.pluginmanager.register(DurationRecorder(path or durations_file()), "kbc-test-durations")


class DurationRecorder:
    """Adds up each test's phases as the reports come (from the workers, in the controller) and merges them
    into the file at the end, the tests this run ran replacing what the file said of them."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.taken: dict[str, float] = {}

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        self.taken[report.nodeid] = self.taken.get(report.nodeid, 0.0) + report.duration

    def pytest_sessionfinish(self) -> None:
        if not self.taken:
            return
        merged = {**read_durations(self.path), **{k: round(v, 2) for k, v in self.taken.items()}}
        self.path.parent.mkdir(parents=True, exist_ok=True)
        partial = self.path.with_name(f"{self.path.name}.{os.getpid()}")
        partial.write_text(json.dumps(merged, indent=0, sort_keys=True))
        partial.replace(self.path)


def worker_cluster_name(config: pytest.Config) -> None:
    """In a worker other than the first: the session's cluster name with the worker's id appended.

    Two workers each run some profiles' clusters; with one name, a worker would take the other's running
    default cluster for one the user runs, and reuse it for a profile it lacks (its scenarios then skip)."""
    workerinput: dict[str, Any] | None = getattr(config, "workerinput", None)
    if workerinput is None or workerinput.get("workerid") in (None, "gw0"):
        return
    option = BY_NAME["--cluster-name"]
    if not hasattr(config.option, option.dest):
        return  # no cluster plugin in this session
    name = option.resolve(config.getoption(option.dest))
    config.option.cluster_name = f"{name}-{workerinput['workerid']}"


def _own_group(item: pytest.Item) -> str | None:
    names = set(getattr(item, "fixturenames", ()))
    marked = {mark.args[0] for mark in item.iter_markers("xdist_group") if mark.args}
    if "docker_env" in names or DOCKER_ENGINE in marked:
        return DOCKER_ENGINE
    if "cluster" in names:
        return _cluster_group(profile_param(item).id)
    return min(marked, default=None)


def _uses_module_fixture(item: pytest.Item) -> bool:
    info = getattr(item, "_fixtureinfo", None)
    if info is None:
        return False
    return any(d.scope == "module" for defs in info.name2fixturedefs.values() for d in defs)
