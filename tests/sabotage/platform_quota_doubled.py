"""The twin's ClusterQueues get twice the nominal quota the platform's files say (``kbc verify`` only).

A nominal promise derives its gang and its "one more waits" from the files: on the twin one more is
admitted, and the promise must fail, for quota counted in DRA devices as for any other.
"""

from __future__ import annotations

from typing import Any

from kubernetes.utils.quantity import parse_quantity

from kbc.kube import Kube
from tests.sabotage import quotas


def pytest_kbc_mutate_object(obj: dict[str, Any], kube: Kube) -> None:
    for resource in quotas(obj):
        resource["nominalQuota"] = str(int(parse_quantity(resource["nominalQuota"])) * 2)
