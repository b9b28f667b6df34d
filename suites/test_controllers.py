"""The components as operators: their validating webhooks refuse invalid objects in their own words, and a
controller killed while workloads wait comes back and reconciles them with nothing lost.

The webhook scenarios send each invalid object as a server-side dry run (nothing is stored) next to its
valid twin, which must be accepted: the refusal is the webhook's, about that one field. Only a refusal
carrying the webhook's own words counts (``admission webhook "<name>" denied the request: …``): a CRD
schema or another admission plugin refusing it would not prove the webhook works.

The restart scenario kills Kueue's controller the way its provider runs it (local: SIGKILL of the host
process; kind: its pod deleted without grace), waits until the new one serves its webhooks and holds the
leader-election Lease, and checks what it found: the same Workloads, the admitted one still admitted with
the same pods, the waiting ones still waiting with zero pods, and quota that appears afterwards used.
"""

from __future__ import annotations

from collections.abc import Callable

import allure
import pytest

from kbc import apis
from kbc.components.trainer import TORCH_DISTRIBUTED, train_job, wait_complete
from kbc.jobs import wait_pods_running
from kbc.kube import Kube, Obj, hold_list, hold_together
from kbc.kueue import QueueFactory, admission, hold_suspended, wait_admitted, wait_pending, wait_workload_of
from kbc.labels import GPU
from kbc.volcano import SCHEDULER_NAME
from kbc.webhooks import expect_accepted, expect_refused_by_one_of, expect_webhook_refusal
from kbc.workloads import job, jobset, vcjob

pytestmark = [pytest.mark.controller, allure.feature("controller")]

KUEUE_CLUSTER_QUEUE_WEBHOOK = "vclusterqueue.kb.io"
JOBSET_WEBHOOK = "validate-jobset-x-k8s-io-v1alpha2-jobset.x-k8s.io"
VOLCANO_JOB_WEBHOOK = "validatejob.volcano.sh"
TRAINER_TRAINJOB_WEBHOOK = "validator.trainjob.trainer.kubeflow.org"
KUEUE_TRAINJOB_WEBHOOK = "vtrainjob.kb.io"
RESERVED_ENV = "PET_NNODES"
"""A variable torchrun reads, which Trainer sets on every node from ``numNodes`` and refuses from a user."""
MISSING_RUNTIME = "does-not-exist-runtime"
"""The runtime the AI Conformance test's invalid TrainJob names (kubernetes-sigs/ai-conformance,
``TestRobustCRDControllerOperation``)."""


def lending_cluster_queue(name: str, lending: int) -> Obj:
    """A ClusterQueue of 4 GPUs in a cohort, lending *lending* of them."""
    quota = {"name": GPU, "nominalQuota": "4", "lendingLimit": str(lending)}
    return apis.CLUSTER_QUEUE.manifest(
        name,
        spec={
            "cohortName": f"{name}-cohort",
            "namespaceSelector": {},
            "resourceGroups": [
                {"coveredResources": [GPU], "flavors": [{"name": "default-flavor", "resources": [quota]}]}
            ],
        },
    )


@pytest.mark.kueue
@allure.epic("Kueue")
@allure.story("Kueue's ClusterQueue webhook refuses a lendingLimit above the nominal quota, in its own words")
def test_kueue_webhook_refuses_a_lending_limit_above_the_nominal_quota(kube: Kube, unique: str) -> None:
    with allure.step("a ClusterQueue of 4 GPUs lending 4 is accepted (dry run)"):
        expect_accepted(
            kube, lending_cluster_queue(f"lends-{unique}", 4), why="it lends all its nominal quota"
        )
    with allure.step("the same ClusterQueue lending 8 is refused by Kueue's webhook (dry run)"):
        said = expect_webhook_refusal(
            kube,
            lending_cluster_queue(f"overlends-{unique}", 8),
            webhook=KUEUE_CLUSTER_QUEUE_WEBHOOK,
            why="a lendingLimit of 8 above a nominalQuota of 4",
        )
        allure.attach(said, name="Kueue's words")
        assert 'lendingLimit: Invalid value: "8": must be less than or equal to the nominalQuota' in said, (
            said
        )


def success_policy_jobset(name: str, target: str) -> Obj:
    manifest = jobset(name, replicated_jobs=1, pods_per_job=1)
    manifest["spec"]["successPolicy"] = {"operator": "All", "targetReplicatedJobs": [target]}
    return manifest


