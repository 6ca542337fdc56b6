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

import bisect
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

from hivecat import reasons
from hivecat.locations.prefix import InvalidLocation, LocationPrefix, holds, storage_prefix
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


@dataclass(frozen=True)
class KnownClaims:
    """Every claim, found by ClusterStorage (namespace, name) and by storage prefix: a question looks up the
    claims at its own path, at each path above it and in the sorted range below it (O(depth + log n + found)),
    never every claim -- one bucket may hold every team's warehouse."""

    by_name: Mapping[tuple[str, str], Claim]
    at: Mapping[tuple[str, str, str], tuple[Claim, ...]]          # (family, authority, path) → claims
    below: Mapping[tuple[str, str], tuple[tuple[str, ...], tuple[Claim, ...]]]  # sorted paths, their claims

    @classmethod
    def of(cls, claims: Iterable[Claim]) -> KnownClaims:
        by_name: dict[tuple[str, str], Claim] = {}
        at: dict[tuple[str, str, str], list[Claim]] = {}
        for claim in claims:
            by_name[claim.namespace, claim.name] = claim
            prefix = _prefix(claim.filesystem)
            if prefix is not None:
                at.setdefault((prefix.scheme, prefix.authority, prefix.path), []).append(claim)
        storages: dict[tuple[str, str], list[tuple[str, Claim]]] = {}
        for (family, authority, path), found in sorted(at.items(), key=lambda item: item[0]):
            storages.setdefault((family, authority), []).extend((path, claim) for claim in found)
        below = {key: (tuple(p for p, _ in entries), tuple(c for _, c in entries)) for key, entries in storages.items()}
        return cls(by_name, {key: tuple(found) for key, found in at.items()}, below)

    def near(self, filesystem: str) -> list[Claim]:
        """The claims whose storage is `filesystem`'s, above it or below it: exactly those that overlap it."""
        prefix = _prefix(filesystem)
        if prefix is None:
            return []
        storage = (prefix.scheme, prefix.authority)
        path = prefix.path
        found: list[Claim] = []
        for end in [i for i, c in enumerate(path) if c == "/"] + [len(path)]:  # "" (the root), /a, /a/b, ...
            found.extend(self.at.get((*storage, path[:end]), ()))
        paths, claims = self.below.get(storage, ((), ()))
        # "0" follows "/" in code point order: [path + "/", path + "0") holds exactly the paths below
        found.extend(claims[bisect.bisect_left(paths, path + "/"):bisect.bisect_left(paths, path + "0")])
        return found


def _prefix(filesystem: str) -> LocationPrefix | None:
    try:
        return storage_prefix(filesystem)
    except InvalidLocation:
        return None  # a filesystem that does not parse overlaps nothing


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
