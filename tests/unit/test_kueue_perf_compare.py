"""Old pins against new in kueue-perf: the medians compared, the band a calibration gives, and what the
canary reads from the bench's lines."""

from __future__ import annotations

import json
import os
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from kbc.cli import _band, bench_perf
from kbc.cli import commands as cli
from kbc.errors import PerfConfigError
from kbc.perf import (
    PinsComparison,
    band,
    compare,
    compare_context,
    flag,
    render_comparison,
    render_context,
    widened_by_new,
)
from kbc.supply.lock import load_lock
from tests.unit.kueue_perf_data import BASELINE


def test_old_against_new_compares_the_medians_of_each_figure() -> None:
    def summary(wall: float, small: float) -> dict[str, Any]:
        return {
            "figures": [
                {"name": "wall", "value": wall, "unit": "ms"},
                {"name": "small mean time to admission", "value": small, "unit": "ms"},
            ]
        }

    old = [summary(100_000, 20_000), summary(110_000, 30_000), summary(90_000, 25_000)]
    new = [summary(200_000, 25_000), summary(220_000, 25_000), summary(180_000, 25_000)]
    comparison = compare(old, new)
    assert comparison["wall"]["old"] == 100_000 and comparison["wall"]["new"] == 200_000
    assert comparison["wall"]["ratio"] == 2.0 and comparison["wall"]["old_runs"] == [100_000, 110_000, 90_000]
    assert comparison["small mean time to admission"]["ratio"] == 1.0
    (header, wall, small) = render_comparison(comparison)
    assert small.split()[-1] == "1.00"
    assert "old pins" in header and wall.split()[-3:] == ["100.0s", "200.0s", "2.00"]


