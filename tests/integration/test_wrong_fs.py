"""The "Wrong FS" case for real: a namenode moves, every location in the metastore still names the old one.

Spark SQL creates partitioned Parquet tables through the real Hive Metastore with their data on a real HDFS
(hdfs://127.0.0.1:PORT_A). The namenode is stopped and started again over the same data directory on
PORT_B: the files are all there, but HMS still says PORT_A, so Spark cannot read the tables. `hivecat
relocate --from hdfs://127.0.0.1:PORT_A --to hdfs://127.0.0.1:PORT_B`, run through the installed CLI against
the HMS database in MariaDB, rewrites the locations and Spark SQL reads every row again.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import sqlalchemy as sa

from hivecat.local.scratch_db import drop_database
from support.hdfs import HdfsCluster, hadoop_jar_dir, hdfs_cluster  # noqa: F401  (fixtures by name)
from support.services import refresh_table, unique_name

HIVECAT = Path(sys.executable).parent / "hivecat"
ROWS = [(1, "a", "2026-11-01"), (2, "b", "2026-11-01"), (3, "c", "2026-11-02"), (4, "d", "2026-11-03")]
# A dead namenode must fail fast: Hadoop's IPC client retries a refused connection 10 times, 1s apart,
# for every file system call by default.
FAST_FAIL = {"ipc.client.connect.max.retries": "0", "ipc.client.connect.max.retries.on.timeouts": "0",
             "ipc.client.connect.timeout": "2000"}


@pytest.fixture
def fast_failing_hdfs_client(spark):
    """Set FAST_FAIL on the shared session's Hadoop configuration for one test; restore it after."""
    conf = spark.sparkContext._jsc.hadoopConfiguration()
    before = {key: conf.get(key) for key in FAST_FAIL}
    for key, value in FAST_FAIL.items():
        conf.set(key, value)
        spark.conf.set(key, value)  # SQL conf entries reach the Hadoop conf of every query too
    yield
    for key, value in before.items():
        if value is None:
            conf.unset(key)
        else:
            conf.set(key, value)
        spark.conf.unset(key)


def _rows(spark, table: str) -> list[tuple]:
    refresh_table(spark, table)
    return sorted(tuple(r) for r in spark.sql(f"SELECT id, v, dt FROM {table}").collect())


def _relocate(catalog_url: str, journal: str, old: str, new: str, database: str) -> subprocess.CompletedProcess:
    url = sa.make_url(catalog_url)
    return subprocess.run(
        [str(HIVECAT), "relocate", "--catalog", f"mysql://{url.username}@{url.host}:{url.port}/{url.database}",
         "--journal-schema", journal, "--from", old, "--to", new, "--database", database, "--output", "json"],
        capture_output=True, text=True, timeout=180,
        env={**os.environ, "HIVECAT_CATALOG_PASSWORD": url.password or ""})


def test_namenode_moved_then_relocate_lets_spark_read_every_row(
        spark, hive_metastore, mariadb_server, hdfs_cluster: HdfsCluster, fast_failing_hdfs_client):
    db = unique_name("t_wrong_fs")
    journal = unique_name("hc_journal")
    old = hdfs_cluster.uri
    tables = {"events": f"{db}.events", "logs": f"{db}.logs"}
    spark.sql(f"CREATE DATABASE {db} LOCATION '{old}/warehouse/{db}.db'")
    try:
        # A datasource table (its location also sits in SERDE_PARAMS `path`) and a Hive-format one.
        spark.sql(f"CREATE TABLE {tables['events']} (id INT, v STRING, dt STRING) USING parquet PARTITIONED BY (dt)")
        spark.sql(f"CREATE TABLE {tables['logs']} (id INT, v STRING) PARTITIONED BY (dt STRING) STORED AS PARQUET")
        values = ", ".join(f"({i}, '{v}', '{d}')" for i, v, d in ROWS)
        spark.sql(f"INSERT INTO {tables['events']} VALUES {values}")
        spark.sql(f"INSERT INTO {tables['logs']} PARTITION (dt) VALUES {values}")
        for table in tables.values():
            assert _rows(spark, table) == ROWS
        assert [s["pathSuffix"] for s in hdfs_cluster.list_status(f"/warehouse/{db}.db/events")
                if s["type"] == "DIRECTORY"] == ["dt=2026-11-01", "dt=2026-11-02", "dt=2026-11-03"]

        # The namenode moves: same namespace and blocks, another port.
        old_port = hdfs_cluster.rpc_port
        hdfs_cluster.stop()
        hdfs_cluster.start()
        new = hdfs_cluster.uri
        assert new != old and hdfs_cluster.exists(f"/warehouse/{db}.db/logs/dt=2026-11-03")

        # What Spark 4 reports (listing the table's files through HMS's stale location), e.g.:
        #   java.net.ConnectException: Call From vm/127.0.0.1 to localhost:37317 failed on connection
        #   exception: java.net.ConnectException: Connection refused; For more details see: ...
        # (Hadoop prints the old authority reverse-resolved: localhost, not 127.0.0.1, with the old port.)
        for table in tables.values():
            with pytest.raises(Exception) as failed:
                _rows(spark, table)
            message = str(failed.value)
            assert f":{old_port} failed on connection exception" in message, message[:4000]
            assert "Connection refused" in message, message[:4000]

        cli = _relocate(hive_metastore.sql_url, journal, old, new, db)
        assert cli.returncode == 0, cli.stderr
        report = json.loads(cli.stdout)
        assert report["status"] == "done" and report["failed"] == 0 and report["conflicted"] == 0, report
        assert {kind: c["rewritten"] for kind, c in report["counts"].items() if kind != "serde_param"} == {
            "database": 1, "table": 2, "partition": 6}, report["counts"]
        assert report["counts"]["serde_param"]["rewritten"] >= 1  # `path` of the datasource table
        assert report["tables_touched"] == sorted(tables.values())

        for table in tables.values():
            assert _rows(spark, table) == ROWS
        with hive_metastore.client() as client:
            assert client.get_database(db).locationUri == f"{new}/warehouse/{db}.db"
            for name in tables:
                assert client.get_table(db, name).sd.location == f"{new}/warehouse/{db}.db/{name}"
                for part in client.get_partitions(db, name, -1):
                    assert part.sd.location.startswith(f"{new}/warehouse/{db}.db/{name}/dt=")
    finally:
        # While HDFS still runs: HMS deletes the data of dropped managed tables through its own HDFS client.
        try:
            spark.sql(f"DROP DATABASE IF EXISTS {db} CASCADE")
        finally:
            drop_database(mariadb_server, journal)
