"""Volcano: gang scheduling and a queue capped at zero (reclaim: ``test_volcano_reclaim.py``).

Against the real vc-controller-manager and vc-scheduler with the chart's actions and plugins, these
scenarios prove that

- a vcjob gang (``minAvailable`` = all 4 pods) on a node with only 3 free GPUs binds no pod at
  all for as long as it does not fit, and its PodGroup says why (``Unschedulable`` /
  ``NotEnoughResources``, "<n>/4 tasks in gang unschedulable"); it binds whole once a 4th GPU is free;
- a Queue whose ``capability`` allows zero GPUs keeps a GPU vcjob's PodGroup ``Pending`` (never
  ``Inqueue``) with zero pods, reporting "queue resource quota insufficient"; raising the
  capability lets it through ``Inqueue`` to ``Running``.
"""

from __future__ import annotations

import re

import allure
import pytest

from kbc import apis, timeouts
from kbc.events import wait_events
from kbc.gpu import wait_gpus_left_free
from kbc.jobs import bound, describe_pods
from kbc.kube import Kube, Obj, condition, hold_list, hold_object, hold_together, wait_for_list
from kbc.labels import GPU
from kbc.volcano import (
    GANG_UNSCHEDULABLE,
    INQUEUE,
    JOB_NAME_LABEL,
    NOT_ENOUGH_RESOURCES,
    PENDING,
    PODGROUP_PENDING,
    QUOTA_INSUFFICIENT,
    RUNNING,
    UNSCHEDULABLE,
    VolcanoQueueFactory,
    create_vcjob,
    describe_podgroup,
    job_pods,
    phase,
    set_capability,
    wait_pending_because,
    wait_podgroup,
    wait_podgroup_of,
    wait_vcjob_phase,
    wait_vcjob_pods_running,
)
from kbc.workloads import vcjob

pytestmark = [pytest.mark.volcano, allure.epic("Volcano")]

GANG_SIZE = 4
# Small CPU requests keep GPUs the only resource a queue's deserved share can run out of.
SMALL_CPU = "100m"


# -- gang -------------------------------------------------------------------------------------------


@pytest.fixture
def gang_queue(make_volcano_queue: VolcanoQueueFactory) -> str:
    """A Queue of its own, so no other job shares the gang's queue."""
    return make_volcano_queue("vc-gang")


