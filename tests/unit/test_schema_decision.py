"""The schema decision (init / upgrade / nothing / refuse), the Hive release -> schema version rule, and the
schema Job's command and manifest. Pure: no database, no server (one test runs the command's shell script
with a stand-in schematool that only prints its arguments)."""

from __future__ import annotations

import dataclasses
import json
import re
import os
import subprocess
from pathlib import Path

import pytest

from hivecat.catalog.schema_version import SchemaState
from hivecat.workloads.schema import Init, Ready, Refuse, Upgrade, decide_schema, schema_version_of
from hivecat.workloads.labels import MAX_NAME, catalog_labels
from hivecat.workloads.metastore import metastore_config_map, metastore_config_map_name
from hivecat.workloads.schema_job import (CONF_DIR, PASSWORD_ENV, SCRIPT, schema_command, schema_job,
                                          schema_job_name)
from hivecat.specs.hivecatalog import DatabaseSpec, HiveCatalogSpec, MetastoreSpec, SecretKeyRef, parse_hive_catalog

EMPTY = SchemaState(has_tables=False, version=None, version_rows=0)


def state(version: str | None, rows: int = 1, has_tables: bool = True) -> SchemaState:
    return SchemaState(has_tables, version, rows if version is not None else 0)


def make_spec(name: str = "sales", db_type: str = "mariadb", user: str = "hive",
              hive_version: str = "4.0.1") -> HiveCatalogSpec:
    metastore = MetastoreSpec(image="apache/hive:4.0.1", image_pull_policy="IfNotPresent", replicas=1,
                              resources={}, warehouse_dir="s3a://bucket/warehouse", port=9083,
                              hive_version=hive_version, hive_home="/opt/hive")
    database = DatabaseSpec(type=db_type, host="db.example", port=3306, name="metastore", user=user,
                            password=SecretKeyRef(name="metastore-db", key="password"))
    return HiveCatalogSpec(name=name, namespace="data", uid="0000-1111", generation=1, suspend=False,
                           explicit_mode=None, mode="Thrift", spark_side_completed=False, configurations={},
                           metastore=metastore, database=database, glue=None, confirm_mode_switch=False)


# --- which schema a Hive release uses ------------------------------------------------------------------

@pytest.mark.parametrize("hive, schema", [
    ("2.3.10", "2.3.0"), ("3.1.3", "3.1.0"), ("4.0.1", "4.0.0"), ("4.1.0", "4.1.0"), ("1.2.2", "1.2.0"),
    ("3.1.0", "3.1.0"), ("4.0.0-beta-1", "4.0.0-beta-1"), (" 4.0.1 ", "4.0.0"),
])
def test_schema_version_of_a_release(hive: str, schema: str) -> None:
    assert schema_version_of(hive) == schema


@pytest.mark.parametrize("hive", ["4", "3.1", "latest", "4.0.1-SNAPSHOT", "", "v4.0.1"])
def test_schema_version_of_refuses_what_is_not_a_hive_version(hive: str) -> None:
    with pytest.raises(ValueError, match="not a Hive version"):
        schema_version_of(hive)


# --- the decision ------------------------------------------------------------------------------------

def test_an_empty_database_is_initialized_to_the_images_schema() -> None:
    assert decide_schema(EMPTY, "4.0.1") == Init("4.0.0")
    assert decide_schema(EMPTY, "3.1.3") == Init("3.1.0")


@pytest.mark.parametrize("found, hive, decision", [
    ("3.1.0", "4.0.1", Upgrade("3.1.0", "4.0.0")),
    ("2.3.0", "3.1.3", Upgrade("2.3.0", "3.1.0")),
    ("2.3.0", "4.0.1", Upgrade("2.3.0", "4.0.0")),
    ("4.0.0-beta-1", "4.0.1", Upgrade("4.0.0-beta-1", "4.0.0")),   # a pre-release sorts before its release
    ("4.0.0-alpha-2", "4.0.0-beta-1", Upgrade("4.0.0-alpha-2", "4.0.0-beta-1")),
    ("3.10.0", "4.0.1", Upgrade("3.10.0", "4.0.0")),               # numbers, not strings
])
def test_an_older_schema_is_upgraded_from_the_version_read(found: str, hive: str, decision: Upgrade) -> None:
    assert decide_schema(state(found), hive) == decision


@pytest.mark.parametrize("found, hive", [("4.0.0", "4.0.1"), ("3.1.0", "3.1.3"), ("4.1.0", "4.1.0"),
                                         (" 3.1.0 ", "3.1.3")])
def test_the_images_schema_needs_nothing(found: str, hive: str) -> None:
    assert decide_schema(state(found), hive) == Ready(found.strip())


@pytest.mark.parametrize("found, hive", [("4.0.0", "3.1.3"), ("4.1.0", "4.0.1"), ("4.0.0", "4.0.0-beta-1"),
                                         ("3.1.0", "2.3.10")])
