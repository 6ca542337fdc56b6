"""Load hivecat's CRDs and walk their schemas (the API server itself validates resources against them:
tests/operator/test_admission.py)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import yaml

from hivecat.kinds import GROUP, VERSION  # noqa: F401  (re-exported: the tests read crds.GROUP/VERSION)

REPO = Path(__file__).resolve().parents[2]
CRD_DIR = REPO / "crds"

Schema = dict[str, Any]

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


def cel_messages(schema: Schema) -> list[tuple[str, str]]:
    """(schema path, message) of every x-kubernetes-validations rule."""
    return [(path, rule["message"]) for path, node in walk(schema)
            for rule in node.get("x-kubernetes-validations", [])]


def declared_status(crd_file: str, *path: str) -> set[str]:
    """The property names the CRD in crds/`crd_file` declares under .status (then `path`, through items)."""
    node = openapi_schema(load_docs(CRD_DIR / crd_file)[0])["properties"]["status"]
    for step in path:
        node = node["properties"][step]
        node = node.get("items", node)
    return set(node["properties"])
