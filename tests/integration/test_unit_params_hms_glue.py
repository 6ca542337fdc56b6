"""update_unit_params on the real Hive Metastore 2.3 (through Thrift, and directly in the Hive 2.3 schema it
made in MariaDB) and on Glue (moto server), with the cases every backend passes (support.unit_params_cases).
Someone else's changes go through the service itself: alter_partition / drop_partition on the metastore,
UpdatePartition / DeletePartition on Glue. Each test works in a database of its own."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import sqlalchemy as sa
from hmsclient.genthrift.hive_metastore.ttypes import Database, FieldSchema, Partition

from hivecat.catalog.glue import GlueCatalog
from hivecat.catalog.partition_names import partition_name
from hivecat.catalog.sql.catalog import SqlCatalog
from hivecat.catalog.thrift import ThriftCatalog
from support.glue_lake import storage_descriptor as glue_sd
from support.hms_tables import hive_table, storage_descriptor
from support.services import unique_name
from support.unit_params_cases import (
    KEYS, N, Lake, partition_values, record_everything, replica_params, table_level_and_removal,
)

SPECIAL = ("a/b:c", "0")  # partition 0's values: HMS escapes them in PART_NAME
# HMS 2.3 takes ~17 ms a partition to create or alter through Thrift: 600 are still two of the Thrift backend's
# write batches (500), at a third of the suite time of the 2,000 the SQL and Glue lakes have.
HMS_N = 600


def values_of(i: int) -> tuple[str, str]:
    return SPECIAL if i == 0 else partition_values(i)


# --- the real Hive Metastore 2.3 --------------------------------------------------------------------

@pytest.fixture
def hms_lake(hive_metastore, tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """A database of the test's own: events (HMS_N partitions, keys dt and n, parameter keep=1) and dim."""
    db, root = unique_name("hc_params"), tmp_path / "warehouse"
    with hive_metastore.client() as hms:
        hms.create_database(Database(name=db, locationUri=f"{root.as_uri()}/{db}.db", parameters={}))
        keys = [FieldSchema("dt", "string", ""), FieldSchema("n", "string", "")]
        hms.create_table(hive_table(db, "events", f"{root.as_uri()}/events", keys=keys))
        parts = [Partition(values=list(values_of(i)), dbName=db, tableName="events", parameters={"keep": "1"},
                           sd=storage_descriptor(f"{root.as_uri()}/events/p{i}")) for i in range(HMS_N)]
        for start in range(0, HMS_N, 500):
            hms.add_partitions(parts[start:start + 500])
        hms.create_table(hive_table(db, "dim", f"{root.as_uri()}/dim"))
    yield db, tmp_path
    with hive_metastore.client() as hms:
        hms.drop_database(db, True, True)


def hms_lake_for(catalog, hive_metastore, db: str, tmp_path: Path) -> Lake:
    def move(values: tuple[str, ...]) -> str:
        moved = tmp_path / "moved" / unique_name(values[1])
        moved.mkdir(parents=True)
        with hive_metastore.client() as hms:
            partition = hms.get_partition(db, "events", list(values))
            partition.sd.location = moved.as_uri()
            hms.alter_partition(db, "events", partition)
            return hms.get_partition(db, "events", list(values)).sd.location  # as HMS stores it

    def drop(values: tuple[str, ...]) -> None:
        with hive_metastore.client() as hms:
            hms.drop_partition(db, "events", list(values), False)
    return Lake(catalog, db, move, drop)


