"""A relocation that names the locations it expects (RelocationRequest.expected_locations) and asks the caller to
confirm before it commits (`confirm`), on every backend: SQL on MariaDB and PostgreSQL (one transaction, and in
chunks), Glue (moto server) and Thrift (the real Hive Metastore 2.3).

Only values exactly equal to an expected location move: what else lies under the old prefix (a partition added
since the caller looked, a parameter that is a file) stays, byte for byte. A confirmation that names a change
leaves the catalog exactly as it was: a SQL run in one transaction is rolled back before it commits (another
connection never sees its values), any other run is undone through its journal."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import sqlalchemy as sa
from hmsclient.genthrift.hive_metastore.ttypes import Database, FieldSchema, Partition

from hivecat.catalog.glue import GlueCatalog
from hivecat.catalog.model import CHANGED_AFTER_CHECK, DEFAULT_PARAM_KEYS, RelocationRefused, RelocationRequest, Scope
from hivecat.catalog.sql.catalog import SqlCatalog
from hivecat.catalog.thrift import ThriftCatalog
from hivecat.local.scratch_db import drop_database
from hivecat.locations.prefix import rebase
from support import glue_lake
from support.hms_shapes import CatalogLayout, create_shape, dump_all
from support.hms_tables import hive_table, storage_descriptor
from support.services import unique_name

OLD, NEW = "hdfs://nn:8020/warehouse", "hdfs://nn2:8020/warehouse"
EVENTS = f"{OLD}/hive/sales.db/events"    # support.hms_shapes' partitioned table, with dt=2026-11-01 and -02
CHANGE = "sales.events/dt=2026-11-01: 1 file appended after the check"


def moved_only(before: dict, expected: set[str], old: str, new: str) -> dict:
    """`before` with every value equal to an expected location rebased, except parameters whose key is not a
    location key: what the run may write, worked out by hand from the dump."""
    def walk(node, key=None):
        if isinstance(node, dict):
            return {k: walk(v, k if isinstance(v, str) else None) for k, v in node.items()}
        if isinstance(node, (list, tuple)):
            if len(node) == 3 and isinstance(node[1], str) and node[2] in expected:  # (id, PARAM_KEY, PARAM_VALUE)
                return type(node)((node[0], node[1], rebase(node[2], old, new) if node[1] in DEFAULT_PARAM_KEYS
                                   else node[2]))
            return type(node)(walk(v) for v in node)
        if isinstance(node, str) and node in expected and (key is None or key in ("Location", "LocationUri",
                                                                                  *DEFAULT_PARAM_KEYS)):
            return rebase(node, old, new)
        return node
    return walk(before)


# --- SQL: the hand-written Hive 3 shape on MariaDB and PostgreSQL ----------------------------------------

@pytest.fixture(params=[("mariadb", None), ("postgresql", None), ("mariadb", 2), ("postgresql", 2)],
                ids=lambda p: f"{p[0]}-{'chunks' if p[1] else 'one-transaction'}")
def sql_lake(request: pytest.FixtureRequest) -> Iterator[tuple[SqlCatalog, str, int | None, sa.MetaData]]:
    dialect, chunk_size = request.param
    url = request.getfixturevalue("scratch_mariadb" if dialect == "mariadb" else "scratch_postgres")
    server = request.getfixturevalue("mariadb_server" if dialect == "mariadb" else "postgres_server")
    metadata = create_shape(url, 3, [CatalogLayout("hive", 1000, f"{OLD}/hive", f"{OLD}/fixed")])
    catalog = SqlCatalog(url, journal_schema=unique_name("hc_journal"))
    yield catalog, url, chunk_size, metadata
    catalog.close()
    if dialect == "mariadb":  # on PostgreSQL the journal schema goes with the scratch database
        drop_database(server, catalog.journal.schema)


def _sql_dump(url: str, metadata: sa.MetaData) -> dict:
    return {name: [tuple(row) for row in rows] for name, rows in dump_all(url, metadata).items()}


def _location_seen_elsewhere(url: str, location: str) -> bool:
    """Whether a connection of its own finds an SDS row holding `location` (committed values only)."""
    engine = sa.create_engine(url)
    try:
        with engine.connect() as conn:
            sds = sa.Table("SDS", sa.MetaData(), autoload_with=conn)
            return conn.execute(sa.select(sa.func.count()).where(sds.c.LOCATION == location)).scalar_one() > 0
    finally:
        engine.dispose()


def test_sql_moves_exactly_the_expected_locations(sql_lake) -> None:
    catalog, url, chunk_size, metadata = sql_lake
    before = _sql_dump(url, metadata)
    expected = {EVENTS, f"{EVENTS}/dt=2026-11-01"}
    report = catalog.relocate(RelocationRequest(EVENTS, EVENTS.replace(OLD, NEW), Scope("sales", "events"),
                                                chunk_size=chunk_size, expected_locations=tuple(sorted(expected))),
                              confirm=lambda: [])
    assert _sql_dump(url, metadata) == moved_only(before, expected, EVENTS, EVENTS.replace(OLD, NEW))
    # SDS of the table and dt=2026-11-01, their SerDe `path`, the partition's `path`; dt=2026-11-02 stays
    assert report.rewritten == 5 and report.conflicted == 0
    catalog.undo(report.run_id)
    assert _sql_dump(url, metadata) == before


def test_sql_a_change_named_by_the_confirmation_leaves_the_catalog_as_it_was(sql_lake) -> None:
    catalog, url, chunk_size, metadata = sql_lake
    before, asked, new_partition = _sql_dump(url, metadata), [], f"{EVENTS.replace(OLD, NEW)}/dt=2026-11-01"

    def confirm() -> list[str]:
        asked.append(_location_seen_elsewhere(url, new_partition))
        return [CHANGE]
    with pytest.raises(RelocationRefused) as refused:
        catalog.relocate(RelocationRequest(EVENTS, EVENTS.replace(OLD, NEW), Scope("sales", "events"),
                                           chunk_size=chunk_size, expected_locations=(EVENTS, new_partition.replace(NEW, OLD))),
                         confirm=confirm)
    assert [r.reason for r in refused.value.refusals] == [CHANGED_AFTER_CHECK]
    assert CHANGE in str(refused.value)
    # asked once; in one transaction before the commit (nobody else saw the new value), in chunks after
    assert asked == [chunk_size is not None]
    assert _sql_dump(url, metadata) == before
    statuses = [run.status for run in catalog.history()]
    assert statuses == (["undone"] if chunk_size else [])


def test_sql_an_empty_expectation_moves_nothing(sql_lake) -> None:
    catalog, url, chunk_size, metadata = sql_lake
    before = _sql_dump(url, metadata)
    report = catalog.relocate(RelocationRequest(EVENTS, EVENTS.replace(OLD, NEW), Scope("sales", "events"),
                                                chunk_size=chunk_size, expected_locations=()))
    assert report.rewritten == 0 and _sql_dump(url, metadata) == before


def test_sql_compares_byte_for_byte(sql_lake) -> None:
    """MySQL's collations fold case: an expected location that differs only in case names another directory."""
    catalog, url, chunk_size, metadata = sql_lake
    before = _sql_dump(url, metadata)
    report = catalog.relocate(RelocationRequest(EVENTS, EVENTS.replace(OLD, NEW), Scope("sales", "events"),
                                                chunk_size=chunk_size,
                                                expected_locations=(f"{EVENTS}/DT=2026-11-01",)))
    assert report.rewritten == 0 and _sql_dump(url, metadata) == before


