"""What a training job's nodes said at the rendezvous their operator wired (``/bin/meet``): the checks the
TrainJob and PyTorchJob suites share, each attaching the logs it reads."""

from __future__ import annotations

import allure

from kbc.jobs import met, pod_logs
from kbc.kube import Kube, Obj


def check_all_met(kube: Kube, namespace: str, pods: list[Obj], nodes: int, address: str) -> None:
    """Every one of the job's *nodes* pods was wired to *address* (``name:``) and met all the others."""
    said = pod_logs(kube, namespace, pods)
    allure.attach("\n".join(f"--- {k}\n{v}" for k, v in said.items()), name="node logs")
    assert len(said) == nodes, f"the job keeps its {nodes} pods once it ended: {sorted(said)}"
    wired = [name for name, log in said.items() if f"rendezvous at {address}" in log]
    assert len(wired) == nodes, f"every node should be wired to {address}; their logs: {said}"
    missed = [name for name, log in said.items() if not met(log, nodes)]
    assert not missed, f"every node should have met all {nodes}; these did not: {missed}; logs: {said}"


def check_all_waiting(kube: Kube, namespace: str, placed: list[Obj], nodes: int, address: str) -> None:
    """Every placed pod of jobs of *nodes* nodes started the rendezvous at an *address* (a prefix) and met
    nobody, and some placed node 0 is waiting for its peers."""
    said = pod_logs(kube, namespace, placed)
    allure.attach("\n".join(f"--- {k}\n{v}" for k, v in said.items()), name="placed node logs")
    for name, log in said.items():
        assert f"rendezvous at {address}" in log, f"{name} never started the rendezvous: {log!r}"
        assert not met(log, nodes), f"{name} met its peers though its job is partly placed: {log!r}"
    hosts = [name for name, log in said.items() if f"rank 0 waiting for {nodes - 1} peers" in log]
    assert hosts, f"some placed node 0 should be waiting for its {nodes - 1} peers; logs: {said}"
