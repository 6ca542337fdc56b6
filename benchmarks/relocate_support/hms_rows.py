"""A partitioned table with N partitions in a real HMS 2.3 schema on MariaDB, built fast, and copies of it.

The real HMS creates the schema, a database and the table (so DataNucleus owns every DDL detail); the
partitions are then inserted directly, set-based from MariaDB's sequence engine, with the ids HMS would
have used: each model class's SEQUENCE_TABLE.NEXT_VAL is raised past them, so an HMS started later on
the data allocates fresh ids. Each partition gets its own storage descriptor (the table's columns
descriptor, CD_ID, shared as HMS does), its own SERDES row and serde parameters, its key values and a
few parameters — among them the fast stats (numFiles, totalSize) that spare HMS from listing files
when alter_partitions moves a partition to a location that does not exist here.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

import sqlalchemy as sa

from hivecat.local.metastore import MetastoreDatabase, MetastoreServer
from hivecat.local.scratch_db import create_database

DATABASE = "bench"
TABLE = "events"
OLD_ROOT = "hdfs://old-nn:8020/warehouse"
NEW_ROOT = "hdfs://new-nn:8020/warehouse"
MODEL = "org.apache.hadoop.hive.metastore.model."
PARQUET = "org.apache.hadoop.hive.ql.io.parquet."


def database_location(root: str) -> str:
    return f"{root}/{DATABASE}.db"


def table_location(root: str) -> str:
    return f"{database_location(root)}/{TABLE}"


# Partition i is dt=<2000-01-01 + i div 24 days>/hr=<i mod 24>; `seq` is the sequence engine's column.
DT_SQL = "CAST(DATE_ADD('2000-01-01', INTERVAL seq DIV 24 DAY) AS CHAR)"
HR_SQL = "LPAD(seq MOD 24, 2, '0')"
PART_NAME_SQL = f"CONCAT('dt=', {DT_SQL}, '/hr=', {HR_SQL})"


def metastore_server(server_url: str, name: str, workdir: Path, heap: str = "1g",
                     schema_exists: bool = False) -> MetastoreServer:
    """HMS (or another Hive main class) on database `name`; with schema_exists, DataNucleus skips
    creating the schema, as on a production metastore (it halves metatool's start-up)."""
    url = sa.make_url(server_url)
    db = MetastoreDatabase.mariadb(url.host, url.port or 3306, name, url.username or "", url.password or "")
    extra = {"datanucleus.schema.autoCreateAll": "false"} if schema_exists else {}
    return MetastoreServer(db, workdir, (workdir / "warehouse").as_uri(), heap=heap, extra_conf=extra)


def create_schema_with_table(server_url: str, name: str, workdir: Path) -> None:
    """A new database `name` whose schema a real HMS creates, holding the empty partitioned table (HMS stopped
    after)."""
    create_database(server_url, name)
    server = metastore_server(server_url, name, workdir)
    server.start()
    try:
        create_table_through_thrift(server)
    finally:
        server.stop()


def database_url(server_url: str, name: str) -> str:
    return sa.make_url(server_url).set(database=name).render_as_string(hide_password=False)


def create_table_through_thrift(server: MetastoreServer) -> None:
    """The running HMS (which created its schema on start) creates the database and the partitioned
    table (at file: locations: it makes their directories), then adds and drops one partition so every
    partition table and id counter exists."""
    from hmsclient import hmsclient
    from hmsclient.genthrift.hive_metastore.ttypes import (
        Database, FieldSchema, Partition, SerDeInfo, StorageDescriptor, Table,
    )

    warehouse = server.workdir / "warehouse"
    with hmsclient.HMSClient(host="127.0.0.1", port=server.port) as client:
        client.create_database(Database(name=DATABASE, description="benchmark",
                                        locationUri=(warehouse / f"{DATABASE}.db").as_uri(), parameters={}))
        sd = StorageDescriptor(
            cols=[FieldSchema("id", "bigint", ""), FieldSchema("payload", "string", "")],
            location=(warehouse / f"{DATABASE}.db" / TABLE).as_uri(),
            inputFormat=f"{PARQUET}MapredParquetInputFormat", outputFormat=f"{PARQUET}MapredParquetOutputFormat",
            compressed=False, numBuckets=-1, bucketCols=[], sortCols=[], parameters={},
            serdeInfo=SerDeInfo(serializationLib=f"{PARQUET}serde.ParquetHiveSerDe",
                                parameters={"serialization.format": "1"}))
        client.create_table(Table(
            tableName=TABLE, dbName=DATABASE, owner="hivecat", createTime=int(time.time()), lastAccessTime=0,
            retention=0, sd=sd, tableType="EXTERNAL_TABLE", parameters={"EXTERNAL": "TRUE"},
            partitionKeys=[FieldSchema("dt", "string", ""), FieldSchema("hr", "string", "")]))
        sd.location = f"{sd.location}/dt=1999-12-31/hr=00"
        client.add_partitions([Partition(values=["1999-12-31", "00"], dbName=DATABASE, tableName=TABLE, sd=sd,
                                         parameters={})])
        client.drop_partition(DATABASE, TABLE, ["1999-12-31", "00"], False)


@dataclass(frozen=True)
class Template:
    tbl_id: int
    sd_id: int
    serde_id: int


def _template(conn: sa.Connection) -> Template:
    row = conn.execute(sa.text(
        "SELECT t.TBL_ID, s.SD_ID, s.SERDE_ID FROM TBLS t JOIN DBS d ON d.DB_ID = t.DB_ID "
        "JOIN SDS s ON s.SD_ID = t.SD_ID WHERE d.NAME = :db AND t.TBL_NAME = :tbl"),
        {"db": DATABASE, "tbl": TABLE}).one()
    return Template(*row)


def _next_ids(conn: sa.Connection, model: str, table: str, key: str) -> int:
    """The first id past both HMS's allocation counter and the rows already there."""
    counter = conn.execute(sa.text("SELECT NEXT_VAL FROM SEQUENCE_TABLE WHERE SEQUENCE_NAME = :n"),
                           {"n": MODEL + model}).scalar()
    highest = conn.execute(sa.text(f"SELECT COALESCE(MAX({key}), 0) FROM {table}")).scalar_one()
    return max(int(counter or 0), int(highest) + 1)


def _raise_counter(conn: sa.Connection, model: str, next_val: int) -> None:
    conn.execute(sa.text("INSERT INTO SEQUENCE_TABLE (SEQUENCE_NAME, NEXT_VAL) VALUES (:n, :v) "
                         "ON DUPLICATE KEY UPDATE NEXT_VAL = GREATEST(NEXT_VAL, VALUES(NEXT_VAL))"),
                 {"n": MODEL + model, "v": next_val})


def _columns(conn: sa.Connection, table: str) -> list[str]:
    return list(conn.execute(sa.text(
        "SELECT COLUMN_NAME FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = :t "
        "ORDER BY ORDINAL_POSITION"), {"t": table}).scalars())


def _clone_per_partition(conn: sa.Connection, table: str, key: str, template_id: int, seq: str,
                         overrides: dict[str, str]) -> None:
    """One copy of the template row per partition, with some columns computed from `seq`."""
    cols = _columns(conn, table)
    values = [overrides.get(c, f"tpl.`{c}`") for c in cols]
    conn.exec_driver_sql(
        f"INSERT INTO {table} ({', '.join(f'`{c}`' for c in cols)}) SELECT {', '.join(values)} "
        f"FROM {table} tpl CROSS JOIN {seq} WHERE tpl.`{key}` = {int(template_id)}")


def fill_partitions(url: str, partitions: int) -> None:
    """Insert `partitions` partitions into the table and move the database and table under OLD_ROOT."""
    engine = sa.create_engine(url)
    seq = f"seq_0_to_{partitions - 1}"
    now = int(time.time())
    try:
        with engine.begin() as conn:
            conn.exec_driver_sql("SET SESSION foreign_key_checks = 0, unique_checks = 0")
            tpl = _template(conn)
            part0 = _next_ids(conn, "MPartition", "PARTITIONS", "PART_ID")
            sd0 = _next_ids(conn, "MStorageDescriptor", "SDS", "SD_ID")
            serde0 = _next_ids(conn, "MSerDeInfo", "SERDES", "SERDE_ID")
            _clone_per_partition(conn, "SERDES", "SERDE_ID", tpl.serde_id, seq, {"SERDE_ID": f"{serde0} + seq"})
            conn.exec_driver_sql(
                f"INSERT INTO SERDE_PARAMS (SERDE_ID, PARAM_KEY, PARAM_VALUE) SELECT {serde0} + seq, "
                f"tpl.PARAM_KEY, tpl.PARAM_VALUE FROM SERDE_PARAMS tpl CROSS JOIN {seq} "
                f"WHERE tpl.SERDE_ID = {tpl.serde_id}")
            _clone_per_partition(conn, "SDS", "SD_ID", tpl.sd_id, seq, {
                "SD_ID": f"{sd0} + seq", "SERDE_ID": f"{serde0} + seq",
                "LOCATION": f"CONCAT('{table_location(OLD_ROOT)}/', {PART_NAME_SQL})"})
            conn.exec_driver_sql(
                f"INSERT INTO PARTITIONS (PART_ID, CREATE_TIME, LAST_ACCESS_TIME, PART_NAME, SD_ID, TBL_ID) "
                f"SELECT {part0} + seq, {now}, 0, {PART_NAME_SQL}, {sd0} + seq, {tpl.tbl_id} FROM {seq}")
            conn.exec_driver_sql(
                f"INSERT INTO PARTITION_KEY_VALS (PART_ID, PART_KEY_VAL, INTEGER_IDX) "
                f"SELECT {part0} + seq, {DT_SQL}, 0 FROM {seq} UNION ALL SELECT {part0} + seq, {HR_SQL}, 1 FROM {seq}")
            conn.exec_driver_sql(
                f"INSERT INTO PARTITION_PARAMS (PART_ID, PARAM_KEY, PARAM_VALUE) SELECT {part0} + seq, k.k, k.v "
                f"FROM {seq} CROSS JOIN (SELECT 'numFiles' k, '1' v UNION ALL SELECT 'totalSize', '4096' "
                f"UNION ALL SELECT 'transient_lastDdlTime', '{now}') k")
            for model, first in (("MPartition", part0), ("MStorageDescriptor", sd0), ("MSerDeInfo", serde0)):
                _raise_counter(conn, model, first + partitions)
            conn.execute(sa.text("UPDATE DBS SET DB_LOCATION_URI = :loc WHERE NAME = :db"),
                         {"loc": database_location(OLD_ROOT), "db": DATABASE})
            conn.execute(sa.text("UPDATE SDS SET LOCATION = :loc WHERE SD_ID = :sd"),
                         {"loc": table_location(OLD_ROOT), "sd": tpl.sd_id})
    finally:
        engine.dispose()


def copy_database(server_url: str, source: str, target: str) -> None:
    """An identical copy (DDL with its keys and foreign keys, then every row) in a new latin1 database."""
    create_database(server_url, target)
    engine = sa.create_engine(database_url(server_url, source))
    try:
        with engine.begin() as conn:
            conn.exec_driver_sql("SET SESSION foreign_key_checks = 0, unique_checks = 0")
            tables = list(conn.exec_driver_sql("SHOW FULL TABLES WHERE Table_type = 'BASE TABLE'").scalars())
            conn.exec_driver_sql(f"USE `{target}`")  # same-database foreign keys in the DDL resolve here
            for table in tables:
                ddl = conn.exec_driver_sql(f"SHOW CREATE TABLE `{source}`.`{table}`").one()[1]
                conn.exec_driver_sql(ddl)
                conn.exec_driver_sql(f"INSERT INTO `{table}` SELECT * FROM `{source}`.`{table}`")
    finally:
        engine.dispose()


@dataclass(frozen=True)
class LocationCheck:
    partitions: int
    at_new: int       # partitions exactly at NEW_ROOT/.../<part name>
    at_old: int       # partitions exactly where they were built
    database_at: str | None
    table_at: str | None
    under_old_root: int  # SDS rows anywhere still under OLD_ROOT


def check_locations(url: str) -> LocationCheck:
    engine = sa.create_engine(url)
    try:
        with engine.connect() as conn:
            tpl = _template(conn)
            total, at_new, at_old = conn.execute(sa.text(
                "SELECT COUNT(*), COALESCE(SUM(s.LOCATION = CONCAT(:new, '/', p.PART_NAME)), 0), "
                "COALESCE(SUM(s.LOCATION = CONCAT(:old, '/', p.PART_NAME)), 0) "
                "FROM PARTITIONS p JOIN SDS s ON s.SD_ID = p.SD_ID WHERE p.TBL_ID = :tbl"),
                {"new": table_location(NEW_ROOT), "old": table_location(OLD_ROOT), "tbl": tpl.tbl_id}).one()
            db_at = conn.execute(sa.text("SELECT DB_LOCATION_URI FROM DBS WHERE NAME = :db"), {"db": DATABASE}).scalar()
            table_at = conn.execute(sa.text("SELECT LOCATION FROM SDS WHERE SD_ID = :sd"), {"sd": tpl.sd_id}).scalar()
            under_old = conn.execute(sa.text("SELECT COUNT(*) FROM SDS WHERE LOCATION LIKE :p"),
                                     {"p": f"{OLD_ROOT}/%"}).scalar_one()
        return LocationCheck(int(total), int(at_new), int(at_old), db_at, table_at, int(under_old))
    finally:
        engine.dispose()


def verify_relocated(url: str, partitions: int, who: str) -> None:
    """Every partition, the table and the database now at NEW_ROOT; nothing left under OLD_ROOT."""
    check = check_locations(url)
    expected = LocationCheck(partitions, partitions, 0, database_location(NEW_ROOT), table_location(NEW_ROOT), 0)
    if check != expected:
        raise AssertionError(f"{who} left a wrong result: {check} (expected {expected})")


def verify_partitions_relocated(url: str, partitions: int, who: str) -> None:
    """Every partition at NEW_ROOT; the table and the database where they were built."""
    check = check_locations(url)
    expected = LocationCheck(partitions, partitions, 0, database_location(OLD_ROOT), table_location(OLD_ROOT), 1)
    if check != expected:
        raise AssertionError(f"{who} left a wrong result: {check} (expected {expected})")


def verify_built(url: str, partitions: int) -> None:
    check = check_locations(url)
    expected = LocationCheck(partitions, 0, partitions, database_location(OLD_ROOT), table_location(OLD_ROOT),
                             partitions + 1)
    if check != expected:
        raise AssertionError(f"the benchmark data is not as built: {check} (expected {expected})")


def clear_notification_log(url: str) -> None:
    """Empty the notification log (what the metastore's cleaner does to expired events)."""
    engine = sa.create_engine(url)
    try:
        with engine.begin() as conn:
            conn.execute(sa.text("DELETE FROM NOTIFICATION_LOG"))
    finally:
        engine.dispose()