# --- Glue (moto) ----------------------------------------------------------------------------------------

GLUE_EVENTS = f"{glue_lake.OLD}/sales.db/events"


@pytest.fixture
def glue(moto, tmp_path: Path) -> tuple:
    client = moto.client("glue")
    glue_lake.build_lake(client)
    return client, GlueCatalog(moto.region, endpoint_url=moto.endpoint, journal_url=f"sqlite:///{tmp_path / 'j.db'}",
                               functions=False)


def test_glue_moves_exactly_the_expected_locations_and_a_change_undoes_the_run(glue) -> None:
    client, catalog = glue
    before = glue_lake.dump(client)
    day = "2026-01-01"
    expected = {GLUE_EVENTS, f"{GLUE_EVENTS}/dt={day}"}
    request = RelocationRequest(GLUE_EVENTS, GLUE_EVENTS.replace(glue_lake.OLD, glue_lake.NEW),
                                Scope("sales", "events"), expected_locations=tuple(sorted(expected)))
    with pytest.raises(RelocationRefused) as refused:
        catalog.relocate(request, confirm=lambda: [CHANGE])
    assert [r.reason for r in refused.value.refusals] == [CHANGED_AFTER_CHECK]
    assert glue_lake.as_json(glue_lake.dump(client)) == glue_lake.as_json(before)
    assert [run.status for run in catalog.history()] == ["undone"]

    report = catalog.relocate(request, confirm=lambda: [])
    want = moved_only(glue_lake.as_json(before), expected, GLUE_EVENTS, request.new_prefix)
    assert glue_lake.as_json(glue_lake.dump(client)) == want
    # the table's Location, SerDe path and `path`; the partition's Location and `path`; not `comment`
    assert report.rewritten == 5


