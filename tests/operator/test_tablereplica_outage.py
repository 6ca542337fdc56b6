"""The day the primary is gone, for real: a partitioned table on a real HDFS (MiniDFSCluster), written by Spark
through a real Hive Metastore 3.1.3, kept by a TableReplica on a local directory and on moto's S3.

After a sync, syncs are suspended; Spark appends to one partition and adds another; the readiness check (which
runs while suspended) shows the recovery point and the two units behind. Then the HDFS process is killed. A
planned failover is refused, saying the primary does not answer; an unplanned one, with the recovery point
copied from status, switches without reading HDFS, leaving the partition that has no copy behind, and Spark
reads through the metastore exactly the rows that were copied. HDFS restarts on its data directory and ports:
the failback moves every unit back but the appended one, which is diverged (both versions kept) until the spec
says the primary's wins; then Spark reads every row, and the originals on HDFS are byte for byte what they were
at the kill.
"""

from __future__ import annotations

import ast
from datetime import datetime, timezone
import os
import signal
import textwrap
from pathlib import Path

import boto3
from hmsclient import hmsclient
from kube.clients import Client
from support.hdfs import HdfsCluster, hadoop_jar_dir, hdfs_cluster  # noqa: F401  (fixtures by name)
from support.kube_resources import apply, status_of, wait_for
from support.services import MotoServer
from support.thrift_catalog import served_catalog

DAYS = ("2026-11-01", "2026-11-02", "2026-11-03", "2026-11-04")
BUCKET = "outage-bucket"
SQL = textwrap.dedent("""
    import sys
    from pyspark.sql import SparkSession
    spark = SparkSession.builder.master("local[1]").enableHiveSupport().getOrCreate()
    for statement in sys.argv[1:]:
        rows = spark.sql(statement).collect()
        if statement.startswith("SELECT"):
            print("ROWS", [tuple(r) for r in rows])
    spark.stop()
""")


def count_by_day(days) -> str:
    return (f"SELECT dt, count(*) FROM sales.clicks WHERE dt IN ({', '.join(repr(d) for d in days)}) "
            "GROUP BY dt ORDER BY dt")


def rows(done) -> list[tuple]:
    return ast.literal_eval(next(line for line in done.stdout.splitlines() if line.startswith("ROWS "))[5:])


def storage(name: str, filesystem: str) -> dict:
    return {"apiVersion": "hivecatalog.io/v1alpha1", "kind": "ClusterStorage", "metadata": {"name": name},
            "spec": {"catalogRef": {"name": "sales"}, "filesystem": filesystem, "repair": "Off"}}


def replica(**spec) -> dict:
    return {"apiVersion": "hivecatalog.io/v1alpha1", "kind": "TableReplica", "metadata": {"name": "clicks"},
            "spec": {"catalogRef": {"name": "sales"}, "database": "sales", "table": "clicks", "primary": "main",
                     "secondaries": ["dr", "s3dr"], "schedule": {"interval": "1h", "readinessInterval": "3s"},
                     **spec}}


def locations(port: int) -> dict[str, str]:
    with hmsclient.HMSClient(host="127.0.0.1", port=port) as client:
        found = {p.values[0]: p.sd.location for p in client.get_partitions("sales", "clicks", -1)}
        found["table"] = client.get_table("sales", "clicks").sd.location
    return found


def originals(hdfs: HdfsCluster, path: str) -> dict[str, bytes]:
    """Every file below `path` on HDFS, with its bytes."""
    found: dict[str, bytes] = {}
    for entry in hdfs.list_status(path):
        child = f"{path}/{entry['pathSuffix']}"
        if entry["type"] == "DIRECTORY":
            found.update(originals(hdfs, child))
        else:
            found[child] = hdfs.read(child)
    return found


def condition(status: dict, kind: str = "Ready") -> dict:
    return next((c for c in status.get("conditions", []) if c["type"] == kind), {})


