"""The CRDs' schemas applied in Python (specs/schema.py): each constraint the API server applies, with Go's
reading of a pattern. (tests/operator/test_spec_parity.py compares whole verdicts with the API server.)"""

from __future__ import annotations

import pytest

from hivecat.specs.errors import SpecInvalid
from hivecat.specs.schema import check_spec, spec_schema, violations

NAME = {"type": "string", "maxLength": 8, "pattern": "^[a-z]+$"}


def problems(schema: dict, value: object) -> list[str]:
    return list(violations(schema, value, "spec.x"))


def test_a_pattern_ends_where_the_text_ends_as_in_go() -> None:
    assert problems(NAME, "orders") == []
    assert problems(NAME, "orders\n")  # Python's own `$` would match before the line break
    assert problems({"type": "string", "pattern": "^[$a]+$"}, "$a") == []  # a `$` in a class is a character


@pytest.mark.parametrize("schema, value", [
    (NAME, "toolongname"), (NAME, ""), (NAME, 7), ({"type": "integer", "minimum": 1}, 0),
    ({"type": "integer", "maximum": 3}, 4), ({"type": "integer"}, True), ({"type": "boolean"}, "true"),
    ({"type": "string", "enum": ["DryRun", "Auto"]}, "auto"), ({"type": "string", "minLength": 1}, ""),
    ({"type": "array", "maxItems": 1, "items": NAME}, ["a", "b"]),
    ({"type": "array", "minItems": 1, "items": NAME}, []),
    ({"type": "array", "x-kubernetes-list-type": "set", "items": NAME}, ["a", "a"]),
    ({"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["type"],
      "items": {"type": "object", "properties": {"type": NAME}}}, [{"type": "a"}, {"type": "a"}]),
    ({"type": "object", "required": ["name"], "properties": {"name": NAME}}, {}),
    ({"type": "object", "properties": {"name": NAME}}, {"nmae": "a"}),
    ({"type": "object", "maxProperties": 1, "additionalProperties": NAME}, {"a": "a", "b": "b"}),
    ({"x-kubernetes-int-or-string": True, "pattern": "^[0-9]+m?$"}, "1.5"),
    ({"type": "string"}, None),
])
def test_each_constraint_refuses_a_value_outside_it(schema: dict, value: object) -> None:
    assert len(problems(schema, value)) == 1, problems(schema, value)


def test_values_inside_the_constraints_pass() -> None:
    assert problems({"x-kubernetes-int-or-string": True, "pattern": "^[0-9]+m?$"}, 2) == []  # a pattern is for strings
    assert problems({"type": "number", "minimum": 0}, 0.5) == []
    assert problems({"type": "object", "x-kubernetes-preserve-unknown-fields": True}, {"any": 1}) == []
    assert problems({"type": "string", "nullable": True}, None) == []


def test_a_null_field_is_absent_as_the_api_server_prunes_it() -> None:
    obj = {"type": "object", "required": ["a"], "properties": {"a": NAME, "b": NAME}}
    assert problems(obj, {"a": "x", "b": None}) == []
    assert problems(obj, {"a": None}) == ["spec.x.a is required"]
    assert problems({"type": "array", "items": NAME}, [None]) == ["spec.x[0] must not be null"]


def test_a_resource_is_checked_against_its_own_crd() -> None:
    body = {"spec": {"catalogRef": {"name": "sales"}, "filesystem": "hdfs://nn:8020/w", "repair": "Sometimes"}}
    with pytest.raises(SpecInvalid) as refused:
        check_spec("ClusterStorage", body)
    assert refused.value.reason == "InvalidField" and "spec.repair" in refused.value.message
    check_spec("ClusterStorage", {"spec": {**body["spec"], "repair": "DryRun"}})
    assert set(spec_schema("TableReplica")["properties"]) >= {"primary", "secondaries", "schedule"}
