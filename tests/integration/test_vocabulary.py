"""The scenario vocabulary's own promises: the queue factory cleans up whatever it made and hands out
Active queues, and every object a scenario creates passes the ``pytest_kbc_mutate_object`` hook."""

from __future__ import annotations

from typing import Any

import pytest

from kbc import apis, timeouts
from kbc.errors import KubeApiError
from kbc.kube import Kube, is_true, labels_of, wait_gone
from kbc.kueue import Member, Quota, kueue_queues
from kbc.workloads import pod

pytestmark = pytest.mark.cluster


def test_queues_are_active_when_handed_out_and_gone_afterwards(
    kube: Kube, namespace: str, unique: str
) -> None:
    with kueue_queues(kube, namespace, unique, {"cpu": "1"}) as queues:
        assert is_true(kube.get(apis.CLUSTER_QUEUE, queues.cluster_queue), "Active")
        assert (
            kube.get(apis.LOCAL_QUEUE, queues.local_queue, namespace)["spec"]["clusterQueue"]
            == queues.cluster_queue
        )
    for kind, name in ((apis.CLUSTER_QUEUE, queues.cluster_queue), (apis.RESOURCE_FLAVOR, queues.flavor)):
        wait_gone(kube, kind, name, timeout=timeouts.SHORT, what=f"{kind.kind} {name} to be deleted")


def test_a_queue_set_that_fails_half_way_leaves_nothing_behind(
    kube: Kube, namespace: str, unique: str
) -> None:
    members = {
        "fine": Member({"cpu": "1"}, in_cohort=False),
        # Kueue refuses a borrowingLimit in a ClusterQueue that names no cohort.
        "refused": Member({"cpu": Quota("1", borrowing_limit="1")}, in_cohort=False),
    }
    with pytest.raises(KubeApiError) as info, kueue_queues(kube, namespace, unique, members=members):
        pytest.fail("a refused ClusterQueue must not hand out the queue set")
    assert info.value.verb == "create" and f"refused-{unique}" in info.value.target, info.value
    assert "borrowingLimit" in info.value.message, info.value.message
    for kind, name in ((apis.CLUSTER_QUEUE, f"fine-{unique}"), (apis.RESOURCE_FLAVOR, f"default-{unique}")):
        wait_gone(
            kube,
            kind,
            name,
            timeout=timeouts.SHORT,
            what=f"{kind.kind} {name}, made before the refusal, to go",
        )


class LabelEverything:
    """A plugin as a platform team would write one: its admission policy wants a team label."""

    @pytest.hookimpl
    def pytest_kbc_mutate_object(self, obj: dict[str, Any], kube: Kube) -> None:
        obj["metadata"].setdefault("labels", {})["team"] = "platform"


def test_every_object_a_scenario_creates_passes_the_mutate_hook(
    pytestconfig: pytest.Config, kube: Kube, namespace: str
) -> None:
    plugin = LabelEverything()
    pytestconfig.pluginmanager.register(plugin)
    try:
        created = kube.create(pod("labelled"), namespace=namespace)
    finally:
        pytestconfig.pluginmanager.unregister(plugin)
    assert labels_of(created).get("team") == "platform"
    assert labels_of(kube.get(apis.POD, "labelled", namespace)).get("team") == "platform"
    unhooked = kube.create(pod("plain"), namespace=namespace)
    assert "team" not in labels_of(unhooked)
