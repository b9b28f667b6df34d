"""``kbc bench``'s measurements reach their functions with the options they were given (the canary bench
and the cold toolchain once read an attribute the parser never set, and crashed before measuring)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from kbc.cli import bench, bench_restart
from kbc.cli import commands as cli
from kbc.cli._machine import PROBE
from kbc.supply.lock import default_lock_path


@pytest.mark.parametrize("given", [[], ["--charts-lock", "LOCK"]])
def test_the_canary_bench_gets_the_lock_the_runs_and_the_provider(
    given: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    lock = tmp_path / "charts-lock.yaml"
    lock.write_text(default_lock_path().read_text())
    seen: dict[str, Any] = {}

    def canary(lock_path: Path | None, runs: int, provider: str, emit: Any) -> dict[str, Any]:
        seen.update(lock=lock_path, runs=runs, provider=provider)
        return {"benchmark": "canary", "runs": runs}

    monkeypatch.setattr(bench_restart, "bench_canary", canary)
    args = [a.replace("LOCK", str(lock)) for a in given]
    output = tmp_path / "bench.jsonl"
    command = [*args, "bench", "canary", "--runs", "3", "--provider", "kind", "--output", str(output)]
    assert cli.main(command) == 0
    assert seen == {"lock": lock if given else None, "runs": 3, "provider": "kind"}
    assert '"benchmark": "canary"' in output.read_text()


def test_the_cold_toolchain_bench_gets_the_lock(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[Path | None] = []

    def cold(lock_path: Path | None) -> dict[str, Any]:
        seen.append(lock_path)
        return {"benchmark": "toolchain-cold"}

    monkeypatch.setattr(bench, "bench_toolchain_cold", cold)
    assert cli.main(["bench", "toolchain-cold", "--output", str(tmp_path / "bench.jsonl")]) == 0
    assert seen == [None]


def test_every_bench_line_carries_the_machine_s_speed_then(tmp_path: Path) -> None:
    """Lines of different days are compared in the docs: each says how fast the machine was when written."""
    output = tmp_path / "bench.jsonl"
    bench.write_result({"benchmark": "kueue-perf", "wall_ms": 1.0}, output)
    bench.write_result({"benchmark": "kueue-perf", "wall_ms": 2.0}, output)
    lines = [json.loads(line) for line in output.read_text().splitlines()]
    assert [line["wall_ms"] for line in lines] == [1.0, 2.0]
    for line in lines:
        machine = line["machine"]
        assert machine["probe"] == PROBE and machine["cpus"] == os.cpu_count()
        assert machine["probe_seconds"] > 0 and machine["load_1m"] >= 0


def test_a_reader_that_goes_away_ends_kbc_quietly_with_sigpipe_s_status(tmp_path: Path) -> None:
    # `kbc docker status | head -1`: the command's output stops being read; no traceback follows.
    child = (
        "import sys\n"
        "from kbc.cli import commands\n"
        "def gone(args):\n"
        "    raise BrokenPipeError(32, 'Broken pipe')\n"
        "commands._cluster_list = gone\n"
        "sys.exit(commands.main(['cluster', 'list']))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", child],
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "KBC_CACHE_DIR": str(tmp_path)},
    )
    assert done.returncode == 141 and "Traceback" not in done.stderr, done.stderr
