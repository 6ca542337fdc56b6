"""Objects of API catalogs (Glue, Thrift) as the relocation driver sees them: an identity, and the
location-valued places ("slots") it holds, read and written through paths into the backend's own objects
(boto3 dicts or Thrift structs alike), so both backends share one way to find and change a location.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from hivecat.catalog.model import ObjectKind

DATABASE, TABLE, PARTITION, FUNCTION = "database", "table", "partition", "function"


@dataclass(frozen=True)
class ObjectRef:
    """Which object: a database, a table, a partition (by values) or a function (by name)."""

    type: str
    database: str
    name: str = ""                   # table or function name
    values: tuple[str, ...] = ()     # partition values

    def to_json(self) -> str:
        return json.dumps({"type": self.type, "database": self.database, "name": self.name,
                           "values": list(self.values)}, sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> ObjectRef:
        data = json.loads(text)
        return cls(data["type"], data["database"], data["name"], tuple(data["values"]))

    @property
    def table(self) -> str | None:
        """db.table this object belongs to (for "tables touched"), None for databases and functions."""
        return f"{self.database}.{self.name}" if self.type in (TABLE, PARTITION) else None


@dataclass(frozen=True)
class Slot:
    kind: ObjectKind
    key: str = ""   # parameter key, skewed value (JSON for Thrift's list keys), resource index; '' otherwise


@dataclass(frozen=True)
class Place:
    """Where an object keeps one kind of location: a string, a map of them, or a list of records holding one."""

    kind: ObjectKind
    path: tuple[str, ...]      # from the object to the value (scalar) or to the container (map, list)
    form: str = "scalar"       # scalar | map | list
    item: str = ""             # list: the field of each record that holds the location


def _get(obj: Any, name: str) -> Any:
    if obj is None:
        return None
    return obj.get(name) if isinstance(obj, Mapping) else getattr(obj, name, None)


def _set(obj: Any, name: str, value: Any) -> None:
    if isinstance(obj, dict):
        obj[name] = value
    else:
        setattr(obj, name, value)


def _follow(obj: Any, path: tuple[str, ...]) -> Any:
    for name in path:
        obj = _get(obj, name)
    return obj


def _map_key(key: Any) -> str:
    return key if isinstance(key, str) else json.dumps(list(key))


def read_slots(places: tuple[Place, ...], obj: Any) -> dict[Slot, str]:
    """Every location-valued place the object holds, by slot (non-strings are not locations)."""
    slots: dict[Slot, str] = {}
    for place in places:
        if place.form == "scalar":
            value = _follow(obj, place.path)
            if isinstance(value, str):
                slots[Slot(place.kind)] = value
        elif place.form == "map":
            for key, value in (_follow(obj, place.path) or {}).items():
                if isinstance(value, str):
                    slots[Slot(place.kind, _map_key(key))] = value
        else:
            for index, record in enumerate(_follow(obj, place.path) or ()):
                value = _get(record, place.item)
                if isinstance(value, str):
                    slots[Slot(place.kind, str(index))] = value
    return slots


def with_slots(places: tuple[Place, ...], obj: Any, changes: Mapping[Slot, str]) -> Any:
    """A copy of the object with the changed slots set (the original is left as read)."""
    new = copy.deepcopy(obj)
    by_kind = {place.kind: place for place in places}
    for slot, value in changes.items():
        place = by_kind[slot.kind]
        if place.form == "scalar":
            _set(_follow(new, place.path[:-1]), place.path[-1], value)
        elif place.form == "map":
            container = _follow(new, place.path)
            key = next(k for k in container if _map_key(k) == slot.key)
            container[key] = value
        else:
            _set(_follow(new, place.path)[int(slot.key)], place.item, value)
    return new


@dataclass(frozen=True)
class StorageFields:
    """How a backend names the fields of a table's or partition's storage descriptor."""

    sd: str
    location: str
    serde: str
    serde_params: str
    skewed: str
    skewed_map: str
    params: str   # the object's own parameters

    def places(self, location: ObjectKind, params: ObjectKind) -> tuple[Place, ...]:
        return (Place(location, (self.sd, self.location)),
                Place(ObjectKind.SERDE_PARAM, (self.sd, self.serde, self.serde_params), "map"),
                Place(ObjectKind.SKEWED_LOCATION, (self.sd, self.skewed, self.skewed_map), "map"),
                Place(params, (self.params,), "map"))
