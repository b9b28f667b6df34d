"""Lock files for tests that try one chart bump: the pinned lock with one component at another release, as a
user's ``--upgrade-from`` lock that differs in one component."""

from __future__ import annotations

from pathlib import Path

from kbc.supply.pins import ChartsLock


def lock_with(lock: ChartsLock, directory: Path, component: str, version: str) -> Path:
    """A copy of *lock* in *directory* whose *component* is at *version* (chart, images and app version: every
    place its block names the pinned version), its comments and the other components as they are."""
    text = lock.path.read_text()
    pinned = lock.components[component].app_version.removeprefix("v")
    start = text.index(f"\n  {component}:\n")
    end = text.find("\n  # ", start)
    end = len(text) if end < 0 else end
    block = text[start:end]
    assert pinned in block, f"components.{component} of {lock.path} does not name {pinned}"
    path = directory / "charts-lock.yaml"
    path.write_text(text[:start] + block.replace(pinned, version.removeprefix("v")) + text[end:])
    return path


__all__ = ["lock_with"]