def test_the_command_runs_the_pin_sets_it_is_given(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    seen: dict[str, Any] = {}

    def perf(lock: Any, config: str, runs: int, **given: Any) -> dict[str, Any]:
        seen.update(config=config, runs=runs, pins=given["pins"], force=given["force"], old=given["old_from"])
        return {"benchmark": "kueue-perf"}

    monkeypatch.setattr(bench_perf, "bench_kueue_perf", perf)
    output = str(tmp_path / "bench.jsonl")
    assert cli.main(["bench", "kueue-perf", "--runs", "2", "--output", output]) == 0
    assert seen == {"config": "baseline", "runs": 2, "pins": "new", "force": False, "old": "previous"}
    both = ["bench", "kueue-perf", "--config", "tas", "--pins", "both", "--force", "--output", output]
    assert cli.main([*both, "--upgrade-from", "git:origin/main"]) == 0
    assert seen == {"config": "tas", "runs": 3, "pins": "both", "force": True, "old": "git:origin/main"}


def _figures(wall: float, usage: float) -> dict[str, Any]:
    return {
        "figures": [
            {"name": "wall", "value": wall, "unit": "ms", "bound": "max"},
            {"name": "cq usage", "value": usage, "unit": "%", "bound": "min"},
        ]
    }


def test_a_figure_worse_than_the_band_of_its_calibration_is_flagged_and_better_never_is() -> None:
    calibration = band([_figures(100_000, 50.0), _figures(120_000, 52.0), _figures(110_000, 51.0)])
    # (120 - 100) / 110 apart: a wall time 18 % longer is within it; 25 % longer is not.
    assert calibration == {"wall": 0.182, "cq usage": 0.039}
    old = [_figures(100_000, 50.0)]
    assert flag(compare(old, [_figures(118_000, 50.0)]), calibration) == {}
    flagged = flag(compare(old, [_figures(125_000, 50.0)]), calibration)
    assert list(flagged) == ["wall"] and "x1.25; the band is 18%" in flagged["wall"]
    # Usage is bounded below: lower is worse; a band narrower than the floor gets the floor (10 %).
    assert list(flag(compare(old, [_figures(100_000, 44.0)]), calibration)) == ["cq usage"]
    assert flag(compare(old, [_figures(100_000, 46.0)]), calibration) == {}
    assert flag(compare(old, [_figures(50_000, 80.0)]), calibration) == {}
    with pytest.raises(ValueError, match="two runs"):
        band(old)


def test_the_canary_reads_old_against_new_from_the_benchs_lines_and_says_what_regressed(
    tmp_path: Path,
) -> None:
    old = [_figures(100_000, 50.0)]
    comparison = compare(old, [_figures(150_000, 50.0)])
    flagged = flag(comparison, {})
    result = {
        "benchmark": "kueue-perf", "config": "baseline", "runs": 1, "pins": {"old": "v1", "new": "v2"},
        "old_from": "previous", "incomplete": [], "medians": {}, "comparison": comparison,
        "band_from": "no calibration", "flagged": flagged,
    }  # fmt: skip
    runs = tmp_path / "runs.jsonl"
    lines = [json.dumps({"benchmark": "kueue-perf", "pins": "old", "run": 1}), json.dumps(result)]
    found = PinsComparison.from_lines(lines, runs)
    assert (found.old, found.new, found.held, list(found.flagged)) == ("v1", "v2", False, ["wall"])
    assert "REGRESSED" in found.headline() and "Kueue v1 → v2" in found.headline()
    assert any(line.startswith("REGRESSION wall: 100.0s on the old pins, 150.0s") for line in found.lines())
    markdown = "\n".join(found.markdown())
    assert "| wall | 100.0s | 150.0s | 1.50 | 10% | **regression** |" in markdown
    assert "| cq usage | 50.0% | 50.0% | 1.00 | 10% |  |" in markdown and str(runs) in markdown
    assert found.as_data()["held"] is False and found.as_data()["runs_file"] == str(runs)
    # Nothing worse than the band and every run complete: held; a run that did not finish is not.
    held = PinsComparison.of({**result, "comparison": compare(old, old), "flagged": {}})
    assert held.held and "held" in held.headline()
    assert "(no calibration: every figure's band is the floor, 10%)" in held.headline()
    # With a calibration: each figure's band in every view, and the calibration kept with the result.
    calibration = {"runs": 3, "calibrated_at": "2026-11-28T11:00:00+00:00", "band": {"wall": 0.3}}
    banded = PinsComparison.of({**result, "band": {"wall": 0.3}, "band_calibration": calibration})
    assert "(band of 3 runs each, calibrated 2026-11-28)" in banded.headline()
    assert "| wall | 100.0s | 150.0s | 1.50 | 30% | **regression** |" in "\n".join(banded.markdown())
    assert any(line.startswith("band: wall 30%, cq usage 10%; from ") for line in banded.lines())
    assert banded.as_data()["calibration"] == calibration
    assert banded.as_data()["band"] == {"wall": 0.3, "cq usage": 0.1}
    unfinished = PinsComparison.of({**result, "flagged": {}, "incomplete": ["new pins, run 1: timed out"]})
    assert not unfinished.held and "INCOMPLETE new pins, run 1: timed out" in unfinished.lines()
    with pytest.raises(ValueError, match="no result line"):
        PinsComparison.from_lines(lines[:1])


def test_calibrating_takes_two_runs_of_the_pins_as_they_are(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "generator.yaml").write_text(BASELINE)
    given = ["bench", "kueue-perf", "--config", str(tmp_path), "--calibrate", "--output", str(tmp_path / "o")]
    assert cli.main([*given, "--runs", "1"]) == 1
    assert "--calibrate needs --runs 2 at least" in capsys.readouterr().err
    assert cli.main([*given, "--runs", "2", "--new-pins-config", "kueue:clientConnection.qps=5"]) == 1
    assert "no --new-pins-config" in capsys.readouterr().err


def test_a_calibration_of_both_pin_sets_keeps_the_wider_band_per_figure() -> None:
    lock = load_lock()
    summaries = {
        "old": [_figures(100_000, 50.0), _figures(120_000, 50.0)],
        "new": [_figures(100_000, 50.0), _figures(105_000, 60.0)],
    }
    when = datetime(2026, 11, 28, 11, 0, tzinfo=UTC)
    found = _band.calibration("baseline", {"old": lock, "new": lock}, summaries, {}, 2, now=when)
    assert found["band"] == {"wall": 0.182, "cq usage": 0.182}
    assert found["band_by_pins"]["old"] == {"wall": 0.182, "cq usage": 0.0}
    assert found["pins"] == "old and new" and found["runs"] == 2
    assert found["config"] == "baseline" and found["calibrated_at"] == "2026-11-28T11:00:00+00:00"


def test_a_band_the_new_pins_own_spread_set_is_said_beside_the_verdict() -> None:
    # The calibration of 2026-11-28 09:19 UTC: usage on the new pins ran 43.2, 58.0 and 44.8 %, on the old
    # 57.7, 54.6 and 61.2; new/old 0.78 held only because the new pins' own runs set the band at 33 %.
    by_pins = {
        "old": {"wall": 0.059, "medium mean time to admission": 0.351, "cq usage": 0.114},
        "new": {"wall": 0.101, "medium mean time to admission": 0.32, "cq usage": 0.33},
    }
    widened = widened_by_new(by_pins)
    assert list(widened) == ["cq usage"]
    assert widened["cq usage"].startswith("its band (33%) is the new pins' own spread, over 2 times the old")
    assert widened_by_new({"new": {"wall": 0.5}}) == {} and widened_by_new(None) == {}
    old = [_figures(100_000, 57.7)]
    result = {
        "benchmark": "kueue-perf", "config": "baseline", "runs": 1, "pins": {"old": "v1", "new": "v2"},
        "incomplete": [], "medians": {}, "comparison": compare(old, [_figures(100_000, 44.8)]),
        "band_from": "a calibration", "flagged": {}, "band": {"wall": 0.101, "cq usage": 0.33},
        "band_calibration": {"runs": 3, "calibrated_at": "2026-11-28T09:54Z", "band_by_pins": by_pins},
    }  # fmt: skip
    found = PinsComparison.of(result)
    assert found.held and list(found.as_data()["widened_by_new"]) == ["cq usage"]
    assert any(
        line.startswith("band widened by the new pins, cq usage: its band (33%)") for line in found.lines()
    )
    markdown = "\n".join(found.markdown())
    assert (
        "Band widened by the new pins (shown, not judged):" in markdown and "- cq usage: its band" in markdown
    )


def _band_file(tmp_path: Path, **fields: Any) -> Path:
    path = tmp_path / "band.json"
    record = {
        "config": "baseline",
        "pins": "old and new",
        "kueue": "v1, v2",
        "runs": 3,
        "band": {"wall": 0.2},
    }
    path.write_text(json.dumps({**record, **fields}))
    return path


def test_a_band_says_when_and_on_what_it_was_calibrated_and_what_makes_it_weaker(tmp_path: Path) -> None:
    path = _band_file(tmp_path, calibrated_at="2026-11-28T09:00:00+00:00")
    now = datetime(2026, 11, 28, 11, 30, tzinfo=UTC)
    used = _band.read_band(path, "baseline", ("v1", "v2"), now=now)
    assert used.widths == {"wall": 0.2} and used.notes == ()
    assert (
        f"{path}: 3 runs each of Kueue v1, v2 (old and new pins), calibrated 2026-11-28 09:00 UTC"
        in used.source
    )
    assert "(2.5 h before this run); floor 10%" in used.source
    data = used.as_data()
    assert data is not None and data["file"] == str(path) and data["age_hours"] == 2.5
    # Another release than the band ran, and a band of another day: both said, neither refused.
    later = datetime(2026, 12, 1, 9, 0, tzinfo=UTC)
    weaker = _band.read_band(path, "baseline", ("v2", "v3"), now=later)
    assert weaker.notes[0].startswith("calibrated on Kueue v1, v2, not on v3")
    assert (
        weaker.notes[1].startswith("calibrated 3 days before this run") and weaker.notes[1] in weaker.source
    )
    # What this run calibrated itself is not "before" it.
    assert "these runs, written to" in _band.read_band(path, "baseline", ("v1",), just_written=True).source


def test_a_band_file_of_before_it_said_when_gives_the_files_time(tmp_path: Path) -> None:
    path = _band_file(tmp_path)
    os.utime(path, (datetime(2026, 11, 28, 1, 22, tzinfo=UTC).timestamp(),) * 2)
    used = _band.read_band(path, "baseline", now=datetime(2026, 11, 28, 1, 52, tzinfo=UTC))
    assert "calibrated 2026-11-28 01:22 UTC (the file's time) (30 min before this run)" in used.source


def test_no_band_file_gives_the_floor_and_says_how_to_calibrate(tmp_path: Path) -> None:
    used = _band.read_band(tmp_path / "none.json", "baseline")
    assert used.widths == {} and used.as_data() is None
    assert "kbc bench kueue-perf --config baseline --pins both --runs 3 --calibrate" in used.source


@pytest.mark.parametrize(
    ("text", "field", "says"),
    [
        (
            json.dumps({"config": "tas", "band": {}}),
            "config",
            "a band of another config cannot judge 'baseline'",
        ),
        ("[1]", "band", "not a calibration kbc bench kueue-perf wrote"),
        ("{", "band", "not a calibration kbc bench kueue-perf wrote"),
        (json.dumps({"band": {"wall": "wide"}}), "band", "not a calibration"),
        (json.dumps({"band": {}, "calibrated_at": "Friday"}), "calibrated_at", "not an ISO 8601 time"),
    ],
)
def test_a_band_file_that_cannot_judge_this_config_is_refused_naming_the_field(
    tmp_path: Path, text: str, field: str, says: str
) -> None:
    path = tmp_path / "band.json"
    path.write_text(text)
    with pytest.raises(PerfConfigError, match=says) as refused:
        _band.read_band(path, "baseline")
    assert (refused.value.path, refused.value.field) == (path, field)


def test_a_band_of_another_config_is_refused_before_any_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "generator.yaml").write_text(BASELINE)
    band_file = _band_file(tmp_path, config="tas")

    def no_run(*_: Any, **__: Any) -> Any:
        raise AssertionError("a run started although the band was refused")

    monkeypatch.setattr(bench_perf, "_one_run", no_run)
    with pytest.raises(PerfConfigError, match="'tas': a band of another config"):
        bench_perf.bench_kueue_perf(
            load_lock(), str(tmp_path), 1, pins="both", timeout=None, force=True,
            emit=lambda _: None, say=lambda _: None, band_file=band_file,
        )  # fmt: skip


