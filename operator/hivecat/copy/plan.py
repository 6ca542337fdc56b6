"""The plan: which units to copy. A unit (an unpartitioned table or one partition) is copied and
committed as a whole: on the target it is either wholly present or absent."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hivecat.copy import documents
from hivecat.copy.errors import CopyInputError
from hivecat.copy.storage import Location, parse_uri


@dataclass(frozen=True)
class Unit:
    id: str
    source: Location
    target: Location
    expected_files: tuple[str, ...] = ()


@dataclass(frozen=True)
class Plan:
    units: tuple[Unit, ...]

    def to_dict(self) -> dict[str, Any]:
        units = []
        for unit in self.units:
            entry: dict[str, Any] = {"id": unit.id, "source": unit.source.uri, "target": unit.target.uri}
            if unit.expected_files:
                entry["expected_files"] = list(unit.expected_files)
            units.append(entry)
        return {"version": documents.VERSION, "units": units}


def plan_from_document(document: dict[str, Any], where: str = "") -> Plan:
    documents.validate(documents.PLAN, document, where)
    units = tuple(Unit(u["id"], parse_uri(u["source"]), parse_uri(u["target"]), tuple(u.get("expected_files", ())))
                  for u in document["units"])
    check_overlaps(units)
    return Plan(units)


def load_plan(path: Path) -> Plan:
    try:
        text = path.read_bytes()
    except OSError as exc:
        raise CopyInputError(f"cannot read plan {path}: {exc.strerror}") from None
    return plan_from_document(documents.parse(documents.PLAN, text, str(path)), str(path))


def single_unit_plan(source_uri: str, target_uri: str) -> Plan:
    """`--from/--to`: the whole source directory is one unit."""
    source = parse_uri(source_uri)
    units = (Unit(source.uri, source, parse_uri(target_uri)),)
    check_overlaps(units)
    return Plan(units)


def check_overlaps(units: tuple[Unit, ...]) -> None:
    """Never write under a source: no target inside a source, no source inside a target, no unit
    inside another unit's target, no id or target twice."""
    ids = [u.id for u in units]
    if len(set(ids)) != len(ids):
        raise CopyInputError(f"unit ids must be unique: {sorted({i for i in ids if ids.count(i) > 1})}")
    for unit in units:
        for other in units:
            if unit.target.contains(other.source):
                raise CopyInputError(f"source {other.source.uri} is inside target {unit.target.uri}")
            if other.source.contains(unit.target):
                raise CopyInputError(f"target {unit.target.uri} is inside source {other.source.uri}")
            if other is not unit and unit.target.contains(other.target):
                raise CopyInputError(f"target {other.target.uri} of unit {other.id!r} is inside target "
                                     f"{unit.target.uri} of unit {unit.id!r}")
