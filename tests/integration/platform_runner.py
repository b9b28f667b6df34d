"""Running ``kbc verify --platform`` in a process of its own, on copies of a platform; reading its report."""

from __future__ import annotations

import json
import os
import secrets
import shutil
import subprocess
from pathlib import Path
from typing import Any

import yaml

from tests.integration.commands import KBC, REPO, run_bounded

EXAMPLE = REPO / "manifests" / "platforms" / "example"


def copy_example(tmp_path: Path, prefix: str) -> Path:
    """A copy of the example platform under a name no other run uses (it names the twin)."""
    target = tmp_path / f"{prefix}-{secrets.token_hex(2)}"
    shutil.copytree(EXAMPLE, target)
    return target


def verify(
    platform: Path, report: Path, *args: str, timeout: float = 900
) -> subprocess.CompletedProcess[str]:
    # The repository on the path: a sabotage plugin (-p tests.sabotage.NAME) is importable.
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])),
    }
    return run_bounded(
        [
            *KBC,
            "verify",
            "--platform",
            str(platform),
            "--report-dir",
            str(report),
            *args,
            "-p",
            "no:cacheprovider",
        ],
        timeout=timeout,
        env=env,
    )


def outcomes(report: Path) -> dict[str, dict[str, Any]]:
    data = json.loads((report / "summary.json").read_text())
    return {p["id"]: p for p in data["platform"]["promises"]}


def edit(path: Path, change: Any) -> None:
    """Rewrite the YAML documents of *path* with *change* (document -> None)."""
    docs = list(yaml.safe_load_all(path.read_text()))
    for doc in docs:
        change(doc)
    path.write_text(yaml.safe_dump_all(docs, sort_keys=False))
