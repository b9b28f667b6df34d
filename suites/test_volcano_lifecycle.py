"""Volcano's job lifecycle policies: what a gang does when one of its pods is evicted, fails or completes.

Against the real vc-controller-manager (the job controller turns a pod's deletion into ``PodEvicted``, a
pod's failure into ``PodFailed``, a task whose pods all succeeded into ``TaskCompleted``), these scenarios
prove that

- with ``PodEvicted -> RestartJob`` one evicted pod (the Eviction API, as ``kubectl drain`` does) restarts
  **every** pod of the gang, the job counting one retry; **without** a policy only the evicted pod is made
  again and the others run on (the control);
- with ``PodFailed -> AbortJob`` one failed pod aborts the job: ``Aborted``, its running pods killed;
- with ``TaskCompleted -> CompleteJob`` on a chief task, the chief's success completes the job:
  ``Completed``, the workers killed;
- ``maxRetry`` bounds the restarts of a job whose pod always fails: it ends ``Failed`` at its maxRetry
  retries, not one more.
"""

from __future__ import annotations

import allure
import pytest

from kbc import apis, timeouts
from kbc.jobs import bound, describe_pods, phase_of, uids
from kbc.kube import Kube, Obj, hold_list, hold_together, wait_for_list
from kbc.volcano import (
    ABORT_JOB,
    ABORTED,
    COMPLETE_JOB,
    COMPLETED,
    FAILED,
    JOB_NAME_LABEL,
    POD_EVICTED,
    POD_FAILED,
    RESTART_JOB,
    RUNNING,
    TASK_COMPLETED,
    VolcanoQueueFactory,
    create_vcjob,
    describe_vcjob,
    job_pods,
    phase,
    policy,
    retries,
    wait_vcjob,
    wait_vcjob_pods_running,
)
from kbc.workloads import vcjob, vcjob_task

pytestmark = [pytest.mark.volcano, pytest.mark.lifecycle, allure.epic("Volcano"), allure.feature("lifecycle")]

SMALL_CPU = "100m"
GANG = 3
# How long the failing and the completing pods run before they end.
ENDS_AFTER = "3s"
MAX_RETRY = 2


def _live(pods: list[Obj]) -> list[Obj]:
    """Pods not being deleted and not finished."""
    return [
        p
        for p in pods
        if not p["metadata"].get("deletionTimestamp") and phase_of(p) not in ("Succeeded", "Failed")
    ]


def _running(pods: list[Obj]) -> list[Obj]:
    return [p for p in _live(bound(pods)) if phase_of(p) == "Running"]


def _evict_one(kube: Kube, namespace: str, pods: list[Obj]) -> str:
    victim = str(sorted(p["metadata"]["name"] for p in pods)[0])
    kube.evict(victim, namespace)
    return victim


def _gang(name: str, queue: str, policies: list[dict[str, str]] | None = None) -> Obj:
    return vcjob(name, queue, replicas=GANG, min_available=GANG, cpu=SMALL_CPU, policies=policies or [])


def _ends_killing_the_rest(kube: Kube, namespace: str, wanted: str, because: str, killed: str) -> None:
    """vcjob gang reaches the final phase *wanted* (no other final phase) and every pod still running is
    killed."""
    others = {FAILED, ABORTED, COMPLETED} - {wanted}
    wait_vcjob(
        kube,
        namespace,
        "gang",
        until=lambda j: phase(j) == wanted,
        fail=lambda j: f"vcjob gang ended {phase(j)}, not {wanted}" if phase(j) in others else None,
        what=f"vcjob gang to be {wanted} {because}",
    )
    wait_for_list(
        kube,
        apis.POD,
        namespace=namespace,
        labels={JOB_NAME_LABEL: "gang"},
        until=lambda pods: not _live(pods),
        describe=describe_pods,
        timeout=timeouts.POD_START,
        what=killed,
    )


