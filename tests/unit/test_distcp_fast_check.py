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
