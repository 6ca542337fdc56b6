"""The CRDs' structural schemas, applied in Python: one source for the rules a field's value must keep (type,
enum, pattern, length, bounds, item counts, required fields, unknown fields, list uniqueness).

The API server applies these schemas when a resource is written; the spec parsers apply the same schemas to
what they are given (a body written under an older CRD, a body from a file), so that the two never judge a
resource differently. The CEL rules (x-kubernetes-validations) are not evaluated here: the parsers check
each of them by hand, and tests/operator/test_spec_parity.py holds both to the API server's verdict.

The schemas are read from the CRDs shipped inside the package (specs/crds/, a copy of crds/ kept by
charts/sync-crds.sh and checked by tests/unit/test_crds.py).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import yaml

from hivecat import reasons
from hivecat.specs.errors import SpecInvalid

CRD_DIR = Path(__file__).with_name("crds")
Schema = Mapping[str, Any]


@functools.cache
def spec_schema(kind: str) -> Schema:
    """The openAPIV3Schema of `kind`'s spec, from its CRD's storage version."""
    for path in sorted(CRD_DIR.glob("*.yaml")):
        for crd in yaml.safe_load_all(path.read_text()):
            if crd and crd["spec"]["names"]["kind"] == kind:
                version = next(v for v in crd["spec"]["versions"] if v.get("storage"))
                return version["schema"]["openAPIV3Schema"]["properties"]["spec"]
    raise LookupError(f"no CRD for kind {kind} in {CRD_DIR}")


def check_spec(kind: str, body: Mapping[str, Any]) -> None:
    """SpecInvalid(InvalidField) naming the first field of body's spec outside its CRD's schema."""
    for problem in violations(spec_schema(kind), body.get("spec") or {}, "spec"):
        raise SpecInvalid(reasons.INVALID_FIELD, problem)


@functools.cache
def _compiled(pattern: str) -> re.Pattern[str]:
    """A CRD pattern (Go RE2, searched) as Python reads it: `$` outside a class is the end of the text, as in
    Go, not also the place before a final line break, as Python's `$` is."""
    out, in_class, escaped = [], False, False
    for ch in pattern:
        if escaped:
            out.append(ch)
            escaped = False
        elif ch == "\\":
            out.append(ch)
            escaped = True
        elif in_class:
            out.append(ch)
            in_class = ch != "]"
        elif ch == "[":
            out.append(ch)
            in_class = True
        else:
            out.append(r"\Z" if ch == "$" else ch)
    return re.compile("".join(out))


_TYPES: dict[str, tuple[type, ...]] = {"string": (str,), "integer": (int,), "number": (int, float),
                                       "boolean": (bool,), "array": (list,), "object": (Mapping,)}


def _typed(schema: Schema, value: Any) -> bool:
    if schema.get("x-kubernetes-int-or-string"):
        return isinstance(value, (int, str)) and not isinstance(value, bool)
    wanted = schema.get("type")
    if wanted is None:
        return True
    if isinstance(value, bool) and wanted != "boolean":
        return False
    return isinstance(value, _TYPES[wanted])


def violations(schema: Schema, value: Any, where: str) -> Iterator[str]:
    """Every way `value` at `where` breaks `schema`, first the node's own, then its fields' and items'."""
    if value is None:
        if not schema.get("nullable"):
            yield f"{where} must not be null"
        return
    if not _typed(schema, value):
        yield f"{where} must be of type {schema.get('type', 'integer or string')}"
        return
    yield from _scalar(schema, value, where)
    if isinstance(value, Mapping):
        yield from _object(schema, value, where)
    elif isinstance(value, list):
        yield from _array(schema, value, where)


def _scalar(schema: Schema, value: Any, where: str) -> Iterator[str]:
    if "enum" in schema and value not in schema["enum"]:
        yield f"{where}: {value!r} is not one of {', '.join(map(str, schema['enum']))}"
    if isinstance(value, str):
        if "pattern" in schema and not _compiled(schema["pattern"]).search(value):
            yield f"{where}: {value[:100]!r} does not match {schema['pattern']}"
        if len(value) > schema.get("maxLength", len(value)):
            yield f"{where} is longer than {schema['maxLength']} characters"
        if len(value) < schema.get("minLength", 0):
            yield f"{where} is shorter than {schema['minLength']} characters"
    elif isinstance(value, (int, float)) and not isinstance(value, bool):
        if "minimum" in schema and value < schema["minimum"]:
            yield f"{where} must be at least {schema['minimum']}"
        if "maximum" in schema and value > schema["maximum"]:
            yield f"{where} must be at most {schema['maximum']}"


def _object(schema: Schema, value: Mapping[str, Any], where: str) -> Iterator[str]:
    properties = schema.get("properties") or {}
    extra = schema.get("additionalProperties")
    # The API server prunes a null field before validating, unless its schema is nullable: it is absent.
    value = {name: item for name, item in value.items() if item is not None or (
        properties.get(name) or (extra if isinstance(extra, Mapping) else {})).get("nullable")}
    for name in schema.get("required", ()):
        if name not in value:
            yield f"{where}.{name} is required"
    if len(value) > schema.get("maxProperties", len(value)):
        yield f"{where} has more than {schema['maxProperties']} entries"
    if len(value) < schema.get("minProperties", 0):
        yield f"{where} has fewer than {schema['minProperties']} entries"
    for name, item in value.items():
        if name in properties:
            yield from violations(properties[name], item, f"{where}.{name}")
        elif isinstance(extra, Mapping):
            yield from violations(extra, item, f"{where}.{name}")
        elif not schema.get("x-kubernetes-preserve-unknown-fields") and extra is not True:
            yield f"{where}.{name} is not a field of {where}"


def _array(schema: Schema, value: list[Any], where: str) -> Iterator[str]:
    if len(value) > schema.get("maxItems", len(value)):
        yield f"{where} has more than {schema['maxItems']} items"
    if len(value) < schema.get("minItems", 0):
        yield f"{where} has fewer than {schema['minItems']} items"
    items = schema.get("items")
    if isinstance(items, Mapping):
        for i, item in enumerate(value):
            yield from violations(items, item, f"{where}[{i}]")
    kind = schema.get("x-kubernetes-list-type")
    keys = [repr(item) for item in value] if kind == "set" else [
        repr(tuple(item.get(k) for k in schema.get("x-kubernetes-list-map-keys", ()))) for item in value
        if isinstance(item, Mapping)] if kind == "map" else []
    duplicated = next((k for i, k in enumerate(keys) if k in keys[:i]), None)
    if duplicated is not None:
        yield f"{where} holds {duplicated} twice"
