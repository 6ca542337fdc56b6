"""MariaDB's one-transaction fast path (no chunk size): the plan's shared locks stand in for the
compare-and-set join, a planned count the UPDATE does not reach rolls everything back, and the journal
it writes undoes exactly.

Runs on the hand-written Hive 3 shape (support.hms_shapes) with the catalogs `hive` and `spark`.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest
import sqlalchemy as sa

from hivecat.catalog.journal import APPLIED, UNDO_CONFLICTED, kind_code, parse_block, state_code
from hivecat.catalog.model import ObjectKind, RelocationRefused, RelocationRequest
from hivecat.catalog.sql import blocks
from hivecat.catalog.sql.blocks import unpack
from hivecat.catalog.sql.catalog import SqlCatalog
from hivecat.local.scratch_db import drop_database
from hivecat.locations.prefix import rebase
from support.hms_shapes import CatalogLayout, create_shape, dump_all, expected_dump
from support.services import unique_name

OLD = "hdfs://nn:8020/warehouse"
NEW = "hdfs://nn2:8020/warehouse"
SAME_LENGTH = "hdfs://nm:8020/warehouse"  # as long as OLD: packed without a capacity check
VERSION = 3
PLANNED_PART = 1021  # the hive catalog's second partition: under OLD, so every run plans its rows


def layout(name: str, root: str = OLD) -> CatalogLayout:
    return CatalogLayout(name, {"hive": 1000, "spark": 2000}[name], f"{root}/{name}", f"{OLD}/{name}")


@pytest.fixture
def shape(scratch_mariadb) -> Iterator[tuple[str, sa.MetaData]]:
    yield scratch_mariadb, create_shape(scratch_mariadb, VERSION, [layout("hive"), layout("spark")])


@pytest.fixture
def catalog(shape, mariadb_server) -> Iterator[SqlCatalog]:
    """A catalog whose engine defaults to READ COMMITTED: the fast path must set its own isolation level."""
    url, _ = shape
    opened = SqlCatalog(url, journal_schema=unique_name("hc_journal"),
                        engine=sa.create_engine(url, isolation_level="READ COMMITTED"))
    yield opened
    opened.close()
    drop_database(mariadb_server, opened.journal.schema)


def _planned_partition_sd(url: str, metadata: sa.MetaData) -> int:
    parts = metadata.tables["PARTITIONS"]
    engine = sa.create_engine(url)
    try:
        with engine.connect() as conn:
            return conn.execute(sa.select(parts.c.SD_ID).where(parts.c.PART_ID == PLANNED_PART)).scalar_one()
    finally:
        engine.dispose()


def _changed_cells(metadata: sa.MetaData, before: dict, after: dict) -> list[tuple[str, str]]:
    """(old, new) of every cell that differs between two dumps, rows paired by primary key."""
    changed = []
    for name, rows in before.items():
        key = [i for i, column in enumerate(metadata.tables[name].columns) if column.primary_key]
        now = {tuple(row[i] for i in key): row for row in after[name]}
        assert len(now) == len(rows)
        for row in rows:
            changed += [(old, new) for old, new in zip(row, now[tuple(row[i] for i in key)]) if old != new]
    return sorted(changed)


def _pause_after_plan(monkeypatch, after_plan) -> None:
    """Calls after_plan(conn) on the run's own connection right after its plan, inside its transaction."""
    plan = SqlCatalog._plan

    def planned_then(self, conn, *args, **kwargs):
        result = plan(self, conn, *args, **kwargs)
        after_plan(conn)
        return result
    monkeypatch.setattr(SqlCatalog, "_plan", planned_then)