def test_thrift_then_sql_on_the_hive_2_3_schema(hive_metastore, hms_lake, record_property) -> None:
    """One lake for both (partitions take HMS long to create): Thrift first, on all HMS_N partitions;
    then the SQL catalog on the schema HMS made, with the partitions Thrift left."""
    db, tmp_path = hms_lake
    thrift = ThriftCatalog(f"thrift://127.0.0.1:{hive_metastore.port}", journal_url=f"sqlite:///{tmp_path / 'j.db'}")
    sql = SqlCatalog(hive_metastore.sql_url)
    try:
        lake = hms_lake_for(thrift, hive_metastore, db, tmp_path)
        record_property("thrift_seconds_600", round(record_everything(lake), 2))
        table_level_and_removal(lake)

        with sql.engine.connect() as conn:  # HMS's own name for the escaped partition is the one looked up
            parts = sql.schema["PARTITIONS"]
            names = set(conn.execute(sa.select(parts.c.PART_NAME).where(parts.c.PART_NAME.like("dt=a%"))).scalars())
        assert partition_name(["dt", "n"], SPECIAL) in names
        lake = hms_lake_for(sql, hive_metastore, db, tmp_path)
        record_property("sql_seconds_1999", round(record_everything(lake), 2))
        # The metastore serves what was written in its database.
        served = {p.values: replica_params(p.parameters) for p in thrift.list_partitions(db, "events")}
        assert len(served[SPECIAL]) == 3 and sum(len(v) == 3 for v in served.values()) == HMS_N - 3
        table_level_and_removal(lake)
    finally:
        sql.close()
        thrift.close()


# --- Glue (moto server) --------------------------------------------------------------------------------

@pytest.fixture
def glue_lake(moto) -> str:
    glue, root = moto.client("glue"), "s3://lake/warehouse"
    glue.create_database(DatabaseInput={"Name": "lake", "LocationUri": root})
    glue.create_table(DatabaseName="lake", TableInput={
        "Name": "events", "TableType": "EXTERNAL_TABLE", "StorageDescriptor": glue_sd(f"{root}/events"),
        "PartitionKeys": [{"Name": "dt", "Type": "string"}, {"Name": "n", "Type": "string"}]})
    inputs = [{"Values": list(values_of(i)), "StorageDescriptor": glue_sd(f"{root}/events/p{i}"),
               "Parameters": {"keep": "1"}} for i in range(N)]
    for start in range(0, N, 100):  # BatchCreatePartition's limit
        answer = glue.batch_create_partition(DatabaseName="lake", TableName="events",
                                             PartitionInputList=inputs[start:start + 100])
        assert not answer.get("Errors")
    glue.create_table(DatabaseName="lake", TableInput={"Name": "dim", "StorageDescriptor": glue_sd(f"{root}/dim")})
    return root


def test_glue(moto, glue_lake: str, tmp_path: Path, record_property) -> None:
    glue = moto.client("glue")
    catalog = GlueCatalog(moto.region, endpoint_url=moto.endpoint, journal_url=f"sqlite:///{tmp_path / 'j.db'}",
                          functions=False)
    entries: list[int] = []  # moto ignores BatchUpdatePartition's limit: count what we send
    catalog.client.meta.events.register("provide-client-params.glue.BatchUpdatePartition",
                                        lambda params, **_: entries.append(len(params["Entries"])))

    def move(values: tuple[str, ...]) -> str:
        part = glue.get_partition(DatabaseName="lake", TableName="events", PartitionValues=list(values))["Partition"]
        location = f"{glue_lake}/moved/{values[1]}"
        glue.update_partition(DatabaseName="lake", TableName="events", PartitionValueList=list(values),
                              PartitionInput={"Values": list(values), "StorageDescriptor": glue_sd(location),
                                              "Parameters": part["Parameters"]})
        return location

    def drop(values: tuple[str, ...]) -> None:
        glue.delete_partition(DatabaseName="lake", TableName="events", PartitionValues=list(values))

    lake = Lake(catalog, "lake", move, drop)
    record_property("seconds_2000", round(record_everything(lake), 2))
    assert sum(entries) == N - 2 and max(entries) <= 100
    table_level_and_removal(lake)
    params = glue.get_partition(DatabaseName="lake", TableName="events", PartitionValues=list(SPECIAL))["Partition"]
    assert params["Parameters"] == {"keep": "1"} and not set(params["Parameters"]) & set(KEYS)
