"""`hivecat demo`: the main job on an embedded default, end to end on real components.

A real Hive Metastore (Derby, or a latin1 database on MariaDB), a local Spark session that creates a
partitioned Parquet table through it, then the story of story.py: replication, failover and failback, drift
repair and routing, with the operator's own domain code; a summary at the end.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

import sqlalchemy as sa

from hivecat.demo.story import DemoFailed, Story
from hivecat.local.metastore import MetastoreDatabase, MetastoreServer
from hivecat.local.scratch_db import server_engine

DEMO_DATABASE = "hivecat_demo"
# Marks the MariaDB database as the demo's own, so a rerun may replace it and nothing else ever is.
DEMO_COMMENT = "created by hivecat demo"
PASSWORD_ENV = "HIVECAT_CATALOG_PASSWORD"


class DemoInputError(Exception):
    """Bad input to the demo: one line for the user, nothing created or dropped."""


def _mariadb_server(raw: str) -> sa.URL:
    """mysql://USER@HOST[:PORT] (no database), its password from $HIVECAT_CATALOG_PASSWORD."""
    try:
        url = sa.make_url(raw)
    except (sa.exc.ArgumentError, ValueError):
        raise DemoInputError(f"--mariadb-url {raw!r} is not a URL like mysql://USER@HOST:3306") from None
    if url.password is not None:
        raise DemoInputError(f"put the password in ${PASSWORD_ENV}, not in --mariadb-url")
    if url.get_backend_name() not in ("mysql", "mariadb") or url.database:
        raise DemoInputError(f"--mariadb-url takes a MariaDB/MySQL server, mysql://USER@HOST[:PORT], without a "
                             f"database (the demo uses `{DEMO_DATABASE}`)")
    return url.set(drivername="mysql+pymysql", password=os.environ.get(PASSWORD_ENV) or None)


def _own_demo_database(server: sa.URL) -> None:
    """Create `hivecat_demo` (latin1, as HMS needs), replacing only a database an earlier demo created."""
    engine = server_engine(server.render_as_string(hide_password=False))
    try:
        with engine.connect() as conn:
            comment = conn.execute(sa.text("SELECT SCHEMA_COMMENT FROM information_schema.SCHEMATA "
                                           "WHERE SCHEMA_NAME = :name"), {"name": DEMO_DATABASE}).first()
            if comment is not None and comment[0] != DEMO_COMMENT:
                raise DemoInputError(f"database `{DEMO_DATABASE}` already exists on {server.host} and was not "
                                     "created by hivecat demo: the demo leaves it alone (drop it yourself, or use "
                                     "another server)")
            if comment is not None:
                conn.execute(sa.text(f"DROP DATABASE `{DEMO_DATABASE}`"))
            conn.execute(sa.text(f"CREATE DATABASE `{DEMO_DATABASE}` CHARACTER SET latin1 COLLATE latin1_bin "
                                 f"COMMENT '{DEMO_COMMENT}'"))
    except sa.exc.OperationalError as exc:
        raise DemoInputError(f"cannot use the MariaDB server {server.host}:{server.port or 3306} as "
                             f"{server.username}: {exc.orig}") from None
    finally:
        engine.dispose()


def _metastore_database(workdir: Path, mariadb_url: str | None) -> MetastoreDatabase:
    if not mariadb_url:
        return MetastoreDatabase.derby(workdir / "metastore_db")
    server = _mariadb_server(mariadb_url)
    _own_demo_database(server)
    return MetastoreDatabase.mariadb(server.host or "127.0.0.1", server.port or 3306, DEMO_DATABASE,
                                     server.username or "", server.password or "")


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


def run_demo(workdir: str | None = None, mariadb_url: str | None = None, keep: bool = False) -> int:
    root = Path(workdir) if workdir else Path(tempfile.mkdtemp(prefix="hivecat-demo-"))
    root = root.resolve()
    warehouse = root / "clusters" / "main" / "warehouse"  # the metastore's warehouse is on cluster `main`
    warehouse.mkdir(parents=True, exist_ok=True)
    (root / "clusters" / "dr").mkdir(parents=True, exist_ok=True)
    try:
        database = _metastore_database(root, mariadb_url)
    except DemoInputError as exc:
        if not workdir:
            shutil.rmtree(root, ignore_errors=True)
        print(f"hivecat demo: {exc}", file=sys.stderr)
        return 2
    began = time.monotonic()
    backend = "MariaDB" if mariadb_url else "embedded Derby"
    say(f"starting Hive Metastore 2.3 on {backend} (workdir {root})")
    try:
        with MetastoreServer(database, root / "hms", warehouse.as_uri()) as hms:
            say(f"metastore {hms.uri} up in {hms.start_seconds:.1f}s; starting Spark")
            from hivecat.spark import local_spark_session

            spark = local_spark_session(hms.uri, warehouse.as_uri(), app_name="hivecat-demo")
            spark.sparkContext.setLogLevel("ERROR")
            try:
                _create_sample_table(spark)
                rows = spark.sql("SELECT count(*) FROM demo.sales").collect()[0][0]
                say(f"Spark wrote demo.sales ({rows} rows); the metastore now holds:")
                print_catalog(hms.port)
                story = Story(root, hms.port, spark, say)
                story.tell()
            except DemoFailed as failed:
                print(f"hivecat demo: failed: {failed}", file=sys.stderr)
                return 1
            finally:
                spark.stop()
            say("the metastore at the end:")
            print_catalog(hms.port)
    finally:
        if not workdir and not keep:
            shutil.rmtree(root, ignore_errors=True)
    _summary(story.summary, time.monotonic() - began, root if workdir or keep else None)
    return 0


def say(text: str) -> None:
    print(f"hivecat demo: {text}", flush=True)


def _summary(rows: list[tuple[str, str]], seconds: float, kept: Path | None) -> None:
    width = max(len(step) for step, _ in rows)
    print(f"\n{'step'.ljust(width)}  result")
    for step, result in rows:
        print(f"{step.ljust(width)}  {result}")
    print(f"\nhivecat demo: done in {seconds:.0f}s" + (f"; everything is kept in {kept}" if kept else
                                                         "; its files are removed (--keep keeps them)"))
