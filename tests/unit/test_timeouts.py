"""Timeouts come in named tiers with one scale factor; windows never shrink; a bad factor is named."""

from __future__ import annotations

import subprocess
import sys

import pytest

from kbc import timeouts
from kbc.errors import TimeoutScaleError
from kbc.supply import paths


@pytest.fixture(autouse=True)
def _no_session_scale(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(timeouts, "_session", {})
    monkeypatch.delenv(timeouts.SCALE_ENV, raising=False)


def test_tiers_scale_together_and_windows_only_grow(monkeypatch: pytest.MonkeyPatch) -> None:
    assert timeouts.seconds(timeouts.LONG) == 60 and timeouts.seconds(7.5) == 7.5
    monkeypatch.setenv(timeouts.SCALE_ENV, "2")
    assert [timeouts.seconds(t) for t in (timeouts.SHORT, timeouts.LONG, timeouts.POD_START)] == [
        60,
        120,
        180,
    ]
    assert timeouts.seconds(timeouts.CONSISTENCY_WINDOW) == 10
    assert timeouts.seconds(7.5) == 7.5, "plain seconds are taken as they are"
    assert all(timeouts.seconds(t) == t.base * 2 for t in timeouts.TIERS), "one factor scales every tier"
    timeouts.set_scale(0.5)  # the option wins over the environment
    assert timeouts.seconds(timeouts.LONG) == 30
    assert timeouts.seconds(timeouts.CONSISTENCY_WINDOW) == 5, "a window is never shorter than 5 s"


@pytest.mark.parametrize("text", ["fast", "0", "-1", "inf", ""])
def test_a_bad_scale_names_its_source(monkeypatch: pytest.MonkeyPatch, text: str) -> None:
    with pytest.raises(TimeoutScaleError, match=rf"--timeout-scale='{text}' is not a positive number"):
        timeouts.parse_scale(text, "--timeout-scale")
    if text:
        monkeypatch.setenv(timeouts.SCALE_ENV, text)
        with pytest.raises(TimeoutScaleError, match=rf"\${timeouts.SCALE_ENV}="):
            timeouts.scale()


def test_a_bad_timeout_scale_option_is_a_usage_error() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "--timeout-scale", "fast", "--collect-only", "-q", "suites"],
        cwd=paths.repo_root(),
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 4, proc.stdout + proc.stderr
    assert "--timeout-scale='fast' is not a positive number" in proc.stderr, proc.stderr
