"""Every vcjob may be restarted 100 times: the retry scenario's job then goes on restarting past 2, and the
scenario must fail saying so.
"""

from __future__ import annotations

from typing import Any

from kbc.kube import Kube
from tests.sabotage import Expect


def pytest_kbc_mutate_object(obj: dict[str, Any], kube: Kube) -> None:
    if obj["kind"] == "Job" and obj["apiVersion"].startswith("batch.volcano.sh/"):
        obj["spec"]["maxRetry"] = 100


EXPECT = Expect(
    scenario="suites/test_volcano_lifecycle.py::test_max_retry_bounds_the_restarts",
    because=("kbc.errors.WaitGaveUp", "restarted 3 times, past its maxRetry of 2"),
)
