"""OpenAPI v3 as kubectl reads it: a root listing one document per group-version.

kubectl (validate=strict, its default) asks it whether PATCH on a kind takes `fieldValidation`; every
kind here says yes, so kubectl leaves validation to the server, which does not emulate it (README). Without
this, kubectl falls back to OpenAPI v2 in protobuf, which is not emulated either, and refuses to apply.
Custom kinds carry their CRD's openAPIV3Schema as component schemas, built-ins an open schema.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from kube.resources import ResourceType

_OPEN_SCHEMA: dict[str, Any] = {"type": "object", "x-kubernetes-preserve-unknown-fields": True}


def gv_path(rt: ResourceType) -> str:
    return f"api/{rt.version}" if not rt.group else f"apis/{rt.group}/{rt.version}"


def _schema_name(rt: ResourceType) -> str:
    reversed_group = ".".join(reversed(rt.group.split("."))) if rt.group else "core"
    return f"{reversed_group}.{rt.version}.{rt.kind}"


def document(types: list[ResourceType], crd_schemas: dict[tuple[str, str, str], dict[str, Any]]) -> dict[str, Any]:
    """One group-version's document; crd_schemas maps a custom kind's key to its openAPIV3Schema."""
    schemas, paths = {}, {}
    for rt in types:
        item = "/namespaces/{namespace}" if rt.namespaced else ""
        paths[f"/{gv_path(rt)}{item}/{rt.plural}/{{name}}"] = {"patch": {
            "x-kubernetes-group-version-kind": {"group": rt.group, "version": rt.version, "kind": rt.kind},
            "parameters": [{"name": "fieldValidation", "in": "query", "schema": {"type": "string"}}],
        }}
        schema = dict(crd_schemas.get(rt.key) or _OPEN_SCHEMA)
        schema["x-kubernetes-group-version-kind"] = [{"group": rt.group, "version": rt.version, "kind": rt.kind}]
        schemas[_schema_name(rt)] = schema
    return {"openapi": "3.0.0", "info": {"title": "Kubernetes (hivecat local API server)", "version": "v1.35.0"},
            "paths": paths, "components": {"schemas": schemas}}


def root(documents: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """The /openapi/v3 index; the hash changes with the content, so kubectl's cache never serves stale kinds."""
    return {"paths": {
        path: {"serverRelativeURL": f"/openapi/v3/{path}?hash="
                                    + hashlib.sha256(json.dumps(doc, sort_keys=True).encode()).hexdigest()[:32]}
        for path, doc in sorted(documents.items())
    }}
