"""The kueue-perf runner without a cluster: what it does when Kueue admits or evicts a workload, its
figures, and how its sweep finds and shows a finish it lost."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from kbc.errors import KubeApiError
from kbc.perf import (
    load_generator,
    load_rangespec,
    render,
    summarize,
)
from kbc.perf._records import (
    NEVER_PLANNED,
    OVERDUE,
    UNSEEN,
    QueueRecord,
    RunRecord,
    WorkloadRecord,
    percentile,
)
from kbc.perf._runner import ADMISSION_MANAGER, _Runner
from kbc.perf._view import history, unfinished
from tests.unit.kueue_perf_data import BASELINE, RANGESPEC, Applies, workload_object, write_config

KEY = "cq/small-0-0-0"


def watched(tmp_path: Path, client: Applies | None = None) -> tuple[_Runner, WorkloadRecord]:
    """A runner over Kueue's baseline that knows one small workload, :data:`KEY`, created at 1.0 s (its
    writes go to *client*)."""
    config = load_generator(write_config(tmp_path, BASELINE))
    runner = _Runner(client or Applies(), config, workers=2, say=lambda _: None)  # type: ignore[arg-type]
    record = WorkloadRecord("cq", "small-0-0-0", "small", 200, due=0.0, created=1.0)
    runner.workloads[KEY] = record
    return runner, record


def test_a_workload_finishes_its_runtime_after_its_last_admission_and_an_eviction_unreserves_it(
    tmp_path: Path,
) -> None:
    client = Applies()
    runner, record = watched(tmp_path, client)
    key = KEY
    runner.on_workload(workload_object(admitted=True), 10.0)
    assert record.admissions == [10.0] and runner.finish_heap == [(10.2, key)]

    # Evicted before its runtime ran out: the reservation goes, applied as the scheduler's own manager
    # without admission, so Kueue's admission goes with it.
    runner.on_workload(workload_object(admitted=True, evicted=True), 10.1)
    runner.on_workload(workload_object(admitted=True, evicted=True), 10.15)  # the same eviction, seen again
    runner.writers.shutdown(wait=True)
    (body, subresource, manager), *again = client.applied
    assert (subresource, manager) == ("status", ADMISSION_MANAGER) and again == []
    assert record.evictions == 1
    assert "admission" not in body["status"] and body["metadata"]["resourceVersion"] == "7"
    said = {c["type"]: (c["status"], c["reason"]) for c in body["status"]["conditions"]}
    assert said["QuotaReserved"] == ("False", "Pending") and said["Admitted"] == ("False", "NoReservation")
    assert said["Evicted"] == ("True", "Preempted")

    # Requeued and admitted again: its runtime starts again, and the first plan lapses.
    runner.on_workload(workload_object(admitted=False), 10.3)
    runner.on_workload(workload_object(admitted=True), 12.0)
    assert record.admissions == [10.0, 12.0] and record.finish_due == 12.2
    client.applied.clear()
    runner._finish(key, 10.2)
    assert client.applied == []
    runner._finish(key, 12.2)
    ((body, subresource, manager),) = client.applied
    assert (subresource, manager) == ("status", "kueue-job-controller-Finished")
    assert [(c["type"], c["status"]) for c in body["status"]["conditions"]] == [("Finished", "True")]


def test_the_figures_are_kueues_a_never_admitted_workload_counting_zero_and_usage_integrated(
    tmp_path: Path,
) -> None:
    config = load_generator(write_config(tmp_path, BASELINE))
    spec = load_rangespec(write_config(tmp_path, RANGESPEC, "rangespec.yaml"))
    workloads = {
        "a": WorkloadRecord("q", "a", "large", 1000, due=0.0, created=0.0, admissions=[2.0], finished=3.0),
        "b": WorkloadRecord(
            "q", "b", "large", 1000, due=0.0, created=1.0, admissions=[5.0, 9.0], evictions=1
        ),
        "c": WorkloadRecord("q", "c", "large", 1000, due=0.0, created=1.0),
    }
    queue = QueueRecord("cq-0-0-cohort-0", "cq", nominal_mcpu=20_000)
    for at, used in ((0.0, "0"), (1.0, "20"), (3.0, "0"), (4.0, "0")):
        queue.observe({"status": {"flavorsUsage": [{"resources": [{"name": "cpu", "total": used}]}]}}, at)
    record = RunRecord(0.0, 10.0, True, "done", workloads, {queue.name: queue}, [], 0)
    summary = summarize(record, config, spec)
    large = summary["workload_classes"]["large"]
    # (2 s + 8 s, the last admission after it appeared) over 3 workloads, as Kueue's recorder divides.
    assert large["mean_time_to_admission_ms"] == pytest.approx(10_000 / 3, abs=0.1)
    assert (large["admitted"], large["never_admitted"], large["evictions"]) == (2, 1, 1)
    # 20 cpu for 2 s of a 4 s window of 20 cpu nominal: 50 %.
    assert summary["cluster_queue_classes"]["cq"]["usage_percent"] == 50.0
    figures = {f["name"]: f for f in summary["figures"]}
    assert figures["wall"]["value"] == 10_000 and figures["wall"]["within_kueue_limit"] is True
    assert figures["large mean time to admission"]["ratio_to_published_mean"] == round(3333.3 / 37862, 2)
    assert figures["cq usage"]["within_kueue_limit"] is True
    assert figures["small mean time to admission"]["limit"] is None
    assert percentile([1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0], 0.9) == 9.0


def test_a_finish_lost_in_a_worker_is_shown_and_planned_again_by_the_sweep(tmp_path: Path) -> None:
    runner, record = watched(tmp_path)
    key = KEY
    runner.on_workload(workload_object(admitted=True), 10.0)

    def lost(key: str, due: float) -> None:
        raise ValueError("a response the runner could not read")

    runner._guarded(f"finish Workload {key}", lost, key, 10.2)
    assert runner.errors == [f"finish Workload {key}: ValueError: a response the runner could not read"]
    runner.finish_heap.clear()
    runner.sweep(15.0)  # 4.8 s overdue: within the grace
    assert runner.finish_heap == [] and runner.replanned == 0
    runner.sweep(25.0)
    assert runner.finish_heap == [(25.0, key)] and runner.replanned == 1 and record.finish_due == 25.0
    assert runner.replanned_by == {OVERDUE: 1}


def _admitted_at(obj: dict[str, Any], stamp: str) -> dict[str, Any]:
    for cond in obj["status"]["conditions"]:
        if cond["type"] == "Admitted":
            cond["lastTransitionTime"] = stamp
    return obj


def test_a_readmission_the_view_never_saw_unadmitted_is_planned_and_the_sweep_plans_one_never_planned(
    tmp_path: Path,
) -> None:
    # The canary at scale (2026-11-27) left 6 workloads admitted and never finished: first seen admitted and
    # evicted at once, then admitted again, never seen unadmitted in between (a list skips states).
    runner, record = watched(tmp_path)
    key = KEY
    evicted = workload_object(admitted=True, evicted=True)
    runner.on_workload(_admitted_at(evicted, "2026-11-27T17:58:52Z"), 10.0)
    assert (record.finish_due, record.unreserving) == (None, True)  # evicted: its reservation goes, no finish
    runner.writers.shutdown(wait=True)
    runner.on_workload(_admitted_at(workload_object(admitted=True), "2026-11-27T17:59:10Z"), 28.0)
    assert record.admissions == [10.0, 28.0] and record.finish_due == 28.2
    # The same admission seen again (a resync's list) is not new: its plan stands.
    runner.on_workload(_admitted_at(workload_object(admitted=True), "2026-11-27T17:59:10Z"), 29.0)
    assert record.admissions == [10.0, 28.0] and runner.finish_heap == [(28.2, key)]

    # Admitted with no plan at all, however the view came to miss it: the sweep plans it once the grace is
    # over, and counts it.
    record.finished = 30.0
    lost = WorkloadRecord("cq", "small-0-0-1", "small", 200, due=0.0, created=1.0)
    lost.admitted, lost.admissions = True, [40.0]
    runner.workloads["cq/small-0-0-1"] = lost
    runner.sweep(45.0)
    assert (lost.finish_due, runner.replanned) == (None, 0)
    runner.sweep(51.0)
    assert lost.finish_due == 51.0 and runner.replanned_by == {NEVER_PLANNED: 1}
    # What the view went through is the evidence of how a plan was lost (the baseline of 2026-11-28 lost 9).
    assert runner.never_planned == ["cq/small-0-0-1"]
    assert history("cq/small-0-0-0", record, 0.0, [0.5, 20.0]) == (
        "cq/small-0-0-0: 10.0s admitted evicted since 2026-11-27T17:58:52Z; 28.0s admitted since "
        "2026-11-27T17:59:10Z; the watch listed at 0.5s, 20.0s"
    )


def test_an_eviction_whose_reservation_kueue_gave_again_before_the_runner_took_it_off_is_planned(
    tmp_path: Path,
) -> None:
    # The baseline of 2026-11-28 never planned 4 finishes a run, each seen so: not admitted; admitted and
    # evicted since T; admitted since T, in the same tenth of a second. Kueue resets Evicted when it reserves
    # quota again, and Admitted, never False in between, keeps its transition time.
    client = Applies()
    runner, record = watched(tmp_path, client)
    runner.on_workload(workload_object(admitted=False), 58.2)
    evicted = workload_object(admitted=True, evicted=True)
    runner.on_workload(_admitted_at(evicted, "2026-11-28T09:22:02Z"), 246.3)
    assert (record.finish_due, record.unreserving) == (None, True)
    runner.on_workload(_admitted_at(workload_object(admitted=True), "2026-11-28T09:22:02Z"), 246.5)
    assert record.admissions == [246.3, 246.5] and record.finish_due == 246.7
    assert runner.finish_heap == [(246.7, KEY)]
    runner.writers.shutdown(wait=True)
    client.applied.clear()
    runner._finish(KEY, 246.7)
    ((_, _, manager),) = client.applied
    assert manager == "kueue-job-controller-Finished" and runner.replanned == 0


def test_the_sweep_never_replaces_a_plan_a_writer_holds_and_waits_longer_for_an_accepted_finish(
    tmp_path: Path,
) -> None:
    """Under a backlog of writes longer than the grace, replacing queued plans made every one of them stale
    before it ran (2,649 finishes planned again in a baseline run, some never applied)."""
    client = Applies()
    runner, record = watched(tmp_path, client)
    key = KEY
    runner.on_workload(workload_object(admitted=True), 10.0)
    record.finishing = 10.2  # popped and queued behind other writes
    runner.finish_heap.clear()
    runner.sweep(60.0)
    assert runner.finish_heap == [] and runner.replanned == 0 and record.finish_due == 10.2

    # The queued write runs at last: applied, and the writer lets go of the plan.
    runner._finish(key, 10.2)
    assert [manager for _, _, manager in client.applied] == ["kueue-job-controller-Finished"]
    applied = record.finish_applied
    assert applied is not None and not _writer_holds(record)
    runner.sweep(applied + 20.0)  # the watch has not shown it yet: within the grace of an accepted finish
    assert runner.finish_heap == [] and runner.replanned == 0
    runner.sweep(applied + 31.0)
    assert runner.finish_heap == [(applied + 31.0, key)] and runner.replanned_by == {UNSEEN: 1}


def test_the_replanned_finishes_are_told_apart_a_lost_plan_from_a_lagging_watch(tmp_path: Path) -> None:
    config = load_generator(write_config(tmp_path, BASELINE))

    def said(by: dict[str, int]) -> str:
        run = RunRecord(0.0, 30.0, True, "done", {}, {}, [], 0, by)
        summary = summarize(run, config, None)
        assert summary["finishes_replanned_by"] == by
        (line,) = [line for line in render(summary) if line.startswith("finishes the runner planned again")]
        return line

    # The canary at scale of 2026-11-27 (old pins) planned 11 finishes again, without saying why.
    watch_only = said({UNSEEN: 11})
    assert "accepted and not shown by the watch within 30s: 11" in watch_only
    assert "none lost" in watch_only and "report it" not in watch_only
    mixed = said({UNSEEN: 2, OVERDUE: 7, NEVER_PLANNED: 1})
    assert mixed.startswith("finishes the runner planned again: 10 (overdue with no writer holding it: 7; ")
    assert "a runner fault, not Kueue's: report it" in mixed
    run = RunRecord(
        0.0, 30.0, True, "done", {}, {}, [], 0, {NEVER_PLANNED: 1}, replanned_examples=["cq/w: …"]
    )
    assert "never planned, as the runner saw it: cq/w: …" in render(summarize(run, config, None))


def test_an_incomplete_run_names_the_workloads_admitted_and_never_finished(tmp_path: Path) -> None:
    runner, record = watched(tmp_path)
    runner.workloads["cq/never"] = WorkloadRecord("cq", "never", "small", 200, due=0.0, created=1.0)
    runner.on_workload(workload_object(admitted=True), 10.0)
    record.finishing = record.finish_due
    (said,) = unfinished(runner.workloads, 0.0, 40.0)
    assert said == (
        "cq/small-0-0-0: admitted at 10.0s; finish due at 10.2s, held by a writer, accepted by the API "
        "server at never; last seen [QuotaReserved=True, Admitted=True]; the run ended at 40.0s"
    )


def _writer_holds(record: WorkloadRecord) -> bool:
    return record.finishing is not None


def test_a_stalled_run_lists_the_workloads_and_plans_what_its_watch_missed(tmp_path: Path) -> None:
    """Once generation is done, nothing has finished for RESYNC_AFTER seconds and workloads are left, the
    runner lists them: an admission its watch never delivered is planned and counted, not waited on."""
    client = Applies()
    runner, record = watched(tmp_path, client)
    runner.unfinished = 1
    client.listed = [workload_object(admitted=True)]
    runner.last_finish = 100.0
    runner.resync(120.0)  # generation still running: the watch has time
    runner.generation_done.set()
    runner.resync(120.0)  # 20 s without a finish: not stalled yet
    assert (record.finish_due, runner.watch_missed) == (None, 0)
    runner.resync(131.0)
    assert record.admissions == [131.0] and record.finish_due == 131.2 and runner.watch_missed == 1
    runner.resync(170.0)  # the same admission listed again is no news
    assert runner.watch_missed == 1 and record.admissions == [131.0]


class _Refuses(Applies):
    """An API client whose first status writes are refused as given (a conflict, then a server error)."""

    def __init__(self, *refusals: int) -> None:
        super().__init__()
        self.refusals = list(refusals)
        self.read: list[str] = []

    def apply(self, obj: dict[str, Any], *, subresource: str | None = None, field_manager: str = "") -> Any:
        if self.refusals:
            status = self.refusals.pop(0)
            raise KubeApiError("apply", "Workload cq/small-0-0-0", status, "refused", "as the test asks")
        return super().apply(obj, subresource=subresource, field_manager=field_manager)

    def get(self, kind: Any, name: str, namespace: str | None = None) -> dict[str, Any]:
        self.read.append(f"{namespace}/{name}")
        fresh = workload_object(admitted=True, evicted=True)
        fresh["metadata"]["resourceVersion"] = "9"
        return fresh


def _admitted_then_evicted(client: Applies, config: Any, key: str) -> tuple[_Runner, WorkloadRecord]:
    """A runner that saw *key* admitted at 10.0 s and evicted at 10.1 s, writing through *client*."""
    runner = _Runner(client, config, workers=2, say=lambda _: None)  # type: ignore[arg-type]
    record = WorkloadRecord("cq", "small-0-0-0", "small", 200, due=0.0, created=1.0)
    runner.workloads[key] = record
    runner.on_workload(workload_object(admitted=True), 10.0)
    runner.on_workload(workload_object(admitted=True, evicted=True), 10.1)
    return runner, record


def test_an_evicted_reservation_is_taken_off_at_a_fresh_version_and_the_sweep_takes_up_a_refused_write(
    tmp_path: Path,
) -> None:
    # Kueue waits for the integration to take an evicted reservation off: a write given up would leave the
    # run waiting forever (the canary at scale sat 600 s in make test, 2026-11-27).
    config = load_generator(write_config(tmp_path, BASELINE))
    key = "cq/small-0-0-0"

    # A conflict: the watch lags the object under load, so the runner reads it afresh and writes at that.
    client = _Refuses(409)
    runner, record = _admitted_then_evicted(client, config, key)
    runner.writers.shutdown(wait=True)
    ((body, _, manager),) = client.applied
    assert client.read == [key] and body["metadata"]["resourceVersion"] == "9", body["metadata"]
    assert manager == ADMISSION_MANAGER and not record.unreserving and runner.unreserves_retried == 0

    # Refused outright: shown, and written again by the sweep once the grace has passed.
    client = _Refuses(500)
    runner, record = _admitted_then_evicted(client, config, key)
    while record.unreserving:
        time.sleep(0.01)
    assert client.applied == [] and runner.errors[0].startswith(
        f"unset the reservation of evicted Workload {key}"
    )
    runner.sweep(15.0)  # within the grace
    assert runner.unreserves_retried == 0
    runner.sweep(25.0)
    runner.writers.shutdown(wait=True)
    ((body, _, manager),) = client.applied
    assert manager == ADMISSION_MANAGER and runner.unreserves_retried == 1 and record.evicted_at == 25.0
    run = RunRecord(0.0, 30.0, True, "done", {key: record}, {}, runner.errors, 1, unreserves_retried=1)
    said = "\n".join(render(summarize(run, config, None)))
    assert "evicted reservations the runner took off again (its write refused, or not" in said, said
