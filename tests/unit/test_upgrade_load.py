"""kbc bench upgrade-load without a cluster: the live state's sizes, the tallies it waits on, the
accounting check, and how a run is reported."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from kbc.errors import HarnessError
from kbc.perf import LiveSize, UpgradeUnderLoad
from kbc.perf import render_upgrade_run as render
from kbc.perf import summarize_upgrade_runs as summarize
from kbc.perf._live_watch import Tally, accounting
from kbc.plugins.canary_load import parse_size, pytest_collection_modifyitems


def test_the_default_size_is_the_issue_s_and_splits_each_queue_in_fifths() -> None:
    size = LiveSize()
    assert (size.cluster_queues, size.workloads) == (100, 5000)
    assert (size.finished, size.admitted, size.pending, size.freed) == (10, 20, 20, 5)
    assert LiveSize(cluster_queues=4, workloads=40).freed == 1


@pytest.mark.parametrize(
    ("size", "words"),
    [
        (LiveSize(cluster_queues=10, workloads=40), "4 per ClusterQueue"),
        (LiveSize(cluster_queues=0, workloads=40), "--cluster-queues 0"),
        (LiveSize(cluster_queues=4, workloads=40, freed_per_queue=5), "give 1 to 4"),
    ],
)
def test_a_size_with_nothing_to_hold_or_free_is_refused_saying_what_to_give(
    size: LiveSize, words: str
) -> None:
    with pytest.raises(HarnessError, match=words):
        size.check()


def _wl(queue: str, *, reserved: bool = False, finished: bool = False, tried: bool = False) -> dict[str, Any]:
    conditions = []
    if reserved or tried:  # a workload Kueue tried and could not fit has QuotaReserved False
        conditions.append({"type": "QuotaReserved", "status": "True" if reserved else "False"})
    if finished:
        conditions.append({"type": "Finished", "status": "True"})
    return {"metadata": {"namespace": queue, "name": "w"}, "status": {"conditions": conditions}}


def test_a_tally_counts_per_queue_and_says_which_queues_are_not_there_yet() -> None:
    workloads = [
        _wl("a", reserved=True),
        _wl("a", reserved=True, finished=True),
        _wl("a", tried=True),
        _wl("b"),
    ]
    tally = Tally.of(workloads, ["a", "b"])
    a, b = tally.one("a"), tally.one("b")
    assert (a.reserved, a.finished, a.waiting) == (1, 1, 1)
    assert (b.reserved, b.finished, b.waiting) == (0, 0, 1)
    assert not tally.all(lambda q: q.reserved == 1)
    assert tally.describe(lambda q: q.reserved == 1) == (
        "1 ClusterQueues not there yet (b: 0 holding quota, 0 finished, 1 waiting)"
    )


def _queue(reserving: int, pending: int, cpu: str) -> dict[str, Any]:
    usage = [{"name": "f", "resources": [{"name": "cpu", "total": cpu}]}]
    return {
        "status": {
            "reservingWorkloads": reserving,
            "admittedWorkloads": reserving,
            "pendingWorkloads": pending,
            "flavorsReservation": usage,
            "flavorsUsage": usage,
        }
    }


def test_accounting_agrees_where_the_status_is_what_the_workloads_hold_and_names_what_differs() -> None:
    tally = Tally.of([_wl("q", reserved=True), _wl("q", reserved=True), _wl("q")], ["q"])
    assert accounting({"q": _queue(2, 1, "2")}, tally, "f") == []
    assert accounting({"q": _queue(2, 1, "2000m")}, tally, "f") == []
    (wrong,) = accounting({"q": _queue(2, 1, "3")}, tally, "f")
    assert wrong == "ClusterQueue q reports cpu reserved 3 (its Workloads: 2), cpu used 3 (its Workloads: 2)"


def _record(run: int, upgrade: float, findings: dict[str, list[str]]) -> dict[str, Any]:
    return {
        "benchmark": "upgrade-load",
        "provider": "local",
        "run": run,
        "kueue_old": "OLD",
        "kueue_new": "NEW",
        "cluster_queues": 4,
        "workloads": 40,
        "live_state_seconds": 12.5,
        "seconds": {"upgrade": upgrade, "pending_admitted": None},
        "counts": {"objects": 57},
        "findings": findings,
        "held": not findings,
    }


def test_runs_are_summarized_by_median_and_a_finding_in_any_run_is_not_held() -> None:
    records = [_record(1, 10.0, {}), _record(2, 14.0, {"lost": ["Workload/q/w-1"]}), _record(3, 12.0, {})]
    summary = summarize(records)
    assert summary["median_seconds"] == {"upgrade": 12.0, "pending_admitted": None}
    assert summary["held"] is False
    assert summary["findings"] == ["run 2: lost: ['Workload/q/w-1']"]


def test_a_run_reads_as_its_times_then_what_it_kept_or_lost() -> None:
    kept = render(_record(1, 10.0, {}))
    assert "upgrade                            10.00s" in kept and "pending_admitted" in kept
    assert "never" in kept and "kept: every object" in kept
    lost = render(_record(1, 10.0, {"lost": ["Workload/q/w-1"]}))
    assert "NOT KEPT, lost: 1" in lost and "Workload/q/w-1" in lost and "kept: every" not in lost


def test_the_canary_reads_the_bench_s_lines_into_its_headline_table_and_data(tmp_path: Path) -> None:
    runs = tmp_path / "upgrade-load-canary.jsonl"
    lines = [json.dumps(_record(1, 10.0, {})), json.dumps(summarize([_record(1, 10.0, {})]))]
    result = UpgradeUnderLoad.from_lines(lines, runs_file=runs)
    assert result.held and len(result.records) == 1, "the bench's summary line is not a run"
    assert result.headline() == (
        "Kueue OLD → NEW on local under 4 ClusterQueues and 40 Workloads: upgrade 10.00s, pending_admitted "
        "never (1 run); everything kept"
    )
    table = result.markdown()
    assert "| upgrade | 10.00s | 10.00s |" in table and "| pending_admitted | never | never |" in table
    assert table[-1] == f"Runs: `{runs}`"
    assert result.as_data()["runs_seconds"] == [{"upgrade": 10.0, "pending_admitted": None}]
    lost = UpgradeUnderLoad.from_lines([json.dumps(_record(1, 9.0, {"lost": ["Workload/q/w-1"]}))])
    assert not lost.held and lost.headline().endswith("NOT KEPT (1 finding)")
    assert "- **not kept**, run 1: lost: ['Workload/q/w-1']" in lost.markdown()
    with pytest.raises(ValueError, match="no run of kbc bench upgrade-load"):
        UpgradeUnderLoad.from_lines([json.dumps(summarize([_record(1, 10.0, {})]))])


@pytest.mark.parametrize(
    ("given", "words"),
    [
        ("100", "expected QUEUESxWORKLOADS, e.g. 100x5000"),
        ("ten x 40", "expected QUEUESxWORKLOADS"),
        ("10x40", "--upgrade-load 10x40: --workloads 40 over --cluster-queues 10 gives 4 per ClusterQueue"),
    ],
)
def test_a_canary_load_size_it_cannot_run_names_the_option(given: str, words: str) -> None:
    with pytest.raises(HarnessError, match=re.escape(words)):
        parse_size(given)
    assert (parse_size(" 4 X 40 ").cluster_queues, parse_size("4x40").workloads) == (4, 40)


class _Item:
    def __init__(self, name: str, mark: str | None = None) -> None:
        self.name, self.mark = name, mark

    def get_closest_marker(self, name: str) -> object | None:
        return object() if name == self.mark else None


class _Config:
    def __init__(self, upgrade_load: str | None) -> None:
        self.given = {"upgrade_load": upgrade_load}
        self.deselected: list[Any] = []
        self.hook = self

    def getoption(self, dest: str) -> Any:
        return self.given.get(dest)

    def pytest_deselected(self, items: list[Any]) -> None:
        self.deselected += items


def test_the_upgrade_under_load_runs_after_the_performance_runs_and_before_the_canary_s_cluster() -> None:
    items = [_Item("suite"), _Item("canary"), _Item("load", "upgrade_load"), _Item("perf", "scale")]
    ordered = list(items)
    pytest_collection_modifyitems(_Config("4x40"), ordered)  # type: ignore[arg-type]
    assert [i.name for i in ordered] == ["perf", "load", "suite", "canary"]
    without = _Config(None)
    left = list(items)
    pytest_collection_modifyitems(without, left)  # type: ignore[arg-type]
    assert [i.name for i in left] == ["suite", "canary", "perf"]
    assert [i.name for i in without.deselected] == ["load"]
