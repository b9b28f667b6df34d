"""What a profile's cluster installs; the next profile's cluster, started while the last scenario of the
profile before runs: which scenario hands over to which profile, and a cluster started so whose scenarios
never ran is removed once it is up."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from kbc.cluster.providers import Cluster, ProviderOptions
from kbc.configuration import Setting
from kbc.plugins import cluster as plugin
from kbc.plugins.cluster import DEFAULT, ClusterSession, Prestart, Profile
from kbc.plugins.needs import needed_components
from kbc.supply.lock import load_lock

FAIR = Profile((Setting("kueue", "fair sharing", {"fairSharing": {"enable": True}}),))
OFF = Profile((Setting("kueue", "waitForPodsReady off", {"waitForPodsReady": {"enable": False}}),))


class SlowProvider:
    """Starts a cluster in a while, as a provider's up does, and records what it removed."""

    name = "local"

    def __init__(self) -> None:
        self.removed: list[str] = []
        self.release = threading.Event()

    def up(self, name: str, **_: Any) -> Cluster:
        self.release.wait(5)
        return Cluster(name, self.name, Path("/nonexistent"), True)

    def down(self, name: str) -> None:
        self.removed.append(name)


def item(nodeid: str, profile: Profile, *, on_a_cluster: bool = True) -> Any:
    params = {"cluster": profile} if profile != DEFAULT else {}
    return SimpleNamespace(
        nodeid=nodeid,
        callspec=SimpleNamespace(params=params),
        stash=pytest.Stash(),
        fixturenames=["kube", "cluster"] if on_a_cluster else ["tmp_path"],
    )


def session_of(items: list[Any]) -> Any:
    config = SimpleNamespace(stash=pytest.Stash())
    state = ClusterSession(
        lock=load_lock(),
        provider_name="local",
        cluster_name="kbc",
        keep=False,
        kubeconfig_copy=None,
        components=("kueue",),
        values={},
        config=(),
        options=ProviderOptions(),
    )
    config.stash[plugin.session_key] = state
    return SimpleNamespace(config=config, items=items)


def test_the_last_scenario_of_each_profile_hands_over_to_the_profile_of_the_test_that_runs_next() -> None:
    """By the test this process runs next, as pytest (or a pytest-xdist worker, which holds its last test back
    until it knows) says: under xdist the next test in the collection may be another worker's."""
    ran = [item("a", DEFAULT), item("b", DEFAULT), item("c[fair]", FAIR), item("d[fair]", FAIR)]
    ran += [item("e[off]", OFF), item("f", DEFAULT), item("unit", DEFAULT, on_a_cluster=False)]
    ran += [item("g[fair]", FAIR)]
    for this, following in zip(ran, [*ran[1:], None], strict=True):
        plugin.pytest_runtest_protocol(this, following)
    handed = {i.nodeid: i.stash[plugin._handover_key] for i in ran if plugin._handover_key in i.stash}
    # A test without a cluster hands over to nothing: the next profile's cluster would start beside it,
    # under whatever it made of the environment (a unit test's KBC_CACHE_DIR).
    assert handed == {"b": FAIR, "d[fair]": OFF}


def test_a_cluster_started_early_whose_scenarios_never_ran_is_waited_for_and_removed() -> None:
    session = session_of([])
    provider = SlowProvider()
    prestart = Prestart(FAIR, "kbc-kueue-fair-sharing", provider, time.monotonic())  # type: ignore[arg-type]
    session.config.stash[plugin._prestarts_key] = {FAIR: prestart}
    prestart.start(session.config.stash[plugin.session_key])
    threading.Timer(0.2, provider.release.set).start()
    plugin.pytest_sessionfinish(session)
    assert provider.removed == ["kbc-kueue-fair-sharing"]
    assert 0.2 <= prestart.took < 5, "the start's own time, measured when it ended"


def test_a_cluster_started_early_that_failed_to_start_has_nothing_to_remove() -> None:
    session = session_of([])
    provider = SlowProvider()

    def fails(name: str, **_: Any) -> Cluster:
        raise RuntimeError("kube-apiserver did not start")

    provider.up = fails  # type: ignore[method-assign]
    prestart = Prestart(FAIR, "kbc-kueue-fair-sharing", provider, time.monotonic())  # type: ignore[arg-type]
    session.config.stash[plugin._prestarts_key] = {FAIR: prestart}
    prestart.start(session.config.stash[plugin.session_key])
    plugin.pytest_sessionfinish(session)
    assert provider.removed == []
    with pytest.raises(RuntimeError, match="kube-apiserver did not start"):
        prestart.done.result()


class Marked(SimpleNamespace):
    """A scenario with component markers, as pytest gives them."""

    def get_closest_marker(self, name: str) -> Any:
        return object() if name in self.marks else None


def test_a_profile_s_cluster_installs_only_the_components_its_scenarios_exercise() -> None:
    everything = ("jobset", "kueue", "volcano")
    volcano = Profile((Setting("volcano", "reclaim", {"actions": "reclaim"}),))
    scenarios = [
        Marked(nodeid="a", callspec=SimpleNamespace(params={}), marks={"jobset", "kueue"}),
        Marked(nodeid="b", callspec=SimpleNamespace(params={"cluster": FAIR}), marks={"kueue"}),
        Marked(nodeid="c", callspec=SimpleNamespace(params={"cluster": OFF}), marks=set()),
        Marked(nodeid="d", callspec=SimpleNamespace(params={"cluster": OFF}), marks={"jobset"}),
        Marked(nodeid="e", callspec=SimpleNamespace(params={"cluster": volcano}), marks={"volcano"}),
    ]
    needed = needed_components(scenarios, everything)  # type: ignore[arg-type]
    # The setting's component and every component a scenario of the profile is marked with; the default
    # profile's cluster, the one a user reuses, always gets them all.
    assert needed == {FAIR: {"kueue"}, OFF: {"jobset", "kueue"}, volcano: {"volcano"}}
    state = session_of([]).config.stash[plugin.session_key]
    state.components, state.needed = everything, needed
    assert state.components_for(DEFAULT) == everything
    assert state.components_for(FAIR) == ("kueue",)
    assert state.components_for(OFF) == ("jobset", "kueue")
    # The canary upgrades every component of each cluster it made: they start whole.
    assert state.components_for(FAIR, every=True) == everything
    # A component the session leaves out (--components) stays out.
    state.components = ("kueue",)
    assert state.components_for(OFF) == ("kueue",)
