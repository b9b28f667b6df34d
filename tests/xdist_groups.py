"""The one group of ``make test`` beyond the harness's own (kbc.plugins.workers: a cluster profile, a module):
the harness's Docker Engine.

Every test that takes ``docker_env`` (kind clusters, the first run, the upstream registry), and the tests
marked ``xdist_group("docker-engine")`` that start and stop an engine of their own, run in one worker: each
changes host sysctls and bridges that the other's engine relies on. A module fixture shared with such a test
brings its module's other users along (kbc.plugins.workers).
"""

from __future__ import annotations

import pytest

DOCKER_ENGINE = "docker-engine"


def group_of(item: pytest.Item) -> str | None:
    """:data:`DOCKER_ENGINE` for a test that uses the harness's engine, else None."""
    names = set(getattr(item, "fixturenames", ()))
    marked = {mark.args[0] for mark in item.iter_markers("xdist_group") if mark.args}
    return DOCKER_ENGINE if "docker_env" in names or DOCKER_ENGINE in marked else None