def test_a_newer_schema_than_the_image_is_refused(found: str, hive: str) -> None:
    decision = decide_schema(state(found), hive)
    assert isinstance(decision, Refuse) and decision.reason == "SchemaNewerThanImage"
    assert found in decision.message and "downgrade" in decision.message


def test_tables_without_a_version_row_are_refused_with_what_to_do() -> None:
    for found in (state(None, has_tables=True), SchemaState(True, None, 0)):
        decision = decide_schema(found, "4.0.1")
        assert isinstance(decision, Refuse) and decision.reason == "SchemaWithoutVersion"
        assert "autoCreateAll" in decision.message and "empty database" in decision.message


def test_more_than_one_version_row_is_ambiguous() -> None:
    decision = decide_schema(SchemaState(True, None, 2), "4.0.1")
    assert isinstance(decision, Refuse) and decision.reason == "AmbiguousVersion"
    assert "2 rows" in decision.message


@pytest.mark.parametrize("found", ["garbage", "3.1", "4.0.0-SNAPSHOT", ""])
def test_an_unparseable_version_is_refused(found: str) -> None:
    decision = decide_schema(state(found), "4.0.1")
    assert isinstance(decision, Refuse) and decision.reason == "SchemaVersionUnknown"


def test_an_invalid_hive_version_is_refused() -> None:
    decision = decide_schema(EMPTY, "latest")
    assert isinstance(decision, Refuse) and decision.reason == "InvalidHiveVersion"


@pytest.mark.parametrize("found", [state(None), state("garbage"), state("9.9.9"), state("1.2.0"),
                                   SchemaState(True, None, 3), SchemaState(True, "4.0.0", 2)])
def test_never_init_over_existing_tables(found: SchemaState) -> None:
    assert not isinstance(decide_schema(found, "4.0.1"), Init)


def test_refusal_messages_name_no_cli_flag() -> None:
    for found in (state(None), state("garbage"), state("9.9.9"), SchemaState(True, None, 2)):
        decision = decide_schema(found, "4.0.1")
        assert isinstance(decision, Refuse)
        assert not any(word.startswith("-") for word in decision.message.split()), decision.message


# --- the command -------------------------------------------------------------------------------------

def test_init_command_on_mariadb() -> None:
    assert schema_command(make_spec(), Init("4.0.0")) == [
        "sh", "-c", SCRIPT, "schematool", "-dbType", "mysql", "-initSchema", "-userName", "hive"]


def test_upgrade_command_on_postgresql() -> None:
    assert schema_command(make_spec(db_type="postgresql"), Upgrade("3.1.0", "4.0.0"))[4:] == [
        "-dbType", "postgres", "-upgradeSchemaFrom", "3.1.0", "-userName", "hive"]


def test_the_script_passes_no_password() -> None:
    """schematool reads the password through hive-site.xml (a reference to the env var), not -passWord."""
    assert SCRIPT == 'exec "$HIVE_HOME/bin/schematool" "$@"'
    assert PASSWORD_ENV not in SCRIPT and "-passWord" not in SCRIPT


@pytest.mark.parametrize("decision", [Ready("4.0.0"), Refuse("SchemaNewerThanImage", "no")])
def test_no_command_or_job_without_something_to_run(decision) -> None:
    with pytest.raises(ValueError):
        schema_command(make_spec(), decision)
    with pytest.raises(ValueError):
        schema_job(make_spec(), decision)


def test_no_schema_job_for_derby() -> None:
    with pytest.raises(ValueError, match="derby"):
        schema_command(make_spec(db_type="derby"), Init("4.0.0"))


def test_no_schema_job_without_a_database() -> None:
    spec = dataclasses.replace(make_spec(), database=None)
    with pytest.raises(ValueError, match="Glue"):
        schema_job(spec, Init("4.0.0"))


def test_the_shell_passes_arguments_intact_and_no_password(tmp_path: Path) -> None:
    """The pod's shell, with a stand-in schematool that prints its arguments one per line."""
    (tmp_path / "bin").mkdir()
    tool = tmp_path / "bin" / "schematool"
    tool.write_text('#!/bin/sh\nfor a in "$@"; do printf "%s\\n" "$a"; done\n')
    tool.chmod(0o755)
    password = "p a$s'w\"o`rd;$(id)"
    spec = make_spec(user="hive user")
    out = subprocess.run(schema_command(spec, Upgrade("3.1.0", "4.0.0")), capture_output=True, text=True,
                         check=True, env={**os.environ, "HIVE_HOME": str(tmp_path), PASSWORD_ENV: password})
    assert out.stdout.splitlines() == ["-dbType", "mysql", "-upgradeSchemaFrom", "3.1.0", "-userName", "hive user"]
    assert password not in out.stdout


# --- the Job -----------------------------------------------------------------------------------------

