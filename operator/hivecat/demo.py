"""`hivecat demo`: the main job on an embedded default, end to end on real components.

A real Hive Metastore (Derby, or a latin1 database on MariaDB), a local Spark session that creates a
partitioned Parquet table through it, and a listing read back over the metastore's Thrift API.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import sqlalchemy as sa

from hivecat.local.metastore import MetastoreDatabase, MetastoreServer
from hivecat.local.scratch_db import create_database

DEMO_DATABASE = "hivecat_demo"


def _metastore_database(workdir: Path, mariadb_url: str | None) -> MetastoreDatabase:
    if not mariadb_url:
        return MetastoreDatabase.derby(workdir / "metastore_db")
    url = sa.make_url(create_database(mariadb_url, DEMO_DATABASE))
    return MetastoreDatabase.mariadb(url.host or "127.0.0.1", url.port or 3306, DEMO_DATABASE,
                                     url.username or "", url.password or "")


def _create_sample_table(spark) -> None:
    spark.sql("CREATE DATABASE IF NOT EXISTS demo")
    spark.sql("DROP TABLE IF EXISTS demo.sales")
    spark.sql("CREATE TABLE demo.sales (id INT, amount DOUBLE, dt STRING) USING parquet PARTITIONED BY (dt)")
    spark.sql("INSERT INTO demo.sales VALUES (1, 9.5, '2026-11-20'), (2, 12.0, '2026-11-21'), "
              "(3, 7.25, '2026-11-21'), (4, 3.0, '2026-11-22')")


def print_catalog(port: int) -> None:
    """Databases, tables and partition locations, as the metastore itself reports them."""
    from hmsclient import hmsclient

    with hmsclient.HMSClient(host="127.0.0.1", port=port) as client:
        for db_name in client.get_all_databases():
            print(f"database {db_name}  {client.get_database(db_name).locationUri}")
            for table_name in client.get_all_tables(db_name):
                table = client.get_table(db_name, table_name)
                keys = [k.name for k in table.partitionKeys]
                print(f"  table {db_name}.{table_name}  {table.sd.location}"
                      + (f"  partitioned by ({', '.join(keys)})" if keys else ""))
                for part in client.get_partitions(db_name, table_name, -1):
                    spec = "/".join(f"{k}={v}" for k, v in zip(keys, part.values))
                    print(f"    partition {spec}  {part.sd.location}")


def run_demo(workdir: str | None = None, mariadb_url: str | None = None) -> int:
    root = Path(workdir) if workdir else Path(tempfile.mkdtemp(prefix="hivecat-demo-"))
    warehouse = root / "warehouse"
    warehouse.mkdir(parents=True, exist_ok=True)
    database = _metastore_database(root, mariadb_url)
    backend = "MariaDB" if mariadb_url else "embedded Derby"
    print(f"hivecat demo: starting Hive Metastore 2.3 on {backend} (workdir {root})", flush=True)
    try:
        with MetastoreServer(database, root / "hms", warehouse.as_uri()) as hms:
            print(f"hivecat demo: metastore {hms.uri} up in {hms.start_seconds:.1f}s; starting Spark", flush=True)
            from hivecat.local.spark import local_spark_session

            spark = local_spark_session(hms.uri, warehouse.as_uri(), app_name="hivecat-demo")
            spark.sparkContext.setLogLevel("ERROR")
            try:
                _create_sample_table(spark)
                rows = spark.sql("SELECT count(*) FROM demo.sales").collect()[0][0]
                print(f"hivecat demo: Spark wrote demo.sales ({rows} rows); the metastore now holds:", flush=True)
            finally:
                spark.stop()
            print_catalog(hms.port)
    finally:
        if not workdir:
            shutil.rmtree(root, ignore_errors=True)
    return 0
