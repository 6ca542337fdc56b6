"""The hand-written check of manifest file entries accepts and rejects exactly what the schema does.

The schema stays the contract; the fast check only exists because jsonschema was most of a no-change
rerun. Property: for any JSON value shaped like an entry (valid, or with fields missing, extra,
mistyped, out of range, badly formatted), `file_entry_conforms` agrees with jsonschema on the item
schema, and a whole manifest is accepted by `validate` exactly when the full schema accepts it.
"""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator

from hivecat.copy import documents
from hivecat.copy.documents import DocumentError, file_entry_conforms

FULL = Draft202012Validator(documents.schema(documents.UNIT_MANIFEST),
                            format_checker=Draft202012Validator.FORMAT_CHECKER)
ITEM = Draft202012Validator(documents.schema(documents.UNIT_MANIFEST)["properties"]["files"]["items"],
                            format_checker=Draft202012Validator.FORMAT_CHECKER)

VALID = {"path": "dt=1/part-0.parquet", "size": 3, "source_mtime_ns": 1_700_000_000_123_456_789,
         "checksum": "crc32c:0a1b2c3d", "etag": None, "copied_at": "2026-01-01T00:00:00.000+00:00", "run_id": "r1"}

json_scalars = st.none() | st.booleans() | st.integers(-2**70, 2**70) | st.floats() | st.text(max_size=8)
json_values = st.recursive(json_scalars, lambda inner: st.lists(inner, max_size=2)
                           | st.dictionaries(st.text(max_size=4), inner, max_size=2), max_leaves=4)
# Values near each field's edges, valid and not: the generic JSON values above rarely hit them.
edges = {
    "path": st.sampled_from(["", "a", "a/b", "\n"]),
    "size": st.sampled_from([0, -1, 3, 3.0, 3.5, -0.0, True, "3", 2**64]),
    "source_mtime_ns": st.sampled_from([0, -5, 1.0, 1.5, False, None, "1"]),
    "checksum": st.sampled_from([None, "crc32c:0a1b2c3d", "crc32c:0A1B2C3D", "crc32c:0a1b2c3", "crc32c:0a1b2c3d\n",
                                 "sha256:" + "0" * 64, "sha256:" + "0" * 63, "md5:abc", "x crc32c:0a1b2c3d", ""]),
    "etag": st.sampled_from([None, '"abc"', "", 1]),
    "copied_at": st.sampled_from(["2026-01-01T00:00:00+00:00", "2026-01-01T00:00:00Z", "2026-01-01 00:00:00",
                                  "2026-02-30T00:00:00Z", "2026-01-01T00:00:00", "yesterday", ""]),
    "run_id": st.sampled_from(["", "r", "20260101T000000Z-abcdef"]),
}


@st.composite
def entries(draw) -> object:
    if draw(st.integers(0, 9)) == 0:
        return draw(json_values)  # not even an object, sometimes
    entry = dict(VALID)
    for key in draw(st.sets(st.sampled_from(sorted(VALID)))):  # change a few fields
        entry[key] = draw(edges[key] | json_values)
    for key in draw(st.sets(st.sampled_from(sorted(VALID)), max_size=2)):
        del entry[key]
    if draw(st.booleans()) and draw(st.integers(0, 4)) == 0:
        entry[draw(st.text(max_size=6))] = draw(json_values)  # an extra (or replaced) property
    return json.loads(json.dumps(entry))  # as read from a manifest file


@settings(max_examples=3000, deadline=None)
@given(entries())
def test_fast_check_agrees_with_the_item_schema(entry) -> None:
    assert file_entry_conforms(entry) == ITEM.is_valid(entry)


@settings(max_examples=500, deadline=None)
@given(st.lists(entries(), max_size=4))
def test_validate_accepts_a_manifest_exactly_when_the_full_schema_does(files) -> None:
    document = {"version": 1, "unit_id": "db.t", "source": "file:///data/t", "run_id": "r1",
                "committed_at": "2026-01-01T00:00:00+00:00", "files": files}
    if FULL.is_valid(document):
        documents.validate(documents.UNIT_MANIFEST, document)
    else:
        with pytest.raises(DocumentError, match="invalid at"):
            documents.validate(documents.UNIT_MANIFEST, document)


