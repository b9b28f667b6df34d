"""Deliberately broken setups, each a pytest plugin loaded into an inner run of one suite scenario.

A sabotage plugin implements the ``pytest_kbc_mutate_object`` hook (``kbc.plugins.hooks``): it
sees every object the scenario creates, just before it is sent, and breaks one thing in
it, such as the quota the scenario asks for, so that the scenario meets the broken
behaviour and must fail with a message that explains it.

A sabotage says beside its hook which scenario it breaks and what that scenario's failure must say, as
``EXPECT = Expect(...)``; ``tests/integration/test_sabotages.py`` runs each so declared. A sabotage that
needs a fixture of its own (a real node, a cluster configured otherwise) keeps an explicit test in
``tests/integration/test_<capability>_can_fail.py`` instead.
"""

from __future__ import annotations

import importlib
import pkgutil
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from kbc.configuration import Setting


@dataclass(frozen=True)
class Expect:
    """What a sabotage turns red, and how the scenario must explain the failure."""

    scenario: str
    """The scenario's node id, ``suites/test_<capability>.py::test_...``."""
    because: tuple[str, ...]
    """Every text the failure must contain: the words that explain the broken behaviour."""
    or_because: tuple[tuple[str, ...], ...] = ()
    """Other sets of texts, where the sabotage can surface at another check depending on timing."""
    needs: tuple[Setting, ...] = ()
    """The component settings the scenario needs (its ``needs`` marker), so both run on one cluster."""
    timeout_scale: float | None = None
    """The inner run's ``--timeout-scale``, where the scenario's failure is its wait running out."""
    pattern: str | None = None
    """A regular expression the failure must match, where a text alone cannot say it."""
    slow: bool = False
    """The inner run takes more than a minute (the ``slow`` marker)."""


def declared() -> dict[str, Expect]:
    """Every sabotage module's name → its ``EXPECT``, for those that declare one."""
    found: dict[str, Expect] = {}
    for info in pkgutil.iter_modules(__path__):
        module = importlib.import_module(f"{__name__}.{info.name}")
        expect = getattr(module, "EXPECT", None)
        if expect is not None:
            if not isinstance(expect, Expect):
                raise TypeError(
                    f"tests/sabotage/{info.name}.py: EXPECT must be an Expect, not {type(expect)}"
                )
            found[info.name] = expect
    return found


ADMISSION_MANAGER = "kueue-admission"
"""The field manager Kueue's admission writes a Workload's reservation under."""


def quota_reserved(
    workload: dict[str, Any], cluster_queue: str, assignments: list[dict[str, Any]]
) -> dict[str, Any]:
    """A status apply that reserves quota for *workload* in *cluster_queue* with *assignments* (one per pod
    set), as Kueue's admission writes it: apply it with ``subresource="status"`` and
    :data:`ADMISSION_MANAGER`."""
    meta = workload["metadata"]
    return {
        "apiVersion": workload["apiVersion"],
        "kind": "Workload",
        "metadata": {"name": meta["name"], "namespace": meta["namespace"]},
        "status": {
            "admission": {"clusterQueue": cluster_queue, "podSetAssignments": assignments},
            "conditions": [
                {
                    "type": "QuotaReserved",
                    "status": "True",
                    "reason": "QuotaReserved",
                    "message": "reserved by the sabotage",
                    "lastTransitionTime": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                }
            ],
        },
    }


def quotas(obj: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """Every resource quota of *obj* when it is a ClusterQueue (``resourceGroups[].flavors[].resources[]``),
    to change in place; nothing for any other object."""
    if obj["kind"] != "ClusterQueue":
        return
    for group in obj["spec"].get("resourceGroups") or []:
        for flavor in group.get("flavors") or []:
            yield from flavor.get("resources") or []


def vcjob_policies(obj: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """The spec of *obj* and of each of its tasks, where a Volcano Job keeps lifecycle ``policies``; nothing
    for any other object."""
    if obj["kind"] != "Job" or not obj["apiVersion"].startswith("batch.volcano.sh/"):
        return
    yield obj["spec"]
    yield from obj["spec"].get("tasks") or []
