"""HiveCatalog in Thrift mode on a real MariaDB, from an empty database to Spark reading a table through the
metastore, with the operator running as it does in a cluster.

No containers run here: kwok completes the schema Job's pod and marks the metastore's pods Ready, so this
test does the pods' real work itself, with the pods' own commands, env and mounted files, in a stand-in for
the metastore image (tests/support/hive_image.py): it runs the schema Job's command (Hive's real schematool)
and the Deployment's command (a real Hive Metastore 3.1.3). The operator reaches that metastore through the
documented address annotation, since Service DNS does not resolve outside a cluster.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
import sqlalchemy as sa
from kube.clients import Client

from conftest import TIMINGS
from hivecat.local.net import free_port, wait_for_port
from hivecat.local.processes import stop_process_group
from hivecat.workloads.schema import Init
from hivecat.specs.hivecatalog import parse_hive_catalog
from hivecat.workloads.metastore import metastore_config_map
from hivecat.workloads.schema_job import schema_job
from support.kube_resources import apply, children, condition, get, wait_for
from support.hive_image import STANDIN_PORT_ENV, StandInImage
from support.hive_metastores import HIVE3, HIVE4
from support.policy import metastore_at

SECRET = "metastore-db"


def catalog(name: str, db_url: str, warehouse: str, hive_version: str = HIVE3.version) -> dict:
    url = sa.make_url(db_url)
    return {"apiVersion": "hivecatalog.io/v1alpha1", "kind": "HiveCatalog",
            "metadata": {"name": name},
            "spec": {"database": {"type": "mariadb", "host": url.host, "port": url.port or 3306,
                                  "name": url.database, "user": url.username,
                                  "passwordSecretRef": {"name": SECRET}},
                     "metastore": {"hiveVersion": hive_version, "warehouseDir": warehouse}}}


SPARK_CLIENT = textwrap.dedent("""
    import sys
    from pyspark.sql import SparkSession
    spark = SparkSession.builder.master("local[1]").enableHiveSupport().getOrCreate()
    if sys.argv[1] == "write":
        spark.sql("CREATE DATABASE IF NOT EXISTS sales")
        spark.sql("CREATE TABLE sales.orders (id INT, amount DOUBLE) STORED AS PARQUET")
        spark.sql("INSERT INTO sales.orders VALUES (1, 10.5), (2, 20.0), (3, 7.25)")
    rows = spark.sql("SELECT id, amount FROM sales.orders ORDER BY id").collect()
    print("ROWS", [(r.id, r.amount) for r in rows])
    spark.stop()
""")


def spark_client(conf_dir: Path, action: str) -> str:
    """A separate Spark process configured only from the client ConfigMap's files (SPARK_CONF_DIR)."""
    env = {**os.environ, "SPARK_CONF_DIR": str(conf_dir), "SPARK_LOCAL_IP": "127.0.0.1",
           "PYSPARK_PYTHON": sys.executable, "PYSPARK_DRIVER_PYTHON": sys.executable}
    done = subprocess.run([sys.executable, "-c", SPARK_CLIENT, action], env=env, capture_output=True, text=True,
                          timeout=300, cwd=conf_dir)
    assert done.returncode == 0, done.stderr[-4000:]
    return next(line for line in done.stdout.splitlines() if line.startswith("ROWS"))