@pytest.mark.parametrize(("change", "place"), [
    ({"size": -1}, "files/0/size"), ({"size": True}, "files/0/size"), ({"checksum": "sha256:abc"}, "files/0/checksum"),
    ({"copied_at": "not a time"}, "files/0/copied_at"), ({"extra": 1}, "files/0"), ({"path": ""}, "files/0/path"),
])
def test_a_bad_entry_is_reported_with_jsonschemas_message_and_place(change: dict, place: str) -> None:
    document = {"version": 1, "unit_id": "u", "source": "s", "run_id": "r", "committed_at": "2026-01-01T00:00:00Z",
                "files": [{**VALID, **change}]}
    with pytest.raises(DocumentError, match=f"invalid at {place}:"):
        documents.validate(documents.UNIT_MANIFEST, document)


def test_the_item_schema_is_the_one_the_fast_check_implements() -> None:
    """A new constraint in the schema would be one the fast check does not know: change both together."""
    def without_descriptions(node):
        if isinstance(node, dict):
            return {k: without_descriptions(v) for k, v in node.items() if k != "description"}
        return node

    assert without_descriptions(documents.schema(documents.UNIT_MANIFEST)["properties"]["files"]["items"]) == {
        "type": "object", "additionalProperties": False,
        "required": ["path", "size", "source_mtime_ns", "checksum", "etag", "copied_at", "run_id"],
        "properties": {
            "path": {"type": "string", "minLength": 1},
            "size": {"type": "integer", "minimum": 0},
            "source_mtime_ns": {"type": "integer"},
            "checksum": {"type": ["string", "null"], "pattern": "^(crc32c:[0-9a-f]{8}|sha256:[0-9a-f]{64})$"},
            "etag": {"type": ["string", "null"]},
            "copied_at": {"type": "string", "format": "date-time"},
            "run_id": {"type": "string", "minLength": 1},
        }}


# --- the plan's units and the run summary's units: the same property ---------------------------------

PLAN_UNIT = Draft202012Validator(documents.schema(documents.PLAN)["properties"]["units"]["items"],
                                 format_checker=Draft202012Validator.FORMAT_CHECKER)
RESULT = Draft202012Validator({**documents.schema(documents.RUN_SUMMARY)["properties"]["units"]["items"],
                               "$defs": documents.schema(documents.RUN_SUMMARY)["$defs"]},
                              format_checker=Draft202012Validator.FORMAT_CHECKER)
VALID_UNIT = {"id": "db.t/dt=1", "source": "s3://lake/t/dt=1", "target": "s3://dr/t/dt=1",
              "adopt": "sha256:" + "0" * 64, "expected_files": ["part-0"]}
VALID_RESULT = {"id": "db.t/dt=1", "source": "s3://lake/t/dt=1", "target": "s3://dr/t/dt=1", "status": "done",
                "reason": None, "files_copied": 1, "bytes_copied": 10, "files_skipped": 0, "files_deleted": 0,
                "seconds": 0.25}
unit_edges = {
    "id": st.sampled_from(["", "a", "\n"]), "source": st.sampled_from(["", "file:///x"]),
    "target": st.sampled_from(["", 1]),
    "adopt": st.sampled_from(["sha256:" + "a" * 64, "sha256:" + "a" * 64 + "\n", "sha256:" + "A" * 64,
                              "sha256:" + "a" * 63, "x sha256:" + "a" * 64, ""]),
    "expected_files": st.sampled_from([[], [""], ["a", "b"], ["a", 1], "a", None]),
}
count_edges = st.sampled_from([0, 3, -1, 3.0, 3.5, -0.0, True, "3", None, 2**64, float("nan"), float("inf")])
result_edges = {
    "id": st.sampled_from(["", "a", 1]), "source": st.sampled_from(["", None]), "target": st.sampled_from(["x", 0]),
    "status": st.sampled_from(["done", "skipped", "failed", "Done", "", None, 1]),
    "reason": st.sampled_from([None, "", "why", 0, False]),
    "seconds": st.sampled_from([0, 0.0, 1.5, -0.1, -1, True, "1", None, float("nan"), float("inf"), -float("inf")]),
    "files_copied": count_edges, "bytes_copied": count_edges, "files_skipped": count_edges,
    "files_deleted": count_edges,
}


