"""Volcano's network-topology-aware gangs: the Volcano half of the topology-aware gangs ``test_topology.py``
proves for Kueue.

The node pools (``manifests/nodes``) put each H100 node in a rack of its own (``topology.kbatch.dev/rack``).
Each scenario describes them to Volcano as HyperNodes: one of tier 1 per rack, holding its nodes, and a
spine of tier 2 over the racks (:func:`kbc.volcano.topology.made_racks`), and submits a gang of two pods
that each ask for half a node's GPUs, with ``networkTopology`` at tier 1. Where a rack must not hold the
gang, a filler pod (placed by kube-scheduler) holds the other half of each node. Against the real
vc-scheduler, these scenarios prove that

- with the ``network-topology-aware`` plugin (:data:`~kbc.volcano.settings.NETWORK_TOPOLOGY`), a **hard**
  gang waits whole while no rack can hold it (no pod bound, its PodGroup ``Unschedulable`` for
  ``NotEnoughResources``), then runs in the rack that frees, every pod there;
- a **soft** gang in the same state runs at once, across the racks;
- with the chart's scheduler configuration, which leaves the plugin out, a hard gang is **not enforced**:
  on two free racks it is split across them, as a gang without a topology is. A team that installs the chart
  as it is and writes ``mode: hard`` gets no error and no one-rack placement.
"""

from __future__ import annotations

from collections.abc import Iterator

import allure
import pytest

from kbc import apis
from kbc.errors import ScenarioFailure
from kbc.gpu import Filler, GpuNode, fill_node
from kbc.jobs import bound, describe_pods
from kbc.kube import Kube, Obj, condition, hold_list
from kbc.kueue.topology import domains_of
from kbc.labels import PRODUCT_LABEL, RACK_LABEL
from kbc.volcano import (
    JOB_NAME_LABEL,
    NOT_ENOUGH_RESOURCES,
    RUNNING,
    UNSCHEDULABLE,
    VolcanoQueueFactory,
    create_vcjob,
    describe_podgroup,
    phase,
    wait_podgroup,
    wait_podgroup_of,
    wait_vcjob_pods_running,
)
from kbc.volcano.settings import NETWORK_TOPOLOGY
from kbc.volcano.topology import hard, made_racks, soft
from kbc.workloads import vcjob

pytestmark = [
    pytest.mark.volcano,
    pytest.mark.tas,
    pytest.mark.gang,
    allure.epic("Volcano"),
    allure.feature("network topology"),
]

PODS = 2
GANG = "gang"
# Each pod asks for a little memory too, so that the chart's nodeorder spreads what no topology holds
# together (docs/suites.md: binpack packs pods that ask for CPU alone).
MEMORY = "64Mi"


@pytest.fixture
def hyper_racks(kube: Kube, unique: str, racks: list[GpuNode]) -> Iterator[dict[str, str]]:
    """A HyperNode per rack of the GPU nodes and a spine over them; rack -> HyperNode."""
    by_rack: dict[str, list[str]] = {}
    for node in racks:
        by_rack.setdefault(node.labels[RACK_LABEL], []).append(node.name)
    shared = {rack: nodes for rack, nodes in by_rack.items() if len(nodes) > 1}
    if shared:
        # Half of each node filled must leave no rack room for the whole gang.
        pytest.skip(
            f"these scenarios need each {racks[0].product} node in a rack of its own; shared: {shared}"
        )
    with made_racks(kube, f"vc-{unique}", by_rack) as named:
        allure.attach(
            "\n".join(f"{named[rack]} (tier 1): {', '.join(nodes)}" for rack, nodes in by_rack.items())
            + f"\nvc-{unique}-spine (tier 2): {', '.join(named.values())}",
            name="HyperNodes",
            attachment_type=allure.attachment_type.TEXT,
        )
        yield named


def _per_pod(racks: list[GpuNode]) -> int:
    """GPUs each gang pod asks for: half the smallest node's, so that one rack holds the whole gang."""
    return min(n.allocatable for n in racks) // PODS


def _gang(queue: str, racks: list[GpuNode], topology: dict[str, object] | None) -> Obj:
    return vcjob(
        GANG,
        queue,
        replicas=PODS,
        min_available=PODS,
        gpus=_per_pod(racks),
        memory=MEMORY,
        node_selector={PRODUCT_LABEL: racks[0].product},
        network_topology=topology,
    )


def _racks_of(kube: Kube, pods: list[Obj]) -> dict[str, int]:
    return domains_of(kube, pods, RACK_LABEL)


def _half_full(kube: Kube, namespace: str, racks: list[GpuNode]) -> list[Filler]:
    """Fill every rack's nodes until each holds one gang pod and no more."""
    return [fill_node(kube, namespace, n, _per_pod(racks), name=f"filler-{i}") for i, n in enumerate(racks)]


def _not_enough_resources(group: Obj) -> bool:
    cond = condition(group, UNSCHEDULABLE) or {}
    return cond.get("status") == "True" and cond.get("reason") == NOT_ENOUGH_RESOURCES


