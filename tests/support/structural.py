"""Check that a CRD schema is structural, the subset of OpenAPI v3 that
apiextensions.k8s.io/v1 accepts (and needs for pruning, defaulting and CEL).

Not a full port of the apiserver's validation, but the rules a hand-written schema
most often breaks.
"""

from __future__ import annotations

from typing import Any

import jsonschema

from .crds import Schema, strict_schema

TYPES = {"object", "array", "string", "integer", "number", "boolean"}
JUNCTORS = ("allOf", "anyOf", "oneOf", "not")
# Keywords a v1 CRD schema may not use at all.
FORBIDDEN = {"$ref", "$schema", "definitions", "dependencies", "id", "patternProperties", "additionalItems"}
# Keywords that may not appear inside a junctor (allOf/anyOf/oneOf/not).
NOT_IN_JUNCTOR = {"type", "description", "default", "additionalProperties", "nullable"}
INT_OR_STRING_ANYOF = [{"type": "integer"}, {"type": "string"}]


def _junctor_errors(node: Schema, path: str) -> list[str]:
    errors = []
    for key in JUNCTORS:
        subs = node.get(key)
        if subs is None:
            continue
        for sub in subs if isinstance(subs, list) else [subs]:
            int_or_string = node.get("x-kubernetes-int-or-string") and subs == INT_OR_STRING_ANYOF
            for bad in NOT_IN_JUNCTOR & set(sub):
                if not int_or_string:
                    errors.append(f"{path}: {key} must not set {bad}")
            for name in sub.get("properties", {}):
                if name not in node.get("properties", {}):
                    errors.append(f"{path}: property {name} in {key} is not specified outside it")
    return errors


def _list_type_errors(node: Schema, path: str) -> list[str]:
    list_type = node.get("x-kubernetes-list-type")
    keys = node.get("x-kubernetes-list-map-keys")
    items = node.get("items", {})
    if keys is not None and list_type != "map":
        return [f"{path}: x-kubernetes-list-map-keys needs x-kubernetes-list-type map"]
    if list_type == "map":
        if items.get("type") != "object" or not keys:
            return [f"{path}: list-type map needs object items and x-kubernetes-list-map-keys"]
        props = items.get("properties", {})
        return [
            f"{path}: list-map key {key} must be a required or defaulted scalar item field"
            for key in keys
            if key not in props
            or props[key].get("type") not in {"string", "integer", "boolean", "number"}
            or (key not in items.get("required", []) and "default" not in props[key])
        ]
    if list_type == "set" and items.get("type") in {"object", "array"}:
        return [f"{path}: list-type set needs scalar items"]
    if list_type not in {None, "atomic", "set", "map"}:
        return [f"{path}: unknown x-kubernetes-list-type {list_type}"]
    return []


def _node_errors(node: Schema, path: str, in_junctor: bool) -> list[str]:
    errors = [f"{path}: forbidden keyword {k}" for k in FORBIDDEN & set(node)]
    if node.get("uniqueItems"):
        errors.append(f"{path}: uniqueItems: true is forbidden (use x-kubernetes-list-type)")
    if in_junctor:
        return errors  # junctor branches only carry value validations
    typ = node.get("type")
    untyped_ok = node.get("x-kubernetes-int-or-string") or node.get("x-kubernetes-preserve-unknown-fields")
    if typ is None and not untyped_ok:
        errors.append(f"{path}: missing type")
    elif typ is not None and typ not in TYPES:
        errors.append(f"{path}: bad type {typ!r}")
    if node.get("x-kubernetes-int-or-string") and typ is not None:
        errors.append(f"{path}: x-kubernetes-int-or-string must not set type")
    extra = node.get("additionalProperties")
    if extra is not None:
        if "properties" in node:
            errors.append(f"{path}: properties and additionalProperties are mutually exclusive")
        if not isinstance(extra, dict):
            errors.append(f"{path}: additionalProperties must be a schema, not {extra!r}")
    if typ == "array" and not isinstance(node.get("items"), dict):
        errors.append(f"{path}: array needs a single items schema")
    if typ == "object" and not ("properties" in node or isinstance(extra, dict) or untyped_ok):
        errors.append(f"{path}: object without properties would be pruned to {{}}")
    for rule in node.get("x-kubernetes-validations", []):
        if not rule.get("rule", "").strip():
            errors.append(f"{path}: empty CEL rule")
        if "\n" in rule.get("message", "") or not rule.get("message"):
            errors.append(f"{path}: CEL rule needs a one-line message")
    if "default" in node:
        try:
            jsonschema.Draft7Validator(strict_schema(node)).validate(node["default"])
        except jsonschema.ValidationError as exc:
            errors.append(f"{path}: default {node['default']!r} is invalid: {exc.message}")
    return errors + _list_type_errors(node, path) + _junctor_errors(node, path)


def _check(node: Schema, path: str, in_junctor: bool, errors: list[str]) -> None:
    errors += _node_errors(node, path, in_junctor)
    for name, sub in node.get("properties", {}).items():
        _check(sub, f"{path}.{name}", in_junctor, errors)
    for key in ("items", "additionalProperties"):
        if isinstance(node.get(key), dict):
            _check(node[key], f"{path}{'[*]' if key == 'items' else '{*}'}", in_junctor, errors)
    for key in JUNCTORS:
        subs = node.get(key)
        for sub in subs if isinstance(subs, list) else [subs] if subs else []:
            _check(sub, f"{path}<{key}>", True, errors)


def structural_errors(schema: Schema) -> list[str]:
    """Why ``schema`` (an openAPIV3Schema) is not structural; empty when it is."""
    errors: list[str] = []
    if schema.get("type") != "object":
        errors.append("root: type must be object")
    metadata: dict[str, Any] = schema.get("properties", {}).get("metadata", {})
    for name in set(metadata.get("properties", {})) - {"name", "generateName"}:
        errors.append(f".metadata: only name and generateName may be restricted, not {name}")
    # metadata is the apiserver's own ObjectMeta: a bare `type: object` is the norm there.
    root = {k: v for k, v in schema.items() if k != "properties"}
    root["properties"] = {k: v for k, v in schema.get("properties", {}).items() if k != "metadata"}
    _check(root, "", False, errors)
    return errors