# Concurrency on the fast path (a second session blocked by the plan's locks): no real-schema test.
def test_planned_rows_stay_locked_until_the_run_commits(shape, catalog, monkeypatch):
    url, metadata = shape
    sd_id = _planned_partition_sd(url, metadata)
    planned, resume = threading.Event(), threading.Event()

    def hold(conn):
        planned.set()
        assert resume.wait(60)
    _pause_after_plan(monkeypatch, hold)
    outcome: dict = {}
    runner = threading.Thread(target=lambda: outcome.update(report=catalog.relocate(RelocationRequest(OLD, NEW))))
    runner.start()
    try:
        assert planned.wait(60)
        sds, pp = metadata.tables["SDS"], metadata.tables["PARTITION_PARAMS"]
        writer = sa.create_engine(url, isolation_level="READ COMMITTED")
        try:
            for change in (sds.update().where(sds.c.SD_ID == sd_id).values(LOCATION="hdfs://other/x"),
                           pp.update().where(pp.c.PART_ID == PLANNED_PART, pp.c.PARAM_KEY == "path")
                           .values(PARAM_VALUE="hdfs://other/x")):
                with writer.connect() as conn:
                    conn.execute(sa.text("SET SESSION innodb_lock_wait_timeout = 1"))
                    with pytest.raises(sa.exc.OperationalError, match="1205"):  # lock wait timeout
                        conn.execute(change)
                    conn.rollback()
        finally:
            writer.dispose()
    finally:
        resume.set()
        runner.join(60)
    report = outcome["report"]
    assert report.conflicted == 0
    assert dump_all(url, metadata) == expected_dump(metadata, VERSION, [layout("hive", NEW), layout("spark")])


# A row changed behind the plan (injected): full rollback; no real-schema test injects changes.
def test_a_planned_count_the_update_does_not_reach_rolls_everything_back(shape, catalog, monkeypatch):
    url, metadata = shape
    sd_id = _planned_partition_sd(url, metadata)
    before = dump_all(url, metadata)
    sds = metadata.tables["SDS"]
    # A planned row no longer holding its planned value by apply time (only the run's own connection can
    # do this, as the plan locks it): the UPDATE matches one row fewer than planned.
    _pause_after_plan(monkeypatch, lambda conn: conn.execute(
        sds.update().where(sds.c.SD_ID == sd_id).values(LOCATION="hdfs://other/x")))
    with pytest.raises(RelocationRefused) as refused:
        catalog.relocate(RelocationRequest(OLD, NEW))
    [refusal] = refused.value.refusals
    assert refusal.reason == "changed-during-run"
    assert "partition: 1 rows held their planned value, 2 were planned" in refusal.message
    assert dump_all(url, metadata) == before  # the other partition, the tables, the databases: all rolled back
    assert catalog.history() == []


# Journal contents cell by cell, every column of every row compared: the real tests check locations only.
def test_fast_path_journals_every_value_and_undo_restores_exactly(shape, catalog):
    url, metadata = shape
    before = dump_all(url, metadata)
    report = catalog.relocate(RelocationRequest(OLD, NEW))
    after = dump_all(url, metadata)
    assert after == expected_dump(metadata, VERSION, [layout("hive", NEW), layout("spark")])

    e = catalog.journal.entries
    with catalog.engine.connect() as conn:
        unpack(conn, catalog.journal, report.run_id)  # (rolled back: the storage descriptors' entries are packed)
        entries = conn.execute(sa.select(e.c.state, e.c.old_value, e.c.new_value)
                               .where(e.c.run_no == catalog.journal.run_no(conn, report.run_id))).all()
        conn.rollback()
    assert {state for state, _, _ in entries} == {state_code(APPLIED)}
    assert len(entries) == report.rewritten
    # Exactly the values that changed, each journaled by its old value (the new one is the run's rebase of it).
    assert {new for _, _, new in entries} == {None}
    assert sorted((old, rebase(old, OLD, NEW)) for _, old, _ in entries) == _changed_cells(metadata, before, after)

    undone = catalog.undo(report.run_id)
    assert undone.rewritten == report.rewritten and undone.conflicted == 0
    assert dump_all(url, metadata) == before


def _statements(catalog: SqlCatalog) -> list[str]:
    """Every SQL statement the catalog's engine sends from now on, whitespace collapsed."""
    sent: list[str] = []
    sa.event.listen(catalog.engine, "before_cursor_execute",
                    lambda conn, cursor, statement, *_: sent.append(" ".join(statement.split())))
    return sent