@pytest.mark.gang
@pytest.mark.serial
@allure.feature("gang")
@allure.story(
    "a 4-GPU vcjob gang on a node with 3 free GPUs binds no pod and says why; it binds whole once 4 are free"
)
def test_gang_binds_no_pod_until_the_whole_gang_fits(kube: Kube, namespace: str, gang_queue: str) -> None:
    with allure.step("leave exactly 3 GPUs free on one GPU node"):
        filler = wait_gpus_left_free(kube, namespace, free=GANG_SIZE - 1, at_least=GANG_SIZE)
        node = filler.node.name
    with allure.step(
        f"submit a vcjob of {GANG_SIZE} x 1 GPU with minAvailable {GANG_SIZE}, pinned to {node}"
    ):
        manifest = vcjob(
            "gang",
            gang_queue,
            replicas=GANG_SIZE,
            min_available=GANG_SIZE,
            cpu=SMALL_CPU,
            node_selector=filler.node.selector,
        )
        pg_name = wait_podgroup_of(kube, namespace, create_vcjob(kube, namespace, manifest))["metadata"][
            "name"
        ]

    def partial(pods: list[Obj]) -> str | None:
        placed = bound(pods)
        if placed:
            return (
                f"gang has {len(placed)} of {GANG_SIZE} pods bound while only {GANG_SIZE - 1} GPUs were free "
                f"on {node}: partial placement (minAvailable={GANG_SIZE} must bind all or nothing)"
            )
        return None

    # "<unready>/<tasks> tasks in gang unschedulable: ..." (gang.go:237-238); a session that saw only
    # some of the pods yet counts fewer tasks, so wait for the condition that counts all of them.
    gang_message = re.compile(rf"\d+/{GANG_SIZE} {GANG_UNSCHEDULABLE}: ")

    def unschedulable(podgroup: Obj | None) -> bool:
        cond = condition(podgroup, UNSCHEDULABLE)
        return (
            cond is not None
            and cond.get("status") == "True"
            and cond.get("reason") == NOT_ENOUGH_RESOURCES
            and bool(gang_message.match(cond.get("message", "")))
        )

    def went_running(podgroup: Obj) -> str | None:
        if phase(podgroup) != RUNNING:
            return None
        # Running means the scheduler placed at least minMember pods: say which ones it bound.
        pods = job_pods(kube, namespace, "gang")
        return (
            f"PodGroup {pg_name} went Running while only {GANG_SIZE - 1} GPUs were free on {node}. "
            f"{partial(pods) or 'partial placement: the scheduler placed a gang that did not fit'}\n"
            f"{describe_pods(pods)}"
        )

    with allure.step("the gang plugin marks the PodGroup Unschedulable (NotEnoughResources)"):
        wait_podgroup(
            kube,
            namespace,
            pg_name,
            until=unschedulable,
            fail=went_running,
            what=(
                f"PodGroup {pg_name} to report {UNSCHEDULABLE}/{NOT_ENOUGH_RESOURCES} "
                f"'<n>/{GANG_SIZE} {GANG_UNSCHEDULABLE}: ...'"
            ),
        )
    with allure.step(f"the enqueued PodGroup's controller creates all {GANG_SIZE} pods, none of them bound"):
        wait_for_list(
            kube,
            apis.POD,
            namespace=namespace,
            labels={JOB_NAME_LABEL: "gang"},
            until=lambda pods: len(pods) == GANG_SIZE,
            fail=partial,
            describe=describe_pods,
            timeout=timeouts.LONG,
            what=f"the {GANG_SIZE} pods of vcjob gang",
        )
    with allure.step(
        "for the consistency window, watched together: no pod bound, the PodGroup Inqueue and "
        "Unschedulable, the vcjob Pending"
    ):
        hold_together(
            lambda: hold_list(
                kube,
                apis.POD,
                namespace=namespace,
                labels={JOB_NAME_LABEL: "gang"},
                holds=lambda pods: partial(pods) is None,
                describe=lambda pods: f"{partial(pods)}\n{describe_pods(pods)}",
                what=f"zero of {GANG_SIZE} gang pods bound, only {GANG_SIZE - 1} GPUs being free on {node}",
            ),
            lambda: hold_object(
                kube,
                apis.PODGROUP,
                pg_name,
                namespace=namespace,
                holds=lambda pg: pg is not None and phase(pg) == INQUEUE and unschedulable(pg),
                describe=describe_podgroup,
                what=f"PodGroup {pg_name} {INQUEUE} and {UNSCHEDULABLE} while its gang does not fit",
            ),
            lambda: hold_object(
                kube,
                apis.VCJOB,
                "gang",
                namespace=namespace,
                holds=lambda vj: vj is not None and phase(vj) == PENDING,
                what=f"vcjob gang {PENDING} while its gang does not fit",
            ),
        )
    with allure.step("the scheduler and the job controller report it as events"):
        wait_events(
            kube,
            namespace,
            reason=UNSCHEDULABLE,
            kind="PodGroup",
            name=pg_name,
            until=lambda es: any(
                e.get("type") == "Warning" and GANG_UNSCHEDULABLE in (e.get("message") or "") for e in es
            ),
            timeout=timeouts.SHORT,
            what=f"a Warning {UNSCHEDULABLE} event on PodGroup {pg_name}",
        )
        prefix = f"PodGroup {namespace}:gang unschedulable, reason: "
        wait_events(
            kube,
            namespace,
            reason=PODGROUP_PENDING,
            kind="Job",
            name="gang",
            until=lambda es: any(
                e.get("type") == "Warning"
                and prefix in (e.get("message") or "")
                and GANG_UNSCHEDULABLE in (e.get("message") or "")
                for e in es
            ),
            timeout=timeouts.SHORT,
            what=f"the job controller's Warning {PODGROUP_PENDING} event on vcjob gang",
        )
    with allure.step("free a 4th GPU: all 4 pods are bound together and run"):
        filler.wait_released()
        wait_vcjob_pods_running(kube, namespace, "gang", GANG_SIZE, node=node)
        wait_podgroup(
            kube,
            namespace,
            pg_name,
            until=lambda pg: phase(pg) == RUNNING,
            what=f"PodGroup {pg_name} to be Running",
        )
        wait_vcjob_phase(kube, namespace, "gang", RUNNING)


