"""Storage claims across namespaces: a ClusterStorage claims its filesystem for its namespace, and storage one
namespace claimed cannot be registered by another unless the policy lets both share it. (Within one catalog,
the registry refuses overlapping clusters itself: replication/registry.py.)

Who keeps a contested filesystem, decided from what the API server holds, so every pass decides alike:
- a claim already registered (its status.filesystem is that filesystem) wins over one that is not;
- of two claims not registered yet, the older ClusterStorage wins (creation time, then namespace and name);
- two claims both registered (they overlapped before hivecat checked claims, e.g. at an upgrade) are both in
  conflict: hivecat writes to neither, deletes nothing, and says so, until the administrator's policy names
  one owner (grants the storage to one of the namespaces only, or marks it shared).

Pure; the handler gathers the claims from its index of every watched namespace's ClusterStorages.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

from hivecat import reasons
from hivecat.locations.prefix import InvalidLocation, holds, storage_prefix
from hivecat.reconcile.policy import Violation


@dataclass(frozen=True)
class Claim:
    namespace: str
    name: str             # the ClusterStorage
    filesystem: str       # canonical spec.filesystem
    registered: bool      # status.filesystem names this filesystem: the registry took it before
    created: str          # metadata.creationTimestamp (RFC 3339 sorts as text)

    def order(self) -> tuple[str, str, str]:
        return self.created, self.namespace, self.name


def claim_conflict(mine: Claim, others: Iterable[Claim], shared: Callable[[Claim], bool]) -> Violation | None:
    """Why `mine` may not use its filesystem, or None. `others`: every other claim the operator sees (any
    namespace; those of mine's namespace are ignored). `shared(claim)`: whether the policy of the claim's
    namespace grants its filesystem as shared storage."""
    rivals = []
    for other in others:
        if other.namespace == mine.namespace or not _overlap(mine.filesystem, other.filesystem):
            continue
        if shared(mine) and shared(other):
            continue
        rivals.append(other)
    # The messages land in this namespace's status: they never name the other namespace, its resources or its
    # paths (the cluster administrator finds them with `kubectl get clusterstorages -A`).
    for other in sorted(rivals, key=Claim.order):
        if mine.registered and other.registered:
            return Violation(reasons.STORAGE_CLAIM_CONFLICT,
                             f"filesystem {mine.filesystem} overlaps storage that a ClusterStorage of another namespace "
                             "registered as well: hivecat writes to neither and deletes nothing until the cluster "
                             "administrator's CatalogPolicy grants it to one namespace only (or marks it shared)")
        if other.registered or (not mine.registered and other.order() < mine.order()):
            return Violation(reasons.STORAGE_CLAIM_CONFLICT,
                             f"filesystem {mine.filesystem} overlaps storage that a ClusterStorage of another namespace "
                             "claimed first; storage one team registered cannot be registered by another unless the "
                             "cluster administrator's CatalogPolicy grants it as shared")
    return None


def _overlap(a: str, b: str) -> bool:
    """One storage is the other or under it, whichever scheme of its family each is spelt with."""
    try:
        pa, pb = storage_prefix(a), storage_prefix(b)
    except InvalidLocation:
        return False
    return holds(pa, pb) or holds(pb, pa)
