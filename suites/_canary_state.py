"""The live state the upgrade canary makes before it upgrades (``suites/test_upgrade.py``): the parts that
depend on what the cluster has, each made only where it has it (Volcano, DRA devices, racked GPU nodes,
the operators whose jobs Kueue admits), and what the canary reads back of it."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from decimal import Decimal

import allure
import pytest

from kbc import apis, timeouts
from kbc.apis import Kind
from kbc.components.kuberay import GROUP as RAY_GROUP
from kbc.components.kuberay import RAY_JOB, RayRuntime, ray_job, wait_submitter_running
from kbc.components.kuberay import wait_running as wait_ray_cluster_running
from kbc.components.lws import GROUP as LWS_GROUP
from kbc.components.lws import LEADER_WORKER_SET, leader_worker_set, wait_group_running
from kbc.components.trainer import GROUP as TRAINER_GROUP
from kbc.components.trainer import TRAIN_JOB, train_job, wait_nodes_running
from kbc.components.trainingoperator import GROUP as TRAINING_OPERATOR_GROUP
from kbc.components.trainingoperator import PYTORCH_JOB, pytorch_job, wait_running
from kbc.dra import claim_template, claims_of, devices, results, serves_dra, wait_pods_allocated
from kbc.errors import WaitTimeout
from kbc.gpu import gpu_nodes
from kbc.jobs import wait_pods_running
from kbc.kube import Kube, Obj, wait_gone
from kbc.kueue import (
    Member,
    QueueFactory,
    admission,
    amount,
    wait_admitted,
    wait_workload_of,
)
from kbc.kueue.logs import said_about
from kbc.kueue.settings import DRA_QUOTA
from kbc.kueue.topology import required, topology
from kbc.labels import BLOCK_LABEL, DRA_DRIVER, GPU, HOSTNAME_LABEL, PRODUCT_LABEL, RACK_LABEL
from kbc.volcano import (
    PENDING,
    QUOTA_INSUFFICIENT,
    RUNNING,
    VolcanoQueueFactory,
    create_vcjob,
    phase,
    wait_pending_because,
    wait_podgroup,
    wait_podgroup_of,
    wait_vcjob_pods_running,
)
from kbc.workloads import job, vcjob

# Longer than the whole canary: what runs before the upgrade must still run after it.
RUNS_THROUGH = "1800s"
VOLCANO_GANG = 2


@dataclass(frozen=True)
class OperatorState:
    """A job kind of an operator whose jobs Kueue admits: the canary's state holds one, running, where the
    operator is installed."""

    display: str
    kind: Kind
    group: str
    webhook: str
    """A word of the names of its webhook configurations."""
    integration: str
    """Kueue's integration for its jobs (``integrations.frameworks``)."""
    name: str
    step: str
    make: Callable[[str, str, Mapping[str, str]], Obj]
    """Its manifest of the given name, submitted to the given LocalQueue, given the workload images that run
    here (none on kwok's nodes: ``running_images``)."""
    running: Callable[[Kube, str, str], object]
    """Its pods, of the job of the given name, running."""

    @property
    def crd(self) -> str:
        return f"{self.kind.kind.lower()}s.{self.group}"


OPERATOR_STATES = (
    OperatorState(
        "LeaderWorkerSet",
        LEADER_WORKER_SET,
        LWS_GROUP,
        "lws",
        "leaderworkerset.x-k8s.io/leaderworkerset",
        "serving",
        "a LeaderWorkerSet's 2-pod group admitted on CPU quota and running",
        lambda name, queue, _: leader_worker_set(name, size=2, cpu="100m", queue=queue),
        lambda kube, namespace, name: wait_group_running(kube, namespace, name, 2),
    ),
    OperatorState(
        "Kubeflow Trainer",
        TRAIN_JOB,
        TRAINER_GROUP,
        TRAINER_GROUP,
        "trainer.kubeflow.org/trainjob",
        "training",
        "a 2-node TrainJob admitted on CPU quota and running",
        lambda name, queue, _: train_job(name, nodes=2, cpu="100m", queue=queue),
        lambda kube, namespace, name: wait_nodes_running(kube, namespace, name, 2),
    ),
    OperatorState(
        "Kubeflow training operator",
        PYTORCH_JOB,
        TRAINING_OPERATOR_GROUP,
        "training-operator",
        "kubeflow.org/pytorchjob",
        "torch",
        "a PyTorchJob of a master and a worker admitted on CPU quota and running",
        lambda name, queue, _: pytorch_job(name, workers=1, cpu="100m", queue=queue),
        lambda kube, namespace, name: wait_running(kube, namespace, name, 2),
    ),
    OperatorState(
        "KubeRay",
        RAY_JOB,
        RAY_GROUP,
        "kuberay",
        "ray.io/rayjob",
        "ray",
        "a RayJob of a head and a worker admitted on CPU quota, its cluster and its submitter running",
        # Where pods run, they run Ray: the submitter runs only once the head's Ray answers.
        lambda name, queue, images: ray_job(
            name, workers=1, cpu="100m", queue=queue, runtime=RayRuntime.of(images["ray"]) if images else None
        ),
        lambda kube, namespace, name: (
            wait_ray_cluster_running(kube, namespace, name, 2),
            wait_submitter_running(kube, namespace, name),
        ),
    ),
)