def _costed(p90_ms: float, kueue_cores: float, kueue_mib: int) -> dict[str, Any]:
    return {
        **_figures(100_000, 50.0),
        "workload_classes": {"small": {"p90_time_to_admission_ms": p90_ms}},
        "processes": {
            "kueue-controller-manager": {"mean_cores": kueue_cores, "peak_rss_mib": kueue_mib},
            "kube-apiserver": {"mean_cores": 1.3, "peak_rss_mib": 3000},
            "etcd": {"mean_cores": 0.1, "peak_rss_mib": 300},
        },
    }


def test_the_p90s_and_the_controllers_cost_are_shown_old_against_new_and_never_judged() -> None:
    old = [_costed(20_000, 0.4, 400), _costed(30_000, 0.5, 420), _costed(25_000, 0.3, 410)]
    new = [_costed(50_000, 0.8, 800), _costed(60_000, 0.9, 820), _costed(55_000, 1.0, 810)]
    context = compare_context(old, new)
    assert list(context) == [
        "small p90 time to admission",
        "kueue-controller-manager mean cores",
        "kueue-controller-manager peak memory",
        "kube-apiserver mean cores",
        "kube-apiserver peak memory",
    ], "the controller under test and the API server it loads; not every process"
    assert context["small p90 time to admission"] == {
        "unit": "ms",
        "old": 25_000,
        "new": 55_000,
        "ratio": 2.2,
    }
    assert context["kueue-controller-manager peak memory"]["ratio"] == 1.98
    (header, p90, cores, memory, *_) = render_context(context)
    assert "not judged" in header and p90.split()[-3:] == ["25.0s", "55.0s", "2.20"]
    assert cores.split()[-5:] == ["0.40", "cores", "0.90", "cores", "2.25"]
    assert memory.split()[-5:] == ["410", "MiB", "810", "MiB", "1.98"]
    # Twice as slow at p90 and twice the controller's cost: shown, and still held, since no band guards them.
    comparison = compare(old, new)
    result = {
        "benchmark": "kueue-perf", "config": "baseline", "runs": 3, "pins": {"old": "v1", "new": "v2"},
        "old_from": "previous", "incomplete": [], "medians": {}, "comparison": comparison,
        "band_from": "no calibration", "flagged": flag(comparison, {}), "context": context,
    }  # fmt: skip
    found = PinsComparison.of(result)
    assert found.held and "shown, not judged (medians)" in "\n".join(found.lines())
    markdown = "\n".join(found.markdown())
    assert (
        "Shown, not judged" in markdown
        and "| small p90 time to admission | 25.0s | 55.0s | 2.20 |" in markdown
    )
    assert found.as_data()["context"] == context
    assert (
        PinsComparison.of({**result, "context": None}).markdown()
        == PinsComparison.of({k: v for k, v in result.items() if k != "context"}).markdown()
    ), "a result line written before the context existed still reads"
