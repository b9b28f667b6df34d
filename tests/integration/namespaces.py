"""The namespaces of a cluster before and after a command that must leave them as they were.

An earlier test's namespace may finish terminating meanwhile (its deletion began before): that is not the
command's doing. What was live before must still be live, and nothing may have appeared.
"""

from __future__ import annotations

from dataclasses import dataclass

from kbc import apis
from kbc.kube import Kube


@dataclass(frozen=True)
class Namespaces:
    live: frozenset[str]
    terminating: frozenset[str]
    """Deleted before the look, still finishing (a deletionTimestamp)."""

    @classmethod
    def of(cls, kube: Kube) -> Namespaces:
        live: set[str] = set()
        terminating: set[str] = set()
        for ns in kube.list(apis.NAMESPACE):
            deleting = ns["metadata"].get("deletionTimestamp")
            (terminating if deleting else live).add(ns["metadata"]["name"])
        return cls(frozenset(live), frozenset(terminating))


def assert_namespaces_as_before(kube: Kube, before: Namespaces, what: str) -> None:
    """No namespace appeared since *before*, and none live then is gone or being deleted (*what* did it)."""
    after = Namespaces.of(kube)
    made = (after.live | after.terminating) - before.live - before.terminating
    gone = before.live - after.live
    assert not made, f"{what} made namespaces {sorted(made)}"
    assert not gone, f"{what} deleted namespaces {sorted(gone)} that were there before it"


__all__ = ["Namespaces", "assert_namespaces_as_before"]
