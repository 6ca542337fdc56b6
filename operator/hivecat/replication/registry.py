"""The cluster registry of a catalog (clusters.json in the `<catalog>-clusters` ConfigMap): which
ClusterStorages it holds, and which are refused because they would claim another cluster's storage.

Pure: the handler reads the ConfigMap and lists the catalog's ClusterStorages; this module decides what the
document must say and why a ClusterStorage is not (or no longer) in it as it is now.

A refused ClusterStorage leaves the registry unchanged: its registered entry (if it had one) stays, so the
clients that mount clusters.json keep working, and its old filesystem stays claimed. That is also why an
entry registered unchanged wins a conflict over one that changed or is new: a spec edit can never take a
filesystem away from a cluster that already has it."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from hivecat import reasons
from hivecat.locations.prefix import InvalidLocation, parse_prefix, storage_prefix
from hivecat.specs.clusterstorage import ClusterStorageSpec, overlapping, same_location

__all__ = ["ClusterEntry", "RegistryDecision", "Rejection", "cluster_entry", "decide_registry",
           "parse_registry_document", "registry_document"]


@dataclass(frozen=True)
class ClusterEntry:
    name: str
    filesystem: str
    aliases: tuple[str, ...] = ()
    previous_filesystems: tuple[str, ...] = ()
    compute: Mapping[str, Any] = field(default_factory=dict)  # ComputeSpec.to_registry()

    def to_json(self) -> dict[str, Any]:
        return {"filesystem": self.filesystem, "aliases": list(self.aliases),
                "previousFilesystems": list(self.previous_filesystems), "compute": dict(self.compute)}

    @classmethod
    def from_json(cls, name: str, data: Mapping[str, Any]) -> ClusterEntry:
        """The entry `name` of a clusters.json; ValueError when it is not one hivecat could have written
        (every URI must be one the location engine accepts, so comparing entries never raises)."""
        if not isinstance(name, str) or not name or not isinstance(data, Mapping):
            raise ValueError(f"registry entry {name!r} is not an object under a name")
        filesystem = data.get("filesystem")
        aliases, previous = data.get("aliases", []), data.get("previousFilesystems", [])
        compute = data.get("compute", {})
        uris = [filesystem, *aliases] if isinstance(aliases, list) else None
        if uris is None or not isinstance(previous, list) or not isinstance(compute, Mapping):
            raise ValueError(f"registry entry {name!r} has fields of the wrong type")
        for uri in [*uris, *previous]:
            if not isinstance(uri, str):
                raise ValueError(f"registry entry {name!r} has a URI that is not a string")
            try:
                parse_prefix(uri)
            except InvalidLocation as exc:
                raise ValueError(f"registry entry {name!r}: {exc}") from exc
        if not all(isinstance(k, str) and isinstance(v, str) for k, v in compute.items()):
            raise ValueError(f"registry entry {name!r} has a compute that is not strings")
        return cls(name, str(filesystem), tuple(aliases), tuple(previous), dict(compute))


@dataclass(frozen=True)
class Rejection:
    reason: str  # DuplicateFilesystem | FilesystemOverlap | AliasIsFilesystem | CatalogNotFound
    message: str  # names the other ClusterStorage, says what to do


@dataclass(frozen=True)
class RegistryDecision:
    entries: dict[str, ClusterEntry]  # what clusters.json must hold, by ClusterStorage name
    rejected: dict[str, Rejection]  # ClusterStorages not (or no longer) taken as they are now


def cluster_entry(spec: ClusterStorageSpec, previous: Sequence[str]) -> ClusterEntry:
    """The entry a parsed ClusterStorage asks for; `previous`: specs.clusterstorage.previous_filesystems()."""
    return ClusterEntry(spec.name, spec.filesystem, tuple(spec.aliases), tuple(previous), spec.compute.to_registry())


def decide_registry(registered: Mapping[str, ClusterEntry], members: Sequence[ClusterEntry]) -> RegistryDecision:
    """What the registry must hold. `registered`: what the ConfigMap holds now. `members`: every live
    ClusterStorage of the catalog whose spec parsed (not being deleted), in creation order.

    Registered names that are no longer members are dropped. Members registered unchanged are taken first;
    then the others in order, each taken when it conflicts with nothing taken so far nor with the registered
    entry of another member not taken yet (that entry stays if that member is refused). A member freed by
    another's change is tried again, so the order of edits within one pass does not matter. The earlier
    member wins between two that want the same storage. A refused member keeps its registered entry."""
    unique: dict[str, ClusterEntry] = {}
    for member in members:
        unique.setdefault(member.name, member)
    entries = _Taken()
    rejected: dict[str, Rejection] = {}
    for name, member in unique.items():
        if registered.get(name) == member:
            clash = entries.first_conflict(member)
            if clash is None:
                entries.add(member)
            else:  # only a hand-edited document can conflict with itself: the earlier keeps its claim
                rejected[name] = clash
    pending = [m for m in unique.values() if m.name not in entries and m.name not in rejected]
    clashes: dict[str, Rejection] = {}
    progress = True
    while progress and pending:
        progress, waiting = False, []
        reserved = _Taken(registered[m.name] for m in pending if m.name in registered)
        for member in pending:
            clash = entries.first_conflict(member) or reserved.first_conflict(member, still=True)
            if clash is None:
                entries.add(member)
                reserved.remove(member.name)  # taken: its registered entry reserves nothing any more
                progress = True
            else:
                clashes[member.name] = clash
                waiting.append(member)
        pending = waiting
    for member in pending:
        rejected[member.name] = clashes[member.name]
        old = registered.get(member.name)
        if old is not None and entries.first_conflict(old) is None:
            entries.add(old)
    return RegistryDecision({name: entries.entries[name] for name in unique if name in entries},
                            {name: rejected[name] for name in unique if name in rejected})


class _Taken:
    """Entries taken so far, indexed by the storage each of their URIs is on (scheme family and host): a new
    entry is compared only with the entries that share a storage with it, in the order they were taken, so a
    decision over n ClusterStorages costs about n log n comparisons, not n²."""

    def __init__(self, entries: Iterable[ClusterEntry] = ()) -> None:
        self.entries: dict[str, ClusterEntry] = {}
        self._order: dict[str, int] = {}
        self._by_filesystem: dict[str, set[str]] = {}
        self._by_source: dict[str, set[str]] = {}
        for entry in entries:
            self.add(entry)

    def __contains__(self, name: object) -> bool:
        return name in self.entries

    def add(self, entry: ClusterEntry) -> None:
        self.entries[entry.name] = entry
        self._order[entry.name] = len(self._order)
        self._by_filesystem.setdefault(_storage(entry.filesystem), set()).add(entry.name)
        for _, uri in _sources(entry):
            self._by_source.setdefault(_storage(uri), set()).add(entry.name)

    def remove(self, name: str) -> None:
        self.entries.pop(name, None)

    def first_conflict(self, entry: ClusterEntry, still: bool = False) -> Rejection | None:
        """The first entry taken (in order) that `entry` cannot be registered beside, as a Rejection."""
        own = [_storage(entry.filesystem), *(_storage(uri) for _, uri in _sources(entry))]
        if ANY in own:  # not a URI: compared with every entry, as before it was indexed
            names = set(self.entries)
        else:
            names = {n for key in (*own, ANY) for n in self._by_filesystem.get(key, ())}
            names |= {n for key in (own[0], ANY) for n in self._by_source.get(key, ())}
        for name in sorted(names, key=self._order.__getitem__):
            other = self.entries.get(name)
            if other is not None and other.name != entry.name:
                clash = _conflict(entry, other, still)
                if clash is not None:
                    return clash
        return None


ANY = "*"  # the index key of a URI that does not parse: it may clash with anything


def _storage(uri: str) -> str:
    """The index key of `uri`: its scheme's family and host (a superset of what can overlap it)."""
    try:
        prefix = storage_prefix(uri)
    except InvalidLocation:
        return ANY
    host = prefix.authority.rsplit("@", 1)[-1]
    host = host.rsplit(":", 1)[0] if not host.endswith("]") else host
    return f"{prefix.scheme}://{host.lower()}"