def test_an_unplanned_failover_with_the_namenode_killed_and_the_failback_when_it_returns(
        kubectl: Client, namespace: str, run_operator, metastore_db: str, journal: str, moto: MotoServer,
        hdfs_cluster: HdfsCluster, tmp_path: Path) -> None:  # noqa: F811
    dr = tmp_path / "clusters" / "dr"
    dr.mkdir(parents=True)
    boto3.client("s3", endpoint_url=moto.endpoint, region_name=moto.region).create_bucket(Bucket=BUCKET)
    lake = f"{hdfs_cluster.uri}/lake"
    table = f"{lake}/warehouse/sales.db/clicks"
    endpoints = f"{hdfs_cluster.authority}=http://127.0.0.1:{hdfs_cluster.http_port}"
    env = {"HIVECAT_WEBHDFS_ENDPOINTS": endpoints, "HIVECAT_JOURNAL_SCHEMA": journal}
    grants = {"storage": [{"prefix": f"file://{tmp_path / 'clusters'}"},
                          {"prefix": f"s3://{BUCKET}/lake", "ambientCredentials": True},
                          {"prefix": lake, "ambientCredentials": True}]}
    run_operator(namespace, env=env, grants=grants)
    with served_catalog(kubectl, namespace, metastore_db, tmp_path) as served:
        served.spark(SQL, f"CREATE DATABASE sales LOCATION '{lake}/warehouse/sales.db'",
                     f"CREATE TABLE sales.clicks (v STRING) PARTITIONED BY (dt STRING) STORED AS PARQUET "
                     f"LOCATION '{table}'",
                     *(f"INSERT INTO sales.clicks PARTITION (dt='{day}') VALUES ('{day}-a'), ('{day}-b')"
                       for day in DAYS))
        apply(kubectl, namespace, storage("main", lake), storage("dr", f"file://{dr}"),
              storage("s3dr", f"s3://{BUCKET}/lake"))
        apply(kubectl, namespace, replica())
        wait_for("both copies in sync and the sync ended", lambda: (s := status_of(
            kubectl, namespace, "clicks", "tablereplica")).get("inSync") == "2/2" and "lastRunId" in s, timeout=180)

        # Syncs suspended; an append to one partition and a new one; the readiness check still runs.
        apply(kubectl, namespace, replica(suspend=True))
        served.spark(SQL, "INSERT INTO sales.clicks PARTITION (dt='2026-11-02') VALUES ('2026-11-02-c')",
                     "INSERT INTO sales.clicks PARTITION (dt='2026-11-05') VALUES ('2026-11-05-a')")
        behind = ["sales.clicks/dt=2026-11-02", "sales.clicks/dt=2026-11-05"]
        seen: list = []

        def measured() -> dict | None:
            seen[:] = status_of(kubectl, namespace, "clicks", "tablereplica").get("readiness", [])
            return next((r for r in seen if r["cluster"] == "dr" and r.get("behind") == behind), None)
        try:
            ready = wait_for("the readiness check to see the two units behind", measured, timeout=60)
        except AssertionError as timeout:
            raise AssertionError(f"{timeout}; status.readiness last seen: {seen}") from None
        assert ready["failoverReady"] is False and ready["withoutCopy"] == ["sales.clicks/dt=2026-11-05"]
        copied = {p.name for p in (dr / "warehouse" / "sales.db" / "clicks" / "dt=2026-11-02").iterdir()}
        (appended,) = [e for e in hdfs_cluster.list_status("/lake/warehouse/sales.db/clicks/dt=2026-11-02")
                       if e["type"] == "FILE" and e["pathSuffix"] not in copied]
        written = datetime.fromtimestamp(appended["modificationTime"] // 1000, timezone.utc)
        assert ready["recoveryPoint"] == written.strftime("%Y-%m-%dT%H:%M:%SZ")  # the oldest change not copied
        at_kill = originals(hdfs_cluster, "/lake/warehouse/sales.db/clicks")

        # The namenode's process is killed (not paused).
        ports = (hdfs_cluster.rpc_port, hdfs_cluster.http_port)
        process, hdfs_cluster.process = hdfs_cluster.process, None
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=30)

        apply(kubectl, namespace, replica(active="dr"))
        refused = wait_for("the planned failover refused", lambda: (c := condition(status_of(
            kubectl, namespace, "clicks", "tablereplica"))).get("reason") == "FailoverRefused" and c, timeout=120)
        assert "primary main does not answer" in refused["message"]
        before = locations(served.port)
        assert all(location.startswith(lake) for location in before.values())

        unplanned = {"kind": "Unplanned", "acceptRecoveryPoint": ready["recoveryPoint"], "leaveBehind": True}
        apply(kubectl, namespace, replica(active="dr", failover=unplanned))
        status = wait_for("the unplanned failover", lambda: (s := status_of(kubectl, namespace, "clicks",
                                                                            "tablereplica")).get("active") == "dr"
                          and s, timeout=120)
        after = locations(served.port)
        assert after["2026-11-05"] == before["2026-11-05"]  # no copy: left on main, named
        assert all(after[day] in (f"file://{dr}/warehouse/sales.db/clicks/dt={day}",  # as hivecat or Hive spell it
                                  f"file:{dr}/warehouse/sales.db/clicks/dt={day}") for day in DAYS), after
        assert status["leftBehind"] == {"cluster": "main", "units": 1, "first": ["sales.clicks/dt=2026-11-05"]}
        # exactly the rows that were copied: the append after the recovery point is not there
        assert rows(served.spark(SQL, count_by_day(DAYS))) == [(day, 2) for day in DAYS]

        # HDFS comes back on its data directory and ports; the failback holds the diverged unit.
        apply(kubectl, namespace, replica(failover=unplanned))
        hdfs_cluster.start(rpc_port=ports[0], http_port=ports[1])
        status = wait_for("the failback, holding the diverged unit", lambda: (s := status_of(
            kubectl, namespace, "clicks", "tablereplica")).get("active") == "main"
            and condition(s).get("reason") == "Diverged" and s, timeout=180)
        assert status["diverged"] == {"cluster": "dr", "units": 1, "first": ["sales.clicks/dt=2026-11-02"]}
        assert "part-" in condition(status)["message"]  # the file the copy lacks is named
        held = locations(served.port)
        assert held["2026-11-02"] == after["2026-11-02"]
        assert all(held[day] == before[day] for day in ("2026-11-01", "2026-11-03", "2026-11-04", "2026-11-05"))
        assert originals(hdfs_cluster, "/lake/warehouse/sales.db/clicks") == at_kill

        apply(kubectl, namespace, replica(failover=unplanned, failback={"divergedWinner": "Primary"}))
        wait_for("the diverged unit back on main", lambda: (s := status_of(kubectl, namespace, "clicks",
                                                                           "tablereplica")).get("diverged") is None
                 and condition(s).get("status") == "True", timeout=120)
        assert locations(served.port) == before
        assert originals(hdfs_cluster, "/lake/warehouse/sales.db/clicks") == at_kill
        assert rows(served.spark(SQL, count_by_day((*DAYS, "2026-11-05")))) == [
            ("2026-11-01", 2), ("2026-11-02", 3), ("2026-11-03", 2), ("2026-11-04", 2), ("2026-11-05", 1)]
