"""Relocation on real Hive Metastore 3.1.3 and 4.0.1 schemas, on MariaDB and PostgreSQL.

Each metastore is the standalone server from Maven Central (tests/support/hive_metastores.py), its schema
made by Hive's own schematool from the release's scripts; every object is created through its Thrift API
with `hdfs://nn:8020/...` locations (served from a local directory, so HMS's own directory checks run).
A relocation is then proven through Thrift: every location the metastore reports moved, the metastore
keeps working on the moved objects, and undo restores the exact prior state (full dumps compared).
"""

from __future__ import annotations

import copy
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import sqlalchemy as sa

from hivecat.catalog.model import ObjectKind, RelocationRequest, Scope
from hivecat.catalog.sql.catalog import SqlCatalog
from hivecat.catalog.sql.limits import Capacity, capacity
from hivecat.catalog.sql.schema import detect_schema
from hivecat.local.metastore import MetastoreDatabase
from hivecat.local.scratch_db import create_database, drop_database
from support.hive_metastores import (RELEASES, HiveRelease, StandaloneMetastore, create_catalog, database_v3,
                                     get_database_v3, get_table, table_v3)
from support.location_dump import dump_locations
from support.services import START_SECONDS, unique_name

OLD = "hdfs://nn:8020/warehouse"
NEW = "hdfs://nn:8020/moved/warehouse"  # same filesystem: HMS can still make directories after the move
SIBLING = "hdfs://nn:8020/warehouse2/sibling"  # shares OLD's characters, not its path: never moved
DB = "sales"  # in both catalogs, `hive` and `spark`
DATES = ("2026-11-01", "2026-11-02")


@dataclass
class RealHms:
    release: HiveRelease
    dialect: str          # mariadb | postgresql
    server: StandaloneMetastore
    sql_url: str          # SQLAlchemy URL of the metastore database
    db_server: str        # SQLAlchemy URL of the database server (journal databases live there on MariaDB)

    @property
    def version(self) -> int:
        return int(self.release.version[0])

    @property
    def fs_root(self) -> Path:
        return self.server.fs_root

    def dump(self) -> dict[str, list[tuple]]:
        return dump_locations(self.sql_url)


@pytest.fixture(scope="module", params=[("mariadb", "hive3"), ("mariadb", "hive4"),
                                        ("postgresql", "hive3"), ("postgresql", "hive4")],
                ids=lambda p: f"{p[0]}-{p[1]}")