# --- Thrift (the real Hive Metastore 2.3) -------------------------------------------------------------

@pytest.fixture
def thrift(hive_metastore, tmp_path: Path) -> Iterator[tuple]:
    old, db = f"file:{tmp_path}/old", unique_name("hc_expected")
    with hive_metastore.client() as hms:
        hms.create_database(Database(name=db, locationUri=f"{old}/{db}.db", parameters={}))
        hms.create_table(hive_table(db, "events", f"{old}/events", keys=[FieldSchema("dt", "string", "")],
                                    serde={"path": f"{old}/events"}))
        hms.add_partitions([Partition(values=[f"d{i}"], dbName=db, tableName="events",
                                      sd=storage_descriptor(f"{old}/events/dt=d{i}")) for i in range(4)])
    catalog = ThriftCatalog(f"thrift://127.0.0.1:{hive_metastore.port}", journal_url=f"sqlite:///{tmp_path / 'j.db'}")
    yield catalog, db, old, f"file:{tmp_path}/new"
    with hive_metastore.client() as hms:
        hms.drop_database(db, True, True)


def _thrift_locations(catalog: ThriftCatalog, db: str) -> dict[str, str]:
    table = catalog.get_table(db, "events")
    found = {"events": table.location, "events.path": table.serde_parameters.get("path")}
    found.update({f"events/{p.values}": p.location for p in catalog.list_partitions(db, "events")})
    return found


def test_thrift_moves_exactly_the_expected_locations_and_a_change_undoes_the_run(thrift) -> None:
    catalog, db, old, new = thrift
    before = _thrift_locations(catalog, db)
    expected = {before["events"], before["events/('d1',)"]}
    request = RelocationRequest(old, new, Scope(db, "events"), expected_locations=tuple(sorted(expected)))
    with pytest.raises(RelocationRefused) as refused:
        catalog.relocate(request, confirm=lambda: [CHANGE])
    assert [r.reason for r in refused.value.refusals] == [CHANGED_AFTER_CHECK]
    assert _thrift_locations(catalog, db) == before

    catalog.relocate(request, confirm=lambda: [])
    assert _thrift_locations(catalog, db) == {k: (rebase(v, old, new) if v in expected else v)
                                              for k, v in before.items()}


def test_sql_takes_as_many_expected_locations_as_a_large_table_has_units(sql_lake) -> None:
    """5,000 expected locations (the run row keeps their digest: their text would not fit its column)."""
    catalog, url, chunk_size, metadata = sql_lake
    before = _sql_dump(url, metadata)
    expected = {EVENTS, f"{EVENTS}/dt=2026-11-01"} | {f"{EVENTS}/dt=2020-{i:05d}/hr={i % 24:02d}" for i in range(5000)}
    catalog.relocate(RelocationRequest(EVENTS, EVENTS.replace(OLD, NEW), Scope("sales", "events"),
                                       chunk_size=chunk_size, expected_locations=tuple(sorted(expected))))
    assert _sql_dump(url, metadata) == moved_only(before, expected, EVENTS, EVENTS.replace(OLD, NEW))
