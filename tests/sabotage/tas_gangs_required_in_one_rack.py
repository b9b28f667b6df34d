"""Every flavor names a topology of the racks and every Job's pods require one rack.

The negative control shows a gang without topology-aware scheduling split across racks; made to require one
rack, it waits for one instead, and the control must fail.
"""

from __future__ import annotations

from typing import Any

import pytest

from kbc import apis
from kbc.kube import Kube, connect
from kbc.kueue.topology import REQUIRED, topology
from kbc.labels import BLOCK_LABEL, HOSTNAME_LABEL, RACK_LABEL
from kbc.plugins.cluster import session_key

TOPOLOGY = "kbc-sabotage-racks"


def pytest_kbc_mutate_object(obj: dict[str, Any], kube: Kube) -> None:
    if obj["kind"] == "ResourceFlavor":
        if kube.find(apis.TOPOLOGY, TOPOLOGY) is None:
            kube.create(topology(TOPOLOGY, (BLOCK_LABEL, RACK_LABEL, HOSTNAME_LABEL)))
        obj["spec"]["topologyName"] = TOPOLOGY
    if obj["kind"] == "Job" and obj["apiVersion"] == "batch/v1":
        meta = obj["spec"]["template"].setdefault("metadata", {})
        meta["annotations"] = {**(meta.get("annotations") or {}), REQUIRED: RACK_LABEL}


def pytest_sessionfinish(session: pytest.Session) -> None:
    """The Topology this sabotage made goes with the session (the cluster is the outer session's)."""
    run = session.config.stash[session_key].current
    if run is not None:
        with connect(run.cluster.kubeconfig) as kube:
            kube.delete(apis.TOPOLOGY, TOPOLOGY)
