"""HiveCatalog lifecycle on the real control plane: the Hybrid and no-factory cells of the EMR mode table, mode
switches (confirmed or not), bad Thrift specs, suspend, deletion held by a ClusterStorage, the status schema and
printer columns, and password rotation rolling the metastore.

No metastore JVM runs here: where a Thrift catalog needs a ready schema, the test writes the tables the
operator reads (a VERSION row for Hive 3.1.x, and a few metastore tables) into a scratch MariaDB database, so
the operator finds a current schema and goes on to the Deployment and Service. kwok marks the metastore's pods
Ready; the Thrift probe then goes to the address annotation (a closed port here), so such a catalog stays
Ready=False on BackendReachable, which none of these tests is about.
"""

from __future__ import annotations

import json
import time
import uuid
from typing import Any

import pytest
import sqlalchemy as sa
import yaml
from kube.clients import Client

from conftest import CRD_DIR
from hivecat.kinds import ANNOTATION_CONFIG_HASH, ANNOTATION_CONFIRM_MODE_SWITCH
from hivecat.local.net import free_port
from support import kube_resources
from support.kube_resources import (FACTORY, GLUE_FACTORY, apply, aws_secret, children, condition, events, get,
                                    status_of, wait_for, wait_reason)
from support.services import MotoServer

SECRET = "metastore-db"
HIVE_VERSION = "3.1.3"  # schema 3.1.0
CLOSED = "127.0.0.1:1"  # where the policy says the catalogs' metastores are reached: nothing answers there
NAMES = ("mixed", "plain", "sw", "bad", "s", "held", "cols", "rot")


def grants(moto: MotoServer | None = None) -> dict:
    """The namespace's CatalogPolicy grants: the metastores' address, local-dev's directory, moto's Glue."""
    found: dict[str, Any] = {"metastoreAddresses": [{"catalog": name, "address": CLOSED} for name in NAMES],
                             "storage": [{"prefix": "file:///data"}]}
    if moto is not None:
        found["glue"] = [{"region": moto.region, "endpoint": moto.endpoint}]
    return found


# --- the database -------------------------------------------------------------------------------------------

def ready_schema(db_url: str) -> None:
    """The tables the operator reads to decide the schema is current for Hive 3.1.3, plus a table with a row."""
    engine = sa.create_engine(db_url)
    with engine.begin() as conn:
        conn.execute(sa.text("CREATE TABLE VERSION (VER_ID BIGINT PRIMARY KEY, SCHEMA_VERSION VARCHAR(127) NOT NULL,"
                             " VERSION_COMMENT VARCHAR(255))"))
        conn.execute(sa.text("INSERT INTO VERSION VALUES (1, '3.1.0', 'Hive release version 3.1.0')"))
        conn.execute(sa.text("CREATE TABLE DBS (DB_ID BIGINT PRIMARY KEY, NAME VARCHAR(128))"))
        conn.execute(sa.text("INSERT INTO DBS VALUES (1, 'default')"))
        conn.execute(sa.text("CREATE TABLE TBLS (TBL_ID BIGINT PRIMARY KEY, DB_ID BIGINT, TBL_NAME VARCHAR(256))"))
        conn.execute(sa.text("INSERT INTO TBLS VALUES (1, 1, 'orders')"))
    engine.dispose()


def database_contents(db_url: str) -> dict[str, list[tuple]]:
    engine = sa.create_engine(db_url)
    with engine.connect() as conn:
        tables = sorted(sa.inspect(conn).get_table_names())
        contents = {t: sorted(tuple(r) for r in conn.execute(sa.text(f"SELECT * FROM `{t}`")).all()) for t in tables}
    engine.dispose()
    return contents


# --- objects ------------------------------------------------------------------------------------------------

def password_secret(password: str, key: str = "password") -> dict:
    return kube_resources.password_secret(SECRET, password, key)


