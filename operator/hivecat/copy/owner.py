"""Whose a copy is, and whether a run may write into it.

A copy made for a TableReplica records its owner (the resource's namespace, name and metadata.uid, and its
catalog) in the unit manifest; the plan names the owner of the run. A run writes, overwrites (`--delete`
included) or commits into a target unit only when it is absent (no manifest, no files), when its manifest
names the run's owner (same uid and namespace), or when its manifest names no owner and either the run has
none either (`hivecat distcp` run by hand, as before owners) or the unit's `adopt` is that copy's fingerprint
(the copy the TableReplica's bookkeeping recorded before owners were written: the commit then records the
owner). A run without an owner also writes into a directory without a manifest, as it always has; a run with
one does not. Anything else fails the unit, named, and leaves it byte for byte as it was.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any


@dataclass(frozen=True)
class Owner:
    namespace: str
    replica: str   # the TableReplica's name
    uid: str       # its metadata.uid: a resource deleted and made again under the same name is another owner
    catalog: str

    def to_dict(self) -> dict[str, str]:
        return asdict(self)

    @classmethod
    def from_dict(cls, document: dict[str, Any]) -> Owner:
        return cls(document["namespace"], document["replica"], document["uid"], document["catalog"])

    def same(self, other: Owner | None) -> bool:
        return other is not None and (other.uid, other.namespace) == (self.uid, self.namespace)

    def __str__(self) -> str:
        return f"TableReplica {self.namespace}/{self.replica} (uid {self.uid})"


@dataclass(frozen=True)
class Ownership:
    refusal: str | None = None  # why the run may not write the unit; None when it may
    adopting: bool = False      # an ownerless copy the run takes over: its commit records the owner


def same_owner(found: Owner | None, wanted: Owner | None) -> bool:
    """Equal owners; two absent owners are the same (no owner: the CLI's copies)."""
    return found is None if wanted is None else wanted.same(found)


def owner_seen_by(found: Owner, viewer: Owner | None) -> str:
    """How a refusal names another owner to the owner of a run: a TableReplica of another namespace stays
    unnamed (the refusal lands in the viewer's status, which the viewer's team reads); a run without an owner
    (the CLI, an administrator) is told everything."""
    if viewer is None or viewer.namespace == found.namespace:
        return str(found)
    return "a TableReplica of another namespace"


def foreign_files(target_uri: str, files: int) -> str:
    return (f"{target_uri} holds {files} files without hivecat's manifest: not a copy hivecat made, so it is "
            "left alone")


def ownership(target_uri: str, run_owner: Owner | None, has_manifest: bool, found: Owner | None,
              found_fingerprint: Callable[[], str], files: int, adopt: str | None) -> Ownership:
    """May a run of `run_owner` write the target unit, whose manifest (if `has_manifest`) names `found` and has
    the fingerprint `found_fingerprint()` (computed only when an adoption asks: it reads every entry), and which
    holds `files` files?"""
    if not has_manifest:
        if files and run_owner is not None:
            return Ownership(foreign_files(target_uri, files))
        return Ownership()
    if found is not None:
        if run_owner is not None and run_owner.same(found):
            return Ownership()
        return Ownership(f"{target_uri}: owned by {owner_seen_by(found, run_owner)}; not overwritten")
    if run_owner is None:
        return Ownership()
    if adopt is not None and adopt == found_fingerprint():
        return Ownership(adopting=True)
    return Ownership(f"{target_uri}: made without an owner and not named by this TableReplica's bookkeeping; "
                     "not overwritten")