def make_operator_states(
    kube: Kube,
    namespace: str,
    queue: str,
    logs: Callable[[], dict[str, str] | None],
    finding: Callable[[str], None],
    images: Mapping[str, str],
) -> tuple[list[OperatorState], list[OperatorState]]:
    """Each operator's job, admitted by Kueue from *queue* and running (on the workload *images* that run
    here), where the operator is installed; the report says which are not. Returns the states made, and the
    kinds the old pins admit but never start: each is a component *finding* (in Kueue's words, from its
    *logs*), its job removed, and the canary goes on without it (the new pins must still run one:
    :func:`still_managed`)."""
    made, broken = [], []
    for state in OPERATOR_STATES:
        if kube.find(apis.CUSTOM_RESOURCE_DEFINITION, state.crd) is None:
            allure.attach(
                f"{state.display} is not installed on this cluster (no CRD {state.crd}): "
                f"no {state.kind.kind} state",
                name=state.display,
                attachment_type=allure.attachment_type.TEXT,
            )
            continue
        with allure.step(f"make state: {state.step}"):
            created = kube.create(state.make(state.name, queue, images), namespace=namespace)
            names = [w["metadata"]["name"] for w in wait_workload_of(kube, namespace, created)]
            wait_admitted(kube, namespace, *names)
            try:
                state.running(kube, namespace, state.name)
            except WaitTimeout as exc:
                said = said_about(logs() or {}, namespace, state.name)
                if not said:
                    raise
                finding(_never_started(state, names, exc, said))
                # Gone with what it made (its Workload, the JobSet and Jobs) before the snapshot is taken.
                kube.delete(state.kind, state.name, namespace=namespace, foreground=True)
                wait_gone(
                    kube,
                    state.kind,
                    state.name,
                    namespace=namespace,
                    timeout=timeouts.LONG,
                    what=f"{state.kind.kind} {state.name} and what it made removed",
                )
                broken.append(state)
                continue
        made.append(state)
    return made, broken


def _never_started(state: OperatorState, workloads: list[str], exc: WaitTimeout, said: list[str]) -> str:
    kind = state.kind.kind
    return (
        f"Kueue admitted {kind} {state.name} (Workload {', '.join(workloads)}) on the old pins but never "
        f"started it; Kueue said: {'; '.join(said)}. {state.display} and Kueue at these versions do not "
        f"run {kind}s together: left out of the canary's state, and the new pins must run one "
        f"(waited for: {exc.what})"
    )


def still_managed(
    kube: Kube, namespace: str, queue: str, state: OperatorState, images: Mapping[str, str]
) -> None:
    """A new job of *state*'s kind on *queue* gets a Workload of the new Kueue, is admitted and runs; where
    Kueue no longer makes it a Workload, fails naming the integration the new configuration lacks."""
    name = f"{state.name}-after"
    created = kube.create(state.make(name, queue, images), namespace=namespace)
    try:
        found = wait_workload_of(kube, namespace, created)
    except WaitTimeout as exc:
        raise AssertionError(
            f"after the upgrade Kueue no longer manages {state.kind.kind}s: {state.kind.kind} {name} on "
            f"LocalQueue {queue} got no Workload ({exc.what}). Its integration {state.integration!r} is "
            "not in the new Kueue configuration's integrations.frameworks (Kueue's default configuration "
            f"leaves some out): {state.kind.kind}s submitted after this upgrade run unqueued, unsuspended "
            "and outside every quota. Keep it in the configuration the upgrade installs"
        ) from exc
    wait_admitted(kube, namespace, *(w["metadata"]["name"] for w in found))
    state.running(kube, namespace, name)
    kube.delete(state.kind, name, namespace=namespace)


