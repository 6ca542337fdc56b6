"""The versioned JSON documents (plan, run summary, unit manifest) and their schemas.

The schemas ship as package data (schemas/<kind>.v<version>.json); every document we read or write
is validated against the schema of its version. Properties added within version 1 (the plan's `owner` and its
units' `adopt`, the manifest's `owner`) are optional, but an older hivecat refuses a document that has them
(no unknown property is allowed): copy images must be upgraded with the operator.

The unit manifest lists every file of a unit (tens of thousands), and jsonschema spent ~90% of a
no-change rerun checking those entries; a plan and a run summary list every unit (100,000 partitions: ~10 s
each). So each document's top level goes through jsonschema with the items of its long array left out, and
each item through a hand-written check of the same item schema (`file_entry_conforms`,
`plan_unit_conforms`, `unit_result_conforms`; the manifest's top level, read once per unit, by
`manifest_top_conforms` too; the schema stays the contract: tests/unit/test_distcp_fast_check.py
proves that both accept and reject the same items). Anything the fast path refuses is validated again by
jsonschema in full, so error messages are jsonschema's (cut short: a huge invalid value must not become
a huge message).

A manifest is read from the target, where anyone with write access may have put it, so nesting is
bounded: our documents nest 4 levels deep, and one deeper than MAX_NESTING is refused as a
DocumentError, never a RecursionError (json's decoder recurses once per level: a 100,000-level array
stops it at the interpreter's recursion limit; a shallower one is measured without recursion before
jsonschema sees it).
"""

from __future__ import annotations

import copy
import functools
import json
import re
from importlib import resources
from typing import Any

from jsonschema import Draft202012Validator

from hivecat.copy.errors import CopyInputError

PLAN, RUN_SUMMARY, UNIT_MANIFEST = "plan", "run_summary", "unit_manifest"
VERSION = 1  # the one version of each document this hivecat reads and writes
MAX_NESTING = 32  # levels of arrays and objects; ours have 4
MAX_MESSAGE_CHARS = 300  # of a validation error's message (it quotes the invalid value)


class DocumentError(CopyInputError):
    pass


@functools.cache
def schema(kind: str, version: int = VERSION) -> dict[str, Any]:
    text = resources.files("hivecat.copy").joinpath("schemas", f"{kind}.v{version}.json").read_text()
    return json.loads(text)


@functools.cache
def _validator(kind: str) -> Draft202012Validator:
    return Draft202012Validator(schema(kind), format_checker=Draft202012Validator.FORMAT_CHECKER)


@functools.cache
def _top_level_validator(kind: str) -> Draft202012Validator:
    """The kind's schema with the items of its long array unchecked (they get the fast check)."""
    top = copy.deepcopy(schema(kind))
    del top["properties"][_FAST_ITEMS[kind][0]]["items"]
    return Draft202012Validator(top, format_checker=Draft202012Validator.FORMAT_CHECKER)


def _file_entry_schema() -> dict[str, Any]:
    return schema(UNIT_MANIFEST)["properties"]["files"]["items"]


# the keys file_entry_conforms reads, no other (the schema-pin test holds the schema to them)
_FILE_ENTRY_COUNT = len(set(_file_entry_schema()["required"]))
_CHECKSUM_PATTERN = re.compile(_file_entry_schema()["properties"]["checksum"]["pattern"])


@functools.lru_cache(maxsize=4096)  # the entries of one run share their copied_at
def _date_time(value: str) -> bool:
    return Draft202012Validator.FORMAT_CHECKER.conforms(value, "date-time")


