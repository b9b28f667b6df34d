"""Every pod of the rendezvous PyTorchJob (``meet``), master included, is told it is rank 1, over what the
training operator wired (``PET_NODE_RANK`` set again in its command).

Nobody then hosts the rendezvous at the master's address: every node dials it for ever, the PyTorchJob
never succeeds, and the scenario that proves the operator's wiring (on kind, where pods run) must fail.
Loaded by ``tests/integration/test_kind.py``.
"""

from __future__ import annotations

from typing import Any

from kbc.kube import Kube
from tests.sabotage.trainjob_meet_without_a_host import WITHOUT_A_HOST


def pytest_kbc_mutate_object(obj: dict[str, Any], kube: Kube) -> None:
    if obj["kind"] != "PyTorchJob" or obj["metadata"]["name"] != "meet":
        return
    for replica in obj["spec"]["pytorchReplicaSpecs"].values():
        for container in replica["template"]["spec"]["containers"]:
            container["command"] = list(WITHOUT_A_HOST)
