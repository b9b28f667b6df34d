"""The Queue that deserves every GPU is given weight 3 as well: what spec.deserved does not do, the weight
then does, and the deserving Queue reclaims past half of the GPUs. The scenario that proves proportion
ignores spec.deserved must fail, saying one of the Queues passed its weighted share."""

from __future__ import annotations

from typing import Any

from kbc.kube import Kube
from tests.sabotage import Expect


def pytest_kbc_mutate_object(obj: dict[str, Any], kube: Kube) -> None:
    if obj["kind"] == "Queue" and obj["metadata"]["name"].startswith("vc-deserving-"):
        obj["spec"]["weight"] = 3


EXPECT = Expect(
    scenario="suites/test_volcano_reclaim.py::test_proportion_ignores_a_queue_s_deserved",
    because=("kbc.errors.WaitGaveUp", "deserving all"),
    # Reclaim evicts in rounds: the wait gives up on whichever bound a round crosses first, the deserving
    # Queue's share or the holder's.
    pattern=(
        r"deserving all \d+ GPUs got more than its weight entitles it to"
        r"|holding the GPUs below its weighted share"
    ),
)