@pytest.mark.jobset
@allure.epic("JobSet")
@allure.story("JobSet's webhook refuses a success policy naming a replicated job that does not exist")
def test_jobset_webhook_refuses_a_success_policy_naming_no_replicated_job(kube: Kube, namespace: str) -> None:
    with allure.step(
        "a JobSet whose success policy targets its replicated job 'workers' is accepted (dry run)"
    ):
        expect_accepted(
            kube,
            success_policy_jobset("targets-workers", "workers"),
            namespace=namespace,
            why="'workers' exists",
        )
    with allure.step("the same JobSet targeting 'ghosts' is refused by JobSet's webhook (dry run)"):
        said = expect_webhook_refusal(
            kube,
            success_policy_jobset("targets-ghosts", "ghosts"),
            namespace=namespace,
            webhook=JOBSET_WEBHOOK,
            why="successPolicy.targetReplicatedJobs names 'ghosts', which the JobSet does not have",
        )
        allure.attach(said, name="JobSet's words")
        assert "invalid replicatedJob name 'ghosts' does not appear in .spec.ReplicatedJobs" in said, said


@pytest.mark.volcano
@allure.epic("Volcano")
@allure.story("Volcano's job webhook refuses a gang whose minAvailable exceeds its replicas")
def test_volcano_webhook_refuses_min_available_above_the_replicas(kube: Kube, namespace: str) -> None:
    with allure.step("a vcjob of 4 replicas with minAvailable 4 is accepted (dry run)"):
        accepted = vcjob("whole", "default", replicas=4, min_available=4)
        expect_accepted(kube, accepted, namespace=namespace, why="minAvailable equals the replicas")
    with allure.step("the same vcjob with minAvailable 5 is refused by Volcano's webhook (dry run)"):
        said = expect_webhook_refusal(
            kube,
            vcjob("more-than-whole", "default", replicas=4, min_available=5),
            namespace=namespace,
            webhook=VOLCANO_JOB_WEBHOOK,
            why="minAvailable 5 above 4 replicas: a gang that can never start",
        )
        allure.attach(said, name="Volcano's words")
        assert "job 'minAvailable' should not be greater than total replicas in tasks" in said, said
        assert accepted["spec"]["schedulerName"] == SCHEDULER_NAME


@pytest.mark.trainer
@pytest.mark.kueue
@allure.epic("Kubeflow Trainer")
@allure.story(
    "Kubeflow Trainer's TrainJob webhook refuses a TrainJob that sets torchrun's own variables, in its own "
    "words; the AI Conformance test's TrainJob on a runtime that does not exist is refused too"
)
def test_trainer_webhook_refuses_a_trainjob_that_sets_torchrun_s_own_variables(
    kube: Kube, namespace: str
) -> None:
    with allure.step(f"a TrainJob on the {TORCH_DISTRIBUTED} ClusterTrainingRuntime is accepted (dry run)"):
        expect_accepted(
            kube, train_job("on-torch", nodes=1), namespace=namespace, why=f"{TORCH_DISTRIBUTED} exists"
        )
    with allure.step(f"the same TrainJob setting {RESERVED_ENV} is refused by Trainer's webhook (dry run)"):
        said = expect_webhook_refusal(
            kube,
            train_job("sets-pet-nnodes", nodes=1, env={RESERVED_ENV: "8"}),
            namespace=namespace,
            webhook=TRAINER_TRAINJOB_WEBHOOK,
            why=f"{RESERVED_ENV} is torchrun's, which Trainer sets from numNodes",
        )
        allure.attach(said, name="Trainer's words")
        assert f"must not have reserved envs, invalid envs configured: [{RESERVED_ENV}]" in said, said
    with allure.step(
        f"the AI Conformance test's invalid TrainJob, on runtime {MISSING_RUNTIME}, is refused (dry run)"
    ):
        # Trainer's webhook and Kueue's TrainJob webhook both refuse it; the API server calls them side by
        # side and answers with one of the two.
        webhook, said = expect_refused_by_one_of(
            kube,
            train_job("on-nothing", nodes=1, runtime=MISSING_RUNTIME),
            namespace=namespace,
            webhooks=(TRAINER_TRAINJOB_WEBHOOK, KUEUE_TRAINJOB_WEBHOOK),
            why=f"runtimeRef names ClusterTrainingRuntime {MISSING_RUNTIME}, which does not exist",
        )
        allure.attach(f"{webhook}: {said}", name="the refusal")
        assert MISSING_RUNTIME in said and "not found" in said, (webhook, said)