def file_entry_conforms(entry: Any) -> bool:
    """True exactly when `entry` is valid against the unit manifest's item schema for `files`
    (JSON Schema's integers include 3.0 and exclude true; patterns are searched, as jsonschema does)."""
    if type(entry) is not dict or len(entry) != _FILE_ENTRY_COUNT:  # all required, nothing else: as many keys
        return False                                                   # as required, each of them found
    try:
        path, size, mtime, checksum, etag, copied_at, run_id = (
            entry["path"], entry["size"], entry["source_mtime_ns"], entry["checksum"], entry["etag"],
            entry["copied_at"], entry["run_id"])
    except KeyError:
        return False
    return (type(path) is str and len(path) >= 1
            and (type(size) is int or (type(size) is float and size.is_integer())) and size >= 0
            and (type(mtime) is int or (type(mtime) is float and mtime.is_integer()))
            and (checksum is None or (type(checksum) is str and _CHECKSUM_PATTERN.search(checksum) is not None))
            and (etag is None or type(etag) is str)
            and type(copied_at) is str and _date_time(copied_at)
            and type(run_id) is str and len(run_id) >= 1)


def _plan_unit_schema() -> dict[str, Any]:
    return schema(PLAN)["properties"]["units"]["items"]


_PLAN_UNIT_REQUIRED = frozenset(_plan_unit_schema()["required"])
_PLAN_UNIT_KEYS = frozenset(_plan_unit_schema()["properties"])
_ADOPT_PATTERN = re.compile(_plan_unit_schema()["properties"]["adopt"]["pattern"])


def _text(value: Any) -> bool:
    return type(value) is str and len(value) >= 1


def plan_unit_conforms(unit: Any) -> bool:
    """True exactly when `unit` is valid against the plan's item schema for `units` (a plan of 100,000
    partitions spent seconds in jsonschema before its first byte was copied)."""
    if type(unit) is not dict or not unit.keys() >= _PLAN_UNIT_REQUIRED or not unit.keys() <= _PLAN_UNIT_KEYS:
        return False
    adopt, expected = unit.get("adopt", ""), unit.get("expected_files", ())
    return (_text(unit["id"]) and _text(unit["source"]) and _text(unit["target"])
            and ("adopt" not in unit or (type(adopt) is str and _ADOPT_PATTERN.search(adopt) is not None))
            and ("expected_files" not in unit or (type(expected) is list and all(_text(p) for p in expected))))


_COUNTS = tuple(schema(RUN_SUMMARY)["$defs"]["counts"]["required"])
_RESULT_REQUIRED = frozenset(schema(RUN_SUMMARY)["properties"]["units"]["items"]["required"]) | frozenset(_COUNTS)
_STATUSES = tuple(schema(RUN_SUMMARY)["properties"]["units"]["items"]["properties"]["status"]["enum"])


def _count(value: Any) -> bool:
    """JSON Schema's {"type": "integer", "minimum": 0}: 3.0 is an integer, true is not."""
    return (type(value) is int or (type(value) is float and value.is_integer())) and value >= 0


def unit_result_conforms(result: Any) -> bool:
    """True exactly when `result` is valid against the run summary's item schema for `units` (other
    properties are allowed there; `seconds` is any number that is not below 0, as jsonschema compares)."""
    if type(result) is not dict or not result.keys() >= _RESULT_REQUIRED:
        return False
    status, reason, seconds = result["status"], result["reason"], result["seconds"]
    return (type(result["id"]) is str and type(result["source"]) is str and type(result["target"]) is str
            and type(status) is str and status in _STATUSES
            and (reason is None or type(reason) is str)
            and type(seconds) in (int, float) and not seconds < 0
            and all(_count(result[key]) for key in _COUNTS))


_MANIFEST = schema(UNIT_MANIFEST)
_MANIFEST_REQUIRED, _MANIFEST_KEYS = frozenset(_MANIFEST["required"]), frozenset(_MANIFEST["properties"])
_OWNER_KEYS = frozenset(_MANIFEST["properties"]["owner"]["properties"])  # each required, no other


