"""Typed reads of a CR body's fields, shared by the spec parsers: a wrong type is a SpecInvalid("InvalidField")
with the field's path, never a TypeError in a handler (a body can reach the operator without the CRD's
schema having checked it)."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from hivecat import reasons
from hivecat.specs.errors import SpecInvalid


def mapping(value: Any, where: str) -> Mapping[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise SpecInvalid(reasons.INVALID_FIELD, f"{where} must be an object")
    return value


_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


def opt_str(raw: Mapping[str, Any], field: str, where: str) -> str | None:
    """An optional string field. Control characters (line breaks, tabs, NUL) are refused in every one: no
    name, host, URI or filter holds them, and in generated files (hive-site.xml, spark-defaults.conf) or
    commands they would change what those say."""
    value = raw.get(field)
    if value is None:
        return None
    if not isinstance(value, str):
        raise SpecInvalid(reasons.INVALID_FIELD, f"{where}.{field} must be a string (quote it in YAML)")
    found = _CONTROL.search(value)
    if found is not None:
        raise SpecInvalid(reasons.INVALID_FIELD, f"{where}.{field} holds a control character (U+{ord(found.group()):04X}): "
                                          "remove it")
    return value


def whole(raw: Mapping[str, Any], field: str, where: str, default: int, low: int, high: int) -> int:
    value = raw.get(field)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise SpecInvalid(reasons.INVALID_FIELD, f"{where}.{field} must be a whole number from {low} to {high}")
    return value


def flag(raw: Mapping[str, Any], field: str, where: str, default: bool) -> bool:
    value = raw.get(field)
    if value is None:
        return default
    if not isinstance(value, bool):
        raise SpecInvalid(reasons.INVALID_FIELD, f"{where}.{field} must be true or false")
    return value


def choice(raw: Mapping[str, Any], field: str, allowed: Sequence[str], default: str, where: str = "spec") -> str:
    value = raw.get(field)
    if value is None:
        return default
    if value not in allowed:
        raise SpecInvalid(reasons.INVALID_FIELD, f"{where}.{field} must be one of {', '.join(allowed)}")
    return str(value)