@pytest.mark.serial
@pytest.mark.needs(NETWORK_TOPOLOGY)
@allure.story("a hard gang waits whole while no rack holds it, then runs in the rack that frees")
def test_a_hard_gang_waits_whole_while_no_rack_holds_it_then_runs_in_the_rack_that_frees(
    kube: Kube,
    namespace: str,
    racks: list[GpuNode],
    hyper_racks: dict[str, str],
    make_volcano_queue: VolcanoQueueFactory,
) -> None:
    queue = make_volcano_queue("vc-hard")
    with allure.step(f"each rack keeps room for one of the gang's {PODS} pods"):
        fillers = _half_full(kube, namespace, racks)
    with allure.step(f"a gang of {PODS} x {_per_pod(racks)} GPUs, networkTopology hard at tier 1"):
        group = wait_podgroup_of(kube, namespace, create_vcjob(kube, namespace, _gang(queue, racks, hard(1))))
        name = str(group["metadata"]["name"])
    with allure.step(f"it waits whole: PodGroup {UNSCHEDULABLE} for {NOT_ENOUGH_RESOURCES}, no pod bound"):

        def bound_any(pods: list[Obj]) -> str | None:
            placed = bound(pods)
            if placed:
                where = _racks_of(kube, placed)
                return f"{len(placed)} pods bound in racks {where} while no rack holds the hard gang"
            return None

        wait_podgroup(
            kube,
            namespace,
            name,
            until=_not_enough_resources,
            fail=lambda g: (
                f"PodGroup {name} went {phase(g)} while no rack holds the hard gang"
                if phase(g) == RUNNING
                else None
            ),
            what=f"PodGroup {name} {UNSCHEDULABLE} for {NOT_ENOUGH_RESOURCES} (no rack holds the gang)",
        )
        hold_list(
            kube,
            apis.POD,
            namespace=namespace,
            labels={JOB_NAME_LABEL: GANG},
            holds=lambda pods: not bound_any(pods),
            describe=describe_pods,
            what=f"no pod of the hard gang bound while each rack holds only one of its {PODS} pods",
        )
    freed = racks[0]
    with allure.step(f"free rack {freed.labels[RACK_LABEL]}: the whole gang runs there"):
        fillers[0].wait_released()
        pods = wait_vcjob_pods_running(kube, namespace, GANG, PODS)
        where = _racks_of(kube, pods)
        if where != {freed.labels[RACK_LABEL]: PODS}:
            group = kube.get(apis.PODGROUP, name, namespace)
            raise ScenarioFailure(
                f"the hard gang ran across racks {where} once rack {freed.labels[RACK_LABEL]} was free: "
                f"it should run whole in that rack\n{describe_podgroup(group)}"
            )


@pytest.mark.serial
@pytest.mark.needs(NETWORK_TOPOLOGY)
@allure.story("a soft gang spans the racks when no rack holds it")
def test_a_soft_gang_spans_the_racks_when_no_rack_holds_it(
    kube: Kube,
    namespace: str,
    racks: list[GpuNode],
    hyper_racks: dict[str, str],
    make_volcano_queue: VolcanoQueueFactory,
) -> None:
    queue = make_volcano_queue("vc-soft")
    with allure.step(f"each rack keeps room for one of the gang's {PODS} pods"):
        _half_full(kube, namespace, racks)
    with allure.step(f"a gang of {PODS} x {_per_pod(racks)} GPUs, networkTopology soft at tier 1, runs"):
        create_vcjob(kube, namespace, _gang(queue, racks, soft(1)))
        pods = wait_vcjob_pods_running(kube, namespace, GANG, PODS)
    where = _racks_of(kube, pods)
    if len(where) != PODS:
        raise ScenarioFailure(
            f"the soft gang ran in racks {where}: with one pod's room a rack, it must span {PODS}"
        )


@pytest.mark.serial
@allure.story("the chart's scheduler configuration does not enforce a hard topology: the gang is split")
def test_the_chart_s_configuration_splits_a_hard_gang_across_racks(
    kube: Kube,
    namespace: str,
    racks: list[GpuNode],
    hyper_racks: dict[str, str],
    make_volcano_queue: VolcanoQueueFactory,
) -> None:
    queue = make_volcano_queue("vc-unenforced")
    with allure.step(f"a gang of {PODS} x {_per_pod(racks)} GPUs, hard at tier 1, on two free racks"):
        create_vcjob(kube, namespace, _gang(queue, racks, hard(1)))
        pods = wait_vcjob_pods_running(kube, namespace, GANG, PODS)
    where = _racks_of(kube, pods)
    if len(where) == 1:
        raise ScenarioFailure(
            f"the hard gang ran in one rack {where} on the chart's configuration: the chart's tiers (without "
            "network-topology-aware) now enforce it, or this cluster's configuration adds the plugin; "
            "the scheduler configuration in force is in the report (docs/suites.md)"
        )