def manifest_top_conforms(document: dict[str, Any]) -> bool:
    """True exactly when the unit manifest's top level (its `files` items apart) is valid against its schema:
    read once per unit, jsonschema's walk of it was most of a no-change rerun of one-file partitions."""
    keys = document.keys()
    if not (keys >= _MANIFEST_REQUIRED and keys <= _MANIFEST_KEYS):
        return False
    version, committed, owner = document["version"], document["committed_at"], document.get("owner")
    return (type(version) in (int, float) and version == VERSION  # {"const": 1}: 1.0 is 1, true is not
            and _text(document["unit_id"]) and _text(document["source"]) and _text(document["run_id"])
            and type(committed) is str and _date_time(committed)
            and type(document["files"]) is list
            and ("owner" not in keys or (type(owner) is dict and owner.keys() == _OWNER_KEYS
                                         and all(_text(value) for value in owner.values()))))


# kind -> the hand-written check of its top level (else jsonschema's, without the long array's items)
_FAST_TOP = {UNIT_MANIFEST: manifest_top_conforms}
# kind -> (its long array property, the hand-written check of that array's items)
_FAST_ITEMS = {UNIT_MANIFEST: ("files", file_entry_conforms), PLAN: ("units", plan_unit_conforms),
               RUN_SUMMARY: ("units", unit_result_conforms)}


def _conforms_fast(kind: str, document: dict[str, Any]) -> bool:
    if kind not in _FAST_ITEMS:
        return False
    top = _FAST_TOP.get(kind)
    if not (top(document) if top is not None else _top_level_validator(kind).is_valid(document)):
        return False
    array, check = _FAST_ITEMS[kind]
    return all(check(item) for item in document[array])


def _label(kind: str, where: str) -> str:
    return f"{kind.replace('_', ' ')}{' ' + where if where else ''}"


def validate(kind: str, document: Any, where: str = "") -> None:
    """Raise DocumentError naming the first problem; a wrong version is reported as such."""
    label = _label(kind, where)
    if not isinstance(document, dict):
        raise DocumentError(f"{label}: expected a JSON object, got {type(document).__name__}")
    if document.get("version") != VERSION:
        raise DocumentError(f"{label}: unsupported version {_shown(document.get('version'))} "
                            f"(this hivecat reads version {VERSION})")
    if _conforms_fast(kind, document):  # conforming documents nest as their schema does: 4 levels at most
        return
    if nested_deeper_than(document, MAX_NESTING):  # before jsonschema, which recurses into what it checks
        raise _too_deep(kind, where)
    error = next(iter(sorted(_validator(kind).iter_errors(document), key=lambda e: list(e.path))), None)
    if error is not None:
        at = "/".join(str(p) for p in error.absolute_path) or "(top level)"
        raise DocumentError(f"{label}: invalid at {at}: {_cut(error.message, MAX_MESSAGE_CHARS)}")


def parse(kind: str, text: str | bytes, where: str = "") -> dict[str, Any]:
    try:
        document = json.loads(text)
    except (ValueError, UnicodeDecodeError) as exc:
        raise DocumentError(f"{_label(kind, where)}: not JSON ({exc})") from None
    except RecursionError:  # json's C decoder counts its levels against the interpreter's limit
        raise _too_deep(kind, where) from None
    validate(kind, document, where)
    return document


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit] + "..."


def _shown(value: Any) -> str:
    """A value for a message: a scalar as its repr, an array or object by kind (its repr may be huge)."""
    if isinstance(value, (dict, list)):
        return f"a JSON {'object' if isinstance(value, dict) else 'array'}"
    return _cut(repr(value), 60)


def _too_deep(kind: str, where: str) -> DocumentError:
    return DocumentError(f"{_label(kind, where)}: nested deeper than {MAX_NESTING} levels")


def nested_deeper_than(document: Any, limit: int) -> bool:
    """True when arrays and objects nest more than `limit` levels deep (the top level is 1); iterative,
    so that no depth can exhaust the stack."""
    pending = [(document, 1)] if isinstance(document, (dict, list)) else []
    while pending:
        value, depth = pending.pop()
        if depth > limit:
            return True
        children = value.values() if isinstance(value, dict) else value
        pending.extend((child, depth + 1) for child in children if isinstance(child, (dict, list)))
    return False
