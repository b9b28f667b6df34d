"""Every node of the rendezvous TrainJob (``meet``) is told it is node 1, over what Trainer wired
(``PET_NODE_RANK`` set again in its command).

Nobody then hosts the rendezvous at node 0's address: every node dials it for ever, the TrainJob never
completes, and the scenario that proves Trainer's wiring (on kind, where pods run) must fail. Loaded by
``tests/integration/test_kind.py``.
"""

from __future__ import annotations

from typing import Any

from kbc.kube import Kube

WITHOUT_A_HOST = ["/bin/sh", "-c", "export PET_NODE_RANK=1; exec /bin/meet"]


def pytest_kbc_mutate_object(obj: dict[str, Any], kube: Kube) -> None:
    if obj["kind"] == "TrainJob" and obj["metadata"]["name"] == "meet":
        obj["spec"]["trainer"]["command"] = list(WITHOUT_A_HOST)
