"""Every sabotage that declares its expectation (``EXPECT`` in ``tests/sabotage/<name>.py``) turns its
scenario red: the scenario runs in a separate pytest process against this session's cluster with the
sabotage loaded, exactly one test fails, and its failure says why in the words the sabotage expects.

The sabotages whose scenarios need a component setting run in a test of their own per set of settings,
marked with those ``needs``, so that the needs plugin gives it the scenario's cluster (a parameter's marks
come too late for that).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import pytest

from kbc.cluster.providers import Cluster
from kbc.configuration import Setting
from tests.integration.suite_runner import expect_failure
from tests.sabotage import Expect, declared

pytestmark = pytest.mark.cluster


def _expect(cluster: Cluster, sabotage: str, expect: Expect) -> None:
    extra = ["--timeout-scale", str(expect.timeout_scale)] if expect.timeout_scale is not None else []
    run = expect_failure(
        cluster,
        expect.scenario,
        sabotage=sabotage,
        because=list(expect.because),
        or_because=[list(words) for words in expect.or_because],
        extra=extra,
    )
    if expect.pattern is not None:
        assert re.search(expect.pattern, run.failures[0]), f"no match for {expect.pattern!r}\n{run.explain()}"


def _test_of(cases: list[tuple[str, Expect]], needs: tuple[Setting, ...]) -> Callable[..., None]:
    params: list[Any] = []
    for name, expect in cases:
        marks = [pytest.mark.sabotages(expect.scenario), *([pytest.mark.slow] if expect.slow else [])]
        params.append(pytest.param(name, expect, id=name, marks=marks))

    @pytest.mark.parametrize(("sabotage", "expect"), params)
    def test(cluster: Cluster, sabotage: str, expect: Expect) -> None:
        _expect(cluster, sabotage, expect)

    return pytest.mark.needs(*needs)(test) if needs else test


def _tests() -> dict[str, Callable[..., None]]:
    """One test per set of settings the sabotages' scenarios need (the plain one: none)."""
    groups: dict[tuple[Setting, ...], list[tuple[str, Expect]]] = {}
    for name, expect in sorted(declared().items()):
        needs = tuple(sorted(expect.needs, key=lambda s: s.key))
        groups.setdefault(needs, []).append((name, expect))
    tests = {}
    for needs, cases in groups.items():
        suffix = "".join(f"_with_{setting.slug.replace('-', '_')}" for setting in needs)
        tests[f"test_the_scenario_fails_with_its_sabotage{suffix}"] = _test_of(cases, needs)
    return tests


globals().update(_tests())
