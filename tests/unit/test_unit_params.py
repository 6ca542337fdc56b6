"""UnitParams and the checks every backend makes of a batch before writing (catalog/unit_params.py)."""

from __future__ import annotations

import pytest

from hivecat.catalog.model import UnitParams
from hivecat.catalog.partition_names import partition_name
from hivecat.catalog.unit_params import split_units


def test_a_unit_is_immutable_and_takes_a_mapping_or_pairs() -> None:
    unit = UnitParams(["2026-11-01"], "s3://lake/t/dt=2026-11-01", {"a": "1", "b": "2"}, ["c"])
    assert unit == UnitParams(("2026-11-01",), "s3://lake/t/dt=2026-11-01", (("a", "1"), ("b", "2")), ("c",))
    assert unit.set == (("a", "1"), ("b", "2")) and unit.params == {"a": "1", "b": "2"}
    assert unit.keys == ("a", "b", "c") and hash(unit) == hash(UnitParams(("2026-11-01",), unit.expected_location,
                                                                          unit.set, ("c",)))
    with pytest.raises(AttributeError):
        unit.set = ()  # type: ignore[misc]


@pytest.mark.parametrize("set_, remove, message", [
    ({"a": "1"}, ("a",), "both set and removed"),
    ((("a", "1"), ("a", "2")), (), "set twice"),
    ({"": "1"}, (), "non-empty string keys"),
    ({"a": 1}, (), "string values"),
])
def test_contradictory_units_are_refused(set_, remove, message) -> None:
    with pytest.raises(ValueError, match=message):
        UnitParams(None, None, set_, remove)


def test_conflict_and_applied() -> None:
    unit = UnitParams(None, "s3://lake/t", {"a": "new"}, ("gone",))
    assert unit.conflict("s3://lake/t") is None
    assert unit.conflict("s3://lake/T") == "location is now 's3://lake/T', expected 's3://lake/t'"  # exact
    assert unit.conflict(None) == "location is now None, expected 's3://lake/t'"
    assert UnitParams(None, None, {"a": "1"}).conflict("anything") is None
    assert unit.applied({"a": "old", "gone": "x", "kept": "y"}) == {"a": "new", "kept": "y"}


def test_split_units_refuses_duplicates_and_wrong_arity() -> None:
    table, parts = split_units([UnitParams(None, None, {"a": "1"}), UnitParams(("x", "1"), None, {"a": "1"})], 2, "d.t")
    assert [u.partition_values for u in table] == [None] and [u.partition_values for u in parts] == [("x", "1")]
    with pytest.raises(ValueError, match="listed twice"):
        split_units([UnitParams(None, None), UnitParams(None, None)], 0, "d.t")
    with pytest.raises(ValueError, match="d.t has 0 partition keys"):
        split_units([UnitParams(("x",), None)], 0, "d.t")


def test_partition_names_are_hives() -> None:
    assert partition_name(["DT", "region"], ["2026-11-01", "eu/west"]) == "dt=2026-11-01/region=eu%2Fwest"
    assert partition_name(["k"], [""]) == "k=__HIVE_DEFAULT_PARTITION__"
    assert partition_name(["k"], ["a=b:c%"]) == "k=a%3Db%3Ac%25"