def catalog(name: str, db_url: str, *, port: int | None = None, factory_in: tuple[str, ...] = (),
            moto: MotoServer | None = None, confirm: bool = False, suspend: bool | None = None,
            warehouse: str = "file:///tmp/warehouse") -> dict:
    url = sa.make_url(db_url)
    annotations = {}
    if confirm:
        annotations[ANNOTATION_CONFIRM_MODE_SWITCH] = "true"
    spec: dict[str, Any] = {
        "database": {"type": "mariadb", "host": url.host, "port": port or url.port or 3306, "name": url.database,
                     "user": url.username, "passwordSecretRef": {"name": SECRET}},
        "metastore": {"hiveVersion": HIVE_VERSION, "warehouseDir": warehouse}}
    if factory_in:
        spec["configurations"] = [{"classification": c, "properties": {FACTORY: GLUE_FACTORY}} for c in factory_in]
    if moto is not None:
        spec["glue"] = {"region": moto.region, "endpoint": moto.endpoint, "credentialsSecretRef": {"name": "aws"},
                        "defaultDatabaseLocation": "s3://lake/warehouse"}
    if suspend is not None:
        spec["suspend"] = suspend
    return {"apiVersion": "hivecatalog.io/v1alpha1", "kind": "HiveCatalog",
            "metadata": {"name": name, "annotations": annotations}, "spec": spec}


def deployment_shape(kubectl: Client, namespace: str, name: str) -> tuple | None:
    """What the operator writes of a Deployment (its uid and spec generation): the controllers keep moving its
    resourceVersion with status updates, which are none of the operator's doing."""
    found = get(kubectl, namespace, "deployment", name)
    return (found["metadata"]["uid"], found["metadata"]["generation"]) if found else None


# --- 1. the EMR table's Hybrid cell, and the no-factory cell ------------------------------------------------

def test_factory_only_in_spark_hive_site_runs_hybrid(kubectl: Client, namespace: str, run_operator,
                                                     metastore_db: str, moto: MotoServer) -> None:
    ready_schema(metastore_db)
    run_operator(namespace, grants=grants(moto))
    apply(kubectl, namespace, password_secret(sa.make_url(metastore_db).password), aws_secret(),
          catalog("mixed", metastore_db, factory_in=("spark-hive-site",), moto=moto))
    wait_for("the metastore Deployment", lambda: get(kubectl, namespace, "deployment", "mixed-metastore"))
    wait_for("the client ConfigMap", lambda: status_of(kubectl, namespace, "mixed").get("clientConfigMap"))
    status = status_of(kubectl, namespace, "mixed")
    endpoint = f"thrift://mixed-metastore.{namespace}.svc:9083"
    assert status["mode"] == "Hybrid" and status["endpoint"] == endpoint, status
    assert set(children(kubectl, namespace)) >= {"Deployment/mixed-metastore", "Service/mixed-metastore",
                                                 "ConfigMap/mixed-metastore-config", "ConfigMap/mixed-client",
                                                 "ConfigMap/mixed"}
    assert moto.client("glue").get_database(Name="default")["Database"]["LocationUri"] == "s3://lake/warehouse"
    files = kubectl.json("get", "-n", namespace, "configmap", "mixed-client")["data"]
    assert endpoint in files["hive-site.xml"] and GLUE_FACTORY not in files["hive-site.xml"]
    assert f"spark.hadoop.{FACTORY}" in files["spark-defaults.conf"]
    assert GLUE_FACTORY in files["spark-defaults.conf"] and endpoint not in files["spark-defaults.conf"]
    assert "testing" not in json.dumps(files)


def test_no_factory_anywhere_runs_thrift(kubectl: Client, namespace: str, run_operator, metastore_db: str) -> None:
    ready_schema(metastore_db)
    run_operator(namespace, grants=grants())
    plain = catalog("plain", metastore_db)
    plain["spec"]["configurations"] = [  # classifications, but no factory in either
        {"classification": "hive-site", "properties": {"hive.exec.dynamic.partition.mode": "nonstrict"}},
        {"classification": "spark-hive-site", "properties": {"hive.exec.dynamic.partition.mode": "nonstrict"}}]
    apply(kubectl, namespace, password_secret(sa.make_url(metastore_db).password), plain)
    wait_for("the metastore Deployment", lambda: get(kubectl, namespace, "deployment", "plain-metastore"))
    wait_for("the client ConfigMap", lambda: status_of(kubectl, namespace, "plain").get("clientConfigMap"))
    assert status_of(kubectl, namespace, "plain")["mode"] == "Thrift"
    assert {"Service/plain-metastore", "ConfigMap/plain-client"} <= set(children(kubectl, namespace))
    files = kubectl.json("get", "-n", namespace, "configmap", "plain-client")["data"]
    assert GLUE_FACTORY not in files["hive-site.xml"] + files["spark-defaults.conf"]


# --- 2. mode switches ---------------------------------------------------------------------------------------