@allure.story("PodEvicted -> RestartJob: one evicted pod restarts every pod of the gang")
def test_an_evicted_pod_restarts_the_whole_gang(
    kube: Kube, namespace: str, make_volcano_queue: VolcanoQueueFactory
) -> None:
    queue = make_volcano_queue("vc-restart")
    with allure.step(f"a gang of {GANG} with the policy PodEvicted -> RestartJob, all Running"):
        create_vcjob(kube, namespace, _gang("gang", queue, policies=[policy(POD_EVICTED, RESTART_JOB)]))
        first = wait_vcjob_pods_running(kube, namespace, "gang", GANG)
        before = uids(first)
    with allure.step("evict one of its pods, as a node drain does"):
        victim = _evict_one(kube, namespace, first)
        allure.attach(victim, name="evicted", attachment_type=allure.attachment_type.TEXT)
    with allure.step("the job counts one retry, and every one of its pods is made again and runs"):
        wait_vcjob(
            kube,
            namespace,
            "gang",
            until=lambda job: retries(job) >= 1,
            fail=lambda job: f"restarted {retries(job)} times for one eviction" if retries(job) > 1 else None,
            what=f"vcjob gang to be restarted for the eviction of {victim} (status.retryCount 1)",
        )
        wait_for_list(
            kube,
            apis.POD,
            namespace=namespace,
            labels={JOB_NAME_LABEL: "gang"},
            until=lambda pods: len(_running(pods)) == GANG and not uids(_running(pods)) & before,
            describe=describe_pods,
            timeout=timeouts.POD_START,
            what=f"all {GANG} pods of vcjob gang made again (none of its first pods left) and Running",
        )
        job = wait_vcjob(
            kube,
            namespace,
            "gang",
            until=lambda j: phase(j) == RUNNING,
            what="vcjob gang to be Running again after its restart",
        )
        assert retries(job) == 1, describe_vcjob(job)


@allure.story("without a policy, an evicted pod is made again alone and the rest of the gang runs on")
def test_without_a_policy_an_evicted_pod_is_replaced_alone(
    kube: Kube, namespace: str, make_volcano_queue: VolcanoQueueFactory
) -> None:
    queue = make_volcano_queue("vc-sync")
    with allure.step(f"a gang of {GANG} without lifecycle policies, all Running"):
        create_vcjob(kube, namespace, _gang("gang", queue))
        first = wait_vcjob_pods_running(kube, namespace, "gang", GANG)
    with allure.step("evict one of its pods, as a node drain does"):
        victim = _evict_one(kube, namespace, first)
        kept = {p["metadata"]["uid"] for p in first if p["metadata"]["name"] != victim}

    def replaced_alone(pods: list[Obj]) -> bool:
        running = uids(_running(pods))
        return len(running) == GANG and kept <= running

    def restarted(pods: list[Obj]) -> str | None:
        gone = kept - uids(_live(pods))
        return f"pods the eviction did not touch were removed too: {sorted(gone)}" if gone else None

    def no_retry(job: Obj) -> str | None:
        return f"vcjob gang restarted {retries(job)} times for one eviction" if retries(job) else None

    with allure.step("the evicted pod is made again; the others keep running, no retry counted"):
        wait_for_list(
            kube,
            apis.POD,
            namespace=namespace,
            labels={JOB_NAME_LABEL: "gang"},
            until=replaced_alone,
            fail=restarted,
            describe=describe_pods,
            timeout=timeouts.POD_START,
            what=f"vcjob gang's evicted pod {victim} made again beside its {GANG - 1} untouched pods",
        )
        # The job counts the new pod Pending until it runs (its gang is all its pods), then Running again.
        wait_vcjob(
            kube,
            namespace,
            "gang",
            until=lambda j: phase(j) == RUNNING and (j.get("status") or {}).get("running") == GANG,
            fail=no_retry,
            what=f"vcjob gang to count its {GANG} pods Running again, with no retry",
        )
        hold_together(
            lambda: hold_list(
                kube,
                apis.POD,
                namespace=namespace,
                labels={JOB_NAME_LABEL: "gang"},
                holds=replaced_alone,
                describe=lambda pods: restarted(pods) or describe_pods(pods),
                what=f"vcjob gang's {GANG - 1} untouched pods running on",
            ),
            lambda: hold_list(
                kube,
                apis.VCJOB,
                namespace=namespace,
                fields={"metadata.name": "gang"},
                holds=lambda jobs: all(retries(j) == 0 and phase(j) == RUNNING for j in jobs),
                describe=lambda jobs: "\n".join(describe_vcjob(j) for j in jobs),
                what="vcjob gang Running with no retry counted",
            ),
        )


