"""The canary's snapshot: which facts it keeps, and how a difference reads."""

from __future__ import annotations

from typing import Any

from kbc import apis
from kbc.snapshot import Snapshot, ca_bundle_problems, compare, compare_settled, facts_of, key_of, messages


def workload(admitted: bool = True, evicted: bool = False) -> dict[str, Any]:
    conditions = [{"type": "QuotaReserved", "status": str(admitted), "reason": "QuotaReserved"}]
    if evicted:
        conditions.append({"type": "Evicted", "status": "True", "reason": "Preempted"})
    status: dict[str, Any] = {"conditions": conditions}
    if admitted:
        status["admission"] = {
            "clusterQueue": "team-a",
            "podSetAssignments": [{"name": "main", "flavors": {"nvidia.com/gpu": "h100", "cpu": "default"}}],
        }
    return {
        "kind": "Workload",
        "metadata": {"name": "job-x", "namespace": "ns", "uid": "u1"},
        "status": status,
    }


def snap(**objects: dict[str, str]) -> Snapshot:
    return Snapshot(dict(objects))


def test_a_workload_is_recorded_with_its_admission_and_conditions() -> None:
    facts = facts_of(apis.WORKLOAD, workload())
    assert facts == {
        "uid": "u1",
        "admission": "team-a [main: cpu=default,nvidia.com/gpu=h100]",
        "condition QuotaReserved": "True (QuotaReserved)",
    }
    assert key_of(workload()) == "Workload ns/job-x"
    assert facts_of(apis.WORKLOAD, workload(admitted=False))["admission"] == "(none)"


def test_a_pod_restart_and_a_lost_admission_are_named_before_and_after() -> None:
    pod = {
        "spec": {"nodeName": "n1"},
        "status": {"startTime": "t0", "containerStatuses": [{"restartCount": 0}]},
    }
    restarted = {**pod, "status": {"startTime": "t0", "containerStatuses": [{"restartCount": 1}]}}
    before = snap(
        **{
            "Pod ns/p": {"uid": "p1", **facts_of(apis.POD, pod)},
            "Workload ns/job-x": facts_of(apis.WORKLOAD, workload()),
        }
    )
    after = snap(
        **{
            "Pod ns/p": {"uid": "p1", **facts_of(apis.POD, restarted)},
            "Workload ns/job-x": facts_of(apis.WORKLOAD, workload(evicted=True)),
        }
    )
    assert [str(c) for c in compare(before, after)] == [
        "Pod ns/p: restarts: 0 → 1",
        "Workload ns/job-x: condition Evicted: (none) → True (Preempted)",
    ]


def test_an_object_gone_or_replaced_is_a_change_and_a_new_one_is_not() -> None:
    before = snap(**{"Job ns/a": {"uid": "1"}, "Job ns/b": {"uid": "2"}})
    after = snap(**{"Job ns/b": {"uid": "3"}, "Job ns/c": {"uid": "4"}})
    assert [str(c) for c in compare(before, after)] == [
        "Job ns/a: object: uid 1 → (gone)",
        "Job ns/b: uid: 2 → 3",
    ]


def test_ignored_facts_are_not_compared() -> None:
    before = snap(**{"ClusterQueue q": {"uid": "1", "usage f/gpu": "4"}})
    after = snap(**{"ClusterQueue q": {"uid": "1", "usage f/gpu": "2"}})
    assert compare(before, after, ignore=["usage f/gpu"]) == []
    assert len(compare(before, after)) == 1


def placed(racks: list[str]) -> dict[str, Any]:
    """An admitted Workload whose pod set Kueue placed in *racks* (one pod each)."""
    admitted = workload()
    admitted["status"]["admission"]["podSetAssignments"][0]["topologyAssignment"] = {
        "levels": ["example.com/rack"],
        "domains": [{"values": [rack], "count": 1} for rack in racks],
    }
    return admitted


def claim(device: str | None) -> dict[str, Any]:
    """A ResourceClaim allocated *device* of the example driver (none: not allocated) and held by pod p."""
    results = [{"driver": "gpu.example.com", "pool": "node-1", "device": device, "request": "gpu"}]
    status = (
        {"allocation": {"devices": {"results": results}}, "reservedFor": [{"name": "p"}]} if device else {}
    )
    return {
        "kind": "ResourceClaim",
        "metadata": {"name": "p-gpu", "namespace": "ns", "uid": "c1"},
        "status": status,
    }