@pytest.mark.trainer
@pytest.mark.jobset
@allure.epic("Kubeflow Trainer")
@allure.story(
    "a TrainJob of 2 nodes on torch-distributed, not queued, is reconciled by Trainer into a JobSet whose "
    "pods run and end, and reaches Complete"
)
def test_a_trainjob_on_torch_distributed_reaches_complete(kube: Kube, namespace: str) -> None:
    with allure.step(f"submit a 2-node TrainJob on {TORCH_DISTRIBUTED} whose pods run for 3s"):
        created = kube.create(train_job("completes", nodes=2, run_for="3s"), namespace=namespace)
        assert not created["spec"].get("suspend"), "a TrainJob no queue names is not suspended"
    with allure.step(
        "Trainer makes its JobSet, whose Job's 2 pods run and succeed: the TrainJob is Complete"
    ):
        done = wait_complete(kube, namespace, "completes")
        jobset_made = kube.get(apis.JOBSET, "completes", namespace=namespace)
        owners = {o.get("kind") for o in jobset_made["metadata"].get("ownerReferences") or []}
        assert "TrainJob" in owners, f"JobSet completes is owned by {owners}, not by its TrainJob"
        allure.attach(repr(done.get("status")), name="TrainJob status")


def identities(workloads: list[Obj]) -> dict[str, tuple[str, str, bool]]:
    """Each Workload: name -> (uid, its admission as text ("" when not admitted), being deleted)."""
    return {
        w["metadata"]["name"]: (
            str(w["metadata"]["uid"]),
            repr(admission(w)) if admission(w) else "",
            bool(w["metadata"].get("deletionTimestamp")),
        )
        for w in workloads
    }


@pytest.mark.kueue
@pytest.mark.serial
@allure.epic("Kueue")
@allure.story("Kueue killed while workloads wait comes back: it keeps what it admitted and admits what waits")
def test_a_killed_kueue_comes_back_and_reconciles_what_waits_with_nothing_lost(
    kube: Kube,
    namespace: str,
    make_kueue_queues: QueueFactory,
    restart_controllers: Callable[[str], list[str]],
) -> None:
    queues = make_kueue_queues({"cpu": "2", GPU: "2"})
    with allure.step("a 2-GPU gang is admitted and runs; a 2-GPU gang and a 1-GPU Job wait for quota"):
        first = kube.create(job("running", pods=2, gpus=1, queue=queues.local_queue), namespace=namespace)
        running = wait_workload_of(kube, namespace, first)[0]["metadata"]["name"]
        wait_admitted(kube, namespace, running)
        pods = wait_pods_running(
            kube, namespace, {"job-name": "running"}, 2, what="the admitted gang's 2 pods"
        )
        pod_uids = {p["metadata"]["uid"] for p in pods}
        waiting: dict[str, str] = {}
        for name, pods_of in (("waits-gang", 2), ("waits-one", 1)):
            made = kube.create(job(name, pods=pods_of, gpus=1, queue=queues.local_queue), namespace=namespace)
            waiting[name] = wait_workload_of(kube, namespace, made)[0]["metadata"]["name"]
            wait_pending(kube, namespace, waiting[name])
        before = identities(kube.list(apis.WORKLOAD, namespace=namespace))
    with allure.step("kill Kueue's controller and start it again (it serves its webhooks and leads)"):
        restarted = restart_controllers("kueue")
        allure.attach("\n".join(restarted), name="restarted")
    with allure.step(
        "nothing lost, for the whole window: the same Workloads (identity, admission, none being deleted), "
        "the admitted gang's same pods Running, the waiting Jobs suspended with zero pods"
    ):

        def same_pods(found: list[Obj]) -> bool:
            return {p["metadata"]["uid"] for p in found} == pod_uids and all(
                p.get("status", {}).get("phase") == "Running" for p in found
            )

        hold_together(
            lambda: hold_list(
                kube,
                apis.WORKLOAD,
                namespace=namespace,
                holds=lambda found: identities(found) == before,
                what=f"the same Workloads across the restart, as before it: {before}",
                describe=lambda found: f"    Workloads changed across the restart: now {identities(found)}",
            ),
            lambda: hold_list(
                kube,
                apis.POD,
                namespace=namespace,
                labels={"job-name": "running"},
                holds=same_pods,
                what="the admitted gang's 2 pods, the same ones, Running",
            ),
            *[lambda n=n, w=w: hold_suspended(kube, namespace, n, w) for n, w in waiting.items()],
        )
    with allure.step("raise the quota to 5 GPUs: the restarted Kueue admits both waiting Jobs whole"):
        cq = kube.get(apis.CLUSTER_QUEUE, queues.cluster_queue)
        for resource in cq["spec"]["resourceGroups"][0]["flavors"][0]["resources"]:
            if resource["name"] == GPU:
                resource["nominalQuota"] = "5"
        kube.replace(cq)
        wait_admitted(kube, namespace, *waiting.values())
        for name in waiting:
            wait_pods_running(
                kube, namespace, {"job-name": name}, 2 if name == "waits-gang" else 1, what=name
            )