def test_mode_switch_needs_confirmation_and_keeps_the_database(kubectl: Client, namespace: str, run_operator,
                                                               metastore_db: str, moto: MotoServer) -> None:
    ready_schema(metastore_db)
    run_operator(namespace, grants=grants(moto))
    apply(kubectl, namespace, password_secret(sa.make_url(metastore_db).password), aws_secret(),
          catalog("sw", metastore_db))
    wait_for("the metastore Deployment", lambda: get(kubectl, namespace, "deployment", "sw-metastore"))
    wait_for("Thrift mode", lambda: status_of(kubectl, namespace, "sw").get("clientConfigMap"))
    assert status_of(kubectl, namespace, "sw")["mode"] == "Thrift"
    deployment = deployment_shape(kubectl, namespace, "sw-metastore")
    service = kubectl.json("get", "-n", namespace, "service", "sw-metastore")["metadata"]["resourceVersion"]
    database = database_contents(metastore_db)

    # Thrift → Glue without the annotation: refused, nothing changes.
    glue = catalog("sw", metastore_db, factory_in=("hive-site", "spark-hive-site"), moto=moto)
    apply(kubectl, namespace, glue)
    ready = wait_reason(kubectl, namespace, "sw", "ModeSwitchNotConfirmed")
    assert ready["status"] == "False" and ANNOTATION_CONFIRM_MODE_SWITCH in ready["message"]
    refused = status_of(kubectl, namespace, "sw")
    assert refused["mode"] == "Thrift", refused
    assert refused["endpoint"] == f"thrift://sw-metastore.{namespace}.svc:9083"  # where clients still go
    assert refused["clientConfigMap"] == "sw-client"
    assert deployment_shape(kubectl, namespace, "sw-metastore") == deployment
    assert kubectl.json("get", "-n", namespace, "service", "sw-metastore")["metadata"]["resourceVersion"] == service
    assert not events(kubectl, namespace, "ModeSwitched")

    # Confirmed: the Deployment and Service go, the database stays.
    kubectl("annotate", "-n", namespace, "hivecatalog", "sw", f"{ANNOTATION_CONFIRM_MODE_SWITCH}=true")
    wait_for("Glue mode", lambda: status_of(kubectl, namespace, "sw").get("mode") == "Glue")
    wait_for("the Deployment and Service to go", lambda: not {"Deployment/sw-metastore", "Service/sw-metastore"}
             & set(children(kubectl, namespace)))
    wait_reason(kubectl, namespace, "sw", "Ready")
    assert wait_for("a ModeSwitched Event", lambda: events(kubectl, namespace, "ModeSwitched"))
    assert database_contents(metastore_db) == database
    assert status_of(kubectl, namespace, "sw")["endpoint"] == ""
    client = kubectl.json("get", "-n", namespace, "configmap", "sw-client")["data"]
    assert GLUE_FACTORY in client["hive-site.xml"]

    # Glue → Thrift (still confirmed): they come back.
    apply(kubectl, namespace, catalog("sw", metastore_db, confirm=True))
    wait_for("Thrift mode again", lambda: status_of(kubectl, namespace, "sw").get("mode") == "Thrift")
    wait_for("the Deployment and Service again", lambda: {"Deployment/sw-metastore", "Service/sw-metastore"}
             <= set(children(kubectl, namespace)))
    assert database_contents(metastore_db) == database
    assert len(wait_for("a second ModeSwitched Event", lambda: [
        e for e in events(kubectl, namespace, "ModeSwitched") if "to Thrift" in e["message"]])) == 1


# --- 3. bad Thrift specs ------------------------------------------------------------------------------------

@pytest.mark.parametrize("case, reason", [
    ("secret-missing", "SecretNotFound"),
    ("secret-key-missing", "SecretKeyNotFound"),
    ("wrong-password", "AuthenticationFailed"),
    ("port-closed", "DatabaseUnreachable"),
])
def test_bad_thrift_specs_get_a_reason_and_nothing_is_created(kubectl: Client, namespace: str, run_operator,
                                                              metastore_db: str, case: str, reason: str) -> None:
    password = sa.make_url(metastore_db).password
    wrong = f"wrong-{uuid.uuid4().hex}"
    run_operator(namespace, grants=grants())
    port = None
    if case == "secret-key-missing":
        apply(kubectl, namespace, password_secret(password, key="passwd"))
    elif case == "wrong-password":
        apply(kubectl, namespace, password_secret(wrong))
    elif case == "port-closed":
        apply(kubectl, namespace, password_secret(password))
        port = free_port()
    before = database_contents(metastore_db)
    apply(kubectl, namespace, catalog("bad", metastore_db, port=port))
    ready = wait_reason(kubectl, namespace, "bad", reason)
    assert ready["status"] == "False"
    everything = json.dumps(get(kubectl, namespace, "hivecatalog", "bad")) + json.dumps(
        kubectl.json("get", "-n", namespace, "events"))
    assert password not in everything and wrong not in everything
    assert children(kubectl, namespace) == {}
    assert database_contents(metastore_db) == before == {}


