"""The upgrade canary: a cluster running the old pins, with the live state a platform has, is upgraded to
the new pins, and nothing it held is lost.

Runs only with the canary on (``pytest -m upgrade`` or ``--upgrade-from SRC``), first in
the session; every other suite then runs on the upgraded cluster. Before the upgrade:
a cohort of GPU ClusterQueues with a borrowing Job, a JobSet and a plain-pod group
admitted and running (the JobSet at a WorkloadPriorityClass), a gang waiting for
quota, and a quota-zero queue with a pending Job; a running Job whose pod claims a DRA device
within a DRA quota, and a running Job Kueue placed in one rack (where the cluster offers DRA
devices and racked GPU nodes; the report says where it does not); where Volcano is installed, a
Volcano Queue capped at two GPUs with a running 2-pod gang and a pending one; where LeaderWorkerSet is
installed, a LeaderWorkerSet whose 2-pod group Kueue admitted, running; where Kubeflow Trainer is installed,
a 2-node TrainJob Kueue admitted, running; where the training operator is installed, a PyTorchJob of a master
and a worker Kueue admitted, running; where KubeRay is installed, a RayJob Kueue admitted, its cluster and
submitter running. A snapshot records
every object by UID, each Workload's admission (its topology assignment too) and conditions, each
ResourceClaim's allocated devices, each Job's suspend state, each pod's UID, node, start time and
restarts, each ClusterQueue's usage and borrowing, and each PodGroup's phase and running count.
After the upgrade the same snapshot must read the same; every CRD's objects must be readable at
every served version, no stored version may have stopped being served, the webhooks must carry a
valid CA bundle; then
the pending gang is admitted once the borrower's capacity frees, the pending Volcano
gang runs once the running one ends, a new Job on an old LocalQueue is admitted, so is a new job of each
operator's kind (a Kueue configuration that dropped its integration fails naming it), and no
component or control-plane log got an error line about conversion, decoding or
certificates after the upgrade.

With ``--scale CONFIG`` the canary also compares Kueue's own performance test on the old pins and the
new (``test_kueues_performance_test_holds_from_old_pins_to_new``, run first, on clusters of its own).
With ``--upgrade-load QUEUESxWORKLOADS`` it also upgrades Kueue under a live state of that size on a
cluster of its own (``test_an_upgrade_under_load_keeps_every_object_admission_and_quota``).
"""

from __future__ import annotations

from collections.abc import Callable

import allure
import pytest

from kbc import apis, timeouts
from kbc.canary_state import (
    RUNS_THROUGH,
    VOLCANO_GANG,
    claim_state,
    make_operator_states,
    make_volcano_state,
    rack_state,
    still_managed,
    usage_of_admitted,
)
from kbc.dra import serves_dra
from kbc.errors import OverAdmitted
from kbc.jobs import wait_pods_running
from kbc.kube import Kube
from kbc.kueue import (
    PRIORITY_CLASS_LABEL,
    CohortUse,
    Member,
    PriorityFactory,
    QueueFactory,
    admission,
    cohort_use,
    flavor_usage,
    hold_suspended,
    start_up_lines,
    wait_admitted,
    wait_cluster_queue,
    wait_pending,
    wait_usage,
    wait_workload_of,
    watch_cohort_use,
)
from kbc.labels import GPU
from kbc.perf import PinsComparison, UpgradeUnderLoad
from kbc.snapshot import (
    ABSENT,
    KEPT_PROPERTY,
    Snapshot,
    ca_bundle_problems,
    compare_settled,
    crds_in_groups,
    key_of,
    stored_versions_not_served,
    take_snapshot,
    unreadable_versions,
)
from kbc.volcano import (
    RUNNING,
    VolcanoQueueFactory,
    phase,
    wait_podgroup,
    wait_vcjob_pods_running,
)
from kbc.workloads import group_pod, job, jobset

pytestmark = [pytest.mark.upgrade, pytest.mark.kueue, pytest.mark.jobset, allure.epic("Upgrade")]