def test_a_topology_assignment_or_a_claims_allocation_that_moved_is_a_change_named_as_such() -> None:
    """What the canary's DRA and topology state exists for: an upgrade that moves a running gang to another
    rack, or hands its pod's claim another device, fails the canary and says so."""
    before = snap(
        **{
            "Workload ns/job-x": facts_of(apis.WORKLOAD, placed(["rack-1", "rack-1"])),
            "ResourceClaim ns/p-gpu": facts_of(apis.RESOURCE_CLAIM, claim("gpu-0")),
        }
    )
    assert before.objects["ResourceClaim ns/p-gpu"]["allocation"] == "gpu.example.com/node-1/gpu-0"
    assert before.objects["ResourceClaim ns/p-gpu"]["reservedFor"] == "p"
    assert "topology main" in before.objects["Workload ns/job-x"]
    after = snap(
        **{
            "Workload ns/job-x": facts_of(apis.WORKLOAD, placed(["rack-1", "rack-2"])),
            "ResourceClaim ns/p-gpu": facts_of(apis.RESOURCE_CLAIM, claim("gpu-1")),
        }
    )
    changes = [str(c) for c in compare(before, after)]
    assert (
        changes[0]
        == "ResourceClaim ns/p-gpu: allocation: gpu.example.com/node-1/gpu-0 → gpu.example.com/node-1/gpu-1"
    )
    assert changes[1].startswith("Workload ns/job-x: topology main: ") and '"rack-2"' in changes[1], changes
    assert len(changes) == 2, changes
    unallocated = snap(**{"ResourceClaim ns/p-gpu": facts_of(apis.RESOURCE_CLAIM, claim(None))})
    assert [str(c) for c in compare(before, unallocated) if "allocation" in str(c)] == [
        "ResourceClaim ns/p-gpu: allocation: gpu.example.com/node-1/gpu-0 → (none)"
    ]


def pending(reason: str, message: str) -> dict[str, Any]:
    found = workload(admitted=False)
    found["status"]["conditions"] = [
        {"type": "QuotaReserved", "status": "False", "reason": reason, "message": message}
    ]
    return found


def taken(obj: dict[str, Any]) -> Snapshot:
    return Snapshot({key_of(obj): facts_of(apis.WORKLOAD, obj)}, {key_of(obj): messages(obj)})


def test_a_changed_condition_says_its_new_message_which_is_never_compared() -> None:
    before = taken(pending("Pending", "couldn't assign flavors to pod set main: insufficient quota"))
    reworded = taken(pending("Pending", "insufficient unused quota for nvidia.com/gpu in flavor h100"))
    assert compare(before, reworded) == []
    inactive = taken(pending("Inadmissible", "ClusterQueue team-a is inactive"))
    assert [str(c) for c in compare(before, inactive)] == [
        "Workload ns/job-x: condition QuotaReserved: False (Pending) → False (Inadmissible): "
        '"ClusterQueue team-a is inactive"'
    ]


def test_a_change_that_settles_is_passing_and_one_that_stays_is_the_verdict() -> None:
    before = taken(pending("Pending", "insufficient quota"))
    inactive = taken(pending("Inadmissible", "ClusterQueue team-a is inactive"))
    evicted = taken(workload(admitted=False, evicted=True))
    states = iter([inactive, inactive, before])
    settled = compare_settled(before, lambda: next(states), within=10, step=0.01)
    assert settled.changes == []
    assert [c.after for c in settled.passing] == ["False (Inadmissible)"]
    misconfigured = taken(pending("Misconfigured", "LocalQueue team-a doesn't exist"))
    seen: list[Snapshot] = []

    def moving_on() -> Snapshot:
        seen.append(inactive if not seen else misconfigured)
        return seen[-1]

    other = compare_settled(before, moving_on, within=0.2, step=0.01)
    assert [c.after for c in other.changes] == ["False (Misconfigured)"] and other.passing == []
    stays = compare_settled(before, lambda: evicted, within=0.05, step=0.01)
    assert [c.fact for c in stays.changes] == ["condition Evicted", "condition QuotaReserved"]
    assert stays.passing == []


def test_a_change_no_controller_can_undo_ends_the_wait_at_once() -> None:
    before = snap(**{"Job ns/a": {"uid": "1"}})
    calls = []

    def take() -> Snapshot:
        calls.append(1)
        return snap(**{"Job ns/a": {"uid": "2"}})

    settled = compare_settled(before, take, within=30, step=0.01)
    assert [str(c) for c in settled.changes] == ["Job ns/a: uid: 1 → 2"] and len(calls) == 1


class _NoWebhookConfigurations:
    def list(self, kind: Any, **_: Any) -> list[dict[str, Any]]:
        return []


def _crd(versions: list[str]) -> dict[str, Any]:
    return {
        "metadata": {"name": "things.example.com"},
        "spec": {
            "versions": [{"name": v, "served": True, "storage": v == versions[0]} for v in versions],
            "conversion": {"strategy": "Webhook", "webhook": {"clientConfig": {"service": {"name": "s"}}}},
        },
    }


def test_a_conversion_webhook_without_a_ca_counts_only_where_the_crd_has_versions_to_convert() -> None:
    """The API server calls a CRD's conversion webhook between its versions: with two and no caBundle it
    cannot trust it; with one it never calls it."""
    kube: Any = _NoWebhookConfigurations()
    assert ca_bundle_problems(kube, [_crd(["v1", "v1beta1"])], []) == [
        "CRD things.example.com conversion webhook: no caBundle"
    ]
    assert ca_bundle_problems(kube, [_crd(["v1"])], []) == []
