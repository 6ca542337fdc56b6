"""The seed case of ClusterStorage drift, for real: a namenode moves, the operator sees every location still
naming the old one, reports it (DryRun), repairs it (Auto), and the repair's journal outlives the operator.

Spark SQL (a separate process configured from the catalog's client ConfigMap) creates a partitioned table
through a real Hive Metastore 3.1.3 on MariaDB, its data on a real HDFS at hdfs://127.0.0.1:PORT_A. The
namenode restarts over the same data on PORT_B and the ClusterStorage's filesystem follows; Spark fails
until the operator's repair rewrote the locations through the metastore's database (the SQL backend, with
the password from the HiveCatalog's Secret). The metastore pod's real work is done by this test with the
pod's own command in the stand-in image (tests/support/hive_image.py): kwok runs no containers.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import sqlalchemy as sa
from hmsclient import hmsclient
from kube.clients import Client

from hivecat.kinds import ANNOTATION_SYNC_NOW
from hivecat.local.net import free_port, wait_for_port
from hivecat.local.processes import stop_process_group
from hivecat.local.scratch_db import drop_database
from hivecat.workloads.schema import Init
from hivecat.specs.hivecatalog import parse_hive_catalog
from hivecat.workloads.metastore import metastore_config_map
from hivecat.workloads.schema_job import schema_job
from support.hdfs import HdfsCluster, hadoop_jar_dir, hdfs_cluster  # noqa: F401  (fixtures by name)
from support.hive_image import STANDIN_PORT_ENV, StandInImage
from support.hive_metastores import HIVE3, release_home
from support.kube_resources import apply, events, get, password_secret, status_of, wait_for, wait_reason
from support.location_dump import dump_locations
from support.notification_log import EventReader
from support.policy import grant, metastore_at
from support.sales_orders import spark_script
from support.scrape import sample, scrape
from support.services import unique_name

HIVECAT = Path(sys.executable).parent / "hivecat"
SECRET = "metastore-db"
ROWS = "ROWS [(1, 'a', '2026-11-01'), (2, 'b', '2026-11-01'), (3, 'c', '2026-11-02'), (4, 'd', '2026-11-03')]"
# A dead namenode must fail fast: Hadoop's IPC client retries a refused connection 10 times, 1 s apart.
FAST_FAIL = {"spark.hadoop.ipc.client.connect.max.retries": "0",
             "spark.hadoop.ipc.client.connect.max.retries.on.timeouts": "0",
             "spark.hadoop.ipc.client.connect.timeout": "2000"}

SPARK_CLIENT = spark_script("write", "/warehouse/sales.db", before_read='spark.sql("REFRESH TABLE sales.orders")')


def spark_client(conf_dir: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess:
    env = {**os.environ, "SPARK_CONF_DIR": str(conf_dir), "SPARK_LOCAL_IP": "127.0.0.1",
           "PYSPARK_PYTHON": sys.executable, "PYSPARK_DRIVER_PYTHON": sys.executable}
    done = subprocess.run([sys.executable, "-c", SPARK_CLIENT, *args], env=env, capture_output=True, text=True,
                          timeout=300, cwd=conf_dir)
    if check:
        assert done.returncode == 0, done.stderr[-4000:]
    return done


def rows(done: subprocess.CompletedProcess) -> str:
    return next(line for line in done.stdout.splitlines() if line.startswith("ROWS"))


def catalog(db_url: str) -> dict:
    url = sa.make_url(db_url)
    return {"apiVersion": "hivecatalog.io/v1alpha1", "kind": "HiveCatalog",
            "metadata": {"name": "sales"},
            "spec": {"database": {"type": "mariadb", "host": url.host, "port": url.port or 3306,
                                  "name": url.database, "user": url.username, "passwordSecretRef": {"name": SECRET}},
                     "metastore": {"hiveVersion": HIVE3.version, "warehouseDir": "file:///tmp/unused-warehouse"}}}


def storage(filesystem: str, repair: str, sync: str | None = None, access: str = "Database") -> dict:
    metadata: dict = {"name": "main"}
    if sync:
        metadata["annotations"] = {ANNOTATION_SYNC_NOW: sync}
    return {"apiVersion": "hivecatalog.io/v1alpha1", "kind": "ClusterStorage", "metadata": metadata,
            "spec": {"catalogRef": {"name": "sales"}, "filesystem": filesystem, "repair": repair,
                     "metastoreAccess": access}}


def drift(kubectl: Client, namespace: str) -> dict:
    return status_of(kubectl, namespace, "main", "clusterstorage").get("drift") or {}


def changed(before: dict[str, list[tuple]], after: dict[str, list[tuple]]) -> list[tuple[str, tuple, tuple]]:
    """(table, old row, new row) of every row that differs, matched by position within sorted rows."""
    assert before.keys() == after.keys()
    found = []
    for table in before:
        assert len(before[table]) == len(after[table]), table
        found += [(table, old, new) for old, new in zip(sorted(before[table]), sorted(after[table])) if old != new]
    return found


def test_namenode_moved_drift_reported_repaired_and_undone_after_a_restart(
        kubectl: Client, namespace: str, run_operator, metastore_db: str, mariadb_server: str,
        hdfs_cluster: HdfsCluster, tmp_path: Path) -> None:  # noqa: F811
    url = sa.make_url(metastore_db)
    password = url.password
    secrets = {(SECRET, "password"): password}
    # The repair journal: a database of its own on the metastore's server, the catalog's user may write it.
    journal = unique_name("hc_drift_journal")
    admin = sa.create_engine(mariadb_server)
    with admin.begin() as conn:
        for host in ("localhost", "127.0.0.1", "%"):
            conn.execute(sa.text(f"GRANT ALL PRIVILEGES ON `{journal}`.* TO '{url.username}'@'{host}'"))
    admin.dispose()
    metrics_port = free_port()
    operator_env = {"HIVECAT_JOURNAL_SCHEMA": journal}

    # The metastore's database as its schema Job leaves it, then the catalog, then the metastore itself.
    port = free_port()
    spec = parse_hive_catalog({**catalog(metastore_db),
                               "metadata": {"name": "sales", "namespace": namespace}}, default_image="x")
    image = StandInImage(tmp_path / "image", HIVE3, "mysql")
    conf_dir = StandInImage.conf_dir(tmp_path / "pod", metastore_config_map(spec)["data"])
    init = schema_job(spec, Init("3.1.0"))["spec"]["template"]["spec"]["containers"][0]
    image.run(init, image.environment(init, secrets, conf_dir))
    # The administrator's grants: the metastore at 127.0.0.1:PORT (the operator runs outside the cluster's
    # network), and the HDFS cluster's filesystem (another CatalogPolicy once the namenode moves).
    first = run_operator(namespace, env={**operator_env, "HIVECAT_METRICS_PORT": str(metrics_port)},
                         grants=metastore_at("sales", port, storage=[{"prefix": hdfs_cluster.uri}]))
    apply(kubectl, namespace, password_secret(SECRET, password), catalog(metastore_db))
    deployment = wait_for("the metastore Deployment", lambda: get(kubectl, namespace, "deployment", "sales-metastore"))
    server = deployment["spec"]["template"]["spec"]["containers"][0]
    metastore = image.start(server, image.environment(server, secrets, conf_dir, {STANDIN_PORT_ENV: str(port)}),
                            tmp_path / "metastore.log")
    try:
        wait_for_port(port, timeout=120)
        files = kubectl.json("get", "-n", namespace, "configmap", "sales-client")["data"]
        endpoint = f"thrift://sales-metastore.{namespace}.svc:9083"
        spark_conf = tmp_path / "spark-conf"
        spark_conf.mkdir()
        (spark_conf / "hive-site.xml").write_text(files["hive-site.xml"].replace(endpoint, f"thrift://127.0.0.1:{port}"))
        (spark_conf / "spark-defaults.conf").write_text(
            files["spark-defaults.conf"].replace(endpoint, f"thrift://127.0.0.1:{port}")
            + "".join(f"{key} {value}\n" for key, value in FAST_FAIL.items()))
        old = hdfs_cluster.uri
        assert rows(spark_client(spark_conf, "write", old)) == ROWS

        # Registered on PORT_A: scanned, nothing drifted.
        apply(kubectl, namespace, storage(old, "DryRun"))
        wait_reason(kubectl, namespace, "main", "NoDrift", "Drifted", kind="clusterstorage", timeout=90)
        assert drift(kubectl, namespace)["driftedLocations"] == 0
        clusters = json.loads(kubectl.json("get", "-n", namespace, "configmap", "sales-clusters")["data"]["clusters.json"])
        assert clusters["main"]["filesystem"] == old

        # The namenode moves; Spark reads through HMS's stale locations and fails.
        old_port = hdfs_cluster.rpc_port
        hdfs_cluster.stop()
        hdfs_cluster.start()
        new = hdfs_cluster.uri
        assert new != old
        grant(kubectl, namespace, "moved", storage=[{"prefix": new}])
        failed = spark_client(spark_conf, "read", check=False)
        assert failed.returncode != 0 and f":{old_port}" in failed.stderr, failed.stderr[-3000:]
        before = dump_locations(metastore_db)

        # DryRun on the new filesystem: the drift and its exact plan, and not one write.
        apply(kubectl, namespace, storage(new, "DryRun"))
        wait_reason(kubectl, namespace, "main", "Drifted", "Drifted", kind="clusterstorage", timeout=90)
        status = status_of(kubectl, namespace, "main", "clusterstorage")
        assert status["filesystem"] == new and status["previousFilesystems"] == [old]
        reported = status["drift"]
        assert reported["counts"] == {"database": 1, "table": 1, "partition": 3}, reported
        assert reported["driftedLocations"] == 5
        assert sample(scrape(metrics_port), "hivecat_drift_locations", namespace=namespace, clusterstorage="main") == 5
        assert reported["sources"] == [{"from": old, "to": new, "locations": 5,
                                        "counts": {"database": 1, "table": 1, "partition": 3}}]
        assert f"{old}/warehouse/sales.db -> {new}/warehouse/sales.db" in reported["sample"]
        assert "lastRepairRunId" not in reported
        assert dump_locations(metastore_db) == before
        clusters = json.loads(kubectl.json("get", "-n", namespace, "configmap", "sales-clusters")["data"]["clusters.json"])
        assert clusters["main"]["filesystem"] == new and clusters["main"]["previousFilesystems"] == [old]

        # Auto: the repair rewrites exactly the drifted locations, and Spark reads every row again.
        reader = EventReader([str(release_home(HIVE3) / "*")])
        _, logged_before = reader.read(port)
        apply(kubectl, namespace, storage(new, "Auto"))
        repaired = wait_for("the repair", lambda: drift(kubectl, namespace).get("lastRepairRunId")
                            and drift(kubectl, namespace).get("driftedLocations") == 0 and drift(kubectl, namespace),
                            timeout=90)
        run_id = repaired["lastRepairRunId"]
        assert repaired["lastRepairRewritten"] == 5
        wait_reason(kubectl, namespace, "main", "NoDrift", "Drifted", kind="clusterstorage")
        event = wait_for("the DriftRepaired Event", lambda: events(kubectl, namespace, "DriftRepaired"))
        assert run_id in event[0]["message"] and "rewrote 5 locations" in event[0]["message"]
        assert "logged as 5 notification events" in event[0]["message"]
        samples = scrape(metrics_port)  # the operator's /metrics says the same
        assert sample(samples, "hivecat_drift_locations", namespace=namespace, clusterstorage="main") == 0
        assert sample(samples, "hivecat_locations_rewritten_total", kind="partition", outcome="rewritten") == 3
        assert sample(samples, "hivecat_locations_rewritten_total", kind="database", outcome="rewritten") == 1
        after = dump_locations(metastore_db)
        diff = changed(before, after)
        assert len(diff) == 5 - 1 + 1  # DBS row (1) + SDS rows (table 1, partitions 3)
        for table, was, now in diff:
            assert [v.replace(old, new, 1) if v.startswith(old) else v for v in was] == list(now), (table, was, now)
        assert rows(spark_client(spark_conf, "read")) == ROWS
        with hmsclient.HMSClient(host="127.0.0.1", port=port) as client:
            assert client.get_table("sales", "orders").sd.location == f"{new}/warehouse/sales.db/orders"
            parts = client.get_partitions("sales", "orders", -1)
            assert len(parts) == 3 and all(p.sd.location.startswith(f"{new}/warehouse/sales.db/orders/dt=")
                                           for p in parts)
        # The metastore runs its notification listener (spec.notificationEvents defaults to Enabled), and the
        # repair, written straight into its database, is in its log as the alters it made: what Impala or Hive
        # replication would read, decoded here by Hive's own deserializer through the metastore's Thrift API.
        logged, _ = reader.read(port, logged_before)
        assert sorted(e["type"] for e in logged) == ["ALTER_DATABASE", "ALTER_PARTITION", "ALTER_PARTITION",
                                                     "ALTER_PARTITION", "ALTER_TABLE"], logged
        assert all(e["after"].startswith(new) and e["before"].startswith(old) for e in logged)

        # Back to DryRun, then the operator restarts: the journal is in the database, not in the process.
        apply(kubectl, namespace, storage(new, "DryRun"))
        wait_for("DryRun observed", lambda: status_of(kubectl, namespace, "main", "clusterstorage").get(
            "observedGeneration") == kubectl.json("get", "-n", namespace, "clusterstorage", "main")["metadata"]["generation"])
        assert first.stop() in (0, -15)
        scanned = drift(kubectl, namespace)["lastScanTime"]  # final: no operator runs
        # A new process (only the database remembers the run), now also with a journal database for repairs
        # through the metastore's Thrift API: the catalog user's journal database, by URL.
        journal_url = url.set(database=journal).render_as_string(hide_password=False)
        run_operator(namespace, env={**operator_env, "HIVECAT_JOURNAL_URL": journal_url},
                     grants=metastore_at("sales", port, storage=[{"prefix": old}]))
        # It scans once on resuming; on a SQL catalog the scan's dry run holds the catalog's lock, which an undo
        # meeting it would be refused (exit 3, "locked"): let that scan finish first.
        wait_for("the scan on resuming", lambda: drift(kubectl, namespace).get("lastScanTime") != scanned)
        undo = subprocess.run(
            [str(HIVECAT), "relocate", "--catalog", f"mysql://{url.username}@{url.host}:{url.port or 3306}/{url.database}",
             "--journal-schema", journal, "--undo", run_id, "--output", "json"],
            capture_output=True, text=True, timeout=120, env={**os.environ, "HIVECAT_CATALOG_PASSWORD": password})
        assert undo.returncode == 0, undo.stderr
        assert dump_locations(metastore_db) == before
        # Asked to look again, the operator finds the drift back.
        apply(kubectl, namespace, storage(new, "DryRun", sync="1"))
        wait_for("the drift back", lambda: drift(kubectl, namespace).get("driftedLocations") == 5, timeout=60)

        # The same repair through the metastore's Thrift API (metastoreAccess Thrift, at the catalog's address).
        apply(kubectl, namespace, storage(new, "Auto", sync="1", access="Thrift"))
        through_thrift = wait_for("the Thrift repair", lambda: drift(kubectl, namespace).get("lastRepairRunId")
                                  not in (None, run_id) and drift(kubectl, namespace), timeout=90)
        assert through_thrift["lastRepairRewritten"] >= 4, through_thrift  # table and partitions at least
        with hmsclient.HMSClient(host="127.0.0.1", port=port) as client:  # as Spark found them before
            assert client.get_table("sales", "orders").sd.location == f"{new}/warehouse/sales.db/orders"
            assert all(p.sd.location.startswith(f"{new}/") for p in client.get_partitions("sales", "orders", -1))
    finally:
        stop_process_group(metastore)
        drop_database(mariadb_server, journal)
