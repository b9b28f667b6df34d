"""Digests pinned by first use, and the recorded ones verified before a cluster is made for them."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from kbc.cluster.charts.first_use import pin_first_use, verify_recorded, with_digests
from kbc.errors import DigestMismatchError
from kbc.supply.digests import DigestField
from kbc.supply.lock import load_lock
from kbc.supply.oci import Mirror
from kbc.supply.pins import ChartsLock

SERVED = "sha256:" + "a" * 64
OTHER = "sha256:" + "b" * 64


class Registry:
    """A resolver that serves *SERVED* for every field and remembers what it was asked."""

    def __init__(self, served: dict[str, str] | None = None) -> None:
        self.asked: list[str] = []
        self.served = served or {}

    def __call__(self, field: DigestField, mirrors: Sequence[Mirror]) -> str:
        self.asked.append(field.path)
        return self.served.get(field.path, SERVED)


def pinned(lock: ChartsLock, name: str, digest: str) -> ChartsLock:
    """*lock* with every digest of component *name* set to *digest*."""
    component = lock.components[name]
    fields = {f"components.{name}.chart.digest": digest}
    fields |= {f"components.{name}.images[{i}].digest": digest for i in range(len(component.images))}
    return with_digests(lock, name, fields)


def unpinned() -> ChartsLock:
    """The shipped lock with no digest recorded (it ships none; this does not rely on it)."""
    lock = load_lock()
    for name in lock.components:
        lock = pinned(lock, name, "")
    return lock


def test_recorded_digests_the_registry_still_serves_pass_and_empty_ones_are_not_asked() -> None:
    lock = pinned(unpinned(), "kueue", SERVED)
    registry = Registry()
    verify_recorded(lock, ["kueue", "jobset"], (), registry)
    kueue = lock.components["kueue"]
    assert registry.asked == ["components.kueue.chart.digest"] + [
        f"components.kueue.images[{i}].digest" for i in range(len(kueue.images))
    ]


@pytest.mark.parametrize("field", ["chart.digest", "images[0].digest"])
def test_a_recorded_digest_served_otherwise_fails_closed_naming_the_field_before_anything_is_made(
    field: str,
) -> None:
    lock = pinned(unpinned(), "kueue", SERVED)
    path = f"components.kueue.{field}"
    with pytest.raises(DigestMismatchError) as raised:
        verify_recorded(lock, ["kueue"], (), Registry({path: OTHER}))
    message = str(raised.value)
    assert raised.value.component == "kueue"
    assert f"has manifest digest {OTHER}, but charts-lock.yaml pins {SERVED}" in message
    assert "nothing was installed and no cluster was made" in message
    assert f"run kbc lock refresh and review {path}" in message


def test_an_http_charts_digest_is_its_archive_sha256() -> None:
    lock = pinned(unpinned(), "volcano", SERVED)
    assert not lock.components["volcano"].chart.reference.startswith("oci://")
    with pytest.raises(DigestMismatchError, match=f"has archive sha256 {OTHER}"):
        verify_recorded(lock, ["volcano"], (), Registry({"components.volcano.chart.digest": OTHER}))


def test_first_use_asks_only_the_empty_digests_and_pins_what_is_served() -> None:
    lock = pinned(unpinned(), "kueue", OTHER)
    registry = Registry()
    pinned_lock, pins = pin_first_use(lock, ["kueue", "jobset"], (), registry)
    assert all(path.startswith("components.jobset.") for path in registry.asked)
    assert {p.field for p in pins} == set(registry.asked)
    assert pinned_lock.components["jobset"].chart.digest == SERVED
    assert pinned_lock.components["kueue"].chart.digest == OTHER