# --- 4. suspend ---------------------------------------------------------------------------------------------

def test_suspend_stops_changes_and_resume_applies_them(kubectl: Client, namespace: str, run_operator,
                                                       metastore_db: str) -> None:
    ready_schema(metastore_db)
    run_operator(namespace, env={"HIVECAT_RECHECK_SECONDS": "1"}, grants=grants())
    apply(kubectl, namespace, password_secret(sa.make_url(metastore_db).password), catalog("s", metastore_db))
    wait_for("the client ConfigMap", lambda: status_of(kubectl, namespace, "s").get("clientConfigMap"))
    apply(kubectl, namespace, catalog("s", metastore_db, suspend=True))
    wait_for("phase Suspended", lambda: status_of(kubectl, namespace, "s").get("phase") == "Suspended")
    made = {k: v for k, v in children(kubectl, namespace).items() if not k.startswith("Deployment/")}
    deployment = deployment_shape(kubectl, namespace, "s-metastore")
    config = kubectl.json("get", "-n", namespace, "configmap", "s-metastore-config")["data"]["hive-site.xml"]
    assert "file:///tmp/warehouse" in config

    # A spec change while suspended: status says it was seen, no child moves, through several re-checks.
    apply(kubectl, namespace, catalog("s", metastore_db, suspend=True, warehouse="file:///tmp/elsewhere"))
    generation = kubectl.json("get", "-n", namespace, "hivecatalog", "s")["metadata"]["generation"]
    wait_for("the change to be observed", lambda: status_of(kubectl, namespace, "s").get("observedGeneration")
             == generation)
    time.sleep(3)  # a negative: three re-check periods in which nothing may happen
    assert status_of(kubectl, namespace, "s")["phase"] == "Suspended"
    assert {k: v for k, v in children(kubectl, namespace).items() if not k.startswith("Deployment/")} == made
    assert deployment_shape(kubectl, namespace, "s-metastore") == deployment

    # Resumed: the change is applied.
    hash_before = kubectl.json("get", "-n", namespace, "deployment", "s-metastore")[
        "spec"]["template"]["metadata"]["annotations"][ANNOTATION_CONFIG_HASH]
    apply(kubectl, namespace, catalog("s", metastore_db, suspend=False, warehouse="file:///tmp/elsewhere"))
    wait_for("the new warehouse in the metastore config", lambda: "file:///tmp/elsewhere" in kubectl.json(
        "get", "-n", namespace, "configmap", "s-metastore-config")["data"]["hive-site.xml"])
    wait_for("a new config hash", lambda: kubectl.json("get", "-n", namespace, "deployment", "s-metastore")[
        "spec"]["template"]["metadata"]["annotations"][ANNOTATION_CONFIG_HASH] != hash_before)
    # The pass writes its status after its children: wait for it, rather than race it.
    wait_for("the phase after resuming", lambda: status_of(kubectl, namespace, "s").get("phase") != "Suspended")


# --- 5. deletion held by a reference ------------------------------------------------------------------------

def test_deletion_is_held_while_a_cluster_storage_references_the_catalog(kubectl: Client, namespace: str,
                                                                         run_operator) -> None:
    run_operator(namespace, grants=grants())
    # No Secret: the catalog stops at SecretNotFound, which is all this test needs of it (it has a finalizer).
    apply(kubectl, namespace, catalog("held", "mysql+pymysql://u@127.0.0.1:1/db"),
          {"apiVersion": "hivecatalog.io/v1alpha1", "kind": "ClusterStorage", "metadata": {"name": "local-dev"},
           "spec": {"catalogRef": {"name": "held"}, "filesystem": "file:///data", "repair": "Off"}})
    wait_reason(kubectl, namespace, "held", "SecretNotFound")
    kubectl("delete", "-n", namespace, "hivecatalog", "held", "--wait=false")
    blocked = wait_reason(kubectl, namespace, "held", "DeletionBlocked")
    assert "ClusterStorage local-dev" in blocked["message"]
    found = kubectl.json("get", "-n", namespace, "hivecatalog", "held")
    assert found["metadata"].get("deletionTimestamp") and found["status"]["phase"] == "Deleting"
    kubectl("delete", "-n", namespace, "clusterstorage", "local-dev", "--wait", "--timeout=30s")
    wait_for("the catalog to go", lambda: get(kubectl, namespace, "hivecatalog", "held") is None, timeout=60)


