"""What the kubelet said went wrong with a pod, as failures and the timeline show it."""

from __future__ import annotations

from kbc.jobs import describe_pods, trouble_of
from kbc.kube import Obj


def pod(status: Obj, name: str = "gang-b-8vxr6", node: str = "worker3") -> Obj:
    return {"metadata": {"name": name}, "spec": {"nodeName": node}, "status": status}


def test_a_container_that_failed_to_start_is_named_with_its_exit_code_and_message() -> None:
    failed = pod(
        {
            "phase": "Failed",
            "containerStatuses": [
                {
                    "name": "worker",
                    "restartCount": 0,
                    "state": {
                        "terminated": {
                            "reason": "StartError",
                            "exitCode": 128,
                            "message": "failed to create containerd task: context deadline exceeded\n",
                        }
                    },
                }
            ],
        }
    )
    assert trouble_of(failed) == (
        "container worker StartError exit 128: failed to create containerd task: context deadline exceeded"
    )
    assert describe_pods([failed]) == (
        "    gang-b-8vxr6: worker3 Failed [container worker StartError exit 128: "
        "failed to create containerd task: context deadline exceeded]"
    )


def test_an_evicted_pod_and_a_restarting_container_are_both_said() -> None:
    evicted = pod(
        {"phase": "Failed", "reason": "Evicted", "message": "The node was low on resource: memory."}
    )
    assert trouble_of(evicted) == "Evicted: The node was low on resource: memory."
    restarting = pod(
        {
            "phase": "Running",
            "containerStatuses": [
                {"name": "worker", "restartCount": 2, "state": {"waiting": {"reason": "CrashLoopBackOff"}}}
            ],
        }
    )
    assert trouble_of(restarting) == "container worker CrashLoopBackOff; container worker restarted 2x"
    # restartPolicy OnFailure: running again where it was, and why it restarted.
    restarted = pod(
        {
            "phase": "Running",
            "containerStatuses": [
                {
                    "name": "worker",
                    "restartCount": 1,
                    "state": {"running": {}},
                    "lastState": {"terminated": {"reason": "StartError", "exitCode": 128}},
                }
            ],
        }
    )
    assert trouble_of(restarted) == "container worker restarted 1x (last: StartError exit 128)"


def test_a_pod_on_its_way_or_done_well_has_no_trouble() -> None:
    creating = pod(
        {"containerStatuses": [{"name": "w", "state": {"waiting": {"reason": "ContainerCreating"}}}]}
    )
    done = pod(
        {
            "containerStatuses": [
                {"name": "w", "state": {"terminated": {"reason": "Completed", "exitCode": 0}}}
            ]
        }
    )
    assert trouble_of(creating) == trouble_of(done) == trouble_of(pod({})) == ""
    assert describe_pods([pod({"phase": "Running"})]) == "    gang-b-8vxr6: worker3 Running"