def real_hms(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[RealHms]:
    dialect, key = request.param
    release = RELEASES[key]
    db_server = request.getfixturevalue("mariadb_server" if dialect == "mariadb" else "postgres_server")
    began = time.monotonic()
    name = unique_name(f"hc_{key}")
    sql_url = create_database(db_server, name, latin1=True)
    url = sa.make_url(sql_url)
    make = MetastoreDatabase.mariadb if dialect == "mariadb" else MetastoreDatabase.postgresql
    database = make(url.host, url.port or (3306 if dialect == "mariadb" else 5432), name, url.username, url.password)
    root = tmp_path_factory.mktemp(f"{key}-{dialect}")
    server = StandaloneMetastore(release, database, root / "hms", root / "fs")
    try:
        server.start()
    except (RuntimeError, FileNotFoundError) as exc:
        drop_database(db_server, name)
        pytest.fail(f"{release} on {dialect} could not start: {exc}")
    START_SECONDS[f"{key}-{dialect}"] = round(time.monotonic() - began, 2)
    try:
        yield RealHms(release, dialect, server, sql_url, db_server)
    finally:
        server.stop()
        drop_database(db_server, name)


# --- objects, made through Thrift ------------------------------------------------------------------

def _sd(location: str, serde_params: dict[str, str] | None = None, skewed=None):
    from hmsclient.genthrift.hive_metastore.ttypes import FieldSchema, SerDeInfo, StorageDescriptor

    return StorageDescriptor(
        cols=[FieldSchema("id", "int", None), FieldSchema("v", "string", None)], location=location,
        inputFormat="org.apache.hadoop.hive.ql.io.parquet.MapredParquetInputFormat",
        outputFormat="org.apache.hadoop.hive.ql.io.parquet.MapredParquetOutputFormat", compressed=False,
        numBuckets=-1, bucketCols=[], sortCols=[], parameters={}, skewedInfo=skewed,
        serdeInfo=SerDeInfo(None, "org.apache.hadoop.hive.ql.io.parquet.serde.ParquetHiveSerDe",
                            {"serialization.format": "1", **(serde_params or {})}))


def _table(name: str, location: str, partitioned: bool = False, params: dict[str, str] | None = None,
           serde_params: dict[str, str] | None = None, skewed=None):
    from hmsclient.genthrift.hive_metastore.ttypes import FieldSchema, Table

    return Table(tableName=name, dbName=DB, owner="hive", createTime=0, lastAccessTime=0, retention=0,
                 sd=_sd(location, serde_params, skewed),
                 partitionKeys=[FieldSchema("dt", "string", None)] if partitioned else [],
                 parameters={"EXTERNAL": "TRUE", **(params or {})}, tableType="EXTERNAL_TABLE")


def _partition(table, dt: str, location: str | None, params: dict[str, str] | None = None):
    from hmsclient.genthrift.hive_metastore.ttypes import Partition

    sd = copy.deepcopy(table.sd)
    sd.location = location  # None: HMS derives it from the table's location
    sd.serdeInfo.parameters = {"serialization.format": "1"}
    return Partition(values=[dt], dbName=DB, tableName=table.tableName, createTime=0, lastAccessTime=0, sd=sd,
                     parameters=params or {})


@pytest.fixture(scope="module")
def objects(real_hms: RealHms) -> dict[str, list[tuple]]:
    """Catalog `hive`: sales (managed location on Hive 4); events: partitioned, Spark-style `path` SerDe and
    partition params, avro.schema.url; skewed: a skewed-value location; dim: unpartitioned; sibling: outside
    OLD; a UDF jar. Catalog `spark` (under OLD too: only catalog scoping keeps runs apart): its own sales.events.
    Returns the location dump right after creation."""
    from hmsclient.genthrift.hive_metastore.ttypes import Function, ResourceUri, SkewedInfo

    events_at = f"{OLD}/{DB}.db/events"
    managed = {"managedLocationUri": f"{OLD}/managed/{DB}.db"} if real_hms.version == 4 else {}
    events = _table("events", events_at, partitioned=True, params={"avro.schema.url": f"{events_at}/_schema.avsc"},
                    serde_params={"path": events_at})
    skewed = SkewedInfo(skewedColNames=["v"], skewedColValues=[["hot"]],
                        skewedColValueLocationMaps={("hot",): f"{OLD}/{DB}.db/skewed/v=hot"})
    with real_hms.server.client() as client:
        client.create_database(database_v3(name=DB, locationUri=f"{OLD}/{DB}.db", parameters={}, **managed))
        client.create_table(events)
        client.add_partitions([_partition(events, dt, f"{events_at}/dt={dt}", {"path": f"{events_at}/dt={dt}"})
                               for dt in DATES])
        client.create_table(_table("dim", f"{OLD}/{DB}.db/dim"))
        client.create_table(_table("skewed", f"{OLD}/{DB}.db/skewed", skewed=skewed))
        client.create_table(_table("sibling", SIBLING))
        client.create_function(Function(functionName="udf", dbName=DB, className="com.example.Udf",
                                        ownerName="hive", ownerType=1, createTime=0, functionType=1,
                                        resourceUris=[ResourceUri(1, f"{OLD}/jars/udf.jar"),
                                                      ResourceUri(1, "hdfs://nn:8020/libs/shared.jar")]))
        create_catalog(client, "spark", f"{OLD}/spark", "a second catalog")
        client.create_database(database_v3(name=DB, catalogName="spark", locationUri=f"{OLD}/spark/{DB}.db",
                                           parameters={}))
        spark_events = _table("events", f"{OLD}/spark/{DB}.db/events")
        client.create_table(table_v3(catName="spark", **vars(spark_events)))
    return real_hms.dump()


@pytest.fixture
def open_catalog(real_hms: RealHms) -> Iterator:
    """open_catalog(hive_catalog) -> SqlCatalog with a journal of its own (dropped after)."""
    opened: list[SqlCatalog] = []

    def open_(hive_catalog: str = "hive") -> SqlCatalog:
        opened.append(SqlCatalog(real_hms.sql_url, journal_schema=unique_name("hc_journal"),
                                 hive_catalog=hive_catalog))
        return opened[-1]

    yield open_
    for catalog in opened:
        catalog.close()
        if real_hms.dialect == "mariadb":  # on PostgreSQL the journal schema goes with the metastore database
            drop_database(real_hms.db_server, catalog.journal.schema)


@pytest.fixture
def catalog(open_catalog) -> SqlCatalog:
    return open_catalog("hive")


def _thrift_locations(real_hms: RealHms) -> dict[str, str | None]:
    """Every location the metastore reports through Thrift, by object."""
    out: dict[str, str | None] = {}
    with real_hms.server.client() as client:
        for name in ("default", DB):
            database = get_database_v3(client, name)
            out[f"db:{name}"] = database.locationUri
            if real_hms.version == 4:
                out[f"managed:{name}"] = database.managedLocationUri
        for name in ("events", "dim", "sibling"):  # skewed: hmsclient cannot read list-keyed maps back
            table = get_table(client, DB, name)
            out[f"table:{name}"] = table.sd.location
            if "path" in table.sd.serdeInfo.parameters:
                out[f"table:{name}:path"] = table.sd.serdeInfo.parameters["path"]
            if "avro.schema.url" in table.parameters:
                out[f"table:{name}:avro.schema.url"] = table.parameters["avro.schema.url"]
        for part in client.get_partitions(DB, "events", -1):
            out[f"partition:dt={part.values[0]}"] = part.sd.location
            out[f"partition:dt={part.values[0]}:path"] = part.parameters.get("path")
        function = client.get_function(DB, "udf")
        out.update({f"udf:{i}": r.uri for i, r in enumerate(function.resourceUris)})
    return out


def _expected_locations(real_hms: RealHms, root: str) -> dict[str, str | None]:
    """What _thrift_locations returns with everything under OLD at `root` instead."""
    events = f"{root}/{DB}.db/events"
    out: dict[str, str | None] = {"db:default": root, f"db:{DB}": f"{root}/{DB}.db"}
    if real_hms.version == 4:
        out.update({"managed:default": None, f"managed:{DB}": f"{root}/managed/{DB}.db"})
    out.update({"table:events": events, "table:events:path": events, "table:events:avro.schema.url":
                f"{events}/_schema.avsc", "table:dim": f"{root}/{DB}.db/dim", "table:sibling": SIBLING})
    for dt in DATES:
        out.update({f"partition:dt={dt}": f"{events}/dt={dt}", f"partition:dt={dt}:path": f"{events}/dt={dt}"})
    out.update({"udf:0": f"{root}/jars/udf.jar", "udf:1": "hdfs://nn:8020/libs/shared.jar"})
    return out


def _spark_locations(real_hms: RealHms) -> dict[str, str]:
    """The `spark` catalog's locations: its root (CTLGS), the `default` database that create_catalog made
    at that root, its sales database and sales.events (Thrift)."""
    roots = {row[1]: row[3] for row in real_hms.dump()["CTLGS"]}
    with real_hms.server.client() as client:
        return {"catalog": roots["spark"],
                "default": get_database_v3(client, "default", catalog="spark").locationUri,
                "db": get_database_v3(client, DB, catalog="spark").locationUri,
                "table": get_table(client, DB, "events", catalog="spark").sd.location}


def _expected_spark(root: str) -> dict[str, str]:
    return {"catalog": f"{root}/spark", "default": f"{root}/spark", "db": f"{root}/spark/{DB}.db",
            "table": f"{root}/spark/{DB}.db/events"}


def _skewed_locations(real_hms: RealHms) -> list[str]:
    return sorted(row[-1] for row in real_hms.dump().get("SKEWED_COL_VALUE_LOC_MAP", []))


# --- the schema schematool made --------------------------------------------------------------------

def test_detect_schema_reports_catalogs_and_managed_locations(real_hms, objects):
    engine = sa.create_engine(real_hms.sql_url)
    try:
        with engine.connect() as conn:
            detected = detect_schema(conn)
    finally:
        engine.dispose()
    assert detected.has_catalogs is True
    assert detected.has_managed_location is (real_hms.version == 4)
    assert detected.version == real_hms.release.schema_version
    # Capacities as the release's own scripts declare them. Hive 4 widened PARTITION_PARAMS.PARAM_VALUE
    # from VARCHAR(4000) to MEDIUMTEXT (MySQL) / TEXT (PostgreSQL).
    dialect = "mysql" if real_hms.dialect == "mariadb" else "postgresql"
    assert capacity(detected["SDS"].c.LOCATION, dialect) == Capacity(4000, "characters")
    long_text = Capacity(2**24 - 1, "bytes") if real_hms.dialect == "mariadb" else None
    assert capacity(detected["TABLE_PARAMS"].c.PARAM_VALUE, dialect) == long_text
    assert capacity(detected["PARTITION_PARAMS"].c.PARAM_VALUE, dialect) == (
        Capacity(4000, "characters") if real_hms.version == 3 else long_text)
    assert sorted(row[1:4] for row in objects["CTLGS"]) == [
        ("hive", "Default catalog for Hive", OLD), ("spark", "a second catalog", f"{OLD}/spark")]


# --- relocation --------------------------------------------------------------------------------------

def test_whole_catalog_relocation_moves_every_location_and_undo_restores(real_hms, objects, catalog):
    assert real_hms.dump() == objects
    assert _thrift_locations(real_hms) == _expected_locations(real_hms, OLD)
    assert _skewed_locations(real_hms) == [f"{OLD}/{DB}.db/skewed/v=hot"]
    assert _spark_locations(real_hms) == _expected_spark(OLD)

    dry = catalog.relocate(RelocationRequest(OLD, NEW, dry_run=True))
    assert real_hms.dump() == objects
    report = catalog.relocate(RelocationRequest(OLD, NEW))
    expected_counts = {
        ObjectKind.CATALOG: 1, ObjectKind.DATABASE: 2, ObjectKind.TABLE: 4 - 1,  # not the sibling
        ObjectKind.PARTITION: 2, ObjectKind.SERDE_PARAM: 1, ObjectKind.TABLE_PARAM: 1,
        ObjectKind.PARTITION_PARAM: 2, ObjectKind.SKEWED_LOCATION: 1, ObjectKind.FUNCTION_RESOURCE: 1,
    }
    if real_hms.version == 4:
        expected_counts[ObjectKind.DATABASE_MANAGED] = 1  # `default` has none
    assert {k: c.rewritten for k, c in report.counts.items() if c.rewritten} == expected_counts
    assert {k: c.rewritten for k, c in dry.counts.items() if c.rewritten} == expected_counts
    assert report.conflicted == 0

    # What the metastore itself now reports, object by object.
    assert _thrift_locations(real_hms) == _expected_locations(real_hms, NEW)
    assert _skewed_locations(real_hms) == [f"{NEW}/{DB}.db/skewed/v=hot"]
    assert sorted(r[3] for r in real_hms.dump()["CTLGS"]) == [NEW, f"{OLD}/spark"]
    assert _spark_locations(real_hms) == _expected_spark(OLD)  # the other catalog, though under OLD: untouched

    # The metastore keeps working on the moved objects: a new partition lands under the table's new home.
    with real_hms.server.client() as client:
        events = get_table(client, DB, "events")
        client.add_partitions([_partition(events, "2026-11-03", None)])
        [added] = [p for p in client.get_partitions(DB, "events", -1) if p.values == ["2026-11-03"]]
        assert added.sd.location == f"{NEW}/{DB}.db/events/dt=2026-11-03"
        assert (real_hms.fs_root / "moved/warehouse" / f"{DB}.db/events/dt=2026-11-03").is_dir()
        assert client.drop_partition(DB, "events", ["2026-11-03"], False)

    undo = catalog.undo(report.run_id)
    assert undo.rewritten == report.rewritten
    assert real_hms.dump() == objects
    assert _thrift_locations(real_hms) == _expected_locations(real_hms, OLD)


def test_table_scope_moves_that_table_only(real_hms, objects, catalog):
    report = catalog.relocate(RelocationRequest(OLD, NEW, Scope(DB, "events")))
    try:
        assert report.tables_touched == [f"{DB}.events"]
        moved = _thrift_locations(real_hms)
        expected = _expected_locations(real_hms, OLD)
        expected.update({k: v for k, v in _expected_locations(real_hms, NEW).items()
                         if k.startswith(("table:events", "partition:"))})
        assert moved == expected
    finally:
        catalog.undo(report.run_id)
    assert real_hms.dump() == objects


def test_a_run_on_the_spark_catalog_moves_only_its_objects(real_hms, objects, open_catalog):
    catalog = open_catalog("spark")
    report = catalog.relocate(RelocationRequest(OLD, NEW))
    try:
        assert {k: c.rewritten for k, c in report.counts.items() if c.rewritten} == {
            ObjectKind.CATALOG: 1, ObjectKind.DATABASE: 2, ObjectKind.TABLE: 1}  # its own `default` too
        assert report.tables_touched == [f"{DB}.events"]
        assert _spark_locations(real_hms) == _expected_spark(NEW)
        assert _thrift_locations(real_hms) == _expected_locations(real_hms, OLD)  # catalog `hive`: untouched
    finally:
        catalog.undo(report.run_id)
    assert real_hms.dump() == objects