def changed(draw, valid: dict, edges_of: dict) -> object:
    if draw(st.integers(0, 9)) == 0:
        return draw(json_values)
    item = dict(valid)
    for key in draw(st.sets(st.sampled_from(sorted(valid)))):
        item[key] = draw(edges_of[key] | json_values)
    for key in draw(st.sets(st.sampled_from(sorted(valid)), max_size=2)):
        del item[key]
    if draw(st.booleans()) and draw(st.integers(0, 4)) == 0:
        item[draw(st.text(max_size=6))] = draw(json_values)
    return json.loads(json.dumps(item))  # as read from a document (NaN and Infinity included, as json allows)


def single_changes(valid: dict, edges_of: dict) -> list[dict]:
    """Every edge value of every field, one field at a time (the rest valid), and each field missing."""
    examples = [{**valid, key: value} for key, strategy in edges_of.items()
                for value in strategy.elements]  # sampled_from: its values
    return [*examples, *({k: v for k, v in valid.items() if k != key} for key in valid)]


@pytest.mark.parametrize("unit", single_changes(VALID_UNIT, unit_edges), ids=repr)
def test_each_edge_of_a_plan_unit_is_judged_as_the_schema_does(unit: dict) -> None:
    assert documents.plan_unit_conforms(unit) == PLAN_UNIT.is_valid(unit)


@pytest.mark.parametrize("result", single_changes(VALID_RESULT, result_edges), ids=repr)
def test_each_edge_of_a_unit_result_is_judged_as_the_schema_does(result: dict) -> None:
    assert documents.unit_result_conforms(result) == RESULT.is_valid(result)


@settings(max_examples=1500, deadline=None)
@given(st.data())
def test_fast_checks_agree_with_the_plan_unit_and_unit_result_schemas(data) -> None:
    unit = data.draw(st.composite(lambda draw: changed(draw, VALID_UNIT, unit_edges))())
    assert documents.plan_unit_conforms(unit) == PLAN_UNIT.is_valid(unit)
    result = data.draw(st.composite(lambda draw: changed(draw, VALID_RESULT, result_edges))())
    assert documents.unit_result_conforms(result) == RESULT.is_valid(result)


@pytest.mark.parametrize(("change", "place"), [
    ({"id": ""}, "units/0/id"), ({"adopt": "sha256:abc"}, "units/0/adopt"), ({"expected_files": [""]},
                                                                           "units/0/expected_files/0"),
    ({"extra": 1}, "units/0"),
])
def test_a_bad_plan_unit_is_reported_with_jsonschemas_message_and_place(change: dict, place: str) -> None:
    with pytest.raises(DocumentError, match=f"invalid at {place}:"):
        documents.validate(documents.PLAN, {"version": 1, "units": [{**VALID_UNIT, **change}]})


