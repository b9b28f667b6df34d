"""Finding and writing the lock's digests in place (what ``kbc lock refresh`` writes)."""

from __future__ import annotations

from pathlib import Path

import pytest

from kbc.errors import LockFileError
from kbc.supply.digests import digest_fields, with_digests
from kbc.supply.lock import default_lock_path, parse_lock

DIGEST = "sha256:" + "ab" * 32


def test_every_chart_and_image_digest_of_the_lock_is_found_with_what_it_pins() -> None:
    text = default_lock_path().read_text()
    lock = parse_lock(text, default_lock_path())
    fields = {f.path: f for f in digest_fields(text)}
    expected = {
        "kubernetes.kindNodeImage.digest",
        *(f"testImages.{name}.digest" for name in lock.test_images),
    }
    for name, component in lock.components.items():
        expected.add(f"components.{name}.chart.digest")
        expected |= {f"components.{name}.images[{i}].digest" for i in range(len(component.images))}
    assert set(fields) == expected
    kueue = lock.components["kueue"]
    chart = fields["components.kueue.chart.digest"]
    assert (chart.kind, chart.reference, chart.version) == (
        "chart",
        kueue.chart.reference,
        kueue.chart.version,
    )
    image = fields["components.kueue.images[0].digest"]
    assert (image.kind, image.reference, image.version) == (
        "image",
        kueue.images[0].repository,
        kueue.images[0].tag,
    )


def test_writing_digests_changes_those_values_and_nothing_else() -> None:
    text = default_lock_path().read_text()
    paths = ["components.volcano.images[1].digest", "components.jobset.chart.digest"]
    written = with_digests(text, dict.fromkeys(paths, DIGEST), default_lock_path())
    lock = parse_lock(written, Path("charts-lock.yaml"))
    assert lock.components["volcano"].images[1].digest == DIGEST
    assert lock.components["jobset"].chart.digest == DIGEST
    assert lock.components["volcano"].images[0].digest == ""
    # Every line but the two digests' is byte for byte the same, comments included.
    changed = [(a, b) for a, b in zip(text.splitlines(), written.splitlines(), strict=True) if a != b]
    assert [b.strip() for _, b in changed] == [f'digest: "{DIGEST}"'] * 2


def test_an_unknown_path_or_a_malformed_digest_is_refused_by_name() -> None:
    text = default_lock_path().read_text()
    with pytest.raises(LockFileError, match=r"components\.kueue\.chart\.digets"):
        with_digests(text, {"components.kueue.chart.digets": DIGEST}, default_lock_path())
    with pytest.raises(LockFileError, match="sha256:<64 hex>"):
        with_digests(text, {"components.kueue.chart.digest": "sha256:abc"}, default_lock_path())
