"""TableReplica secondaries on other storage systems, and a copy killed mid-run, for real.

A Hive Metastore 3.1.3 on MariaDB (tests/support/thrift_catalog.py) holds a partitioned Parquet table whose
files the test writes with pyarrow into a local directory registered as ClusterStorage `main` (the partitions
are added over Thrift, as a loader would). Its secondaries are a bucket on moto's S3 and a real HDFS
(MiniDFSCluster, written through WebHDFS); the operator copies with the Local launcher. The copies are read
back from S3 and HDFS byte for byte, and recorded in the metastore. A failover to HDFS moves every location
there and Spark SQL reads every row from HDFS with the primary's directory gone. The operator stops; the
failover's journaled run (named in status) is undone with `hivecat relocate --undo`, and a new operator finds
the table back on main.

Then a third secondary, capped at 1 MB/s, gets a copy that the test kills (SIGKILL to the operator's
`hivecat distcp` child) while it stages files: no unit is visible or recorded there, the run is Failed, and
the retry after backoff copies, verifies and records every unit and leaves no staging behind.
"""

from __future__ import annotations

import os
import signal
import subprocess
from pathlib import Path

import boto3
import sqlalchemy as sa
from hivecat.copy.listing import STAGING_PREFIX
from hivecat.copy.manifest import MANIFEST_NAME
from hivecat.copy.storage import S3Settings, Storage, WebHdfsSettings, parse_uri
from hivecat.replication.bookkeeping import replica_key
from hmsclient import hmsclient
from kube.clients import Client
from kube.operator import HIVECAT
from support.hdfs import HdfsCluster, hadoop_jar_dir, hdfs_cluster  # noqa: F401  (fixtures by name)
from support.clicks_table import READ, expected, register, write_table
from support.kube_resources import apply, status_of, wait_for, wait_reason
from support.procs import processes
from support.services import MotoServer
from support.thrift_catalog import served_catalog

DAYS = ("2026-11-01", "2026-11-02", "2026-11-03", "2026-11-04")
BUCKET = "dr-bucket"
LEAKY_PASSWORD = "journal-password-the-copies-never-see"
ROW_CHARS = 700_000  # hex of random bytes: Parquet barely compresses it, so a partition is ~1.4 MB on disk
EXPECTED = expected(DAYS, ROW_CHARS)


def storage(name: str, filesystem: str) -> dict:
    return {"apiVersion": "hivecatalog.io/v1alpha1", "kind": "ClusterStorage", "metadata": {"name": name},
            "spec": {"catalogRef": {"name": "sales"}, "filesystem": filesystem, "repair": "Off"}}


def replica(secondaries: list[str], active: str | None = None, copy: dict | None = None) -> dict:
    return {"apiVersion": "hivecatalog.io/v1alpha1", "kind": "TableReplica", "metadata": {"name": "clicks"},
            "spec": {"catalogRef": {"name": "sales"}, "database": "sales", "table": "clicks", "primary": "main",
                     "secondaries": secondaries, "schedule": {"interval": "1h"},
                     **({"active": active} if active else {}), **({"copy": copy} if copy else {})}}


def partitions(port: int) -> dict[str, tuple[str, dict[str, str]]]:
    with hmsclient.HMSClient(host="127.0.0.1", port=port) as client:
        return {p.values[0]: (p.sd.location, dict(p.parameters)) for p in client.get_partitions("sales", "clicks", -1)}


def copy_children(operator_pid: int) -> list[int]:
    """The operator's `hivecat distcp` children (the Local launcher's copies)."""
    return [p.pid for p in processes() if p.ppid == operator_pid and b"distcp" in p.cmdline.split(b"\0")]