COMPONENT_GROUPS = ("kueue.x-k8s.io", "jobset.x-k8s.io")
WEBHOOK_NAMES = ("kueue", "jobset")
KINDS = (apis.WORKLOAD, apis.JOB, apis.JOBSET, apis.POD, apis.LOCAL_QUEUE)
# Volcano's part, where it is installed.
VOLCANO_CRD, VOLCANO_GROUPS, VOLCANO_WEBHOOKS = "queues.scheduling.volcano.sh", ("volcano.sh",), ("volcano",)
VOLCANO_KINDS = (apis.VCJOB, apis.PODGROUP)
# DRA's part, where the API server serves resource.k8s.io/v1.
DRA_KINDS = (apis.RESOURCE_CLAIM,)


@allure.story("an upgrade keeps every queue, quota and workload, and Kueue keeps admitting after it")
def test_an_upgrade_keeps_every_queue_quota_and_running_workload(
    kube: Kube,
    namespace: str,
    make_kueue_queues: QueueFactory,
    make_priority_classes: PriorityFactory,
    make_volcano_queue: VolcanoQueueFactory,
    upgrade_start: list[str],
    upgrade: Callable[[], list[str]],
    upgrade_log_errors: Callable[[], list[str] | None],
    upgrade_logs: Callable[[], dict[str, str] | None],
    controller_logs: Callable[[], dict[str, str] | None],
    record_finding: Callable[[str], None],
    running_images: dict[str, str],
    request: pytest.FixtureRequest,
) -> None:
    with allure.step("install old: the cluster runs the old pins"):
        allure.attach("\n".join(upgrade_start), name="old pins", attachment_type=allure.attachment_type.TEXT)
    with allure.step(
        "make state: a cohort with a borrower, a JobSet, a pod group, a waiting gang, quota zero"
    ):
        cohort = make_kueue_queues(
            members={"lender": Member({"cpu": "16", GPU: "6"}), "borrower": Member({"cpu": "16", GPU: "2"})}
        )
        empty = make_kueue_queues({"cpu": "4", GPU: "0"})
        priorities = make_priority_classes({"high": 1000})
        flavor, lender, borrower = (
            cohort.flavor,
            cohort.local_queues["lender"],
            cohort.local_queues["borrower"],
        )
        borrows = kube.create(
            job("borrows", pods=4, gpus=1, run_for=RUNS_THROUGH, queue=borrower), namespace=namespace
        )
        trainer = jobset(
            "trainer", replicated_jobs=1, pods_per_job=2, gpus=1, run_for=RUNS_THROUGH, queue=lender
        )
        trainer["metadata"].setdefault("labels", {})[PRIORITY_CLASS_LABEL] = priorities["high"]
        trainer = kube.create(trainer, namespace=namespace)
        admitted = wait_workload_of(kube, namespace, borrows, trainer)
        for index in range(2):
            kube.create(
                group_pod(f"member-{index}", "group", 2, lender, run_for=RUNS_THROUGH), namespace=namespace
            )
        wait_admitted(kube, namespace, *(w["metadata"]["name"] for w in admitted), "group")
        wait_pods_running(kube, namespace, {}, 8, what="the 8 pods of the borrower, the JobSet and the group")
        gang = kube.create(job("gang", pods=2, gpus=1, run_for="2s", queue=lender), namespace=namespace)
        gang_workload = wait_workload_of(kube, namespace, gang)[0]["metadata"]["name"]
        wait_pending(kube, namespace, gang_workload)
        starved = kube.create(
            job("starved", gpus=1, run_for="2s", queue=empty.local_queue), namespace=namespace
        )
        starved_workload = wait_workload_of(kube, namespace, starved)[0]["metadata"]["name"]
        wait_pending(kube, namespace, starved_workload)
        # The snapshot must see the ClusterQueues' status caught up with what they admitted.
        wait_usage(kube, cohort.cluster_queues["borrower"], flavor, GPU, total="4", borrowed="2")
        wait_usage(kube, cohort.cluster_queues["lender"], flavor, GPU, total="4")
    with allure.step("make state: a claim-bearing Job in a DRA quota, and a Job Kueue placed in one rack"):
        dra = claim_state(kube, namespace, make_kueue_queues)
        racked = rack_state(kube, namespace, make_kueue_queues, request)
        allure.attach(
            f"DRA: {dra}\ntopology: {racked}",
            name="DRA and topology state",
            attachment_type=allure.attachment_type.TEXT,
        )
    volcano = kube.find(apis.CUSTOM_RESOURCE_DEFINITION, VOLCANO_CRD) is not None
    if volcano:
        with allure.step("make state: a Volcano Queue capped at 2 GPUs, a gang running in it, one pending"):
            vc_queue, _, vc_waiting = make_volcano_state(kube, namespace, make_volcano_queue)
    else:
        allure.attach(
            f"Volcano is not installed on this cluster (no CRD {VOLCANO_CRD}): no Volcano state",
            name="volcano",
            attachment_type=allure.attachment_type.TEXT,
        )
    operators, never_started = make_operator_states(
        kube, namespace, empty.local_queue, controller_logs, record_finding, running_images
    )
    if operators or never_started:
        # The snapshot must see the ClusterQueue's status caught up with the operators' jobs it admitted (and
        # with those removed, that the old pins never started).
        wait_cluster_queue(
            kube,
            empty.cluster_queue,
            until=lambda cq: (cq.get("status") or {}).get("admittedWorkloads") == len(operators),
            what=f"ClusterQueue {empty.cluster_queue} to count the operators' {len(operators)} admitted jobs",
        )
    installed = operators + never_started
    groups = COMPONENT_GROUPS + (VOLCANO_GROUPS if volcano else ()) + tuple(o.group for o in installed)
    webhooks = WEBHOOK_NAMES + (VOLCANO_WEBHOOKS if volcano else ()) + tuple(o.webhook for o in installed)

    def snapshot() -> Snapshot:
        return take_snapshot(
            kube,
            namespaces=[namespace],
            namespaced=KINDS
            + (VOLCANO_KINDS if volcano else ())
            + tuple(o.kind for o in operators)
            + (DRA_KINDS if serves_dra(kube) is None else ()),
            cluster_scoped={
                apis.CLUSTER_QUEUE: [*cohort.cluster_queues.values(), empty.cluster_queue],
                apis.COHORT: [cohort.cohort] if cohort.cohort else [],
                apis.RESOURCE_FLAVOR: [*cohort.flavors.values(), empty.flavor],
                apis.WORKLOAD_PRIORITY_CLASS: list(priorities.values()),
                **({apis.VOLCANO_QUEUE: [vc_queue]} if volcano else {}),
            },
        )

    def use() -> CohortUse:
        # As the Workloads' admissions have it (the ground truth), or Kueue's status where it says more.
        queues = [kube.get(apis.CLUSTER_QUEUE, q) for q in cohort.cluster_queues.values()]
        admitted = cohort_use(queues, flavor, GPU, kube.list(apis.WORKLOAD, namespace=namespace))
        reported = cohort_use(queues, flavor, GPU)
        return admitted if admitted.total >= reported.total else reported

    with allure.step("snapshot"):
        before = snapshot()
        used_before = use()
        allure.attach(before.render(), name="snapshot before", attachment_type=allure.attachment_type.TEXT)
    with allure.step("upgrade"):
        done = upgrade()
        allure.attach("\n".join(done), name="upgrade", attachment_type=allure.attachment_type.TEXT)
    with allure.step("verify: the cohort holds no more than its quota (an over-admission is a finding)"):
        # First, and in its own words: a cohort committed beyond its quota is the component's doing. Never
        # waited away: the gang that slips in stays admitted (Kueue does not preempt to undo it). Watched
        # over the consistency window, so that an admission a moment late is this finding too, not a
        # snapshot difference below.
        watched = watch_cohort_use(
            kube, namespace, cluster_queues=list(cohort.cluster_queues.values()), flavor=flavor, resource=GPU
        )
        used_after = watched if watched.over else use()
        if used_after.over:
            admitted_before = {
                n for n, w in before.of_kind(apis.WORKLOAD).items() if w["admission"] != ABSENT
            }
            newly = [
                f"Workload {w['metadata']['name']} admitted by {admission(w).get('clusterQueue')} "
                f"({w['metadata'].get('creationTimestamp')}): {admission(w).get('podSetAssignments')}"
                for w in kube.list(apis.WORKLOAD, namespace=namespace)
                if admission(w) and key_of(w) not in admitted_before
            ]
            logs = upgrade_logs() or {}
            evidence = [
                f"{name}: {line}"
                for name, text in logs.items()
                if "kueue" in name
                for line in start_up_lines(text)
            ]
            allure.attach("\n".join(evidence) or "no Kueue log here", name="Kueue's log after the upgrade")
            raise OverAdmitted(
                f"over-admitted: after the upgrade the cohort holds {used_after.describe()} {GPU}; before "
                f"it {used_before.describe()}. Admitted since: {'; '.join(newly) or 'none'}. A component "
                "finding, not a flake: Kueue's scheduler can admit in its first cycle before its cache "
                "holds every ClusterQueue of a cohort (docs/canary.md, over-admission after a restart). "
                "Kueue's log after the upgrade:\n"
                + ("\n".join(evidence[:40]) or "(this provider keeps no logs here)")
            )
    with allure.step("verify: no stored version left unserved by the new CRDs"):
        # Before the objects are compared: a version the new CRDs stopped serving is the cause of whatever
        # the controllers then fail to read, so it is named first, in its own words.
        crds = crds_in_groups(kube, groups)
        assert crds, f"no CRD of {', '.join(groups)} is installed"
        unserved = {c["metadata"]["name"]: stored_versions_not_served(c) for c in crds}
        unserved = {name: versions for name, versions in unserved.items() if versions}
        assert not unserved, (
            "objects may still be stored at versions the new CRDs no longer serve (status.storedVersions): "
            f"{unserved}; migrate them before upgrading"
        )
    with allure.step("verify: every object, admission, condition, suspend state, pod and usage as before"):
        # Compared until the new controllers caught up (a scheduling decision's time at most): a status a
        # restarted controller rewrites for a moment is reported as passing, what stays is the verdict.
        settled = compare_settled(before, snapshot, within=timeouts.LONG)
        allure.attach(
            "\n".join(map(str, settled.changes)) or "no change",
            name="snapshot diff",
            attachment_type=allure.attachment_type.TEXT,
        )
        if settled.passing:
            allure.attach(
                "\n".join(map(str, settled.passing)),
                name=f"changes that came and went within {settled.seconds:.0f}s of the upgrade",
                attachment_type=allure.attachment_type.TEXT,
            )
        assert not settled.changes, (
            "the upgrade changed what the cluster held (before → after), still so "
            f"{settled.seconds:.0f}s after the upgrade:\n" + "\n".join(map(str, settled.changes))
        )
        pods = before.of_kind(apis.POD)
        workloads = [w for w in before.of_kind(apis.WORKLOAD).values() if w["admission"] != ABSENT]
        claims = [c for c in before.of_kind(apis.RESOURCE_CLAIM).values() if c["allocation"] != ABSENT]
        placed = [w for w in workloads if any(fact.startswith("topology ") for fact in w)]
        kept = {
            "objects": len(before.objects),
            "admitted": len(workloads),
            "pods": len(pods),
            "claims": len(claims),
            "placed": len(placed),
            "passing": len(settled.passing),
            "passing_seconds": round(settled.seconds),
        }
        # Read by the canary's summary line (record_property would warn under junit_family xunit2).
        request.node.user_properties.append((KEPT_PROPERTY, kept))
    with allure.step("verify: each ClusterQueue's usage is the sum over its admitted Workloads"):
        listed = kube.list(apis.WORKLOAD, namespace=namespace)
        for member, queue in cohort.cluster_queues.items():
            reported = flavor_usage(kube.get(apis.CLUSTER_QUEUE, queue), flavor, GPU).total
            summed = usage_of_admitted(listed, queue, flavor)
            assert reported == summed, (
                f"ClusterQueue {queue} ({member}) reports {reported} GPUs used after the upgrade, but its "
                f"admitted Workloads account {summed}"
            )
    with allure.step("verify: every CRD readable at every served version"):
        unreadable = [failure for crd in crds for failure in unreadable_versions(kube, crd)]
        assert not unreadable, "objects unreadable after the upgrade:\n" + "\n".join(unreadable)
    with allure.step("verify: admission and conversion webhooks carry a CA bundle valid now"):
        problems = ca_bundle_problems(kube, crds, webhooks)
        assert not problems, "webhooks the API server cannot trust after the upgrade:\n" + "\n".join(problems)
    with allure.step("verify: the pending stay pending; the gang is admitted once the borrower's GPUs free"):
        hold_suspended(kube, namespace, "gang", gang_workload)
        kube.delete(apis.JOB, "borrows", namespace=namespace)
        kube.delete_all(apis.POD, namespace=namespace, labels={"job-name": "borrows"})
        wait_admitted(kube, namespace, gang_workload)
        wait_pending(kube, namespace, starved_workload)
    if volcano:
        with allure.step("verify: the pending Volcano gang runs whole once the running one ends"):
            kube.delete(apis.VCJOB, "vc-running", namespace=namespace)
            wait_podgroup(
                kube,
                namespace,
                vc_waiting,
                until=lambda pg: phase(pg) == RUNNING,
                what=f"{vc_waiting} Running",
            )
            wait_vcjob_pods_running(kube, namespace, "vc-waiting", VOLCANO_GANG)
    with allure.step("verify: a new Job on an old LocalQueue is admitted by the new Kueue"):
        fresh = kube.create(job("after-upgrade", gpus=1, run_for="2s", queue=borrower), namespace=namespace)
        (workload,) = wait_workload_of(kube, namespace, fresh)
        (admitted_fresh,) = wait_admitted(kube, namespace, workload["metadata"]["name"])
        given = admission(admitted_fresh)
        assert given["clusterQueue"] == cohort.cluster_queues["borrower"], given
    for operator in installed:
        with allure.step(
            f"verify: a new {operator.kind.kind} on an old LocalQueue is managed ({operator.integration}), "
            "admitted and runs"
        ):
            still_managed(kube, namespace, empty.local_queue, operator, running_images)
    with allure.step(
        "verify: no component logged a conversion, decoding or certificate error after the upgrade"
    ):
        errors = upgrade_log_errors()
        if errors is None:
            allure.attach(
                "this provider keeps no component logs on this machine; not checked",
                name="log check",
                attachment_type=allure.attachment_type.TEXT,
            )
        else:
            assert not errors, "error lines logged after the upgrade:\n" + "\n".join(errors[:20])