def test_the_item_schemas_are_the_ones_the_fast_checks_implement() -> None:
    """A new constraint in either schema would be one its fast check does not know: change both together."""
    def bare(node):
        if isinstance(node, dict):
            return {k: bare(v) for k, v in node.items() if k != "description"}
        return node

    text = {"type": "string", "minLength": 1}
    assert bare(documents.schema(documents.PLAN)["properties"]["units"]["items"]) == {
        "type": "object", "required": ["id", "source", "target"], "additionalProperties": False,
        "properties": {"id": text, "source": text, "target": text,
                       "adopt": {"type": "string", "pattern": "^sha256:[0-9a-f]{64}$"},
                       "expected_files": {"type": "array", "items": text}}}
    count = {"type": "integer", "minimum": 0}
    summary = documents.schema(documents.RUN_SUMMARY)
    assert bare(summary["$defs"]["counts"]) == {
        "type": "object", "required": ["files_copied", "bytes_copied", "files_skipped", "files_deleted"],
        "properties": {"files_copied": count, "bytes_copied": count, "files_skipped": count, "files_deleted": count}}
    assert bare(summary["properties"]["units"]["items"]) == {
        "allOf": [{"$ref": "#/$defs/counts"}], "type": "object",
        "required": ["id", "source", "target", "status", "reason", "seconds"],
        "properties": {"id": {"type": "string"}, "source": {"type": "string"}, "target": {"type": "string"},
                       "status": {"enum": ["done", "skipped", "failed"]}, "reason": {"type": ["string", "null"]},
                       "seconds": {"type": "number", "minimum": 0}}}


# --- the manifest's top level ---------------------------------------------------------------------------

VALID_MANIFEST = {"version": 1, "unit_id": "db.t", "source": "file:///data/t", "run_id": "r1",
                  "committed_at": "2026-01-01T00:00:00+00:00", "files": [VALID],
                  "owner": {"namespace": "team", "replica": "orders", "uid": "u-1", "catalog": "sales"}}
owner_edges = [None, [], {}, {"namespace": "team", "replica": "orders", "uid": "u-1"},
               {"namespace": "team", "replica": "orders", "uid": "u-1", "catalog": ""},
               {"namespace": "team", "replica": "orders", "uid": "u-1", "catalog": 1},
               {"namespace": "team", "replica": "orders", "uid": "u-1", "catalog": "sales", "extra": "x"}]
manifest_edges = {
    "version": [1, 1.0, True, 2, "1", None], "unit_id": ["", "u", 1], "source": ["", "s3://b/k"], "run_id": ["", None],
    "committed_at": ["2026-01-01T00:00:00Z", "2026-02-30T00:00:00Z", "yesterday", 0], "files": [[], {}, None],
    "owner": owner_edges,
}
MANIFEST_CHANGES = [*({**VALID_MANIFEST, key: value} for key, values in manifest_edges.items() for value in values),
                    *({k: v for k, v in VALID_MANIFEST.items() if k != key} for key in VALID_MANIFEST),
                    {**VALID_MANIFEST, "extra": 1}]


@pytest.mark.parametrize("document", MANIFEST_CHANGES, ids=repr)
def test_each_edge_of_a_manifests_top_level_is_judged_as_the_schema_does(document: dict) -> None:
    if FULL.is_valid(document):
        documents.validate(documents.UNIT_MANIFEST, document)
    else:
        with pytest.raises(DocumentError):
            documents.validate(documents.UNIT_MANIFEST, document)
    if document.get("version") == 1:  # validate() refuses other versions before either check
        assert documents.manifest_top_conforms(document) == FULL.is_valid(document)


def test_the_manifests_top_level_is_the_one_its_fast_check_implements() -> None:
    def bare(node):
        if isinstance(node, dict):
            return {k: bare(v) for k, v in node.items() if k not in ("description", "items")}
        return node

    text = {"type": "string", "minLength": 1}
    top = bare(documents.schema(documents.UNIT_MANIFEST))
    assert {k: v for k, v in top.items() if k not in ("$schema", "$id", "title")} == {
        "type": "object", "required": ["version", "unit_id", "source", "run_id", "committed_at", "files"],
        "additionalProperties": False,
        "properties": {"version": {"const": 1}, "unit_id": text, "source": text, "run_id": text,
                       "committed_at": {"type": "string", "format": "date-time"}, "files": {"type": "array"},
                       "owner": {"type": "object", "required": ["namespace", "replica", "uid", "catalog"],
                                 "additionalProperties": False,
                                 "properties": {"namespace": text, "replica": text, "uid": text, "catalog": text}}}}