def test_thrift_catalog_from_empty_database_to_spark_reading_a_table(
        kubectl: Client, namespace: str, run_operator, metastore_db: str, tmp_path: Path) -> None:
    password = sa.make_url(metastore_db).password
    port = free_port()
    warehouse = tmp_path / "warehouse"
    warehouse.mkdir()
    # The operator runs outside the cluster network: the administrator's policy says where it reaches the metastore.
    run_operator(namespace, grants=metastore_at("sales", port))
    apply(kubectl, namespace, {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": SECRET},
                               "stringData": {"password": password}})
    began = time.monotonic()
    apply(kubectl, namespace, catalog("sales", metastore_db, warehouse.as_uri()))

    # An empty database: an init Job, and no metastore until the schema is there.
    job = wait_for("the schema Job", lambda: get(kubectl, namespace, "job", "sales-schema-init-3-1-0"))
    TIMINGS["Thrift catalog applied→schema Job"] = time.monotonic() - began
    assert get(kubectl, namespace, "deployment", "sales-metastore") is None
    container = job["spec"]["template"]["spec"]["containers"][0]
    assert password not in json.dumps(job)

    # kwok completes the Job's pod without running it: the Job says Complete, the VERSION table says
    # nothing yet, and SchemaReady follows the table.
    wait_for("Job Complete", lambda: (get(kubectl, namespace, "job", "sales-schema-init-3-1-0") or {})
             .get("status", {}).get("succeeded"))
    behind = wait_for("SchemaReady to name the Job's success", lambda: condition(
        kubectl, namespace, "sales", "SchemaReady").get("reason") == "SchemaJobSucceededButVersionBehind")
    assert behind

    # The pod's real work: the Job's own command in the stand-in image, with the mounted ConfigMap's files.
    image = StandInImage(tmp_path / "image", HIVE3, "mysql")
    config = kubectl.json("get", "-n", namespace, "configmap", "sales-metastore-config")["data"]
    assert password not in json.dumps(config)  # hive-site.xml refers to the env var, never holds the password
    conf_dir = StandInImage.conf_dir(tmp_path / "pod", config)
    secrets = {(SECRET, "password"): password}
    image.run(container, image.environment(container, secrets, conf_dir))

    schema_done = time.monotonic()
    wait_for("SchemaReady", lambda: condition(kubectl, namespace, "sales", "SchemaReady").get("status") == "True")
    deployment = wait_for("the metastore Deployment", lambda: get(kubectl, namespace, "deployment", "sales-metastore"))
    pod = deployment["spec"]["template"]
    assert pod["metadata"]["annotations"]["hivecatalog.io/config-hash"]
    assert password not in json.dumps(deployment)
    server = pod["spec"]["containers"][0]
    metastore = image.start(server, image.environment(server, secrets, conf_dir, {STANDIN_PORT_ENV: str(port)}),
                            tmp_path / "metastore.log")
    try:
        wait_for_port(port, timeout=120)
        serving = time.monotonic()
        TIMINGS["Thrift schema written→metastore serving (JVM start, not the operator)"] = serving - schema_done
        ready = wait_for("Ready", lambda: condition(kubectl, namespace, "sales", "Ready").get("status") == "True")
        assert ready
        TIMINGS["Thrift metastore serving→Ready"] = time.monotonic() - serving
        TIMINGS["Thrift catalog applied→Ready, without schema work and JVM start"] = (
            TIMINGS["Thrift catalog applied→schema Job"] + TIMINGS["Thrift metastore serving→Ready"])

        status = kubectl.json("get", "-n", namespace, "hivecatalog", "sales")["status"]
        endpoint = f"thrift://sales-metastore.{namespace}.svc:9083"
        assert status["mode"] == "Thrift" and status["endpoint"] == endpoint
        assert status["clientConfigMap"] == "sales-client"
        discovery = kubectl.json("get", "-n", namespace, "configmap", "sales")["data"]
        assert discovery["HIVE"] == endpoint

        # A Spark client configured only from the client ConfigMap's files; the Service name is swapped for
        # the address that reaches the metastore from here, and nothing else is changed.
        files = kubectl.json("get", "-n", namespace, "configmap", "sales-client")["data"]
        assert endpoint in files["hive-site.xml"]
        spark_conf = tmp_path / "spark-conf"
        spark_conf.mkdir()
        for name in ("hive-site.xml", "spark-defaults.conf"):
            (spark_conf / name).write_text(files[name].replace(endpoint, f"thrift://127.0.0.1:{port}"))
        assert spark_client(spark_conf, "write") == "ROWS [(1, 10.5), (2, 20.0), (3, 7.25)]"
        assert spark_client(spark_conf, "read") == "ROWS [(1, 10.5), (2, 20.0), (3, 7.25)]"

        # Reapplying the unchanged CR changes no child.
        made = children(kubectl, namespace)
        apply(kubectl, namespace, catalog("sales", metastore_db, warehouse.as_uri()))
        time.sleep(3)
        assert children(kubectl, namespace) == made
    finally:
        stop_process_group(metastore)

    kubectl("delete", "-n", namespace, "hivecatalog/sales", "--wait", "--timeout=60s")
    assert kubectl.json("get", "-n", namespace, "secret", SECRET)["metadata"]["name"] == SECRET
    engine = sa.create_engine(metastore_db)
    with engine.connect() as conn:  # the database and its schema stay
        assert conn.execute(sa.text("SELECT SCHEMA_VERSION FROM VERSION")).scalar() == "3.1.0"
        assert conn.execute(sa.text("SELECT COUNT(*) FROM TBLS")).scalar() == 1
    engine.dispose()