# -- quota ------------------------------------------------------------------------------------------


@pytest.fixture
def zero_gpu_queue(make_volcano_queue: VolcanoQueueFactory) -> str:
    """A Queue whose capability allows no GPU.

    GPU, not CPU: proportion treats a zero (or absent) cpu or memory capability as unlimited
    (plugins/proportion/proportion.go:120-128), so ``capability: {cpu: 0}`` caps nothing.
    """
    return make_volcano_queue("vc-quota", capability={GPU: "0"})


@pytest.mark.quota
@allure.feature("quota")
@allure.story(
    "a GPU vcjob in a Queue with zero GPU capability stays Pending with zero pods until the capability rises"
)
def test_queue_capability_zero_holds_the_job_until_raised(
    kube: Kube, namespace: str, zero_gpu_queue: str
) -> None:
    pods = 2
    with allure.step(f"submit a vcjob of {pods} x 1 GPU to a Queue with capability {GPU}: 0"):
        manifest = vcjob("capped", zero_gpu_queue, replicas=pods, min_available=pods, cpu=SMALL_CPU)
        pg_name = wait_podgroup_of(kube, namespace, create_vcjob(kube, namespace, manifest))["metadata"][
            "name"
        ]

    def admitted(podgroup: Obj | None) -> str | None:
        if phase(podgroup) not in ("", PENDING):
            return (
                f"PodGroup {pg_name} went {phase(podgroup)} although its queue's capability allows 0 GPUs: "
                "the queue quota was not enforced"
            )
        return None

    with allure.step("proportion refuses to enqueue it: queue resource quota insufficient"):
        expected = f"{QUOTA_INSUFFICIENT}: insufficient {GPU}"
        wait_pending_because(kube, namespace, pg_name, message=expected, fail=admitted)
    with allure.step("for the consistency window: zero pods, and the PodGroup stays Pending (never Inqueue)"):
        hold_list(
            kube,
            apis.POD,
            namespace=namespace,
            labels={JOB_NAME_LABEL: "capped"},
            holds=lambda found: not found,
            describe=describe_pods,
            what=f"zero pods for vcjob capped in a queue capped at 0 {GPU}",
        )
        hold_object(
            kube,
            apis.PODGROUP,
            pg_name,
            namespace=namespace,
            holds=lambda pg: pg is not None and admitted(pg) is None,
            describe=describe_podgroup,
            what=f"PodGroup {pg_name} Pending in a queue capped at 0 {GPU}",
        )
        job_phase = phase(kube.get(apis.VCJOB, "capped", namespace))
        assert job_phase == PENDING, (
            f"vcjob capped should be Pending while its queue has no room, is {job_phase!r}"
        )
    with allure.step(f"raise the capability to {pods} GPUs: Inqueue, then Running with every pod bound"):
        phases: list[str] = []

        def running(podgroup: Obj) -> bool:
            if not phases or phases[-1] != phase(podgroup):
                phases.append(phase(podgroup))
            return phase(podgroup) == RUNNING

        set_capability(kube, zero_gpu_queue, {GPU: str(pods)})
        wait_podgroup(kube, namespace, pg_name, until=running, what=f"PodGroup {pg_name} to be Running")
        assert INQUEUE in phases, f"PodGroup {pg_name} should pass through Inqueue; phases seen: {phases}"
        wait_vcjob_pods_running(kube, namespace, "capped", pods)
        wait_vcjob_phase(kube, namespace, "capped", RUNNING)
