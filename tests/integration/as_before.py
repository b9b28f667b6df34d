"""The objects of one kind in a cluster before and after a command that must leave them as they were.

An earlier test's namespace or ClusterQueue may finish terminating meanwhile (its deletion began before,
and a finalizer held it): that is not the command's doing. What was live before must still be live, and
nothing of the kind may have appeared.
"""

from __future__ import annotations

from dataclasses import dataclass

from kbc import apis
from kbc.kube import Kube


@dataclass(frozen=True)
class Names:
    kind: apis.Kind
    live: frozenset[str]
    terminating: frozenset[str]
    """Deleted before the look, still finishing (a deletionTimestamp)."""

    @classmethod
    def of(cls, kube: Kube, kind: apis.Kind) -> Names:
        """The cluster-scoped objects of *kind* now."""
        live: set[str] = set()
        terminating: set[str] = set()
        for obj in kube.list(kind):
            deleting = obj["metadata"].get("deletionTimestamp")
            (terminating if deleting else live).add(obj["metadata"]["name"])
        return cls(kind, frozenset(live), frozenset(terminating))


def assert_as_before(kube: Kube, before: Names, what: str) -> None:
    """No object of *before*'s kind appeared since, and none live then is gone or being deleted (*what* did
    it)."""
    after = Names.of(kube, before.kind)
    made = (after.live | after.terminating) - before.live - before.terminating
    gone = before.live - after.live
    kind = before.kind.kind
    assert not made, f"{what} made {kind} objects {sorted(made)}"
    assert not gone, f"{what} deleted {kind} objects {sorted(gone)} that were there before it"


__all__ = ["Names", "assert_as_before"]
