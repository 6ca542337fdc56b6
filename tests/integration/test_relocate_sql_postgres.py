"""Relocation on the schema a real HMS 2.3 created in PostgreSQL (quoted upper-case identifiers).

Tables and partitions are created over Thrift (the session's Spark is bound to the MariaDB HMS);
the result is read back over Thrift, as every HMS client would see it.
"""

from __future__ import annotations

import copy
import shutil
import uuid

import pytest
import sqlalchemy as sa

from hivecat.catalog.model import ObjectKind, RelocationRefused, RelocationRequest, Scope
from hivecat.catalog.sql.catalog import SqlCatalog
from hivecat.local.metastore import MetastoreDatabase, MetastoreServer
from hivecat.local.scratch_db import create_database, drop_database
from support.location_dump import dump_locations
from support.services import unique_name

# HMS creates directories for what it is told about, so the old place is a real local directory.
ROOT = f"/tmp/hivecat-pg-{uuid.uuid4().hex[:8]}"
OLD = f"file:{ROOT}/warehouse"
NEW = f"file:{ROOT}/moved/warehouse"


@pytest.fixture(scope="module")
def pg_metastore(postgres_server, tmp_path_factory):
    name = unique_name("hc_hms_pg")
    url = sa.make_url(create_database(postgres_server, name))
    root = tmp_path_factory.mktemp("hms_pg")
    server = MetastoreServer(MetastoreDatabase.postgresql(url.host, url.port, name, url.username, url.password),
                             root / "hms", (root / "warehouse").as_uri())
    server.start()
    try:
        yield server, url.render_as_string(hide_password=False)
    finally:
        server.stop()
        drop_database(postgres_server, name)
        shutil.rmtree(ROOT, ignore_errors=True)


@pytest.fixture(scope="module")
def pg_tables(pg_metastore):
    """sales (partitioned, 3 partitions, a Spark-style `path` SerDe param) and a sibling warehouse2 table."""
    from hmsclient import hmsclient
    from hmsclient.genthrift.hive_metastore import ttypes as t

    server, _ = pg_metastore
    with hmsclient.HMSClient(host="127.0.0.1", port=server.port) as client:
        client.create_database(t.Database(name="lake", locationUri=f"{OLD}/lake.db", parameters={}))

        def table(name: str, location: str, partitioned: bool) -> t.Table:
            sd = t.StorageDescriptor(
                cols=[t.FieldSchema("id", "int", None)], location=location,
                inputFormat="org.apache.hadoop.hive.ql.io.parquet.MapredParquetInputFormat",
                outputFormat="org.apache.hadoop.hive.ql.io.parquet.MapredParquetOutputFormat",
                serdeInfo=t.SerDeInfo(None, "org.apache.hadoop.hive.ql.io.parquet.serde.ParquetHiveSerDe",
                                      {"path": location}),
                compressed=False, numBuckets=-1, bucketCols=[], sortCols=[], parameters={})
            keys = [t.FieldSchema("dt", "string", None)] if partitioned else []
            return t.Table(tableName=name, dbName="lake", owner="hivecat", sd=sd, partitionKeys=keys,
                           parameters={"EXTERNAL": "TRUE"}, tableType="EXTERNAL_TABLE")

        sales = table("sales", f"{OLD}/lake.db/sales", True)
        client.create_table(sales)
        client.create_table(table("other", f"file:{ROOT}/warehouse2/other", False))
        parts = []
        for dt in ("2026-11-01", "2026-11-02", "2026-11-03"):
            sd = copy.deepcopy(sales.sd)
            sd.location = sd.serdeInfo.parameters["path"] = f"{OLD}/lake.db/sales/dt={dt}"
            parts.append(t.Partition(values=[dt], dbName="lake", tableName="sales", sd=sd, parameters={}))
        client.add_partitions(parts)
    return server


@pytest.fixture
def pg_catalog(pg_metastore):
    _, url = pg_metastore
    catalog = SqlCatalog(url, journal_schema=unique_name("hc_journal"))
    yield catalog
    with catalog.engine.begin() as conn:
        conn.execute(sa.text(f'DROP SCHEMA IF EXISTS "{catalog.journal.schema}" CASCADE'))
    catalog.close()


def test_relocate_and_undo_on_postgresql(pg_catalog, pg_tables, pg_metastore):
    from hmsclient import hmsclient

    _, url = pg_metastore
    before = dump_locations(url)
    report = pg_catalog.relocate(RelocationRequest(OLD, NEW))
    assert report.count(ObjectKind.PARTITION).rewritten == 3
    assert report.count(ObjectKind.SERDE_PARAM).rewritten == 4  # the table's `path` and each partition's
    assert report.count(ObjectKind.DATABASE).rewritten == 1
    assert report.tables_touched == ["lake.sales"]  # warehouse2 is a different directory: anchored

    with hmsclient.HMSClient(host="127.0.0.1", port=pg_tables.port) as client:
        assert client.get_database("lake").locationUri == f"{NEW}/lake.db"
        sales = client.get_table("lake", "sales")
        assert (sales.sd.location, sales.sd.serdeInfo.parameters["path"]) == (f"{NEW}/lake.db/sales",) * 2
        assert sorted(p.sd.location for p in client.get_partitions("lake", "sales", -1)) == [
            f"{NEW}/lake.db/sales/dt={dt}" for dt in ("2026-11-01", "2026-11-02", "2026-11-03")]
        assert client.get_table("lake", "other").sd.location == f"file:{ROOT}/warehouse2/other"

    pg_catalog.undo(report.run_id)
    assert dump_locations(url) == before


def test_partition_filter_and_refusal_on_postgresql(pg_catalog, pg_tables, pg_metastore):
    _, url = pg_metastore
    before = dump_locations(url)
    with pytest.raises(RelocationRefused, match="overlap|under"):
        pg_catalog.relocate(RelocationRequest(OLD, f"{OLD}/nested"))
    assert dump_locations(url) == before
    report = pg_catalog.relocate(RelocationRequest(OLD, NEW, Scope("lake", "sales", "dt >= '2026-11-02'")))
    assert report.count(ObjectKind.PARTITION).rewritten == 2
    moved = {p.values[0]: p.location for p in pg_catalog.list_partitions("lake", "sales")}
    assert moved["2026-11-01"].startswith(OLD) and moved["2026-11-03"].startswith(NEW)
    pg_catalog.undo(report.run_id)
    assert dump_locations(url) == before
