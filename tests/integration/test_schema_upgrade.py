"""A metastore schema made at Hive 2.3.0 and upgraded by Hive's own schematool to 3.1.0 and then 4.0.0, on
MariaDB (latin1); a real Hive Metastore 4.0.1 then serves the upgraded schema and relocation works on it.

How the 2.3.0 schema is made: the 3.1.3 distribution has no hive-schema-2.3.0.mysql.sql, so
`schematool -initSchemaTo 2.3.0` fails ("Unknown version specified for initialization: 2.3.0"; pinned by
test_schematool_cannot_init_2_3_0_directly). Instead the 3.1.3 schematool inits 1.2.0 (hive-schema-1.2.0, which
it does have) and the release's own upgrade-1.2.0-to-2.0.0 ... upgrade-2.2.0-to-2.3.0 scripts are run with the
`mysql` client from their directory, as Hive's manual-upgrade instructions do. Everything after that is schematool:
3.1.3 `-upgradeSchemaFrom 2.3.0` (to 3.1.0), then 4.0.1 `-upgradeSchemaFrom 3.1.0` (to 4.0.0).

(A 2.3 schema made by HMS 2.3.10's DataNucleus autoCreateAll, as hivecat.local.metastore does, has no VERSION
row and 3.1.3's `-upgradeSchemaFrom 2.3.0` fails on it: `ALTER TABLE DBS ADD CONSTRAINT CTLG_FK1 FOREIGN KEY
(CTLG_NAME) REFERENCES CTLGS (NAME)` -> errno 150 "Foreign key constraint is incorrectly formed". Not tested here.)
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import sqlalchemy as sa

from hivecat.catalog.model import ObjectKind, RelocationRequest
from hivecat.catalog.sql.catalog import SqlCatalog
from hivecat.catalog.sql.schema import detect_schema
from hivecat.local.metastore import MetastoreDatabase
from hivecat.local.scratch_db import create_database, drop_database
from support.hive_metastores import (HIVE3, HIVE4, StandaloneMetastore, database_v3, get_database_v3, get_table,
                                     run_mysql_scripts)
from support.location_dump import dump_locations
from support.services import START_SECONDS, unique_name

OLD = "hdfs://nn:8020/warehouse"
NEW = "hdfs://nn:8020/moved/warehouse"
DB = "sales"
DATES = ("2026-11-01", "2026-11-02")
TO_2_3_0 = [f"upgrade-{step}.mysql.sql" for step in
            ("1.2.0-to-2.0.0", "2.0.0-to-2.1.0", "2.1.0-to-2.2.0", "2.2.0-to-2.3.0")]


@dataclass
class Snapshot:
    version: str | None          # detect_schema's
    has_catalogs: bool
    has_managed_location: bool
    version_rows: list[tuple]    # the VERSION table
    info: str = ""               # `schematool -info` output (3.1.0 and 4.0.0)


@dataclass
class Upgraded:
    sql_url: str
    db_server: str
    database: MetastoreDatabase
    root: Path
    steps: dict[str, Snapshot] = field(default_factory=dict)


def _snapshot(sql_url: str, info: str = "") -> Snapshot:
    engine = sa.create_engine(sql_url)
    try:
        with engine.connect() as conn:
            detected = detect_schema(conn)
            rows = [tuple(r) for r in conn.execute(sa.text("SELECT VER_ID, SCHEMA_VERSION FROM VERSION")).all()]
    finally:
        engine.dispose()
    return Snapshot(detected.version, detected.has_catalogs, detected.has_managed_location, rows, info)


def _mariadb(sql_url: str, name: str) -> MetastoreDatabase:
    url = sa.make_url(sql_url)
    return MetastoreDatabase.mariadb(url.host, url.port or 3306, name, url.username, url.password)


@pytest.fixture(scope="module")
def upgraded(mariadb_server: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Upgraded]:
    """2.3.0 (schematool 1.2.0 + Hive's upgrade scripts) -> 3.1.0 (schematool 3.1.3) -> 4.0.0 (schematool 4.0.1)."""
    name = unique_name("hc_upgrade")
    sql_url = create_database(mariadb_server, name, latin1=True)
    database = _mariadb(sql_url, name)
    root = tmp_path_factory.mktemp("schema-upgrade")
    state = Upgraded(sql_url, mariadb_server, database, root)
    tool3 = StandaloneMetastore(HIVE3, database, root / "hive3", root / "fs")
    tool4 = StandaloneMetastore(HIVE4, database, root / "hive4", root / "fs")
    url = sa.make_url(sql_url)
    try:
        began = time.monotonic()
        tool3.run_schema_tool(["-initSchemaTo", "1.2.0"], "init-1.2.0.log")
        run_mysql_scripts(HIVE3, TO_2_3_0, url.host, url.port or 3306, name, url.username, url.password)
        state.steps["2.3.0"] = _snapshot(sql_url)
        START_SECONDS["schema-init-2.3.0"] = round(time.monotonic() - began, 2)

        began = time.monotonic()
        tool3.run_schema_tool(["-upgradeSchemaFrom", "2.3.0"], "upgrade-2.3.0.log")
        START_SECONDS["schema-upgrade-2.3.0-3.1.0"] = round(time.monotonic() - began, 2)
        state.steps["3.1.0"] = _snapshot(sql_url, tool3.run_schema_tool(["-info"], "info-3.1.0.log"))

        began = time.monotonic()
        tool4.run_schema_tool(["-upgradeSchemaFrom", "3.1.0"], "upgrade-3.1.0.log")
        START_SECONDS["schema-upgrade-3.1.0-4.0.0"] = round(time.monotonic() - began, 2)
        state.steps["4.0.0"] = _snapshot(sql_url, tool4.run_schema_tool(["-info"], "info-4.0.0.log"))
    except (RuntimeError, FileNotFoundError) as exc:
        drop_database(mariadb_server, name)
        pytest.fail(f"schema upgrade failed: {exc}")
    try:
        yield state
    finally:
        drop_database(mariadb_server, name)


@pytest.fixture(scope="module")
def hms4(upgraded: Upgraded) -> Iterator[StandaloneMetastore]:
    """Hive Metastore 4.0.1 serving the upgraded schema (schema verification on; no -initSchema)."""
    server = StandaloneMetastore(HIVE4, upgraded.database, upgraded.root / "hms4", upgraded.root / "fs")
    began = time.monotonic()
    try:
        server.start(init_schema=False)
    except (RuntimeError, FileNotFoundError) as exc:
        pytest.fail(f"{HIVE4} did not start on the upgraded schema: {exc}")
    START_SECONDS["hive4-on-upgraded-schema"] = round(time.monotonic() - began, 2)
    try:
        yield server
    finally:
        server.stop()


# --- the schema at each step -----------------------------------------------------------------------

def test_schematool_cannot_init_2_3_0_directly(scratch_mariadb: str, tmp_path: Path):
    """Why the 2.3.0 schema is made from 1.2.0 plus upgrade scripts: 3.1.3 ships no hive-schema-2.3.0."""
    tool = StandaloneMetastore(HIVE3, _mariadb(scratch_mariadb, sa.make_url(scratch_mariadb).database),
                               tmp_path / "hive3", tmp_path / "fs")
    with pytest.raises(RuntimeError, match="Unknown version specified for initialization: 2.3.0"):
        tool.run_schema_tool(["-initSchemaTo", "2.3.0"])


def test_the_2_3_0_schema_has_no_catalogs(upgraded):
    step = upgraded.steps["2.3.0"]
    assert (step.version, step.has_catalogs, step.has_managed_location) == ("2.3.0", False, False)
    assert step.version_rows == [(1, "2.3.0")]


def test_schematool_3_1_3_upgrades_2_3_0_to_3_1_0(upgraded):
    step = upgraded.steps["3.1.0"]
    assert (step.version, step.has_catalogs, step.has_managed_location) == ("3.1.0", True, False)
    assert step.version_rows == [(1, "3.1.0")]
    assert "Metastore schema version:\t 3.1.0" in step.info


def test_schematool_4_0_1_upgrades_3_1_0_to_4_0_0(upgraded):
    step = upgraded.steps["4.0.0"]
    assert (step.version, step.has_catalogs, step.has_managed_location) == ("4.0.0", True, True)
    assert step.version_rows == [(1, "4.0.0")]
    assert "Metastore schema version:\t 4.0.0" in step.info


# The hand-written Hive 4 shape against this schema: test_hms_shapes_match_real.py matches it column by column
# with a fresh 4.0.0 schema, and test_upgraded_schema_matches_a_fresh_4_0_0_schema below matches the upgraded one
# with that fresh one.


def _columns(sql_url: str) -> dict[str, dict[str, str]]:
    """Table -> column -> type as MariaDB reports it (collation included)."""
    engine = sa.create_engine(sql_url)
    try:
        inspector = sa.inspect(engine)
        return {t.upper(): {c["name"].upper(): str(c["type"]) for c in inspector.get_columns(t)}
                for t in inspector.get_table_names()}
    finally:
        engine.dispose()


LOCATION_COLUMNS = [("SDS", "LOCATION"), ("DBS", "DB_LOCATION_URI"), ("DBS", "DB_MANAGED_LOCATION_URI"),
                    ("CTLGS", "LOCATION_URI"), ("TABLE_PARAMS", "PARAM_VALUE"), ("PARTITION_PARAMS", "PARAM_VALUE"),
                    ("SERDE_PARAMS", "PARAM_VALUE"), ("SKEWED_COL_VALUE_LOC_MAP", "LOCATION"),
                    ("FUNC_RU", "RESOURCE_URI")]


def test_upgraded_schema_matches_a_fresh_4_0_0_schema(upgraded, mariadb_server, tmp_path):
    """Same tables and columns as 4.0.1 `-initSchema` makes; the same types up to collation (the upgrade and
    fresh scripts disagree on latin1_bin for a few non-location columns), and identical location columns."""
    name = unique_name("hc_fresh4")
    fresh_url = create_database(mariadb_server, name, latin1=True)
    try:
        StandaloneMetastore(HIVE4, _mariadb(fresh_url, name), tmp_path / "hive4", tmp_path / "fs").run_schema_tool(
            ["-initSchema"], "init-4.0.0.log")
        fresh = _columns(fresh_url)
    finally:
        drop_database(mariadb_server, name)
    ours = _columns(upgraded.sql_url)
    assert {t: set(c) for t, c in ours.items()} == {t: set(c) for t, c in fresh.items()}

    def no_collation(kind: str) -> str:
        return kind.split(" COLLATE ")[0]

    assert {(t, c): no_collation(k) for t, cols in ours.items() for c, k in cols.items()} == \
        {(t, c): no_collation(k) for t, cols in fresh.items() for c, k in cols.items()}
    assert {tc: ours[tc[0]][tc[1]] for tc in LOCATION_COLUMNS} == {tc: fresh[tc[0]][tc[1]] for tc in LOCATION_COLUMNS}


# --- HMS 4.0.1 on the upgraded schema, and relocation ------------------------------------------------

def _sd(location: str, serde_params: dict[str, str] | None = None):
    from hmsclient.genthrift.hive_metastore.ttypes import FieldSchema, SerDeInfo, StorageDescriptor

    return StorageDescriptor(
        cols=[FieldSchema("id", "int", None), FieldSchema("v", "string", None)], location=location,
        inputFormat="org.apache.hadoop.hive.ql.io.parquet.MapredParquetInputFormat",
        outputFormat="org.apache.hadoop.hive.ql.io.parquet.MapredParquetOutputFormat", compressed=False,
        numBuckets=-1, bucketCols=[], sortCols=[], parameters={},
        serdeInfo=SerDeInfo(None, "org.apache.hadoop.hive.ql.io.parquet.serde.ParquetHiveSerDe",
                            {"serialization.format": "1", **(serde_params or {})}))


def _table(name: str, location: str, partitioned: bool = False, serde_params: dict[str, str] | None = None):
    from hmsclient.genthrift.hive_metastore.ttypes import FieldSchema, Table

    return Table(tableName=name, dbName=DB, owner="hive", createTime=0, lastAccessTime=0, retention=0,
                 sd=_sd(location, serde_params),
                 partitionKeys=[FieldSchema("dt", "string", None)] if partitioned else [],
                 parameters={"EXTERNAL": "TRUE"}, tableType="EXTERNAL_TABLE")


def _partition(table, dt: str, location: str):
    from hmsclient.genthrift.hive_metastore.ttypes import Partition

    sd = _sd(location)
    return Partition(values=[dt], dbName=DB, tableName=table.tableName, createTime=0, lastAccessTime=0, sd=sd,
                     parameters={"path": location})


def _thrift_locations(server: StandaloneMetastore) -> dict[str, str | None]:
    out: dict[str, str | None] = {}
    with server.client() as client:
        database = get_database_v3(client, DB)
        out["db"], out["managed"] = database.locationUri, database.managedLocationUri
        for name in ("events", "dim"):
            table = get_table(client, DB, name)
            out[f"table:{name}"] = table.sd.location
            if "path" in table.sd.serdeInfo.parameters:
                out[f"table:{name}:path"] = table.sd.serdeInfo.parameters["path"]
        for part in client.get_partitions(DB, "events", -1):
            out[f"partition:dt={part.values[0]}"] = part.sd.location
            out[f"partition:dt={part.values[0]}:path"] = part.parameters.get("path")
    return out


def _expected(root: str) -> dict[str, str | None]:
    events = f"{root}/{DB}.db/events"
    out: dict[str, str | None] = {"db": f"{root}/{DB}.db", "managed": f"{root}/managed/{DB}.db",
                                  "table:events": events, "table:events:path": events,
                                  "table:dim": f"{root}/{DB}.db/dim"}
    for dt in DATES:
        out.update({f"partition:dt={dt}": f"{events}/dt={dt}", f"partition:dt={dt}:path": f"{events}/dt={dt}"})
    return out


def test_relocation_and_undo_on_the_upgraded_schema(upgraded, hms4):
    events_at = f"{OLD}/{DB}.db/events"
    events = _table("events", events_at, partitioned=True, serde_params={"path": events_at})
    with hms4.client() as client:
        client.create_database(database_v3(name=DB, locationUri=f"{OLD}/{DB}.db", parameters={},
                                           managedLocationUri=f"{OLD}/managed/{DB}.db"))
        client.create_table(events)
        client.add_partitions([_partition(events, dt, f"{events_at}/dt={dt}") for dt in DATES])
        client.create_table(_table("dim", f"{OLD}/{DB}.db/dim"))
    before = dump_locations(upgraded.sql_url)
    assert _thrift_locations(hms4) == _expected(OLD)
    # upgrade-2.3.0-to-3.0.0 made catalog `hive` at location 'TBD'; HMS 4 set it to the warehouse at start.
    assert {row[1]: row[3] for row in before["CTLGS"]} == {"hive": OLD}

    catalog = SqlCatalog(upgraded.sql_url, journal_schema=unique_name("hc_journal"), hive_catalog="hive")
    try:
        report = catalog.relocate(RelocationRequest(OLD, NEW))
        assert report.conflicted == 0
        assert {k: c.rewritten for k, c in report.counts.items() if c.rewritten} == {
            ObjectKind.CATALOG: 1, ObjectKind.DATABASE: 2,  # `default` (HMS made it at the warehouse) and sales
            ObjectKind.DATABASE_MANAGED: 1, ObjectKind.TABLE: 2, ObjectKind.PARTITION: 2,
            ObjectKind.SERDE_PARAM: 1, ObjectKind.PARTITION_PARAM: 2}
        assert _thrift_locations(hms4) == _expected(NEW)
        assert [row[3] for row in dump_locations(upgraded.sql_url)["CTLGS"]] == [NEW]
        with hms4.client() as client:
            assert get_database_v3(client, "default").locationUri == NEW

        # HMS keeps working on the moved table: a new partition lands under the table's new home.
        with hms4.client() as client:
            moved = get_table(client, DB, "events")
            client.add_partitions([_partition(moved, "2026-11-03", f"{NEW}/{DB}.db/events/dt=2026-11-03")])
            assert client.drop_partition(DB, "events", ["2026-11-03"], False)

        undo = catalog.undo(report.run_id)
        assert undo.rewritten == report.rewritten
        assert dump_locations(upgraded.sql_url) == before
        assert _thrift_locations(hms4) == _expected(OLD)
    finally:
        catalog.close()
        drop_database(upgraded.db_server, catalog.journal.schema)
