"""parse_hive_catalog: a HiveCatalog body → frozen dataclasses with the CRD's defaults, and SpecInvalid with
a stable reason for everything the CRD's schema and CEL rules would have refused (a body can arrive
without them: an older CRD, a cluster without CEL)."""

from __future__ import annotations

import copy
import dataclasses
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from hivecat.kinds import ANNOTATION_CONFIRM_MODE_SWITCH
from hivecat.specs.mode import GLUE_CLIENT_FACTORY
from hivecat.specs import (DatabaseSpec, GlueCredentialsRef, GlueSpec, HiveCatalogSpec, MetastoreSpec,
                           SecretKeyRef, SpecInvalid, parse_hive_catalog)
from hivecat.specs import hivecatalog as spec_module

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = sorted((REPO / "examples").glob("hivecatalog-*.yaml"))
IMAGE = "apache/hive:3.1.3"
FACTORY = {"hive.metastore.client.factory.class": GLUE_CLIENT_FACTORY}


def body(spec: dict[str, Any], **meta: Any) -> dict[str, Any]:
    return {"apiVersion": "hivecatalog.io/v1alpha1", "kind": "HiveCatalog",
            "metadata": {"name": "sales", "namespace": "data", "uid": "u-1", "generation": 3, **meta},
            "spec": spec}


def postgres(**extra: Any) -> dict[str, Any]:
    return {"type": "postgresql", "host": "pg.data", "name": "hms", "user": "hive",
            "passwordSecretRef": {"name": "sales-db"}, **extra}


def refused(spec: dict[str, Any], **meta: Any) -> SpecInvalid:
    with pytest.raises(SpecInvalid) as caught:
        parse_hive_catalog(body(spec, **meta), default_image=IMAGE)
    assert caught.value.message and caught.value.reason[0].isupper() and " " not in caught.value.reason
    assert "--" not in caught.value.message  # words, never a CLI flag
    return caught.value


@pytest.mark.parametrize("path", EXAMPLES, ids=[p.name for p in EXAMPLES])
def test_every_example_parses(path: Path) -> None:
    spec = parse_hive_catalog(yaml.safe_load(path.read_text()), default_image=IMAGE)
    expected = {"analytics": "Thrift", "dev": "Thrift", "finance": "Thrift", "lake": "Glue", "migration": "Hybrid"}
    assert spec.mode == expected[spec.name] and spec.namespace == "default"
    assert spec.metastore.hive_version == "3.1.3" and spec.metastore.hive_home == "/opt/hive"


def test_a_minimal_thrift_catalog_gets_the_crds_defaults() -> None:
    spec = parse_hive_catalog(body({"database": postgres()}), default_image=IMAGE)
    assert spec == HiveCatalogSpec(
        name="sales", namespace="data", uid="u-1", generation=3, suspend=False, explicit_mode=None,
        mode="Thrift", spark_side_completed=False, configurations={},
        metastore=MetastoreSpec(image=IMAGE, image_pull_policy=None, replicas=1, resources={}, warehouse_dir=None,
                                port=9083, hive_version="3.1.3", hive_home="/opt/hive"),
        database=DatabaseSpec(type="postgresql", host="pg.data", port=5432, name="hms", user="hive",
                              password=SecretKeyRef(name="sales-db", key="password")),
        glue=None, confirm_mode_switch=False)
    assert spec.database is not None and spec.database.dialect == "postgresql"


@pytest.mark.parametrize("kind, port, dialect", [
    ("mysql", 3306, "mysql"), ("mariadb", 3306, "mysql"), ("postgresql", 5432, "postgresql")])
def test_database_ports_and_dialects(kind: str, port: int, dialect: str) -> None:
    spec = parse_hive_catalog(body({"database": postgres(type=kind)}), default_image=IMAGE)
    assert spec.database is not None and (spec.database.port, spec.database.dialect) == (port, dialect)
    explicit = parse_hive_catalog(body({"database": postgres(type=kind, port=6000)}), default_image=IMAGE)
    assert explicit.database is not None and explicit.database.port == 6000


def test_derby_needs_nothing_but_its_type() -> None:
    spec = parse_hive_catalog(body({"database": {"type": "derby"}}), default_image=IMAGE)
    assert spec.database == DatabaseSpec("derby", None, 0, None, None, None) and spec.database.dialect == "derby"