# --- 6. status schema and printer columns -------------------------------------------------------------------

def _declared_status() -> tuple[set[str], set[str]]:
    crd = yaml.safe_load((CRD_DIR / "hivecatalogs.yaml").read_text())
    schema = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["status"]
    return set(schema["properties"]), set(schema["properties"]["conditions"]["items"]["properties"])


def test_every_status_field_is_declared_and_printer_columns_show_it(kubectl: Client, namespace: str,
                                                                    run_operator, metastore_db: str) -> None:
    ready_schema(metastore_db)
    run_operator(namespace, grants=grants())
    apply(kubectl, namespace, password_secret(sa.make_url(metastore_db).password), catalog("cols", metastore_db))
    wait_for("schemaVersion and the endpoint", lambda: status_of(kubectl, namespace, "cols").get("endpoint")
             and status_of(kubectl, namespace, "cols").get("schemaVersion"))
    status = status_of(kubectl, namespace, "cols")
    fields, condition_fields = _declared_status()
    written = set(status) - {"kopf"}  # kopf's own progress storage, if any
    assert written <= fields, f"undeclared status fields: {written - fields}"
    assert {"observedGeneration", "phase", "conditions", "mode", "endpoint", "schemaVersion",
            "clientConfigMap"} <= written
    for item in status["conditions"]:
        assert set(item) <= condition_fields, item
    assert {c["type"] for c in status["conditions"]} >= {"Ready", "SchemaReady", "BackendReachable"}
    assert status["schemaVersion"] == "3.1.0"

    def columns() -> tuple[list[str], list[str], dict]:
        """The table and the status of one moment: the catalog's passes go on (Pending may turn Degraded while
        no metastore serves), so both are read until a read of the status before and after agrees."""
        before = status_of(kubectl, namespace, "cols")
        table = kubectl("get", "-n", namespace, "hivecatalog", "cols", "-o", "wide").stdout.splitlines()
        return table[0].split(), table[1].split(), before if status_of(kubectl, namespace, "cols") == before else {}

    header, row, status = wait_for("a steady status", lambda: (found := columns())[2] and found)
    assert header[:5] == ["NAME", "MODE", "PHASE", "READY", "ENDPOINT"], header
    assert row[0] == "cols" and row[1] == "Thrift" and row[2] == status["phase"]
    assert row[3] == next(c["status"] for c in status["conditions"] if c["type"] == "Ready")
    assert row[4] == f"thrift://cols-metastore.{namespace}.svc:9083"


# --- 7. password rotation -----------------------------------------------------------------------------------

def test_password_rotation_rolls_the_metastore(kubectl: Client, namespace: str, run_operator,
                                               metastore_db: str, scratch_mariadb: str) -> None:  # noqa: F811
    ready_schema(metastore_db)
    run_operator(namespace, env={"HIVECAT_RECHECK_SECONDS": "1"}, grants=grants())
    url = sa.make_url(metastore_db)
    apply(kubectl, namespace, password_secret(url.password), catalog("rot", metastore_db))

    def config_hash() -> str | None:
        found = get(kubectl, namespace, "deployment", "rot-metastore")
        return found and found["spec"]["template"]["metadata"]["annotations"][ANNOTATION_CONFIG_HASH]

    before = wait_for("the metastore Deployment", config_hash)
    # Rotate: the database user's password first, then the Secret (a new resourceVersion).
    rotated = f"pw-{uuid.uuid4().hex}"
    admin = sa.create_engine(scratch_mariadb)
    with admin.begin() as conn:
        for host in ("localhost", "127.0.0.1", "%"):
            conn.execute(sa.text(f"ALTER USER '{url.username}'@'{host}' IDENTIFIED BY '{rotated}'"))
    admin.dispose()
    apply(kubectl, namespace, password_secret(rotated))
    after = wait_for("a new config hash", lambda: (config_hash() or before) != before and config_hash(), timeout=30)
    assert after != before
    deployment = json.dumps(kubectl.json("get", "-n", namespace, "deployment", "rot-metastore"))
    assert rotated not in deployment and url.password not in deployment
    # the pass that rolled the Deployment writes its status at its end: the schema read with the new password
    wait_for("SchemaReady with the new password", lambda: condition(kubectl, namespace, "rot", "SchemaReady").get(
        "status") == "True", timeout=30)