def make_volcano_state(kube: Kube, namespace: str, make_queue: VolcanoQueueFactory) -> tuple[str, str, str]:
    """A Volcano Queue capped at two GPUs, a 2-pod gang running in it and another pending on the cap;
    returns the Queue and the two PodGroups' names."""
    queue = make_queue("vc-upgrade", capability={GPU: str(VOLCANO_GANG)})
    running = create_vcjob(
        kube,
        namespace,
        vcjob("vc-running", queue, replicas=VOLCANO_GANG, min_available=VOLCANO_GANG, run_for=RUNS_THROUGH),
    )
    running_group = wait_podgroup_of(kube, namespace, running)["metadata"]["name"]
    wait_podgroup(
        kube, namespace, running_group, until=lambda pg: phase(pg) == RUNNING, what=f"{running_group} Running"
    )
    wait_vcjob_pods_running(kube, namespace, "vc-running", VOLCANO_GANG)
    waiting = create_vcjob(
        kube,
        namespace,
        vcjob("vc-waiting", queue, replicas=VOLCANO_GANG, min_available=VOLCANO_GANG, run_for=RUNS_THROUGH),
    )
    waiting_group = wait_podgroup_of(kube, namespace, waiting)["metadata"]["name"]

    def went_on(podgroup: Obj) -> str | None:
        if phase(podgroup) not in ("", PENDING):
            return f"PodGroup {waiting_group} went {phase(podgroup)} past a Queue whose {GPU} cap is in use"
        return None

    wait_pending_because(kube, namespace, waiting_group, message=QUOTA_INSUFFICIENT, fail=went_on)
    return queue, running_group, waiting_group


def claim_state(kube: Kube, namespace: str, make_kueue_queues: QueueFactory) -> str:
    """A one-pod Job whose pod claims a DRA device, admitted within a DRA quota of one and running: the
    snapshot records its claim's allocation. Where the cluster offers no DRA device, says why not."""
    missing = serves_dra(kube)
    if missing is not None or not devices(kube, DRA_DRIVER):
        return f"not part of the state: {missing or f'no ResourceSlice offers a device of {DRA_DRIVER}'}"
    queues = make_kueue_queues(members={"claims": Member({"cpu": "4", DRA_QUOTA: "1"}, in_cohort=False)})
    kube.create(claim_template("one-device", count=1), namespace=namespace)
    made = kube.create(
        job("claims", run_for=RUNS_THROUGH, queue=queues.local_queue, claim="one-device"), namespace=namespace
    )
    workload = wait_workload_of(kube, namespace, made)[0]["metadata"]["name"]
    wait_admitted(kube, namespace, workload)
    (pod,) = wait_pods_allocated(kube, namespace, {"job-name": "claims"}, 1)
    given = [f"{r['pool']}/{r['device']}" for c in claims_of(kube, namespace, pod) for r in results(c)]
    return f"Workload {workload} admitted within {DRA_QUOTA} 1, its pod's claim allocated {', '.join(given)}"


def rack_state(
    kube: Kube, namespace: str, make_kueue_queues: QueueFactory, request: pytest.FixtureRequest
) -> str:
    """A one-pod Job that requires one rack, admitted by Kueue's topology-aware scheduling on the GPU nodes of
    a product whose nodes carry rack labels: the snapshot records its topology assignment. Where no GPU node
    carries a rack, says why not."""
    racked = [n for n in gpu_nodes(kube) if RACK_LABEL in n.labels and BLOCK_LABEL in n.labels]
    if not racked:
        return f"not part of the state: no GPU node carries {RACK_LABEL} and {BLOCK_LABEL}"
    product = racked[0].product
    name = f"upgrade-dc-{namespace.rsplit('-', 1)[-1]}"
    kube.create(topology(name, (BLOCK_LABEL, RACK_LABEL, HOSTNAME_LABEL)))
    request.addfinalizer(lambda: kube.delete(apis.TOPOLOGY, name))
    queues = make_kueue_queues(
        members={"racked": Member({"cpu": "4", GPU: "1"}, in_cohort=False)},
        flavors={"racks": {PRODUCT_LABEL: product}},
        topology=name,
    )
    made = kube.create(
        job(
            "racked", gpus=1, run_for=RUNS_THROUGH, queue=queues.local_queue, annotations=required(RACK_LABEL)
        ),
        namespace=namespace,
    )
    workload = wait_workload_of(kube, namespace, made)[0]["metadata"]["name"]
    (given,) = wait_admitted(kube, namespace, workload)
    wait_pods_running(kube, namespace, {"job-name": "racked"}, 1, what="the racked Job's pod")
    (assignment,) = admission(given).get("podSetAssignments") or [{}]
    return f"Workload {workload} admitted on {product} in one rack: {assignment.get('topologyAssignment')}"


def usage_of_admitted(workloads: list[Obj], cluster_queue: str, flavor: str) -> Decimal:
    """GPUs the admitted Workloads of *cluster_queue* account in *flavor* (what its usage must equal)."""
    total = Decimal(0)
    for workload in workloads:
        given = (workload.get("status") or {}).get("admission") or {}
        if given.get("clusterQueue") != cluster_queue:
            continue
        for podset in given.get("podSetAssignments") or []:
            if (podset.get("flavors") or {}).get(GPU) == flavor:
                total += amount((podset.get("resourceUsage") or {}).get(GPU))
    return total