@pytest.mark.scale
@allure.story("Kueue's own performance test is no worse on the new pins than on the old")
def test_kueues_performance_test_holds_from_old_pins_to_new(kueue_scale: PinsComparison) -> None:
    """With ``--scale CONFIG``: Kueue's scheduler performance test (its generator's cohorts, queues and
    workloads, created at its intervals and finished after their runtimes) ran on a local cluster of the
    old pins and one of the new; every run finished, and no figure (wall time, mean time to admission per
    class, usage per ClusterQueue class) is worse on the new pins than the band of repeated runs of the
    same pins on this machine allows (``kbc bench kueue-perf --calibrate``; 10 % at least)."""
    with allure.step(f"verify: {kueue_scale.headline()}"):
        assert not kueue_scale.incomplete, "a run did not finish: " + "; ".join(kueue_scale.incomplete)
        assert not kueue_scale.flagged, (
            f"the new pins (Kueue {kueue_scale.new}) made {len(kueue_scale.flagged)} figure(s) of Kueue's "
            f"performance test worse than the old (Kueue {kueue_scale.old}) by more than the band ("
            f"{kueue_scale.band_from}):\n"
            + "\n".join(f"  {name}: {why}" for name, why in kueue_scale.flagged.items())
        )


@pytest.mark.upgrade_load
@allure.story("Kueue upgraded under thousands of live objects loses, remakes and re-admits none of them")
def test_an_upgrade_under_load_keeps_every_object_admission_and_quota(
    kueue_upgrade_load: UpgradeUnderLoad,
) -> None:
    """With ``--upgrade-load QUEUESxWORKLOADS``: a live state of that many ClusterQueues and Workloads
    (finished, admitted, pending) made on the old pins, then Kueue upgraded as the provider's users
    upgrade it; no object lost or made again, no admission changed, none evicted, admitted twice or over
    its ClusterQueue's quota, every ClusterQueue's accounting equal to its Workloads', and the pending
    workloads that fit after the upgrade admitted (``kbc bench upgrade-load``; its times in the report)."""
    with allure.step(f"verify: {kueue_upgrade_load.headline()}"):
        assert kueue_upgrade_load.held, (
            f"the upgrade under load did not keep what the cluster held ({kueue_upgrade_load.runs_file}):\n"
            + "\n".join(f"  {finding}"[:600] for finding in kueue_upgrade_load.findings)
        )
