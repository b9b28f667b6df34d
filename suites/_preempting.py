"""The steps the Kueue scenarios of cohorts and preemption share: a Job queued through its LocalQueue, and a
victim evicted by preemption (or, when it is not, what the preemptor saw)."""

from __future__ import annotations

from kbc import apis
from kbc.errors import ScenarioFailure, WaitTimeout
from kbc.kube import Kube, Obj, condition
from kbc.kueue import Queues, describe_cluster_queue, preemption_message, wait_preempted, wait_workload_of


def expect_queued(kube: Kube, namespace: str, manifest: Obj) -> str:
    """Create Job *manifest*; return the name of the Workload Kueue made for it."""
    created = kube.create(manifest, namespace=namespace)
    assert created["spec"]["suspend"] is True, (
        f"Kueue's webhook should have suspended Job {created['metadata']['name']}, which names a LocalQueue; "
        "it was created unsuspended, so Kueue does not manage it"
    )
    return str(wait_workload_of(kube, namespace, created)[0]["metadata"]["name"])


def expect_evicted(
    kube: Kube, workload: str, namespace: str, reason: str, who: str, preemptor: str, queue: str
) -> Obj:
    """Wait for *workload* to be preempted with *reason*; if it never is, say what the preemptor saw."""
    try:
        return wait_preempted(kube, namespace, workload, reasons={reason})[0]
    except WaitTimeout as exc:
        waiting = condition(kube.get(apis.WORKLOAD, preemptor, namespace), "QuotaReserved") or {}
        holder = describe_cluster_queue(kube.get(apis.CLUSTER_QUEUE, queue))
        raise ScenarioFailure(
            f"the {who} was not evicted within {exc.timeout:.0f}s: Kueue should have preempted Workload "
            f"{workload} (Preempted reason {reason}) to admit {preemptor}, which instead waits with "
            f"QuotaReserved={waiting.get('status')} ({waiting.get('reason')}: {waiting.get('message')}). "
            f"The {who}'s queue still holds the quota:\n{holder}\n"
            f"Last state of the {who}:\n{exc.last_state}"
        ) from None


def expect_preempted_by(
    kube: Kube,
    namespace: str,
    workload: str,
    reason: str,
    who: str,
    *,
    preemptor: str,
    queues: Queues,
    by: str,
    of: str,
) -> tuple[Obj, str]:
    """:func:`expect_evicted` (*workload*, of member *of* of *queues*), then Kueue's exact Preempted message
    on it, naming *preemptor* and the paths of members *by* and *of*; the victim and that message."""
    victim = expect_evicted(
        kube, workload, namespace, reason, who, preemptor=preemptor, queue=queues.cluster_queues[of]
    )
    preemptor_wl = kube.get(apis.WORKLOAD, preemptor, namespace)
    expected = preemption_message(preemptor_wl, reason, queues.path(by), queues.path(of))
    preempted = condition(victim, "Preempted") or {}
    assert preempted.get("message") == expected, f"expected {expected!r}, got {preempted.get('message')!r}"
    return victim, expected