def _conflict(entry: ClusterEntry, other: ClusterEntry, still: bool) -> Rejection | None:
    """Why `entry` cannot be registered beside `other`, or None. `still`: other is the registered entry of a
    ClusterStorage whose own new spec is not taken (yet)."""
    who = f"ClusterStorage {other.name}" + (" (as still registered)" if still else "")
    if same_location(entry.filesystem, other.filesystem):
        return Rejection(reasons.DUPLICATE_FILESYSTEM, f"filesystem {entry.filesystem} is already registered by {who}: "
                                               "two clusters cannot be the same storage; use another filesystem, "
                                               f"or add this URI as an alias of {other.name}")
    if overlapping(entry.filesystem, other.filesystem):
        return Rejection(reasons.FILESYSTEM_OVERLAP, f"filesystem {entry.filesystem} and {other.filesystem} of {who} "
                                             "overlap (one is under the other), so a location would belong to "
                                             "both clusters; make the filesystems disjoint")
    for what, uri in _sources(entry):
        if overlapping(uri, other.filesystem):
            return Rejection(reasons.ALIAS_IS_FILESYSTEM, f"{what} {uri} is, or overlaps, the filesystem "
                                                  f"{other.filesystem} of {who}: drift repair would move that "
                                                  "cluster's locations here; remove it")
    for what, uri in _sources(other):
        if overlapping(uri, entry.filesystem):
            return Rejection(reasons.ALIAS_IS_FILESYSTEM, f"filesystem {entry.filesystem} is, or overlaps, {what} {uri} "
                                                  f"of {who}, whose drift repair would move locations away from "
                                                  "it; use another filesystem or remove that alias first")
    return None


def _sources(entry: ClusterEntry) -> list[tuple[str, str]]:
    return [*(("alias", a) for a in entry.aliases), *(("previous filesystem", p) for p in entry.previous_filesystems)]


# --- clusters.json ------------------------------------------------------------------------------------------

def registry_document(entries: Mapping[str, ClusterEntry]) -> str:
    """clusters.json: name → entry, keys sorted, so an unchanged registry is byte-identical (no needless
    ConfigMap update, no rollout of the pods that mount it)."""
    document = {name: entry.to_json() for name, entry in entries.items()}
    return json.dumps(document, sort_keys=True, indent=2) + "\n"


def parse_registry_document(text: str | None) -> dict[str, ClusterEntry]:
    """The entries of a clusters.json; {} when it is missing or not JSON of an object. An entry hivecat could
    not have written (hand-edited) is left out: its ClusterStorage is then treated as new."""
    if not text:
        return {}
    try:
        document = json.loads(text)
    except ValueError:
        return {}
    if not isinstance(document, dict):
        return {}
    entries: dict[str, ClusterEntry] = {}
    for name, data in document.items():
        try:
            entries[name] = ClusterEntry.from_json(name, data)
        except ValueError:
            continue
    return entries

