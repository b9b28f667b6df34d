"""A controller restart that loses what it had admitted: as soon as Kueue is back, every Workload of the
restart scenario's namespace is deleted (as a controller that rebuilt its state from nothing would leave
it).

Kueue makes the Workloads again for their Jobs, with new identities, and suspends the running gang while
it admits it anew: "nothing lost" must fail.
"""

from __future__ import annotations

from kbc import apis
from kbc.kube import Kube

SCENARIO_NAMESPACE = "kbc-test-a-killed-kueue"


def pytest_kbc_controllers_restarted(component: str, kube: Kube) -> None:
    if component != "kueue":
        return
    for namespace in kube.list(apis.NAMESPACE):
        name = namespace["metadata"]["name"]
        if name.startswith(SCENARIO_NAMESPACE):
            for workload in kube.list(apis.WORKLOAD, namespace=name):
                kube.delete(apis.WORKLOAD, workload["metadata"]["name"], namespace=name)
