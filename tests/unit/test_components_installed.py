"""A scenario marked with a component the session's cluster lacks skips, naming the component and the
option that installs it (kbc.plugins.needs); a reused cluster is asked once per component whether it
serves it."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any, cast

import pytest

from kbc.plugins import needs
from kbc.plugins.cluster import ClusterSession, session_key


class _Kube:
    def __init__(self, served: dict[str, list[str]]) -> None:
        self.served, self.asked = served, 0

    def served_versions(self, group: str) -> list[str]:
        self.asked += 1
        return self.served.get(group, [])


def request_for(markers: set[str], components: tuple[str, ...], created_here: bool, kube: _Kube) -> Any:
    stash = pytest.Stash()
    run = SimpleNamespace(created_here=created_here, cluster=SimpleNamespace(name="c1"))
    stash[session_key] = cast(ClusterSession, SimpleNamespace(components=components, current=run))
    stash[needs._checked_key] = {}
    node = SimpleNamespace(get_closest_marker=lambda name: name if name in markers else None)
    return SimpleNamespace(
        node=node,
        config=SimpleNamespace(stash=stash),
        fixturenames=["kube"],
        getfixturevalue=lambda name: kube,
    )


def check(request: Any) -> None:
    needs._components_are_installed.__wrapped__(request)  # type: ignore[attr-defined]


def test_a_component_the_session_does_not_install_is_a_skip_naming_the_option() -> None:
    request = request_for({"lws", "kueue"}, ("jobset", "kueue", "volcano"), True, _Kube({}))
    with pytest.raises(pytest.skip.Exception) as skipped:
        check(request)
    assert "exercises LeaderWorkerSet (component lws)" in str(skipped.value)
    assert "--components jobset,lws,kueue,volcano" in str(skipped.value)
    check(request_for({"kueue"}, ("jobset", "kueue", "volcano"), True, _Kube({})))  # installed: runs


def test_a_reused_cluster_is_asked_once_whether_it_serves_the_component() -> None:
    kube = _Kube({"leaderworkerset.x-k8s.io": ["v1"]})
    request = request_for({"lws"}, ("lws",), False, kube)
    check(request)
    check(request)
    assert kube.asked == 1
    lacking = request_for({"lws"}, ("lws",), False, _Kube({}))
    with pytest.raises(pytest.skip.Exception, match=r"whose API \(leaderworkerset.x-k8s.io\) the reused"):
        check(lacking)