@pytest.fixture
def one_catalog(scratch_mariadb, mariadb_server) -> Iterator[tuple[str, sa.MetaData, SqlCatalog]]:
    """Only the `hive` catalog: every row under OLD is in scope of a whole-catalog run."""
    metadata = create_shape(scratch_mariadb, VERSION, [layout("hive")])
    opened = SqlCatalog(scratch_mariadb, journal_schema=unique_name("hc_journal"))
    yield scratch_mariadb, metadata, opened
    opened.close()
    drop_database(mariadb_server, opened.journal.schema)


# The column-wide UPDATE (no join to the journal) on the hand-written shape; the real-schema tests and the
# benchmark take it too, and compare locations only.
def test_an_unrestricted_run_rewrites_each_column_with_one_update_and_undoes_exactly(one_catalog):
    url, metadata, catalog = one_catalog
    before = dump_all(url, metadata)
    sent = _statements(catalog)
    report = catalog.relocate(RelocationRequest(OLD, NEW))
    assert dump_all(url, metadata) == expected_dump(metadata, VERSION, [layout("hive", NEW)])
    metastore_updates = [s for s in sent if s.startswith("UPDATE `")]  # (the journal's tables are qualified)
    assert [s for s in metastore_updates if s.startswith("UPDATE `SDS`")]
    assert not [s for s in metastore_updates if "hivecat_entries" in s]  # no UPDATE joined to the journal
    assert not [s for s in sent if s.startswith("ROLLBACK TO SAVEPOINT")]
    assert report.conflicted == 0 and report.rewritten > 0
    undone = catalog.undo(report.run_id)
    assert undone.rewritten == report.rewritten and undone.conflicted == 0
    assert dump_all(url, metadata) == before


# A row under the prefix that no plan reaches: the column-wide UPDATE would count it, so it is rolled back
# (after unpacking the plan's blocks; with and without a capacity check).
@pytest.mark.parametrize("new", [NEW, SAME_LENGTH], ids=["growing", "same-length"])
def test_a_row_outside_the_plan_sends_the_run_back_to_its_planned_keys(one_catalog, new):
    url, metadata, catalog = one_catalog
    sds, serdes = metadata.tables["SDS"], metadata.tables["SERDES"]
    engine = sa.create_engine(url)
    orphan = f"{OLD}/hive/orphan"  # a storage descriptor no table or partition owns (left by a failed DDL)
    with engine.begin() as conn:
        conn.execute(serdes.insert().values(SERDE_ID=999, NAME=None, SLIB="x"))
        conn.execute(sds.insert().values(SD_ID=999, CD_ID=None, INPUT_FORMAT="i", IS_COMPRESSED=False,
                                         IS_STOREDASSUBDIRECTORIES=False, LOCATION=orphan, NUM_BUCKETS=-1,
                                         OUTPUT_FORMAT="o", SERDE_ID=999))
    sent = _statements(catalog)
    report = catalog.relocate(RelocationRequest(OLD, new))
    assert report.conflicted == 0
    assert [s for s in sent if s.startswith("ROLLBACK TO SAVEPOINT")]  # the column-wide SDS UPDATE, undone
    with engine.connect() as conn:
        assert conn.execute(sa.select(sds.c.LOCATION).where(sds.c.SD_ID == 999)).scalar_one() == orphan
        conn.execute(sds.delete().where(sds.c.SD_ID == 999))
        conn.execute(serdes.delete().where(serdes.c.SERDE_ID == 999))
        conn.commit()
    engine.dispose()
    assert dump_all(url, metadata) == expected_dump(metadata, VERSION, [layout("hive", new)])
    assert catalog.undo(report.run_id).rewritten == report.rewritten


# Every latin1 byte from 0x80 up (MariaDB's latin1 is cp1252: 0x81, 0x8D, 0x8F, 0x90, 0x9D included), JSON's
# escapes, SQL's wildcards.
ODD = sa.func.concat(OLD + "/hive/odd/", sa.literal_column("_latin1 X'" + "".join(f"{c:02X}" for c in range(0x80, 0x100))
                                                           + "'"), "\"\\\t\x01%_'")


