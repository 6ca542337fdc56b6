"""Drift scan and repair (hivecat.catalog.drift) on every backend, with real services: the SQL backend on the
MariaDB database of the session's real Hive Metastore 2.3 (objects created through HMS's own Thrift API),
Glue on moto, and the Thrift backend against the same HMS.

Each test scans (counts per kind, refused tables counted and left alone), repairs (one journaled run per
source with drift, none for a source without), scans again (zero), and undoes each run with a catalog opened
afresh, as an operator restarted in between would: the exact prior state comes back. A catalog whose lock
another run holds defers the repair and writes nothing.

Journals: the SQL catalog's in a database of its own on the metastore's MariaDB server (as the operator
keeps it); Glue's in a scratch MariaDB database given as a SQLAlchemy URL; Thrift's in a SQLite file under
tmp_path (the journal URL is backend-independent code, covered on MariaDB by the Glue test).
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime, timezone
from pathlib import Path

import pytest
import sqlalchemy as sa
from hmsclient.genthrift.hive_metastore.ttypes import Database, FieldSchema, Partition

from hivecat.catalog.connect import JournalSettings, open_catalog
from hivecat.catalog.drift import RepairDeferred, repair_drift, scan_drift
from hivecat.catalog.glue import GlueCatalog
from hivecat.catalog.model import ObjectKind
from hivecat.catalog.sql.catalog import SqlCatalog
from hivecat.catalog.sql.locks import run_lock
from hivecat.catalog.targets import GlueTarget, SqlTarget, ThriftTarget
from hivecat.local.scratch_db import drop_database
from hivecat.locations.prefix import is_under, parse_prefix, rebase
from hivecat.reconcile.conditions import TRUE
from hivecat.reconcile.drift import drift_status, drifted_condition
from hivecat.specs.clusterstorage import canonical_uri
from support.glue_lake import NEW as GLUE_NEW, OLD as GLUE_OLD, PARTITIONS as GLUE_PARTITIONS
from support.glue_lake import as_json, build_lake, dump as glue_dump, moved
from support.hms_tables import hive_table, storage_descriptor
from support.location_dump import dump_locations
from support.services import unique_name

PARTS = 6
VOLATILE = {"transient_lastDdlTime"}


def stored(uri: str) -> str:
    """How the engine writes a prefix, as HMS stores file URIs (file:/x, not file:///x)."""
    return str(parse_prefix(uri))


def _days(n: int) -> list[str]:
    return [f"2026-04-{i + 1:02d}" for i in range(n)]


# --- the HMS's own database (SQL backend) --------------------------------------------------------------

@pytest.fixture
def prefixes(tmp_path: Path) -> dict[str, str]:
    """Two old filesystems (a previous filesystem and an alias), the current one, and a place outside them,
    canonical as a ClusterStorage spec writes them."""
    return {name: canonical_uri(f"file://{tmp_path}/{name}") for name in ("old", "alias", "new", "elsewhere")}


@pytest.fixture
def hms_lake(hive_metastore, prefixes) -> Iterator[str]:
    """A database of the test's own, created through HMS itself: a partitioned table with location-valued
    parameters, a plain one, an Iceberg-flagged one under the old filesystem, a table under the alias and one
    outside both."""
    old, alias, elsewhere = prefixes["old"], prefixes["alias"], prefixes["elsewhere"]
    db = unique_name("hc_drift")
    with hive_metastore.client() as hms:
        hms.create_database(Database(name=db, locationUri=f"{old}/{db}.db", parameters={}))
        hms.create_table(hive_table(db, "events", f"{old}/{db}.db/events", keys=[FieldSchema("dt", "string", "")],
                                    params={"path": f"{old}/{db}.db/events"}, serde={"path": f"{old}/{db}.db/events"}))
        hms.add_partitions([Partition(values=[day], dbName=db, tableName="events", parameters={},
                                      sd=storage_descriptor(f"{old}/{db}.db/events/dt={day}")) for day in _days(PARTS)])
        hms.create_table(hive_table(db, "dim", f"{old}/{db}.db/dim"))
        hms.create_table(hive_table(db, "ice", f"{old}/{db}.db/ice", params={"table_type": "ICEBERG"}))
        hms.create_table(hive_table(db, "acid", f"{old}/{db}.db/acid"))  # flagged transactional below
        hms.create_table(hive_table(db, "aliased", f"{alias}/aliased"))
        hms.create_table(hive_table(db, "outside", f"{elsewhere}/outside"))
    yield db
    with hive_metastore.client() as hms:
        hms.drop_database(db, True, True)


@pytest.fixture
def sql_catalog(hive_metastore, mariadb_server, hms_lake) -> Iterator[SqlCatalog]:
    catalog = SqlCatalog(hive_metastore.sql_url, journal_schema=unique_name("hc_journal"))
    # HMS 2.3 refuses to create a transactional Parquet table: flag it in the database instead.
    catalog.set_params(hms_lake, "acid", {"transactional": "true"})
    yield catalog
    catalog.close()
    drop_database(mariadb_server, catalog.journal.schema)


def _reopened_sql(hive_metastore, journal: str):
    """The catalog as a restarted operator opens it: from a typed target, a password and the journal's place."""
    url = sa.make_url(hive_metastore.sql_url)
    target = SqlTarget("mysql", url.host, url.database, url.username, url.port)
    return open_catalog(target, password=url.password, journal=JournalSettings(schema=journal))


def _moved_dump(dump: dict[str, list[tuple]], moves: dict[str, str], keep: set[str]) -> dict[str, list[tuple]]:
    """A location dump with every value under a moved prefix rebased by hand, except the values in `keep`."""
    def move(cell: str) -> str:
        if cell in keep:
            return cell
        return next((new for old, to in moves.items() if (new := rebase(cell, old, stored(to))) is not None), cell)
    return {table: sorted(tuple(move(c) for c in row) for row in rows) for table, rows in dump.items()}


def test_sql_scan_repair_rescan_and_undo_after_restart(sql_catalog, hive_metastore, hms_lake, prefixes) -> None:
    db, old, alias, new = hms_lake, prefixes["old"], prefixes["alias"], prefixes["new"]
    sources = [old, alias, canonical_uri(f"{prefixes['new']}-never-used")]
    before = dump_locations(hive_metastore.sql_url)

    scan = scan_drift(sql_catalog, sources, new)
    assert dump_locations(hive_metastore.sql_url) == before
    assert [s.source for s in scan.scans] == sources
    assert scan.scans[0].counts == {"database": 1, "partition": PARTS, "serde_param": 1, "table": 2,
                                    "table_param": 1}
    assert scan.scans[1].counts == {"table": 1} and scan.scans[2].drifted == 0
    assert scan.drifted == 1 + PARTS + 1 + 2 + 1 + 1
    assert scan.refused == 2  # ice and acid: one table location each, left alone
    assert sorted((r.reason, r.table) for r in scan.refusals) == [("acid", f"{db}.acid"), ("iceberg", f"{db}.ice")]
    assert scan.sample and all(is_under(o, old) and is_under(n, new) for o, n in scan.sample)
    status = drift_status(scan, repair="DryRun", scanned_at=datetime.now(timezone.utc))
    assert status["driftedLocations"] == scan.drifted and len(status["sources"]) == 3
    assert drifted_condition(scan).status == TRUE

    repair = repair_drift(sql_catalog, sources, new, scan=scan)
    assert len(repair.runs) == 2 and repair.refusals == ()  # the source without drift ran nothing
    assert [r.rewritten for r in repair.runs] == [scan.scans[0].drifted, 1] and repair.failed == 0
    assert len(sql_catalog.history()) == 2
    keep = {f"{stored(old)}/{db}.db/ice", f"{stored(old)}/{db}.db/acid"}
    assert dump_locations(hive_metastore.sql_url) == _moved_dump(before, {old: new, alias: new}, keep)
    with hive_metastore.client() as hms:
        assert hms.get_table(db, "events").sd.location == f"{stored(new)}/{db}.db/events"
        assert {p.sd.location for p in hms.get_partitions(db, "events", -1)} == \
            {f"{stored(new)}/{db}.db/events/dt={day}" for day in _days(PARTS)}
        assert hms.get_table(db, "aliased").sd.location == f"{stored(new)}/aliased"
        assert hms.get_table(db, "ice").sd.location.endswith("/old/" + f"{db}.db/ice")
        assert hms.get_table(db, "acid").sd.location.endswith("/old/" + f"{db}.db/acid")

    again = scan_drift(sql_catalog, sources, new)
    assert again.drifted == 0 and again.counts == {} and again.refused == 2
    condition = drifted_condition(again)
    assert condition.status == TRUE and condition.reason in ("Acid", "Iceberg")  # still old, never forced
    assert repair_drift(sql_catalog, sources, new).runs == ()  # nothing left to repair: no new journal run
    assert len(sql_catalog.history()) == 2

    sql_catalog.close()
    reopened = _reopened_sql(hive_metastore, sql_catalog.journal.schema)
    try:
        for run in reversed(repair.runs):
            assert reopened.undo(run.run_id).rewritten == run.rewritten
        assert dump_locations(hive_metastore.sql_url) == before
        assert {r.status for r in reopened.history()} == {"undone"}
    finally:
        reopened.close()


def test_sql_repair_defers_while_another_run_holds_the_lock(sql_catalog, hive_metastore, hms_lake, prefixes) -> None:
    old, new = prefixes["old"], prefixes["new"]
    scan = scan_drift(sql_catalog, [old], new)
    assert scan.drifted > 0
    before = dump_locations(hive_metastore.sql_url)
    other = sa.create_engine(hive_metastore.sql_url)  # another process's connection, as run_lock holds it
    try:
        with run_lock(other, sql_catalog.name):
            with pytest.raises(RepairDeferred) as deferred:
                repair_drift(sql_catalog, [old], new, scan=scan)  # the relocation itself meets the lock
            assert "another relocation" in deferred.value.message and deferred.value.runs == ()
            with pytest.raises(RepairDeferred):
                repair_drift(sql_catalog, [old], new)  # the dry run it takes first meets it already
            with pytest.raises(RepairDeferred):
                scan_drift(sql_catalog, [old], new)  # a SQL dry run waits on the same lock
        assert dump_locations(hive_metastore.sql_url) == before
        assert sql_catalog.history() == []
    finally:
        other.dispose()
    done = repair_drift(sql_catalog, [old], new)  # the lock released: the repair goes through
    assert done.rewritten == scan.drifted
    sql_catalog.undo(done.run_ids[0])
    assert dump_locations(hive_metastore.sql_url) == before


# --- Glue (moto) ---------------------------------------------------------------------------------------

@pytest.fixture
def glue_lake(moto):
    glue = moto.client("glue")
    build_lake(glue)
    return glue


def _glue(moto, journal_url: str) -> GlueCatalog:
    # moto has no user-defined-function API: functions are left out, as in the Glue relocation tests.
    return open_catalog(GlueTarget(moto.region, endpoint=moto.endpoint, functions=False),
                        journal=JournalSettings(url=journal_url))


def test_glue_scan_repair_and_undo_after_restart(glue_lake, moto, scratch_mariadb) -> None:
    """Journal: a scratch MariaDB database, by SQLAlchemy URL."""
    alias = "s3a://old-lake/warehouse"  # the same bucket through another client: nothing is stored so here
    sources = [GLUE_OLD, alias]
    before = glue_dump(glue_lake)
    catalog = _glue(moto, scratch_mariadb)

    scan = scan_drift(catalog, sources, GLUE_NEW)
    assert glue_dump(glue_lake) == before
    assert scan.scans[0].counts == {"database": 2, "partition": GLUE_PARTITIONS, "partition_param": GLUE_PARTITIONS,
                                    "serde_param": 2, "table": 3, "table_param": 1}
    assert scan.scans[1].drifted == 0
    assert scan.refused == 2 and sorted(r.reason for r in scan.refusals) == ["acid", "iceberg"]

    repair = repair_drift(catalog, sources, GLUE_NEW)  # no scan given: it dry-runs each source first
    assert len(repair.runs) == 1 and repair.rewritten == scan.drifted and repair.failed == 0
    assert len(catalog.history()) == 1
    untouched = {"other.ice", "other.acid"}
    assert as_json(glue_dump(glue_lake)) == moved(before, set(before) - untouched)
    again = scan_drift(catalog, sources, GLUE_NEW)
    assert again.drifted == 0 and again.refused == 2
    catalog.close()

    reopened = _glue(moto, scratch_mariadb)
    try:
        undone = reopened.undo(repair.run_ids[0])
        assert undone.rewritten == repair.rewritten and undone.conflicted == 0
        assert as_json(glue_dump(glue_lake)) == as_json(before)
    finally:
        reopened.close()


def test_glue_repair_defers_while_another_run_holds_the_lock(glue_lake, moto, tmp_path) -> None:
    journal_url = f"sqlite:///{tmp_path / 'journal.db'}"
    catalog = _glue(moto, journal_url)
    holder = _glue(moto, journal_url)  # another run of the same catalog
    holder.journal.ensure(locks=True)
    assert holder.journal.acquire_lock(holder.name, 600)
    before = glue_dump(glue_lake)
    try:
        with pytest.raises(RepairDeferred):  # Glue's dry run takes no lock: the relocation meets it
            repair_drift(catalog, [GLUE_OLD], GLUE_NEW)
        assert glue_dump(glue_lake) == before and catalog.history() == []
    finally:
        holder.journal.release_lock(holder.name)
        holder.close()
        catalog.close()


# --- Thrift against the real HMS -----------------------------------------------------------------------

def _thrift_dump(hive_metastore, db: str) -> dict:
    with hive_metastore.client() as hms:
        state: dict = {db: hms.get_database(db).locationUri}
        for name in hms.get_all_tables(db):
            table = hms.get_table(db, name)
            state[name] = (table.sd.location, table.sd.serdeInfo.parameters,
                           {k: v for k, v in table.parameters.items() if k not in VOLATILE})
            for part in hms.get_partitions(db, name, -1):
                state[f"{name}/{part.values}"] = part.sd.location
    return state


def test_thrift_scan_repair_and_undo_after_restart(hive_metastore, hms_lake, prefixes, tmp_path) -> None:
    db, old, alias, new = hms_lake, prefixes["old"], prefixes["alias"], prefixes["new"]
    journal = JournalSettings(url=f"sqlite:///{tmp_path / 'journal.db'}")
    target = ThriftTarget("127.0.0.1", hive_metastore.port)
    # No transactional flag here (HMS refuses it over Thrift for Parquet): the Iceberg table is the refused one.
    before = _thrift_dump(hive_metastore, db)
    catalog = open_catalog(target, journal=journal)
    try:
        scan = scan_drift(catalog, [old, alias], new)
        assert scan.scans[0].counts == {"database": 1, "partition": PARTS, "serde_param": 1, "table": 3,
                                        "table_param": 1}
        assert scan.scans[1].counts == {"table": 1}
        assert scan.refused == 1 and [r.table for r in scan.refusals] == [f"{db}.ice"]
        assert _thrift_dump(hive_metastore, db) == before

        repair = repair_drift(catalog, [old, alias], new, scan=scan)
        assert len(repair.runs) == 2
        # HMS 2.3's alter_database drops a new locationUri without an error: read back, reported as failed.
        assert repair.runs[0].count(ObjectKind.DATABASE).failed == 1
        assert repair.rewritten == scan.drifted - 1 and repair.failed == 1
        with hive_metastore.client() as hms:
            assert hms.get_table(db, "events").sd.location == f"{stored(new)}/{db}.db/events"
            assert hms.get_table(db, "acid").sd.location == f"{stored(new)}/{db}.db/acid"
            assert hms.get_table(db, "aliased").sd.location == f"{stored(new)}/aliased"
            assert {p.sd.location for p in hms.get_partitions(db, "events", -1)} == \
                {f"{stored(new)}/{db}.db/events/dt={day}" for day in _days(PARTS)}
            assert "/old/" in hms.get_table(db, "ice").sd.location
            assert "/elsewhere/" in hms.get_table(db, "outside").sd.location
        again = scan_drift(catalog, [old, alias], new)
        assert again.counts == {"database": 1} and again.refused == 1  # only what HMS 2.3 would not take
    finally:
        catalog.close()

    reopened = open_catalog(target, journal=journal)
    try:
        for run in reversed(repair.runs):
            assert reopened.undo(run.run_id).conflicted == 0
        assert _thrift_dump(hive_metastore, db) == before
    finally:
        reopened.close()
