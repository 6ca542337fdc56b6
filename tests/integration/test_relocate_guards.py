"""Guarantees of `hivecat relocate` that no other test pins down: each test here fails if one line of the code
that gives the guarantee is changed (the compare-and-set of a PostgreSQL apply, the SQL run lock, the Thrift
retry of a failed batch partition by partition, exit code 4, a non-default --param-key).

SQL tests run on the Hive 3 shape of support.hms_shapes (catalog `hive`, database `sales`, table `events`
with partitions dt=2026-11-01 and dt=2026-11-02, ids from 1000); Thrift tests on the session's real HMS 2.3.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import sqlalchemy as sa
from hmsclient.genthrift.hive_metastore.ttypes import Database, FieldSchema, Partition

from hivecat import cli
from hivecat.catalog.model import ObjectKind, RelocationRefused, RelocationRequest, Scope
from hivecat.catalog.sql.catalog import SqlCatalog
from hivecat.catalog.thrift import ThriftCatalog
from hivecat.local.scratch_db import drop_database
from support.hms_shapes import CatalogLayout, create_shape
from support.hms_tables import hive_table, storage_descriptor
from support.services import unique_name

OLD = "hdfs://nn:8020/warehouse"
NEW = "hdfs://nn2:8020/warehouse"
HIVE = CatalogLayout("hive", 1000, f"{OLD}/hive", f"{OLD}/hive")
EVENTS = f"{HIVE.root}/sales.db/events"
FIRST_PART_SD, SECOND_PART_SD = HIVE.ids + 20, HIVE.ids + 21  # the partitions' storage descriptors


# --- SQL catalogs on a hand-written Hive 3 shape --------------------------------------------------

@dataclass
class Shape:
    url: str
    dialect: str  # mariadb | postgresql
    server: str
    journal: str  # the journal database (MariaDB) or schema (PostgreSQL) its catalogs share

    def catalog(self) -> SqlCatalog:
        return SqlCatalog(self.url, journal_schema=self.journal)

    def scalar(self, sql: str, **params) -> object:
        engine = sa.create_engine(self.url)
        try:
            with engine.connect() as conn:
                return conn.execute(sa.text(sql), params).scalar_one()
        finally:
            engine.dispose()

    def quoted(self, name: str) -> str:
        return f'"{name}"' if self.dialect == "postgresql" else f"`{name}`"

    def location(self, sd_id: int) -> str:
        return str(self.scalar(f"SELECT {self.quoted('LOCATION')} FROM {self.quoted('SDS')} "
                               f"WHERE {self.quoted('SD_ID')} = :sd", sd=sd_id))


def _shape(request: pytest.FixtureRequest, dialect: str) -> Iterator[Shape]:
    url = request.getfixturevalue("scratch_mariadb" if dialect == "mariadb" else "scratch_postgres")
    server = request.getfixturevalue("mariadb_server" if dialect == "mariadb" else "postgres_server")
    create_shape(url, 3, [HIVE])
    shape = Shape(url, dialect, server, unique_name("hc_journal"))
    yield shape
    if dialect == "mariadb":  # on PostgreSQL the journal schema goes with the scratch database
        drop_database(server, shape.journal)


@pytest.fixture(params=["mariadb", "postgresql"])
def shape(request: pytest.FixtureRequest) -> Iterator[Shape]:
    yield from _shape(request, request.param)


@pytest.fixture
def postgres_shape(request: pytest.FixtureRequest) -> Iterator[Shape]:
    yield from _shape(request, "postgresql")


@pytest.fixture
def mariadb_shape(request: pytest.FixtureRequest) -> Iterator[Shape]:
    yield from _shape(request, "mariadb")


# The same in one transaction (no chunk size), where entries are journaled as applied up front and only a
# count short of the plan looks for the rows that did not move: the change commits right before the apply.
def test_postgresql_one_transaction_keeps_a_row_changed_between_plan_and_apply(postgres_shape: Shape) -> None:
    shape, theirs = postgres_shape, "hdfs://elsewhere/somebody/else"
    catalog = shape.catalog()
    engine = sa.create_engine(shape.url)
    applies: list[str] = []

    @sa.event.listens_for(catalog.engine, "before_cursor_execute")
    def someone_else_moves_the_second_partition(conn, cursor, statement, parameters, context, executemany):
        if statement.startswith('UPDATE "SDS"') and not applies:
            applies.append(statement)  # the plan is journaled; this statement applies it
            with engine.begin() as theirs_conn:  # commits before the apply starts: READ COMMITTED sees it
                theirs_conn.execute(sa.text('UPDATE "SDS" SET "LOCATION" = :theirs WHERE "SD_ID" = :sd'),
                                    {"theirs": theirs, "sd": SECOND_PART_SD})

    try:
        report = catalog.relocate(RelocationRequest(OLD, NEW, Scope("sales", "events")))
        assert applies and " FROM " in applies[0]  # one UPDATE ... FROM the journal, no per-entry state write
        assert report.count(ObjectKind.PARTITION).conflicted == 1
        assert report.count(ObjectKind.PARTITION).rewritten == 1
        assert report.count(ObjectKind.TABLE).rewritten == 1 and report.count(ObjectKind.TABLE).conflicted == 0
        assert shape.location(SECOND_PART_SD) == theirs  # reported, never clobbered
        assert shape.location(FIRST_PART_SD) == f"{NEW}/hive/sales.db/events/dt=2026-11-01"
        undone = catalog.undo(report.run_id)
        assert undone.conflicted == 0 and undone.rewritten == report.rewritten
        assert shape.location(FIRST_PART_SD) == f"{EVENTS}/dt=2026-11-01"
        assert shape.location(SECOND_PART_SD) == theirs
    finally:
        catalog.close()
        engine.dispose()


# A row changed between plan and apply (injected) on PostgreSQL: no real-schema test injects changes.
def test_postgresql_keeps_a_row_changed_between_plan_and_apply(postgres_shape: Shape) -> None:
    shape, theirs = postgres_shape, "hdfs://elsewhere/somebody/else"
    catalog = shape.catalog()
    engine = sa.create_engine(shape.url)

    def someone_else_moves_the_second_partition(done: int, total: int) -> None:
        if done == 1:  # the first partition's chunk committed; the second is planned, not yet applied
            assert shape.location(SECOND_PART_SD) == f"{EVENTS}/dt=2026-11-02"
            with engine.begin() as conn:
                conn.execute(sa.text('UPDATE "SDS" SET "LOCATION" = :theirs WHERE "SD_ID" = :sd'),
                             {"theirs": theirs, "sd": SECOND_PART_SD})

    try:
        # One row per chunk: the partitions are applied one transaction each, in SD_ID order.
        report = catalog.relocate(RelocationRequest(OLD, NEW, Scope("sales", "events"), chunk_size=1),
                                  progress=someone_else_moves_the_second_partition)
        assert report.count(ObjectKind.PARTITION).conflicted == 1
        assert report.count(ObjectKind.PARTITION).rewritten == 1
        assert shape.location(SECOND_PART_SD) == theirs  # reported, never clobbered
        assert shape.location(FIRST_PART_SD) == f"{NEW}/hive/sales.db/events/dt=2026-11-01"
        undone = catalog.undo(report.run_id)
        assert undone.conflicted == 0 and shape.location(FIRST_PART_SD) == f"{EVENTS}/dt=2026-11-01"
        assert shape.location(SECOND_PART_SD) == theirs
    finally:
        catalog.close()
        engine.dispose()


# Two concurrent runs on one catalog: no real-schema test runs two at once.
def test_a_second_run_is_refused_while_the_first_holds_the_catalog(shape: Shape) -> None:
    first, second = shape.catalog(), shape.catalog()  # two clients of the same catalog
    refusals: list[RelocationRefused] = []

    def second_run_meanwhile(done: int, total: int) -> None:
        if done == 1:
            with pytest.raises(RelocationRefused) as refused:
                second.relocate(RelocationRequest(OLD, "hdfs://nn3:8020/warehouse", Scope("sales")))
            refusals.append(refused.value)

    try:
        report = first.relocate(RelocationRequest(OLD, NEW, Scope("sales", "events"), chunk_size=1),
                                progress=second_run_meanwhile)
        [refused] = refusals
        assert [r.reason for r in refused.refusals] == ["locked"]
        assert report.count(ObjectKind.PARTITION).rewritten == 2 and report.conflicted == 0
        # The lock went with the first run: the second now runs (and moves the first run's result back).
        again = second.relocate(RelocationRequest(NEW, OLD, Scope("sales", "events")))
        assert again.count(ObjectKind.PARTITION).rewritten == 2
    finally:
        first.close()
        second.close()


def _sql_cli_catalog(shape: Shape, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    url = sa.make_url(shape.url)
    monkeypatch.setenv("HIVECAT_CATALOG_PASSWORD", url.password or "")
    scheme = "postgresql" if shape.dialect == "postgresql" else "mysql"
    return ["--catalog", f"{scheme}://{url.username}@{url.host}:{url.port}/{url.database}",
            "--journal-schema", shape.journal]


# Configured parameter keys (CLI): the real-schema tests use the default keys only.
def test_a_non_default_param_key_is_rewritten_and_path_left_alone(mariadb_shape: Shape, monkeypatch, capsys) -> None:
    shape = mariadb_shape
    tbl_id = HIVE.ids + 10  # sales.events
    engine = sa.create_engine(shape.url)
    with engine.begin() as conn:
        conn.execute(sa.text("INSERT INTO TABLE_PARAMS (TBL_ID, PARAM_KEY, PARAM_VALUE) "
                             "VALUES (:t, 'my.location', :v)"), {"t": tbl_id, "v": f"{EVENTS}/mine"})
    engine.dispose()

    code = cli.main(["relocate", *_sql_cli_catalog(shape, monkeypatch), "--from", OLD, "--to", NEW,
                     "--database", "sales", "--table", "events", "--param-key", "my.location", "--output", "json"])
    out = capsys.readouterr().out
    assert code == 0, out
    counts = json.loads(out)["counts"]
    assert counts[ObjectKind.TABLE_PARAM.value]["rewritten"] == 1
    new_events = f"{NEW}/hive/sales.db/events"
    assert shape.scalar("SELECT PARAM_VALUE FROM TABLE_PARAMS WHERE TBL_ID = :t AND PARAM_KEY = 'my.location'",
                        t=tbl_id) == f"{new_events}/mine"
    # `path` (a default key, not asked for this time) stays where it was, on the table and its partitions.
    assert shape.scalar("SELECT PARAM_VALUE FROM SERDE_PARAMS WHERE SERDE_ID = :s AND PARAM_KEY = 'path'",
                        s=tbl_id) == EVENTS
    assert shape.scalar("SELECT PARAM_VALUE FROM PARTITION_PARAMS WHERE PART_ID = :p AND PARAM_KEY = 'path'",
                        p=FIRST_PART_SD) == f"{EVENTS}/dt=2026-11-01"
    assert shape.location(tbl_id) == new_events  # the locations themselves moved


# --- Thrift on the real HMS: a batch one partition of which HMS rejects -----------------------------

PARTITIONS = 12
BATCH = 5
BAD = 7  # the partition whose write HMS rejects


@dataclass
class Lake:
    db: str
    old: str
    new: str

    def path(self, n: int, root: str) -> str:
        return f"{root}/{self.db}.db/events/n={n}"


@pytest.fixture
def lake(hive_metastore, tmp_path: Path) -> Iterator[Lake]:
    """A table of PARTITIONS partitions (key n), each with a `path` parameter. HMS rejects any write of
    partition BAD: its transient_lastDdlTime is not a number, which alter_partitions parses (MetaException).

    (Rejections HMS retries internally, such as a location longer than its column, take it 20 s each; and
    a too-long partition parameter is no rejection at all: HMS 2.3 silently truncates it to 4000 characters.)"""
    db = unique_name("hc_guard")
    lake = Lake(db, f"file:{tmp_path}/old", f"file:{tmp_path}/new")
    with hive_metastore.client() as hms:
        hms.create_database(Database(name=db, locationUri=f"{lake.old}/{db}.db", parameters={}))
        hms.create_table(hive_table(db, "events", f"{lake.old}/{db}.db/events", keys=[FieldSchema("n", "int", "")]))
        hms.add_partitions([Partition(values=[str(n)], dbName=db, tableName="events",
                                      sd=storage_descriptor(lake.path(n, lake.old)),
                                      parameters={"path": lake.path(n, lake.old),
                                                  **({"transient_lastDdlTime": "soon"} if n == BAD else {})})
                            for n in range(PARTITIONS)])
    yield lake
    with hive_metastore.client() as hms:
        hms.drop_database(db, True, True)


def _partitions(hive_metastore, lake: Lake) -> dict[int, tuple[str, str]]:
    with hive_metastore.client() as hms:
        return {int(p.values[0]): (p.sd.location, p.parameters["path"])
                for p in hms.get_partitions(lake.db, "events", -1)}


def _assert_all_but_bad_moved(hive_metastore, lake: Lake) -> None:
    parts = _partitions(hive_metastore, lake)
    assert len(parts) == PARTITIONS
    for n, (location, path) in parts.items():
        root = lake.old if n == BAD else lake.new
        assert (location, path) == (lake.path(n, root),) * 2, n


def test_thrift_retries_a_failed_batch_partition_by_partition(hive_metastore, lake: Lake, tmp_path: Path) -> None:
    catalog = ThriftCatalog(f"thrift://127.0.0.1:{hive_metastore.port}", journal_url=f"sqlite:///{tmp_path}/j.db",
                            batch_size=BATCH)  # BAD shares its alter_partitions call with 4 others
    try:
        report = catalog.relocate(RelocationRequest(lake.old, lake.new, Scope(lake.db, "events")))
    finally:
        catalog.close()
    for kind in (ObjectKind.PARTITION, ObjectKind.PARTITION_PARAM):
        assert report.count(kind).rewritten == PARTITIONS - 1, kind
        assert report.count(kind).failed == 1 and report.count(kind).conflicted == 0, kind
    assert report.status == "partial" and any("MetaException" in error for error in report.errors)
    _assert_all_but_bad_moved(hive_metastore, lake)


def test_the_cli_exits_4_when_a_value_could_not_be_written(hive_metastore, lake: Lake, tmp_path: Path, capsys) -> None:
    code = cli.main(["relocate", "--catalog", f"thrift://127.0.0.1:{hive_metastore.port}",
                     "--journal-url", f"sqlite:///{tmp_path}/cli.db", "--from", lake.old, "--to", lake.new,
                     "--database", lake.db, "--table", "events", "--chunk-size", str(BATCH)])
    out = capsys.readouterr().out
    assert code == 4, out
    assert "2 value(s) could not be written" in out
    _assert_all_but_bad_moved(hive_metastore, lake)