def _packed(catalog: SqlCatalog, run_id: str) -> tuple[dict[int, int], int]:
    """kind code -> entries held in the run's blocks, and the run's unpacked entries."""
    b, e = catalog.journal.blocks, catalog.journal.entries
    with catalog.engine.connect() as conn:
        run_no = catalog.journal.run_no(conn, run_id)
        blocks = dict(conn.execute(sa.select(b.c.kind, sa.func.sum(b.c.entries)).where(b.c.run_no == run_no)
                                   .group_by(b.c.kind)).all())
        entries = conn.execute(sa.select(sa.func.count()).where(e.c.run_no == run_no)).scalar_one()
    return {kind: int(n) for kind, n in blocks.items()}, entries


# Packed entries (journal blocks) on the hand-written shape with a value no real schema test holds: every
# latin1 byte, JSON escapes. The benchmark packs 1M real-schema partitions and checks locations.
def test_a_whole_catalog_run_packs_its_storage_descriptor_entries_and_undoes_them_exactly(one_catalog):
    url, metadata, catalog = one_catalog
    sds, parts = metadata.tables["SDS"], metadata.tables["PARTITIONS"]
    engine = sa.create_engine(url)
    with engine.begin() as conn:
        sd_id = conn.execute(sa.select(parts.c.SD_ID).where(parts.c.PART_ID == PLANNED_PART)).scalar_one()
        conn.execute(sds.update().where(sds.c.SD_ID == sd_id).values(LOCATION=ODD))
        odd = conn.execute(sa.select(sds.c.LOCATION).where(sds.c.SD_ID == sd_id)).scalar_one()
        exact = sa.select(sa.func.hex(sds.c.LOCATION)).where(sds.c.SD_ID == sd_id)
        odd_bytes = conn.execute(exact).scalar_one()
    assert odd_bytes.endswith("".join(f"{c:02X}" for c in range(0x80, 0x100)) + "225C0901255F27")
    before = dump_all(url, metadata)
    report = catalog.relocate(RelocationRequest(OLD, SAME_LENGTH))
    assert report.conflicted == 0 and report.rewritten > 0
    blocks, entries = _packed(catalog, report.run_id)
    assert set(blocks) >= {kind_code(ObjectKind.TABLE), kind_code(ObjectKind.PARTITION)}
    assert sum(blocks.values()) + entries == report.rewritten  # every entry once, packed or not
    assert report.tables_touched and report.sample
    assert [run.rows for run in catalog.history()] == [report.rewritten]
    with engine.connect() as conn:
        assert conn.execute(sa.select(sds.c.LOCATION).where(sds.c.SD_ID == sd_id)).scalar_one() \
            == rebase(odd, OLD, SAME_LENGTH)

    undone = catalog.undo(report.run_id)
    assert undone.rewritten == report.rewritten and undone.conflicted == 0
    assert dump_all(url, metadata) == before
    with engine.connect() as conn:
        assert conn.execute(exact).scalar_one() == odd_bytes  # byte for byte
    engine.dispose()
    assert _packed(catalog, report.run_id) == ({}, report.rewritten)  # unpacked into entries by the undo


# A damaged block (no server writes one; edited here by hand) is refused by undo in one line, changing nothing:
# cut short, or as many entries as it counts but one of another shape (a key that is not a number).
@pytest.mark.parametrize("damage", [
    sa.func.substring(sa.column("payload"), 1, 10),
    sa.func.replace(sa.column("payload"), "[[", '[["x",'),
], ids=["cut", "shape"])
def test_undo_refuses_a_damaged_journal_block_and_changes_nothing(one_catalog, damage):
    url, metadata, catalog = one_catalog
    report = catalog.relocate(RelocationRequest(OLD, SAME_LENGTH))
    after = dump_all(url, metadata)
    b = catalog.journal.blocks
    with catalog.engine.begin() as conn:
        run_no = catalog.journal.run_no(conn, report.run_id)
        conn.execute(b.update().where(b.c.run_no == run_no, b.c.kind == kind_code(ObjectKind.PARTITION))
                     .values(payload=damage))
    with pytest.raises(RelocationRefused) as refused:
        catalog.undo(report.run_id)
    [refusal] = refused.value.refusals
    assert refusal.reason == "journal-block-damaged"
    assert dump_all(url, metadata) == after
    assert _packed(catalog, report.run_id)[0]  # the blocks are still there, whole or not


