"""The plan: which units to copy. A unit (an unpartitioned table or one partition) is copied and
committed as a whole: on the target it is either wholly present or absent."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hivecat.copy import documents
from hivecat.copy.errors import CopyInputError
from hivecat.copy.owner import Owner
from hivecat.copy.storage import Location, parse_uri


@dataclass(frozen=True, slots=True)
class Unit:
    id: str
    source: Location
    target: Location
    expected_files: tuple[str, ...] = ()
    adopt: str | None = None  # the fingerprint of an ownerless copy in the target to take over (owner.py)


@dataclass(frozen=True)
class CopyPlan:
    units: tuple[Unit, ...]
    owner: Owner | None = None  # the TableReplica the run copies for; None: a run by hand

    def to_dict(self) -> dict[str, Any]:
        units = []
        for unit in self.units:
            entry: dict[str, Any] = {"id": unit.id, "source": unit.source.uri, "target": unit.target.uri}
            if unit.expected_files:
                entry["expected_files"] = list(unit.expected_files)
            if unit.adopt is not None:
                entry["adopt"] = unit.adopt
            units.append(entry)
        document: dict[str, Any] = {"version": documents.VERSION, "units": units}
        if self.owner is not None:
            document["owner"] = self.owner.to_dict()
        return document


def plan_from_document(document: dict[str, Any], where: str = "") -> CopyPlan:
    documents.validate(documents.PLAN, document, where)
    return _plan_of_valid(document)


def plan_from_bytes(data: str | bytes, where: str = "") -> CopyPlan:
    """The plan in a document's text: parsed and validated once (validation is most of the time a large plan
    takes to load)."""
    return _plan_of_valid(documents.parse(documents.PLAN, data, where))


def _plan_of_valid(document: dict[str, Any]) -> CopyPlan:
    units = tuple(Unit(u["id"], parse_uri(u["source"], f"unit {u['id']!r}: source"),
                       parse_uri(u["target"], f"unit {u['id']!r}: target"), tuple(u.get("expected_files", ())),
                       u.get("adopt"))
                  for u in document["units"])
    check_overlaps(units)
    owner = document.get("owner")
    return CopyPlan(units, Owner.from_dict(owner) if owner is not None else None)


def load_plan(path: Path) -> CopyPlan:
    try:
        text = path.read_bytes()
    except OSError as exc:
        raise CopyInputError(f"cannot read plan {path}: {exc.strerror}") from None
    return plan_from_bytes(text, str(path))


def single_unit_plan(source_uri: str, target_uri: str, roles: tuple[str, str] = ("source", "target")) -> CopyPlan:
    """`--from/--to`: the whole source directory is one unit. `roles` name the two URIs in refusals."""
    source = parse_uri(source_uri, roles[0])
    units = (Unit(source.uri, source, parse_uri(target_uri, roles[1])),)
    check_overlaps(units)
    return CopyPlan(units)


def check_overlaps(units: Sequence[Unit]) -> None:
    """Never write under a source: no target inside (or at) a source, no source inside a target, no unit
    inside another unit's target, no id or target twice.

    Paths are compared as written (normalised lexically, links not resolved). A link cannot hide an overlap: a
    path that is or passes through a link is refused whenever it is used (local_paths.py), so a target named
    through a link to its source fails its unit before anything is written.

    O(n log n), for plans of a million partitions: one sort of every source and target, then one pass
    (`_overlapping_targets`). Of several overlaps, the one refused is the one a pair-by-pair check
    (for each unit, for each other unit in plan order) would meet first, in the same words."""
    _check_ids(units)
    for unit in units:
        if unit.source == unit.target:
            raise CopyInputError(f"source and target are the same location: {unit.source.uri}")
    overlapping = _overlapping_targets(units)
    if overlapping:
        raise _first_refusal(units, min(overlapping))


def _check_ids(units: Sequence[Unit]) -> None:
    counts = Counter(u.id for u in units)
    if len(counts) != len(units):
        raise CopyInputError(f"unit ids must be unique: {sorted(i for i, n in counts.items() if n > 1)}")


def _first_refusal(units: Sequence[Unit], index: int) -> CopyInputError:
    """The refusal for the unit at `index` (its target overlaps): the first other unit it meets."""
    unit = units[index]
    for other in units:
        if unit.target.contains(other.source):
            return CopyInputError(f"source {other.source.uri} is inside target {unit.target.uri}")
        if other.source.contains(unit.target):
            return CopyInputError(f"target {unit.target.uri} is inside source {other.source.uri}")
        if other is not unit and unit.target.contains(other.target):
            return CopyInputError(f"target {other.target.uri} of unit {other.id!r} is inside target "
                                  f"{unit.target.uri} of unit {unit.id!r}")
    raise AssertionError(f"unit {unit.id!r} was found to overlap, but overlaps nothing")


def _sort_key(location: Location) -> str:
    """Keys in whose order every location is followed at once by those it contains (Location.contains):
    "/" becomes the lowest character, so "a/x" sorts before "a-b". Filesystem first, so that only
    locations of one filesystem meet. Unambiguous: parse_uri lets no control character through."""
    return location.scheme + "\x01" + location.authority + "\x01" + location.path.replace("/", "\x00")


def _overlapping_targets(units: Sequence[Unit]) -> set[int]:
    """Indexes of the units whose target contains or is contained by a source, or contains another
    target: the units a pair-by-pair check would refuse. Paths as parse_uri leaves them (normalised).

    Entry 2i is unit i's source, 2i+1 its target. In key order, the entries that contain an entry are
    exactly those still open (a chain, each inside the one before) when it comes."""
    keys = [key for unit in units for key in (_sort_key(unit.source), _sort_key(unit.target))]
    overlapping: set[int] = set()
    chain: list[tuple[str, str, int]] = []  # the open entries: key, prefix of the keys inside, entry
    open_targets: list[int] = []            # the units of the open targets
    open_sources = 0
    for entry in sorted(range(len(keys)), key=keys.__getitem__):
        key = keys[entry]
        while chain and key != chain[-1][0] and not key.startswith(chain[-1][1]):
            if chain.pop()[2] & 1:
                open_targets.pop()
            else:
                open_sources -= 1
        is_target = entry & 1
        if chain:
            overlapping.update(open_targets)  # each open target contains this entry
            if is_target and (open_sources or key == chain[-1][0]):  # inside a source; or equal to an
                overlapping.add(entry >> 1)                          # entry, so containing it too
        chain.append((key, key.rstrip("\x00") + "\x00", entry))
        if is_target:
            open_targets.append(entry >> 1)
        else:
            open_sources += 1
    return overlapping