def test_copies_on_s3_and_hdfs_failover_to_hdfs_and_a_copy_killed_mid_run(
        kubectl: Client, namespace: str, run_operator, metastore_db: str, journal: str, moto: MotoServer,
        hdfs_cluster: HdfsCluster, tmp_path: Path) -> None:  # noqa: F811
    main, slow = tmp_path / "clusters" / "main", tmp_path / "clusters" / "slow"
    slow.mkdir(parents=True)
    table_dir = main / "warehouse" / "sales.db" / "clicks"
    write_table(table_dir, DAYS, ROW_CHARS)
    boto3.client("s3", endpoint_url=moto.endpoint, region_name=moto.region).create_bucket(Bucket=BUCKET)
    hdfs = f"{hdfs_cluster.uri}/lake"
    endpoints = f"{hdfs_cluster.authority}=http://127.0.0.1:{hdfs_cluster.http_port}"
    # The Local launcher's copies reach S3 and WebHDFS with the operator's own settings (moto's AWS variables
    # come from the `moto` fixture's environment).
    # HIVECAT_JOURNAL_URL (Glue and Thrift catalogs' journal; unused by this SQL catalog) holds a password: the
    # Local launcher's copies must never see it.
    env = {"HIVECAT_WEBHDFS_ENDPOINTS": endpoints, "HIVECAT_JOURNAL_SCHEMA": journal,
           "HIVECAT_JOURNAL_URL": f"mysql+pymysql://journal:{LEAKY_PASSWORD}@127.0.0.1:1/journal"}
    # The administrator grants the clusters, and the operator's own identity on S3 and HDFS (no Secret there).
    grants = {"storage": [{"prefix": f"file://{tmp_path / 'clusters'}"},
                          {"prefix": f"s3://{BUCKET}/lake", "ambientCredentials": True},
                          {"prefix": hdfs, "ambientCredentials": True}]}
    operator = run_operator(namespace, env=env, grants=grants)
    with served_catalog(kubectl, namespace, metastore_db, tmp_path) as served:
        register(served.port, main / "warehouse" / "sales.db", table_dir, DAYS)
        assert served.spark(READ).stdout.count(EXPECTED) == 1
        clusters = {"main": f"file://{main}", "s3dr": f"s3://{BUCKET}/lake", "hdfsdr": hdfs, "slow": f"file://{slow}"}
        apply(kubectl, namespace, *(storage(name, fs) for name, fs in clusters.items()))
        for name in clusters:
            wait_reason(kubectl, namespace, name, "Registered", kind="clusterstorage", timeout=60)

        # Copies on S3 and HDFS, verified, read back byte for byte, recorded.
        apply(kubectl, namespace, replica(["s3dr", "hdfsdr"]))
        # every unit may be in place a pass before the copy run's outcome is (a loaded machine): wait for both
        status = wait_for("both copies in sync", lambda: (s := status_of(kubectl, namespace, "clicks",
                                                                         "tablereplica")).get("inSync") == "2/2"
                          and all("lastOutcome" in r for r in s["replicas"] if r["role"] == "Secondary") and s,
                          timeout=180)
        assert [(r["cluster"], r["units"], r["lastOutcome"]) for r in status["replicas"] if r["role"] == "Secondary"] \
            == [("s3dr", 4, "Succeeded"), ("hdfsdr", 4, "Succeeded")]
        files = Storage(S3Settings.from_environment(),  # moto, from the `moto` fixture's variables
                        WebHdfsSettings.from_environment({"HIVECAT_WEBHDFS_ENDPOINTS": endpoints}))
        for name in ("s3dr", "hdfsdr"):
            for day in DAYS:
                copy = parse_uri(f"{clusters[name]}/warehouse/sales.db/clicks/dt={day}")
                filesystem = files.filesystem(copy)
                with filesystem.open_input_stream(copy.child("part-00000.parquet").path) as stream:
                    assert stream.read() == (table_dir / f"dt={day}" / "part-00000.parquet").read_bytes()
                assert filesystem.get_file_info(copy.child(MANIFEST_NAME).path).size > 0
        recorded = partitions(served.port)
        for day in DAYS:
            assert recorded[day][1][replica_key("s3dr", "location")] == \
                f"s3://{BUCKET}/lake/warehouse/sales.db/clicks/dt={day}"
            assert recorded[day][1][replica_key("hdfsdr", "location")] == f"{hdfs}/warehouse/sales.db/clicks/dt={day}"

        # Failover to HDFS: every location there, and Spark reads every row from HDFS with main's data gone.
        apply(kubectl, namespace, replica(["s3dr", "hdfsdr"], active="hdfsdr"))
        wait_for("the failover", lambda: status_of(kubectl, namespace, "clicks", "tablereplica").get("active")
                 == "hdfsdr", timeout=120)
        assert {location for location, _ in partitions(served.port).values()} == {
            f"{hdfs}/warehouse/sales.db/clicks/dt={day}" for day in DAYS}
        away = main / "away"
        table_dir.rename(away)
        try:
            assert served.spark(READ).stdout.count(EXPECTED) == 1
        finally:
            away.rename(table_dir)
        # The failover's runs are in the journal database, not in the operator: stopped, they are undone with
        # the command line, and a new operator (spec.active back on main) finds the table where it was.
        runs = status_of(kubectl, namespace, "clicks", "tablereplica")["lastFailoverRunIds"]
        assert len(runs) == 1
        assert operator.stop() in (0, -15)
        url = sa.make_url(metastore_db)
        undo = subprocess.run(
            [str(HIVECAT), "relocate", "--catalog", f"mysql://{url.username}@{url.host}:{url.port or 3306}/"
             f"{url.database}", "--journal-schema", journal, "--undo", runs[0], "--output", "json"],
            capture_output=True, text=True, timeout=120, env={**os.environ, "HIVECAT_CATALOG_PASSWORD": url.password})
        assert undo.returncode == 0, undo.stderr
        assert {"/" + location.removeprefix("file:").lstrip("/") for location, _ in partitions(served.port).values()
                } == {f"{table_dir}/dt={day}" for day in DAYS}  # Hive spells it file:/p, hivecat file:///p
        apply(kubectl, namespace, replica(["s3dr", "hdfsdr"]))
        operator = run_operator(namespace, env=env, grants=grants)
        wait_for("the sync on main", lambda: (s := status_of(kubectl, namespace, "clicks", "tablereplica"))
                 .get("active") == "main" and s.get("inSync") == "2/2", timeout=120)

        # A copy killed mid-run: a third secondary at 1 MB/s, one file at a time (about 6 s for the table). The
        # copy engine stages every file, then commits unit by unit: killed while staging, nothing is visible.
        before = status_of(kubectl, namespace, "clicks", "tablereplica")["lastRunId"]
        apply(kubectl, namespace, replica(["s3dr", "hdfsdr", "slow"], copy={"bandwidthMBps": 1, "parallelism": 1}))
        slow_table = slow / "warehouse" / "sales.db" / "clicks"
        wait_for("a file half staged on slow", lambda: any(
            p.is_file() and p.stat().st_size > 0 for p in slow_table.glob(f"{STAGING_PREFIX}*/**/*")), timeout=120)
        children = copy_children(operator.process.pid)
        assert children, "the Local launcher's copy is not running"
        for pid in children:  # the copy gets only what it needs: not the journal URL, nor the API credentials
            environ = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
            names = {item.split(b"=", 1)[0].decode() for item in environ if item}
            assert LEAKY_PASSWORD.encode() not in b"".join(environ), sorted(names)
            assert not names & {"HIVECAT_JOURNAL_URL", "KUBECONFIG", "POD_NAMESPACE"}, sorted(names)
            assert "AWS_ACCESS_KEY_ID" not in names  # slow is file://: no cloud identity for it
        for pid in children:
            os.kill(pid, signal.SIGKILL)
        status = wait_for("the killed copy's sync", lambda: (s := status_of(kubectl, namespace, "clicks",
                                                                            "tablereplica"))
                          .get("lastRunId") != before and s, timeout=120)
        entry = next(r for r in status["replicas"] if r["cluster"] == "slow")
        assert (entry["state"], entry["lastOutcome"], entry["units"]) == ("Failed", "Failed", 0)
        assert "exit code -9" in next(c for c in status["conditions"] if c["type"] == "Degraded")["message"]
        assert not any(replica_key("slow", "location") in params for _, params in partitions(served.port).values())
        assert not [day for day in DAYS if (slow_table / f"dt={day}").exists()]  # no unit, whole or partial

        # The retry after backoff copies everything, verifies and records it, and clears the dead run's staging.
        status = wait_for("the retry", lambda: (s := status_of(kubectl, namespace, "clicks", "tablereplica"))
                          .get("inSync") == "3/3" and s, timeout=180)
        assert next(r for r in status["replicas"] if r["cluster"] == "slow")["units"] == len(DAYS)
        for day in DAYS:
            assert (slow_table / f"dt={day}" / "part-00000.parquet").read_bytes() == \
                (table_dir / f"dt={day}" / "part-00000.parquet").read_bytes()
        assert all(replica_key("slow", "location") in params for _, params in partitions(served.port).values())
        assert not [p for p in slow_table.rglob("*") if p.name.startswith(STAGING_PREFIX)]
