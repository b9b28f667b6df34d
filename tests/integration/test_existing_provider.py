"""The existing provider against a running cluster: opt-in only, never deletes, fails closed on charts."""

from __future__ import annotations

import io

import pytest

from kbc import apis
from kbc.cluster.providers import Cluster
from kbc.cluster.providers.existing import ExistingProvider
from kbc.errors import ChartError, ContextNotAllowedError, RegistryError
from kbc.kube import Kube
from kbc.supply.pins import ChartsLock
from tests.integration.as_before import Names, assert_as_before

pytestmark = pytest.mark.cluster


def test_without_opt_in_nothing_is_touched(kube: Kube, cluster: Cluster, charts_lock: ChartsLock) -> None:
    before = Names.of(kube, apis.NAMESPACE)
    provider = ExistingProvider(charts_lock, kubeconfig=cluster.kubeconfig, out=io.StringIO())
    with pytest.raises(ContextNotAllowedError, match=f"--allow-context kbc-{cluster.name}"):
        provider.up("guarded", components=("kueue",))
    assert_as_before(kube, before, "the refused install")


def test_opted_in_context_is_used_and_never_deleted(
    kube: Kube, cluster: Cluster, charts_lock: ChartsLock
) -> None:
    context = f"kbc-{cluster.name}"
    provider = ExistingProvider(
        charts_lock, kubeconfig=cluster.kubeconfig, allow_context=context, out=io.StringIO()
    )
    existing = provider.up("opted-in")
    assert not existing.created_by_harness
    assert existing.details == {"context": context, "kubernetes": charts_lock.kubernetes.version}
    provider.down("opted-in")
    assert kube.list(apis.NODE), "the existing provider must leave the cluster running"


def test_a_chart_that_cannot_be_pulled_installs_nothing(
    kube: Kube, cluster: Cluster, charts_lock: ChartsLock
) -> None:
    before = Names.of(kube, apis.NAMESPACE)
    provider = ExistingProvider(
        charts_lock, kubeconfig=cluster.kubeconfig, allow_context=f"kbc-{cluster.name}", out=io.StringIO()
    )
    # The lock records no digest: the run asks the registry for it first (pinned by first use), and
    # an unreachable registry is named, with what to do.
    with pytest.raises(RegistryError, match=r"cannot reach it.*pass --mirror FROM=TO"):
        provider.up("no-registry", components=("jobset",))
    assert_as_before(kube, before, "the refused install")
    # Without verification, helm's pull is what fails.
    unverified = ExistingProvider(
        charts_lock,
        kubeconfig=cluster.kubeconfig,
        allow_context=f"kbc-{cluster.name}",
        allow_unpinned_charts=True,
        out=io.StringIO(),
    )
    reference = charts_lock.components["jobset"].chart.reference
    with pytest.raises(ChartError, match=f"jobset: helm pull of {reference}"):
        unverified.up("no-registry", components=("jobset",))
    assert_as_before(kube, before, "the refused install")