@pytest.mark.parametrize("recorded, reason", [("4.0.0", "SchemaNewerThanImage"), (None, "SchemaWithoutVersion")])
def test_a_schema_the_image_cannot_use_is_refused_and_nothing_runs(
        kubectl: Client, namespace: str, run_operator, metastore_db: str,
        recorded: str | None, reason: str) -> None:
    engine = sa.create_engine(metastore_db)
    with engine.begin() as conn:
        conn.execute(sa.text("CREATE TABLE DBS (DB_ID BIGINT PRIMARY KEY, NAME VARCHAR(128))"))
        conn.execute(sa.text("CREATE TABLE VERSION (VER_ID BIGINT PRIMARY KEY, SCHEMA_VERSION VARCHAR(127) NOT NULL,"
                             " VERSION_COMMENT VARCHAR(255))"))
        if recorded:
            conn.execute(sa.text(f"INSERT INTO VERSION VALUES (1, '{recorded}', 'newer')"))
    run_operator(namespace)
    apply(kubectl, namespace, {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": SECRET},
                               "stringData": {"password": sa.make_url(metastore_db).password}},
          catalog("sales", metastore_db, "file:///tmp/warehouse"))
    refused = wait_for(reason, lambda: condition(kubectl, namespace, "sales", "SchemaReady").get("reason") == reason)
    assert refused
    assert condition(kubectl, namespace, "sales", "Ready")["status"] == "False"
    assert not {k for k in children(kubectl, namespace) if k.startswith(("Job/", "Deployment/"))}
    with engine.connect() as conn:
        assert conn.execute(sa.text("SELECT COUNT(*) FROM VERSION")).scalar() == (1 if recorded else 0)
    engine.dispose()


def test_an_older_schema_gets_an_upgrade_job_never_an_init(
        kubectl: Client, namespace: str, run_operator, metastore_db: str, tmp_path: Path) -> None:
    """A database at Hive 3.1's schema under a catalog whose image runs Hive 4.0.1: the upgrade Job's own
    command (Hive 4's schematool) brings it to 4.0.0, and SchemaReady follows the VERSION table."""

    password = sa.make_url(metastore_db).password
    secrets = {(SECRET, "password"): password}
    older = catalog("sales", metastore_db, "file:///tmp/warehouse")
    older["metadata"]["namespace"] = namespace
    # The database as a Hive 3.1 catalog left it: its init Job's own command, run here beforehand.
    spec = parse_hive_catalog(older, default_image="apache/hive:3.1.3")
    init = schema_job(spec, Init("3.1.0"))["spec"]["template"]["spec"]["containers"][0]
    image3 = StandInImage(tmp_path / "hive3", HIVE3, "mysql")
    conf3 = StandInImage.conf_dir(tmp_path / "hive3-pod", metastore_config_map(spec)["data"])
    image3.run(init, image3.environment(init, secrets, conf3))

    run_operator(namespace)
    apply(kubectl, namespace, {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": SECRET},
                               "stringData": {"password": password}},
          catalog("sales", metastore_db, "file:///tmp/warehouse", hive_version=HIVE4.version))
    job = wait_for("the upgrade Job", lambda: get(kubectl, namespace, "job", "sales-schema-upgrade-3-1-0-to-4-0-0"))
    assert not [name for name in children(kubectl, namespace) if "schema-init" in name]
    status = kubectl.json("get", "-n", namespace, "hivecatalog", "sales")["status"]
    assert status["schemaVersion"] == "3.1.0"

    container = job["spec"]["template"]["spec"]["containers"][0]
    assert "-upgradeSchemaFrom" in container["command"] or "-upgradeSchemaFrom" in (container.get("args") or [])
    image4 = StandInImage(tmp_path / "hive4", HIVE4, "mysql")
    config = kubectl.json("get", "-n", namespace, "configmap", "sales-metastore-config")["data"]
    image4.run(container, image4.environment(container, secrets, StandInImage.conf_dir(tmp_path / "hive4-pod", config)))
    wait_for("SchemaReady", lambda: condition(kubectl, namespace, "sales", "SchemaReady").get("status") == "True")
    assert kubectl.json("get", "-n", namespace, "hivecatalog", "sales")["status"]["schemaVersion"] == "4.0.0"
    events = kubectl.json("get", "-n", namespace, "events", "--field-selector", "involvedObject.name=sales")
    assert "SchemaJobCreated" in {e["reason"] for e in events["items"]}