def test_job_names_are_deterministic_per_action_and_version() -> None:
    spec = make_spec()
    assert schema_job_name(spec, Init("3.1.0")) == "sales-schema-init-3-1-0"
    assert schema_job_name(spec, Upgrade("2.3.0", "3.1.0")) == "sales-schema-upgrade-2-3-0-to-3-1-0"
    assert schema_job_name(spec, Init("4.0.0-beta-1")) == "sales-schema-init-4-0-0-beta-1"
    assert schema_job_name(spec, Init("3.1.0")) == schema_job_name(make_spec(), Init("3.1.0"))
    assert len({schema_job_name(spec, d) for d in (Init("3.1.0"), Init("4.0.0"), Upgrade("3.1.0", "4.0.0"),
                                                   Upgrade("2.3.0", "4.0.0"))}) == 4


def test_long_catalog_names_give_distinct_job_names_within_63_characters() -> None:
    long_a, long_b = "a" * 60 + "-one", "a" * 60 + "-two"
    decision = Upgrade("4.0.0-alpha-2", "4.0.0-beta-1")
    names = {schema_job_name(make_spec(name=n), decision) for n in (long_a, long_b, "x" * 253)}
    assert len(names) == 3
    for name in names:
        assert len(name) <= MAX_NAME and name.endswith("-schema-upgrade-4-0-0-alpha-2-to-4-0-0-beta-1")
        assert name[0].isalnum() and name[-1].isalnum()


def test_job_manifest() -> None:
    spec = make_spec()
    job = schema_job(spec, Upgrade("3.1.0", "4.0.0"))
    assert (job["apiVersion"], job["kind"]) == ("batch/v1", "Job")
    assert job["metadata"]["name"] == "sales-schema-upgrade-3-1-0-to-4-0-0"
    assert job["metadata"]["namespace"] == "data"
    assert job["metadata"]["labels"] == catalog_labels("sales", "schema")
    assert job["spec"]["template"]["metadata"]["labels"] == catalog_labels("sales", "schema")
    assert job["spec"]["backoffLimit"] <= 2
    assert "ttlSecondsAfterFinished" not in job["spec"]
    pod = job["spec"]["template"]["spec"]
    assert pod["restartPolicy"] == "Never"
    (container,) = pod["containers"]
    assert container["image"] == "apache/hive:4.0.1"
    assert container["command"] == schema_command(spec, Upgrade("3.1.0", "4.0.0"))
    env = {e["name"]: e for e in container["env"]}
    assert env["HIVE_CONF_DIR"]["value"] == CONF_DIR == "/etc/hive-conf"
    assert env["HIVE_HOME"]["value"] == "/opt/hive"
    assert env[PASSWORD_ENV] == {"name": PASSWORD_ENV, "valueFrom": {"secretKeyRef": {"name": "metastore-db",
                                                                                      "key": "password"}}}
    (mount,) = container["volumeMounts"]
    (volume,) = pod["volumes"]
    assert (mount["mountPath"], mount["name"]) == (CONF_DIR, volume["name"])
    assert volume["configMap"] == {"name": metastore_config_map_name(spec)}


def test_no_password_in_the_job_manifest() -> None:
    """The manifest only references the Secret; nothing in it is a password or a password setting, and its
    command never asks for one (schematool finds the reference in the mounted hive-site.xml)."""
    spec = make_spec()
    job = schema_job(spec, Init("4.0.0"))
    text = json.dumps(job)
    assert "ConnectionPassword" not in text and "-passWord" not in text
    (container,) = job["spec"]["template"]["spec"]["containers"]
    assert [e for e in container["env"] if e["name"] == PASSWORD_ENV and "value" in e] == []
    assert "${env.HIVECAT_DB_PASSWORD}</value>" in metastore_config_map(spec)["data"]["hive-site.xml"]


def test_job_from_a_parsed_catalog_uses_the_spec_defaults() -> None:
    """From a CR body as kopf gives it: hiveHome's default, the password Secret reference, no pull policy."""
    body = {"metadata": {"name": "lake", "namespace": "analytics", "uid": "u", "generation": 3},
            "spec": {"metastore": {"image": "apache/hive:3.1.3", "hiveVersion": "3.1.3"},
                     "database": {"type": "postgresql", "host": "pg", "name": "hms", "user": "hive",
                                  "passwordSecretRef": {"name": "pg-hive"}}}}
    spec = parse_hive_catalog(body, default_image="apache/hive:4.0.1")
    decision = decide_schema(SchemaState(True, "2.3.0", 1), spec.metastore.hive_version)
    job = schema_job(spec, decision)
    assert re.fullmatch(r"[a-z]([-a-z0-9]*[a-z0-9])?", job["metadata"]["name"])
    assert job["metadata"]["name"] == "lake-schema-upgrade-2-3-0-to-3-1-0"
    (container,) = job["spec"]["template"]["spec"]["containers"]
    assert "imagePullPolicy" not in container
    assert container["command"][4:] == ["-dbType", "postgres", "-upgradeSchemaFrom", "2.3.0", "-userName", "hive"]
    env = {e["name"]: e for e in container["env"]}
    assert env["HIVE_HOME"]["value"] == spec.metastore.hive_home
    assert env[PASSWORD_ENV]["valueFrom"]["secretKeyRef"] == {"name": "pg-hive", "key": spec.database.password.key}
