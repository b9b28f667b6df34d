"""The old-against-new comparison: what the recorder makes of preemptions, and what counts as a change."""

from __future__ import annotations

from typing import Any, cast

import pytest

from kbc.kube import Kube
from kbc.report.compare import MIN_SECONDS, Comparison, Side, as_data, markdown, text
from kbc.report.timeline import Behaviour, Recorder


def behaviour(*admissions: float, preemptions: int = 0, reclaim: float | None = None) -> Behaviour:
    reasons = ("InCohortReclamation",) if preemptions else ()
    return Behaviour(admissions, 0, preemptions, reasons, reclaim)


def compared(old: Behaviour, new: Behaviour, outcomes: tuple[str, str] = ("passed", "passed")) -> Comparison:
    return Comparison("scenario", Side(outcomes[0], old), Side(outcomes[1], new))


def test_the_same_behaviour_is_marked_unchanged() -> None:
    comparison = compared(behaviour(0.1, 4.0), behaviour(0.12, 4.1))
    assert comparison.changes() == []
    assert comparison.cells()[-1] == "="


def test_a_change_within_the_noise_of_one_run_is_not_marked() -> None:
    assert compared(behaviour(0.1), behaviour(0.1 + MIN_SECONDS * 0.9)).changes() == []
    # Relative noise: 30 % of a 10 s wait is not a change either.
    assert compared(behaviour(0.1, 10.0), behaviour(0.1, 13.0)).changes() == []


def test_slower_admission_and_more_preemptions_are_marked_with_both_values() -> None:
    changes = compared(
        behaviour(0.1, 0.2, preemptions=1, reclaim=0.2), behaviour(1.5, 1.6, preemptions=3, reclaim=2.5)
    ).changes()
    assert changes == [
        "▲ first admission slower (0.10 s → 1.50 s)",
        "▲ slowest admission slower (0.20 s → 1.60 s)",
        "▲ reclaim slower (0.20 s → 2.50 s)",
        "▲ more preemptions (1 → 3)",
    ]


def test_faster_and_fewer_are_marked_too() -> None:
    changes = compared(behaviour(2.0, preemptions=2, reclaim=2.0), behaviour(0.2, preemptions=1, reclaim=0.2))
    assert changes.changes() == [
        "▼ first admission faster (2.00 s → 0.20 s)",
        "▼ slowest admission faster (2.00 s → 0.20 s)",
        "▼ reclaim faster (2.00 s → 0.20 s)",
        "▼ fewer preemptions (2 → 1)",
    ]


def test_a_reclaim_on_one_side_only_and_a_changed_outcome_are_marked() -> None:
    changes = compared(behaviour(0.1), behaviour(0.1, preemptions=1, reclaim=0.3), ("failed", "passed"))
    assert changes.changes() == ["failed → passed", "reclaim none → 0.30 s", "▲ more preemptions (0 → 1)"]


def test_a_scenario_that_ran_on_one_side_only_says_which() -> None:
    comparison = Comparison("scenario", None, Side("passed", behaviour(0.1)))
    assert comparison.changes() == ["ran only on the new pins"]
    assert comparison.cells()[1] == "not run → 0.10 s"


def test_the_table_shows_old_and_new_side_by_side() -> None:
    comparison = compared(
        behaviour(0.1, preemptions=1, reclaim=0.2), behaviour(0.1, preemptions=1, reclaim=0.2)
    )
    table = markdown([comparison])
    assert table[0] == "| scenario | first admission | slowest admission | reclaim | preemptions | change |"
    assert table[2] == (
        "| scenario | 0.10 s → 0.10 s | 0.10 s → 0.10 s | 0.20 s → 0.20 s "
        "| 1 (InCohortReclamation) → 1 (InCohortReclamation) | = |"
    )
    assert len({len(line) for line in text([comparison])}) == 1 or text([comparison])[0].startswith(
        "scenario"
    )
    (data,) = as_data([comparison])
    assert data["old"] == {
        "outcome": "passed",
        "admission_seconds": [0.1],
        "not_admitted": 0,
        "reclaim_seconds": 0.2,
        "preemptions": 1,
        "preemption_reasons": ["InCohortReclamation"],
    }


def _workload(name: str, uid: str, owner_uid: str, conditions: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "metadata": {
            "name": name,
            "uid": uid,
            "ownerReferences": [{"uid": owner_uid, "kind": "Job", "name": name.removeprefix("job-")}],
        },
        "status": {"conditions": conditions},
    }


def _job(name: str, uid: str) -> dict[str, Any]:
    return {"metadata": {"name": name, "uid": uid}, "spec": {"suspend": True}}


ADMITTED = {"type": "Admitted", "status": "True", "reason": "Admitted"}


def test_the_recorder_counts_preemptions_and_times_the_reclaim_of_the_workload_that_caused_them(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    recorder = Recorder(cast(Kube, None), "ns")  # _note never calls the API
    clock = iter([0.1, 0.3, 1.0, 1.2, 1.7, 2.0, 2.5])
    monkeypatch.setattr(recorder, "_started", 0.0)
    monkeypatch.setattr("kbc.report.timeline.time.monotonic", lambda: next(clock))
    last: dict[str, dict[str, str]] = {}
    recorder._note("Job", "ADDED", _job("borrower", "j1"), last)  # 0.1
    recorder._note("Workload", "ADDED", _workload("job-borrower", "w1", "j1", [ADMITTED]), last)  # 0.3
    recorder._note("Job", "ADDED", _job("lender", "j2"), last)  # 1.0
    recorder._note("Workload", "ADDED", _workload("job-lender", "w2", "j2", []), last)  # 1.2
    preempted = {
        "type": "Preempted",
        "status": "True",
        "reason": "InCohortReclamation",
        "message": "Preempted to accommodate a workload (UID: w2, JobUID: j2) due to reclamation within "
        "the cohort; preemptor path: /lender; preemptee path: /borrower",
    }
    recorder._note("Workload", "MODIFIED", _workload("job-borrower", "w1", "j1", [preempted]), last)  # 1.7
    recorder._note("Workload", "MODIFIED", _workload("job-lender", "w2", "j2", [ADMITTED]), last)  # 2.0
    # Still preempted at the next change: the same preemption, not a second one.
    recorder._note("Workload", "MODIFIED", _workload("job-borrower", "w1", "j1", [preempted]), last)  # 2.5
    result = recorder.behaviour()
    assert result.preemptions == 1
    assert result.preemption_reasons == ("InCohortReclamation",)
    assert result.reclaim_seconds == pytest.approx(1.0)  # the lender: seen at 1.0, admitted at 2.0
    assert result.admission_seconds == pytest.approx((0.2, 1.0))
