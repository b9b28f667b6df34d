"""Which of ``make test``'s tests must run in the same pytest-xdist worker, derived from what they use.

``make test`` runs on two workers (``-n 2 --dist loadgroup``): most of its time is tests waiting on
clusters, so two at once keep both cores busy. A worker is a pytest session of its own, with its own
session and module fixtures, so tests that share one of these must share a worker:

- the session's cluster (the ``cluster`` fixture: ``kbc-selftest`` and its profiles' clusters, which the
  suites and the integration tests that take ``kube`` use): two workers would each start one of the
  same name, and the first to finish would remove it under the other;
- the harness's Docker Engine (``docker_env``) and what runs on it (kind clusters, the upstream
  registry), and the tests marked ``xdist_group("docker-engine")`` that start and stop an engine of their
  own: each changes host sysctls and bridges that the other's engine relies on;
- a module-scoped fixture (a kind cluster, a registry, an npm install): made once per module.

Every other test goes to whichever worker is free. Groups come from each test's fixture closure, so a new
test that takes ``kube`` or ``docker_env`` lands in the right group without being listed anywhere.

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

SESSION_CLUSTER = "session-cluster"
DOCKER_ENGINE = "docker-engine"
# Most binding first: a module whose tests span groups goes whole to the first of them.
_PRIORITY = (DOCKER_ENGINE, SESSION_CLUSTER)
_GROUPS_FILE = "kbc_xdist_groups"
_groups_dir_key = pytest.StashKey[Path]()


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
    """The group of each item that shares state with others, by node id; the others are not listed."""
    by_module: dict[str, list[pytest.Item]] = defaultdict(list)
    groups: dict[str, str] = {}
    for item in items:
        group = _own_group(item)
        if group is not None:
            groups[item.nodeid] = group
        if _uses_module_fixture(item):
            by_module[item.nodeid.split("::", 1)[0]].append(item)
    for module, members in by_module.items():
        # A module fixture is made once only if all its users share one worker: the most binding group among
        # them, else the module's own.
        found = {groups.get(item.nodeid) for item in members}
        shared = next((g for g in _PRIORITY if g in found), module)
        for item in members:
            groups[item.nodeid] = shared
    return groups


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
    return GroupScheduling(config, log, directory / "groups.json")


def unconfigure(config: pytest.Config) -> None:
    directory = config.stash.get(_groups_dir_key, None)
    if directory is not None:
        shutil.rmtree(directory, ignore_errors=True)


class GroupScheduling(LoadScopeScheduling):  # type: ignore[misc]
    """xdist's scope scheduling with the groups the workers found as scopes: a group is sent whole to one
    worker; a test in no group is a scope of its own, sent to whichever worker is free."""

    def __init__(self, config: pytest.Config, log: Any, groups_file: Path) -> None:
        super().__init__(config, log)
        self._groups_file = groups_file
        self._groups: dict[str, str] | None = None

    def _split_scope(self, nodeid: str) -> str:
        if self._groups is None:
            # Read once every worker has finished collecting (xdist schedules only then), so it is there.
            self._groups = json.loads(self._groups_file.read_text())
        return self._groups.get(nodeid, nodeid)


def _own_group(item: pytest.Item) -> str | None:
    names = set(getattr(item, "fixturenames", ()))
    marked = {mark.args[0] for mark in item.iter_markers("xdist_group") if mark.args}
    if "docker_env" in names or DOCKER_ENGINE in marked:
        return DOCKER_ENGINE
    if "cluster" in names:
        return SESSION_CLUSTER
    return min(marked, default=None)


def _uses_module_fixture(item: pytest.Item) -> bool:
    info = getattr(item, "_fixtureinfo", None)
    if info is None:
        return False
    return any(d.scope == "module" for defs in info.name2fixturedefs.values() for d in defs)
