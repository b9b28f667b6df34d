"""``kbc lock refresh`` / ``check`` logic with a stand-in resolver, and the mirror mapping (no network).

The registries themselves are met for real in tests/integration (a registry built from
the pinned module, on 127.0.0.1).
"""

from __future__ import annotations

import hashlib
import shutil
from collections.abc import Sequence
from pathlib import Path

import pytest

from kbc.errors import RegistryError
from kbc.supply.digests import DigestField, digest_fields
from kbc.supply.lock import default_lock_path, load_lock
from kbc.supply.oci import Mirror, mirrored, parse_mirrors, split_repository
from kbc.supply.refresh import check, refresh


def served(field: DigestField, mirrors: Sequence[Mirror]) -> str:
    """A registry stand-in: a digest derived from what the field pins."""
    return "sha256:" + hashlib.sha256(f"{field.reference}:{field.version}".encode()).hexdigest()


@pytest.fixture
def lock(tmp_path: Path) -> Path:
    path = tmp_path / "charts-lock.yaml"
    shutil.copy(default_lock_path(), path)
    return path


def test_refresh_writes_every_digest_and_no_version(lock: Path) -> None:
    before = load_lock(lock)
    found = refresh(lock, [], served)
    assert found and all(f.error is None for f in found)
    after = load_lock(lock)
    assert after.components["kueue"].chart.digest == served(digest_fields(lock.read_text())[1], [])
    for name, component in after.components.items():
        assert component.chart.digest.startswith("sha256:")
        assert all(image.digest.startswith("sha256:") for image in component.images)
        assert component.app_version == before.components[name].app_version
        assert component.chart.version == before.components[name].chart.version
    assert all(f.ok for f in check(lock, [], served)), "a refreshed lock passes check"


def test_refresh_writes_nothing_when_one_digest_cannot_be_resolved(lock: Path) -> None:
    text = lock.read_text()

    def one_fails(field: DigestField, mirrors: Sequence[Mirror]) -> str:
        if field.path == "testImages.cuda.digest":
            raise RegistryError("https://registry.example/v2/x", "answered 500")
        return served(field, mirrors)

    found = refresh(lock, [], one_fails)
    assert [f.field.path for f in found if f.error] == ["testImages.cuda.digest"]
    assert lock.read_text() == text


def test_check_names_a_missing_and_a_stale_digest(lock: Path) -> None:
    refresh(lock, [], served)
    text = lock.read_text()
    stale = served(digest_fields(text)[1], [])
    lock.write_text(
        text.replace(stale, "sha256:" + "0" * 64, 1).replace(served(digest_fields(text)[0], []), "", 1)
    )
    problems = [f.describe() for f in check(lock, [], served) if not f.ok]
    assert len(problems) == 2, problems
    assert "no digest recorded; the registry serves sha256:" in problems[0]
    assert f"the lock pins sha256:{'0' * 64}, the registry serves {stale}" in problems[1]


def test_mirrors_map_the_longest_matching_prefix_only() -> None:
    mirrors = parse_mirrors(["registry.k8s.io=127.0.0.1:5000/k8s", "registry.k8s.io/kueue=127.0.0.1:5000/kq"])
    assert mirrored("registry.k8s.io/kueue/kueue", mirrors) == "127.0.0.1:5000/kq/kueue"
    assert mirrored("registry.k8s.io/jobset/jobset", mirrors) == "127.0.0.1:5000/k8s/jobset/jobset"
    assert mirrored("registry.k8s.io.evil/x", mirrors) == "registry.k8s.io.evil/x"
    assert (
        mirrored("oci://registry.k8s.io/kueue/charts/kueue", mirrors)
        == "oci://127.0.0.1:5000/kq/charts/kueue"
    )
    assert mirrored("docker.io/volcanosh/vc-scheduler", mirrors) == "docker.io/volcanosh/vc-scheduler"
    with pytest.raises(ValueError, match="expected FROM=TO"):
        parse_mirrors(["registry.k8s.io"])


def test_references_split_into_host_and_path_as_registries_expect() -> None:
    assert split_repository("oci://registry.k8s.io/kueue/charts/kueue") == (
        "registry.k8s.io",
        "kueue/charts/kueue",
    )
    assert split_repository("docker.io/nvidia/cuda") == ("registry-1.docker.io", "nvidia/cuda")
    assert split_repository("busybox") == ("registry-1.docker.io", "library/busybox")
    assert split_repository("127.0.0.1:5000/k8s/kueue") == ("127.0.0.1:5000", "k8s/kueue")