def _odd_partition(url: str, metadata: sa.MetaData) -> int:
    """Gives the planned partition the ODD location; its storage descriptor's id."""
    sds = metadata.tables["SDS"]
    sd_id = _planned_partition_sd(url, metadata)
    engine = sa.create_engine(url)
    with engine.begin() as conn:
        conn.execute(sds.update().where(sds.c.SD_ID == sd_id).values(LOCATION=ODD))
    engine.dispose()
    return sd_id


def _to_earlier_format(catalog: SqlCatalog, run_id: str) -> None:
    """Rewrites a run's blocks as a version before JSON blocks wrote them: `key1,n,key2` `m,old` per entry."""
    b = catalog.journal.blocks
    with catalog.engine.begin() as conn:
        run_no = catalog.journal.run_no(conn, run_id)
        for kind, tbl_id, block, payload in conn.execute(
                sa.select(b.c.kind, b.c.tbl_id, b.c.block, b.c.payload).where(b.c.run_no == run_no)).all():
            earlier = "".join(f"{k},{len(k2)},{k2}{len(v)},{v}" for k, k2, v in parse_block(payload))
            assert payload.startswith("[") and not earlier.startswith("[")
            conn.execute(b.update().where(b.c.run_no == run_no, b.c.kind == kind, b.c.tbl_id == tbl_id,
                                          b.c.block == block).values(payload=earlier))


# Undo unpacks JSON blocks on the server (JSON_TABLE) and writes only the metastore's rows; blocks of the earlier
# format, and any block where the server has no JSON_TABLE (MySQL 5.7, MariaDB before 10.6), are parsed here.
# Each way restores every value byte for byte, the ODD one included.
@pytest.mark.parametrize("way", ["server", "earlier-format", "no-json-table"])
def test_a_packed_run_undoes_exactly_whichever_way_its_blocks_unpack(one_catalog, monkeypatch, way):
    url, metadata, catalog = one_catalog
    _odd_partition(url, metadata)
    before = dump_all(url, metadata)
    report = catalog.relocate(RelocationRequest(OLD, SAME_LENGTH))
    assert _packed(catalog, report.run_id)[0]
    if way == "earlier-format":
        _to_earlier_format(catalog, report.run_id)
    if way == "no-json-table":
        monkeypatch.setattr(blocks, "has_json_table", lambda dialect: False)
    sent = _statements(catalog)
    undone = catalog.undo(report.run_id)
    assert undone.rewritten == report.rewritten and undone.conflicted == 0
    assert dump_all(url, metadata) == before
    assert any("JSON_TABLE" in s for s in sent) == (way == "server")
    assert [s for s in sent if s.startswith("UPDATE `SDS` STRAIGHT_JOIN")]  # the metastore's rows only
    assert _packed(catalog, report.run_id) == ({}, report.rewritten)


# A location changed after the run (someone else moved the partition) is kept by its undo, and reported; every
# other one is undone.
def test_undo_of_a_packed_run_keeps_a_location_changed_since(one_catalog):
    url, metadata, catalog = one_catalog
    sds, e = metadata.tables["SDS"], catalog.journal.entries
    sd_id = _planned_partition_sd(url, metadata)
    before = dump_all(url, metadata)
    report = catalog.relocate(RelocationRequest(OLD, NEW))
    assert _packed(catalog, report.run_id)[0]
    engine = sa.create_engine(url)
    with engine.begin() as conn:
        original = conn.execute(sa.select(sds.c.LOCATION).where(sds.c.SD_ID == sd_id)).scalar_one()
        conn.execute(sds.update().where(sds.c.SD_ID == sd_id).values(LOCATION="file:/somebody/else"))
    engine.dispose()
    undone = catalog.undo(report.run_id)
    assert undone.count(ObjectKind.PARTITION).conflicted == 1 and undone.conflicted == 1
    assert undone.rewritten == report.rewritten - 1
    assert _changed_cells(metadata, before, dump_all(url, metadata)) == [
        (rebase(original, NEW, OLD), "file:/somebody/else")]
    with catalog.engine.connect() as conn:
        assert conn.execute(sa.select(e.c.key1).where(
            e.c.run_no == catalog.journal.run_no(conn, report.run_id),
            e.c.state == state_code(UNDO_CONFLICTED))).scalars().all() == [sd_id]