def test_everything_written_is_taken() -> None:
    spec = parse_hive_catalog(body({
        "suspend": True, "mode": "Hybrid",
        "configurations": [{"classification": "spark-defaults", "properties": {"spark.executor.cores": "2"}}],
        "metastore": {"image": "registry.example.com/hive:4.0.1", "imagePullPolicy": "Always", "replicas": 3,
                      "resources": {"requests": {"cpu": "500m"}}, "warehouseDir": "s3a://b/w", "port": 9999,
                      "hiveVersion": "4.0.1", "hiveHome": "/usr/lib/hive/"},
        "database": postgres(passwordSecretRef={"name": "db", "key": "pw"}),
        "glue": {"region": "eu-west-1", "catalogId": "123456789012", "endpoint": "https://glue.vpce.example",
                 "credentialsSecretRef": {"name": "aws"}, "defaultDatabaseLocation": "s3://b/w"},
    }, annotations={ANNOTATION_CONFIRM_MODE_SWITCH: "true"}), default_image=IMAGE)
    assert (spec.suspend, spec.explicit_mode, spec.mode) == (True, "Hybrid", "Hybrid") and spec.confirm_mode_switch
    assert spec.configurations == {"spark-defaults": {"spark.executor.cores": "2"}}
    assert spec.metastore == MetastoreSpec("registry.example.com/hive:4.0.1", "Always", 3,
                                           {"requests": {"cpu": "500m"}}, "s3a://b/w", 9999, "4.0.1", "/usr/lib/hive")
    assert spec.database is not None and spec.database.password == SecretKeyRef("db", "pw")
    assert spec.glue == GlueSpec("eu-west-1", "123456789012", "https://glue.vpce.example",
                                 GlueCredentialsRef("aws", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"), None,
                                 "s3://b/w")


@pytest.mark.parametrize("value, confirmed", [("true", True), ("True", True), ("false", False), ("yes", False)])
def test_the_mode_switch_is_confirmed_only_by_true(value: str, confirmed: bool) -> None:
    spec = parse_hive_catalog(body({"database": postgres()}, annotations={ANNOTATION_CONFIRM_MODE_SWITCH: value}),
                              default_image=IMAGE)
    assert spec.confirm_mode_switch is confirmed


def test_glue_from_hive_site_alone_says_the_spark_side_was_completed() -> None:
    spec = parse_hive_catalog(body({"configurations": [{"classification": "hive-site", "properties": FACTORY}],
                                    "glue": {"region": "eu-west-1", "roleArn": "arn:aws:iam::123456789012:role/r"}}),
                              default_image=IMAGE)
    assert (spec.mode, spec.spark_side_completed, spec.database) == ("Glue", True, None)
    assert spec.glue is not None and spec.glue.role_arn == "arn:aws:iam::123456789012:role/r"


def test_the_spec_is_frozen_and_does_not_share_the_body() -> None:
    raw = body({"database": postgres(), "metastore": {"resources": {"limits": {"memory": "2Gi"}}},
                "configurations": [{"classification": "hive-site", "properties": {"a": "1"}}]})
    spec = parse_hive_catalog(raw, default_image=IMAGE)
    kept = copy.deepcopy(spec)
    raw["spec"]["metastore"]["resources"]["limits"]["memory"] = "9Gi"
    raw["spec"]["configurations"][0]["properties"]["a"] = "2"
    assert spec == kept
    with pytest.raises(dataclasses.FrozenInstanceError):
        spec.mode = "Glue"  # type: ignore[misc]


# --- what the CRD would have refused --------------------------------------------------------------------

@pytest.mark.parametrize("spec, reason", [
    ({"mode": "Thrift", "database": postgres(),
      "configurations": [{"classification": "hive-site", "properties": FACTORY}]}, "ModeContradiction"),
    ({"configurations": [{"classification": "spark-hive-site", "properties": FACTORY}],
      "glue": {"region": "eu-west-1"}}, "DatabaseMissing"),
    ({}, "DatabaseMissing"),
    ({"mode": "Glue"}, "GlueMissing"),
    ({"mode": "Hybrid", "database": postgres()}, "GlueMissing"),
    ({"mode": "Glue", "glue": {}}, "GlueMissing"),
    ({"database": {"type": "derby"}, "metastore": {"replicas": 2}}, "DerbyReplicas"),
    ({"database": postgres(), "configurations": [{"classification": "core-site", "properties": {}}]},
     "UnknownClassification"),
    ({"database": postgres(), "configurations": [{"classification": "hive-site"}, {"classification": "hive-site"}]},
     "DuplicateClassification"),
    ({"database": {"type": "mariadb", "host": "db"}}, "DatabaseIncomplete"),
    ({"database": postgres(), "metastore": {"hiveVersion": "latest"}}, "InvalidHiveVersion"),
    ({"database": postgres(), "metastore": {"hiveHome": "opt/hive; rm -rf /"}}, "InvalidField"),
    ({"database": postgres(), "metastore": {"replicas": "2"}}, "InvalidField"),
    ({"database": postgres(), "metastore": {"warehouseDir": "/no/scheme"}}, "InvalidField"),
    ({"database": postgres(), "configurations": [{"classification": "hive-site", "properties": {"a": 1}}]},
     "InvalidField"),
    ({"database": {"type": "oracle"}}, "InvalidField"),
    ({"mode": "Glue", "glue": {"region": "eu-west-1", "roleArn": "arn:aws:iam::123456789012:role/r",
                               "credentialsSecretRef": {"name": "aws"}}}, "GlueCredentialsConflict"),
    ({"mode": "Iceberg", "database": postgres()}, "InvalidMode"),
])
def test_refused_with_a_reason(spec: dict[str, Any], reason: str) -> None:
    assert refused(spec).reason == reason


def test_derby_with_one_or_no_replica_is_fine() -> None:
    for replicas in (0, 1):
        spec = parse_hive_catalog(body({"database": {"type": "derby"}, "metastore": {"replicas": replicas}}),
                                  default_image=IMAGE)
        assert spec.metastore.replicas == replicas


@pytest.mark.parametrize("name", ["javax.jdo.option.ConnectionPassword", "fs.s3a.secret.key",
                                  "fs.s3a.access.key", "fs.azure.account.key.x.blob.core.windows.net",
                                  "fs.s3a.session.token"])
def test_secret_looking_properties_are_refused_without_echoing_their_values(name: str) -> None:
    invalid = refused({"database": postgres(),
                       "configurations": [{"classification": "spark-hive-site", "properties": {name: "hunter2"}}]})
    assert invalid.reason == "SecretInConfiguration" and name in invalid.message
    assert "hunter2" not in invalid.message and "hunter2" not in repr(invalid)


# Every class of control character the CRD's rule refuses: NUL, other C0, tab, LF, CR, ESC, the last C0, DEL.
CONTROL_CHARACTERS = {"NUL": "\x00", "SOH": "\x01", "TAB": "\t", "LF": "\n", "CR": "\r", "ESC": "\x1b",
                      "US": "\x1f", "DEL": "\x7f"}


@pytest.mark.parametrize("part", ["name", "value"])
@pytest.mark.parametrize("character", CONTROL_CHARACTERS.values(), ids=CONTROL_CHARACTERS)
@pytest.mark.parametrize("classification", ["hive-site", "spark-hive-site", "spark-defaults"])
def test_control_characters_in_names_and_values_are_refused_in_one_line(classification: str, character: str,
                                                                         part: str) -> None:
    value = f"kept-out{character}spark.driver.extraJavaOptions -Dinjected=true"
    name = f"spark.app{character}name" if part == "name" else "spark.app.name"
    properties = {"hive.metastore.try.direct.sql": "true", name: value if part == "value" else "nightly"}
    invalid = refused({"database": postgres(),
                       "configurations": [{"classification": classification, "properties": properties}]})
    assert invalid.reason == "InvalidField"
    assert (classification in invalid.message, f"the {part} of property" in invalid.message,
            f"U+{ord(character):04X}" in invalid.message) == (True, True, True), invalid.message
    assert invalid.message.isprintable()  # one line: the name is shown escaped
    assert "kept-out" not in invalid.message and "injected" not in invalid.message  # never the value


def test_printable_unicode_quotes_and_markup_are_fine_in_configurations() -> None:
    properties = {"hive.metastore.warehouse.dir": "s3a://dépôt/仓库 <&> \"quoted\" 'single' \\ $x ${y}",
                  "spark.app.name": "naïve\u00a0\u2028app"}  # NBSP and LINE SEPARATOR: printable for the rule
    spec = parse_hive_catalog(body({"database": postgres(), "configurations": [
        {"classification": "hive-site", "properties": properties}]}), default_image=IMAGE)
    assert spec.configurations == {"hive-site": properties}


def test_spec_invalid_is_one_class_wherever_it_is_imported_from() -> None:
    assert spec_module.SpecInvalid is SpecInvalid
    error = SpecInvalid("GlueMissing", "words")
    assert (error.reason, error.message, str(error)) == ("GlueMissing", "words", "words")


@pytest.mark.parametrize("first", ["hivecat.specs.mode", "hivecat.specs", "hivecat.specs.hivecatalog",
                                   "hivecat.workloads.client_config"])
def test_the_modules_import_in_any_order(first: str) -> None:
    """specs.mode and the spec parsers import each other's names: neither order may break."""
    code = (f"import {first}; from hivecat.specs import parse_hive_catalog; "
            "from hivecat.specs.mode import derive_mode")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
