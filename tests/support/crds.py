"""Load hivecat's CRDs and turn their schemas into what the tests validate with.

The apiserver validates a custom resource in this order: prune/reject unknown
fields, apply schema defaults, check the OpenAPI schema, then run the CEL rules.
The tests mimic that with check-jsonschema (schema) and support.cel (CEL rules).
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import yaml

REPO = Path(__file__).resolve().parents[2]
CRD_DIR = REPO / "crds"
GROUP = "hivecatalog.io"
VERSION = "v1alpha1"

Schema = dict[str, Any]

# Same limits the apiserver puts on metadata.name of namespaced objects.
DNS1123_SUBDOMAIN = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$"


def load_docs(path: Path) -> list[dict[str, Any]]:
    """All YAML documents of a file, without empty ones."""
    with path.open() as f:
        return [d for d in yaml.safe_load_all(f) if d is not None]


def crd_files(crd_dir: Path = CRD_DIR) -> list[Path]:
    return sorted(crd_dir.glob("*.yaml"))


def load_crds(crd_dir: Path = CRD_DIR) -> dict[str, dict[str, Any]]:
    """Kind -> CustomResourceDefinition, for every CRD file in crd_dir."""
    crds: dict[str, dict[str, Any]] = {}
    for path in crd_files(crd_dir):
        for doc in load_docs(path):
            crds[doc["spec"]["names"]["kind"]] = doc
    return crds


def storage_version(crd: dict[str, Any]) -> dict[str, Any]:
    return next(v for v in crd["spec"]["versions"] if v.get("storage"))


def openapi_schema(crd: dict[str, Any]) -> Schema:
    return storage_version(crd)["schema"]["openAPIV3Schema"]


def schemas(crd_dir: Path = CRD_DIR) -> dict[str, Schema]:
    """Kind -> openAPIV3Schema of its storage version."""
    return {kind: openapi_schema(crd) for kind, crd in load_crds(crd_dir).items()}


def walk(schema: Schema, path: str = "") -> Iterator[tuple[str, Schema]]:
    """Every schema node with a readable path: .spec.x, [*] for items, {*} for map values."""
    yield path, schema
    for name, sub in schema.get("properties", {}).items():
        yield from walk(sub, f"{path}.{name}")
    if isinstance(schema.get("items"), dict):
        yield from walk(schema["items"], f"{path}[*]")
    if isinstance(schema.get("additionalProperties"), dict):
        yield from walk(schema["additionalProperties"], f"{path}{{*}}")
    for junctor in ("allOf", "anyOf", "oneOf"):
        for i, sub in enumerate(schema.get(junctor, [])):
            yield from walk(sub, f"{path}<{junctor}{i}>")
    if isinstance(schema.get("not"), dict):
        yield from walk(schema["not"], f"{path}<not>")


def apply_defaults(schema: Schema, value: Any) -> Any:
    """Fill in schema defaults top-down like the apiserver: a defaulted object gets
    its own nested defaults too, but absent parents are not created."""
    if isinstance(value, dict):
        for name, sub in schema.get("properties", {}).items():
            if name not in value and "default" in sub:
                value[name] = copy.deepcopy(sub["default"])
            if name in value:
                value[name] = apply_defaults(sub, value[name])
        extra = schema.get("additionalProperties")
        if isinstance(extra, dict):
            for name in value:
                if name not in schema.get("properties", {}):
                    value[name] = apply_defaults(extra, value[name])
    elif isinstance(value, list) and isinstance(schema.get("items"), dict):
        value = [apply_defaults(schema["items"], item) for item in value]
    return value


def strict_schema(schema: Schema) -> Schema:
    """Close every object that lists its properties, as the apiserver's strict field
    validation (kubectl's default) rejects unknown fields instead of pruning them."""
    out = {k: v for k, v in schema.items() if not k.startswith("x-kubernetes-")}
    if out.pop("nullable", False) and "type" in out:
        out["type"] = [out["type"], "null"]
    if "properties" in out:
        out["properties"] = {k: strict_schema(v) for k, v in out["properties"].items()}
        if not schema.get("x-kubernetes-preserve-unknown-fields"):
            out.setdefault("additionalProperties", False)
    for key in ("items", "additionalProperties", "not"):
        if isinstance(out.get(key), dict):
            out[key] = strict_schema(out[key])
    for key in ("allOf", "anyOf", "oneOf"):
        if key in out:
            out[key] = [strict_schema(s) for s in out[key]]
    return out


def json_schema(crd: dict[str, Any]) -> Schema:
    """A draft-07 JSON Schema for whole objects of the CRD's kind (apiVersion, kind,
    metadata included), usable with check-jsonschema --schemafile."""
    kind = crd["spec"]["names"]["kind"]
    group = crd["spec"]["group"]
    out = strict_schema(openapi_schema(crd))
    out["$schema"] = "http://json-schema.org/draft-07/schema#"
    out["title"] = f"{kind} {group}/{storage_version(crd)['name']}"
    props = out["properties"]
    props["apiVersion"] = {"const": f"{group}/{storage_version(crd)['name']}"}
    props["kind"] = {"const": kind}
    # metadata is the apiserver's ObjectMeta: only check what manifests commonly get wrong.
    props["metadata"] = {
        "type": "object",
        "required": ["name"],
        "properties": {
            "name": {"type": "string", "maxLength": 253, "pattern": DNS1123_SUBDOMAIN},
            "namespace": {"type": "string"},
            "labels": {"type": "object", "additionalProperties": {"type": "string"}},
            "annotations": {"type": "object", "additionalProperties": {"type": "string"}},
        },
    }
    out["required"] = sorted({"apiVersion", "kind", "metadata", *out.get("required", [])})
    return out