@allure.story("PodFailed -> AbortJob: one failed pod aborts the job and its running pods are killed")
def test_a_failed_pod_aborts_the_job(
    kube: Kube, namespace: str, make_volcano_queue: VolcanoQueueFactory
) -> None:
    queue = make_volcano_queue("vc-abort")
    failing = vcjob_task("failing", replicas=1, cpu=SMALL_CPU, fail_after=ENDS_AFTER)
    with allure.step(
        f"a gang of {GANG - 1} running workers and one pod that fails after {ENDS_AFTER}, "
        "with the policy PodFailed -> AbortJob"
    ):
        job = vcjob(
            "gang",
            queue,
            replicas=GANG - 1,
            min_available=GANG - 1,
            cpu=SMALL_CPU,
            policies=[policy(POD_FAILED, ABORT_JOB)],
            more_tasks=[failing],
        )
        create_vcjob(kube, namespace, job)
    with allure.step("the job is Aborted and its workers are killed"):
        _ends_killing_the_rest(
            kube,
            namespace,
            ABORTED,
            "after its pod failed",
            "every running pod of the aborted vcjob gang killed",
        )
        failed = [p for p in job_pods(kube, namespace, "gang") if phase_of(p) == "Failed"]
        assert failed, "the failed pod that aborted the job should be kept, Failed"


@allure.story("TaskCompleted -> CompleteJob: a chief task's success completes the job and kills its workers")
def test_a_completed_chief_completes_the_job(
    kube: Kube, namespace: str, make_volcano_queue: VolcanoQueueFactory
) -> None:
    queue = make_volcano_queue("vc-complete")
    chief = vcjob_task(
        "chief",
        replicas=1,
        cpu=SMALL_CPU,
        run_for=ENDS_AFTER,
        policies=[policy(TASK_COMPLETED, COMPLETE_JOB)],
    )
    with allure.step(
        f"a gang of {GANG - 1} workers that never end and a chief that succeeds after {ENDS_AFTER}, its "
        "task's policy TaskCompleted -> CompleteJob"
    ):
        job = vcjob(
            "gang", queue, replicas=GANG - 1, min_available=GANG - 1, cpu=SMALL_CPU, more_tasks=[chief]
        )
        create_vcjob(kube, namespace, job)
    with allure.step("the job is Completed and its workers are killed"):
        _ends_killing_the_rest(
            kube,
            namespace,
            COMPLETED,
            "once its chief succeeded",
            "every worker of the completed vcjob gang killed",
        )


@allure.story(
    f"maxRetry {MAX_RETRY}: a job whose pod always fails is restarted until {MAX_RETRY} retries, then Failed"
)
def test_max_retry_bounds_the_restarts(
    kube: Kube, namespace: str, make_volcano_queue: VolcanoQueueFactory
) -> None:
    queue = make_volcano_queue("vc-retry")
    with allure.step(
        f"a gang of 2 whose pods fail after {ENDS_AFTER}, PodFailed -> RestartJob, maxRetry {MAX_RETRY}"
    ):
        job = vcjob(
            "gang",
            queue,
            replicas=2,
            min_available=2,
            cpu=SMALL_CPU,
            fail_after=ENDS_AFTER,
            policies=[policy(POD_FAILED, RESTART_JOB)],
            max_retry=MAX_RETRY,
        )
        create_vcjob(kube, namespace, job)

    def past_max_retry(j: Obj) -> str | None:
        if retries(j) > MAX_RETRY:
            return f"vcjob gang restarted {retries(j)} times, past its maxRetry of {MAX_RETRY}"
        return None

    with allure.step(f"it is restarted until its retries reach {MAX_RETRY}, then Failed"):
        failed = wait_vcjob(
            kube,
            namespace,
            "gang",
            until=lambda j: phase(j) == FAILED,
            fail=past_max_retry,
            timeout=timeouts.LONG,
            what=f"vcjob gang to be {FAILED} at its maxRetry of {MAX_RETRY}",
        )
        assert retries(failed) == MAX_RETRY, describe_vcjob(failed)
        hold_list(
            kube,
            apis.VCJOB,
            namespace=namespace,
            fields={"metadata.name": "gang"},
            holds=lambda jobs: all(phase(j) == FAILED and retries(j) == MAX_RETRY for j in jobs),
            describe=lambda jobs: "\n".join(past_max_retry(j) or describe_vcjob(j) for j in jobs),
            what=f"vcjob gang Failed at {MAX_RETRY} retries, never restarted again",
        )
