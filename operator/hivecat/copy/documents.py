"""The versioned JSON documents (plan, run summary, unit manifest) and their schemas.

The schemas ship as package data (schemas/<kind>.v<version>.json); every document we read or write
is validated against the schema of its version.
"""

from __future__ import annotations

import functools
import json
from importlib import resources
from typing import Any

from jsonschema import Draft202012Validator

from hivecat.copy.errors import CopyInputError

PLAN, RUN_SUMMARY, UNIT_MANIFEST = "plan", "run_summary", "unit_manifest"
VERSION = 1  # the one version of each document this hivecat reads and writes


class DocumentError(CopyInputError):
    pass


@functools.cache
def schema(kind: str, version: int = VERSION) -> dict[str, Any]:
    text = resources.files("hivecat.copy").joinpath("schemas", f"{kind}.v{version}.json").read_text()
    return json.loads(text)


@functools.cache
def _validator(kind: str) -> Draft202012Validator:
    return Draft202012Validator(schema(kind), format_checker=Draft202012Validator.FORMAT_CHECKER)


def validate(kind: str, document: Any, where: str = "") -> None:
    """Raise DocumentError naming the first problem; a wrong version is reported as such."""
    label = f"{kind.replace('_', ' ')}{' ' + where if where else ''}"
    if not isinstance(document, dict):
        raise DocumentError(f"{label}: expected a JSON object, got {type(document).__name__}")
    if document.get("version") != VERSION:
        raise DocumentError(f"{label}: unsupported version {document.get('version')!r} "
                            f"(this hivecat reads version {VERSION})")
    error = next(iter(sorted(_validator(kind).iter_errors(document), key=lambda e: list(e.path))), None)
    if error is not None:
        at = "/".join(str(p) for p in error.absolute_path) or "(top level)"
        raise DocumentError(f"{label}: invalid at {at}: {error.message}")


def parse(kind: str, text: str | bytes, where: str = "") -> dict[str, Any]:
    try:
        document = json.loads(text)
    except (ValueError, UnicodeDecodeError) as exc:
        raise DocumentError(f"{kind.replace('_', ' ')} {where}: not JSON ({exc})".replace("  ", " ")) from None
    validate(kind, document, where)
    return document
