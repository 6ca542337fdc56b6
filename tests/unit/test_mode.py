"""The EMR rule: where the Glue client factory is set decides Thrift, Glue or Hybrid; an explicit spec.mode
must agree with it."""

from __future__ import annotations

import pytest

from hivecat.specs.mode import (FACTORY_PROPERTY, GLUE_CLIENT_FACTORY, ModeChoice, derive_mode,
                                    uses_glue_factory)
from hivecat.specs import SpecInvalid

GLUE_FACTORY = {FACTORY_PROPERTY: GLUE_CLIENT_FACTORY}


def configurations(hive: bool, spark: bool) -> dict[str, dict[str, str]]:
    return {
        "hive-site": {"hive.metastore.try.direct.sql": "true", **(GLUE_FACTORY if hive else {})},
        "spark-hive-site": dict(GLUE_FACTORY) if spark else {},
        "spark-defaults": {"spark.sql.catalogImplementation": "hive"},
    }


def test_the_factory_class_is_emrs() -> None:
    assert FACTORY_PROPERTY == "hive.metastore.client.factory.class"
    assert GLUE_CLIENT_FACTORY == "com.amazonaws.glue.catalog.metastore.AWSGlueDataCatalogHiveClientFactory"


@pytest.mark.parametrize("hive, spark, choice", [
    (True, True, ModeChoice("Glue", spark_side_completed=False)),
    (True, False, ModeChoice("Glue", spark_side_completed=True)),
    (False, True, ModeChoice("Hybrid", spark_side_completed=False)),
    (False, False, ModeChoice("Thrift", spark_side_completed=False)),
], ids=["both-Glue", "hive-only-Glue-completed", "spark-only-Hybrid", "neither-Thrift"])
def test_each_cell_of_the_table(hive: bool, spark: bool, choice: ModeChoice) -> None:
    assert derive_mode(configurations(hive, spark), None) == choice


@pytest.mark.parametrize("hive, spark, mode", [
    (True, True, "Glue"), (True, False, "Glue"), (False, True, "Hybrid"), (False, False, "Thrift")])
def test_an_explicit_mode_that_agrees_is_taken(hive: bool, spark: bool, mode: str) -> None:
    assert derive_mode(configurations(hive, spark), mode).mode == mode


@pytest.mark.parametrize("hive, spark, explicit", [
    (True, True, "Thrift"), (True, True, "Hybrid"), (True, False, "Thrift"), (True, False, "Hybrid"),
    (False, True, "Thrift"), (False, True, "Glue"),
])
def test_an_explicit_mode_that_contradicts_is_refused(hive: bool, spark: bool, explicit: str) -> None:
    with pytest.raises(SpecInvalid) as caught:
        derive_mode(configurations(hive, spark), explicit)
    assert caught.value.reason == "ModeContradiction"
    assert f"spec.mode is {explicit}" in caught.value.message and "--" not in caught.value.message


@pytest.mark.parametrize("explicit", ["Thrift", "Glue", "Hybrid"])
def test_without_a_factory_any_explicit_mode_goes(explicit: str) -> None:
    """Explicit Glue (or Hybrid) with no factory anywhere: the operator completes the client sides itself;
    that is what the user asked for, so no 'completed for you' warning."""
    assert derive_mode({}, explicit) == ModeChoice(explicit, spark_side_completed=False)
    assert derive_mode(configurations(False, False), explicit).mode == explicit


def test_explicit_glue_with_the_factory_in_hive_site_only_still_reports_the_completed_spark_side() -> None:
    assert derive_mode(configurations(True, False), "Glue") == ModeChoice("Glue", True)


def test_another_factory_class_is_not_glue() -> None:
    other = {"hive-site": {FACTORY_PROPERTY: "org.example.MyFactory"},
             "spark-hive-site": {FACTORY_PROPERTY: "org.example.MyFactory"}}
    assert derive_mode(other, None).mode == "Thrift"
    assert not uses_glue_factory(None) and not uses_glue_factory({})


def test_an_unknown_explicit_mode_is_refused() -> None:
    with pytest.raises(SpecInvalid) as caught:
        derive_mode({}, "Iceberg")
    assert caught.value.reason == "InvalidMode"
