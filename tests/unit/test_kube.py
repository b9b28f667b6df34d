"""The client front: clear errors for a kubeconfig that cannot be used or a server that does not answer."""

from __future__ import annotations

import socket
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import urllib3
import yaml

from kbc import apis
from kbc.errors import ApiUnreachableError, ClusterError, ConsistencyViolation
from kbc.kube import connect, describe_objects, hold_together, observe
from kbc.kube._client import selector


def kubeconfig(tmp_path: Path, server: str) -> Path:
    path = tmp_path / "kubeconfig"
    path.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [{"name": "c", "cluster": {"server": server, "insecure-skip-tls-verify": True}}],
                "users": [{"name": "u", "user": {"token": "t"}}],
                "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}],
                "current-context": "c",
            }
        )
    )
    return path


def test_a_server_that_does_not_answer_is_named(tmp_path: Path) -> None:
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]
    with pytest.raises(
        ApiUnreachableError, match=rf"the API server at https://127.0.0.1:{port} did not answer"
    ):
        connect(kubeconfig(tmp_path, f"https://127.0.0.1:{port}"))


def test_a_kubeconfig_that_cannot_be_used_is_named(tmp_path: Path) -> None:
    with pytest.raises(ClusterError, match=r"cannot use kubeconfig .*missing \(context nope\)"):
        connect(tmp_path / "missing", "nope")
    with pytest.raises(ClusterError, match="cannot use kubeconfig"):
        connect(kubeconfig(tmp_path, "https://127.0.0.1:1"), "no-such-context")


def test_selectors_are_written_as_the_api_reads_them() -> None:
    assert selector(None) is None and selector({}) is None
    assert (
        selector({"job-name": "a", "kueue.x-k8s.io/queue-name": None})
        == "job-name=a,kueue.x-k8s.io/queue-name"
    )


def test_holds_that_break_together_are_reported_together() -> None:
    # One cause (a Workload deleted) breaks several holds at once; the report must not depend on which
    # watch thread noticed first.
    def breaks(what: str, after: float) -> Callable[[], None]:
        def hold() -> None:
            raise ConsistencyViolation(what, after, 5, "    state")

        return hold

    with pytest.raises(ConsistencyViolation) as caught:
        hold_together(breaks("the gang pending", 0.2), lambda: None, breaks("the same Workloads", 0.1))
    text = str(caught.value)
    assert text.startswith("the same Workloads stopped holding after 0.1s"), text
    assert "Also within the same window:\n  ConsistencyViolation: the gang pending stopped holding" in text


class _Quiet:
    """A cluster where nothing changes: every watch request ends empty, or its connection is refused."""

    def __init__(self, refused: bool) -> None:
        self.refused = refused
        self.requests = 0

    def list_at(self, kind: object, **_: object) -> tuple[list[dict[str, object]], str]:
        return [{"metadata": {"name": "a", "namespace": "n", "resourceVersion": "1"}}], "1"

    def watch(self, kind: object, **_: object) -> Iterator[tuple[str, dict[str, object]]]:
        self.requests += 1
        if self.refused:
            raise urllib3.exceptions.NewConnectionError(None, "Connection refused")  # type: ignore[arg-type]
        return iter(())


@pytest.mark.parametrize("refused", [False, True], ids=["quiet", "removed"])
def test_a_caller_regains_control_after_each_watch_request_even_when_nothing_changes(refused: bool) -> None:
    # A timeline recorder checks its stop between two yields: on a quiet namespace, or on a cluster already
    # removed, it watched on for an hour (make conformance, 2026-11-27: 95 such threads, two cores busy).
    quiet = _Quiet(refused)
    seen = observe(quiet, apis.POD, deadline=time.monotonic() + 3, namespace="n")  # type: ignore[arg-type]
    sets = [next(seen) for _ in range(3)]
    assert quiet.requests == 2 and all([o["metadata"]["name"] for o in s] == ["a"] for s in sets), sets
    seen.close()


def test_a_wait_on_nodes_names_each_node_and_its_ready_condition_not_its_whole_status() -> None:
    images = [{"names": [f"registry.example/image-{i}:v1"], "sizeBytes": 10**8} for i in range(50)]
    ready = {
        "type": "Ready",
        "status": "False",
        "reason": "KubeletNotReady",
        "message": "cni not initialized",
    }
    nodes = [
        {
            "kind": "Node",
            "metadata": {"name": "hk-worker"},
            "status": {"conditions": [ready], "images": images},
        },
        {"kind": "Node", "metadata": {"name": "hk-worker2"}, "status": {"images": images}},
    ]
    described = describe_objects(nodes)
    assert described.splitlines() == [
        "    Node hk-worker Ready=False (KubeletNotReady: cni not initialized)",
        "    Node hk-worker2: no Ready condition yet",
    ]
    job = {"kind": "Job", "metadata": {"name": "j", "namespace": "n"}, "status": {"log": "x" * 5000}}
    assert len(describe_objects([job])) < 700 and "more characters" in describe_objects([job])
