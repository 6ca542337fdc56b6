"""ThriftCatalog relocation against the real Hive Metastore 2.3 (hmsclient): locations move as HMS reports
them through get_table / get_partitions / get_function, undo restores them, refusals change nothing, a
partition changed between plan and write is reported and kept, a partition filter limits the scope, and
several connections writing at once leave the same metastore as one. Every test stays inside its own
database: the HMS is shared by the whole session."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest
from hmsclient.genthrift.hive_metastore.ttypes import (
    Database, FieldSchema, Function, FunctionType, Partition, PrincipalType, ResourceType, ResourceUri,
)

from hivecat import cli
from hivecat.catalog.model import ObjectKind, RelocationRefused, RelocationRequest, Scope
from hivecat.catalog.thrift import ThriftCatalog
from support.hms_tables import hive_table, storage_descriptor
from support.services import unique_name

PARTITIONS = 60
VOLATILE = {"transient_lastDdlTime"}


def _day(i: int) -> str:
    return (dt.date(2026, 1, 1) + dt.timedelta(days=i)).isoformat()


@pytest.fixture
def lake(hive_metastore, tmp_path: Path):
    """A database of the test's own under file:{tmp}/old, and the old/new prefixes."""
    old, new, db = f"file:{tmp_path}/old", f"file:{tmp_path}/new", unique_name("hc_thrift")
    with hive_metastore.client() as hms:
        hms.create_database(Database(name=db, locationUri=f"{old}/{db}.db", parameters={}))
        hms.create_table(hive_table(db, "events", f"{old}/{db}.db/events",
                                keys=[FieldSchema("dt", "string", ""), FieldSchema("n", "int", "")],
                                params={"path": f"{old}/{db}.db/events", "comment": f"{old}/x"},
                                serde={"path": f"{old}/{db}.db/events"}))
        hms.add_partitions([Partition(values=[_day(i), str(i)], dbName=db, tableName="events",
                                      sd=storage_descriptor(f"{old}/{db}.db/events/dt={_day(i)}/n={i}"),
                                      parameters={"path": f"{old}/{db}.db/events/dt={_day(i)}/n={i}"})
                            for i in range(PARTITIONS)])
        hms.create_table(hive_table(db, "dim", f"{old}/{db}.db/dim"))
        hms.create_table(hive_table(db, "outside", f"file:{tmp_path}/elsewhere/outside"))
        hms.create_function(Function(functionName="udf", dbName=db, className="x.Udf", ownerName="hive",
                                     ownerType=PrincipalType.USER, createTime=0, functionType=FunctionType.JAVA,
                                     resourceUris=[ResourceUri(ResourceType.JAR, f"{old}/jars/udf.jar")]))
    yield old, new, db
    with hive_metastore.client() as hms:
        hms.drop_database(db, True, True)


def dump(hive_metastore, db: str) -> dict:
    """Every location and parameter of the database as HMS reports them over Thrift."""
    with hive_metastore.client() as hms:
        database = hms.get_database(db)
        state: dict = {db: (database.locationUri, database.parameters)}
        for name in hms.get_all_tables(db):
            table = hms.get_table(db, name)
            state[name] = (table.sd.location, table.sd.serdeInfo.parameters,
                           {k: v for k, v in table.parameters.items() if k not in VOLATILE})
            for part in hms.get_partitions(db, name, -1):
                state[f"{name}/{part.values}"] = (part.sd.location,
                                                  {k: v for k, v in part.parameters.items() if k not in VOLATILE})
        for name in hms.get_functions(db, "*"):
            state[f"fn:{name}"] = [r.uri for r in hms.get_function(db, name).resourceUris]
    return state


@pytest.fixture
def journal_url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'journal.db'}"


def thrift_catalog(hive_metastore, journal_url: str, **kwargs) -> ThriftCatalog:
    return ThriftCatalog(hive_metastore.uri if hive_metastore.uri.startswith("thrift://")
                         else f"thrift://127.0.0.1:{hive_metastore.port}", journal_url=journal_url, **kwargs)


def test_relocate_moves_every_location_and_undo_restores(hive_metastore, lake, journal_url) -> None:
    old, new, db = lake
    before = dump(hive_metastore, db)
    catalog = thrift_catalog(hive_metastore, journal_url, batch_size=25)  # 3 alter_partitions batches
    report = catalog.relocate(RelocationRequest(old, new, Scope(db)))
    assert report.count(ObjectKind.PARTITION).rewritten == PARTITIONS
    assert report.count(ObjectKind.PARTITION_PARAM).rewritten == PARTITIONS
    assert report.count(ObjectKind.TABLE).rewritten == 2
    assert report.count(ObjectKind.SERDE_PARAM).rewritten == 1
    assert report.count(ObjectKind.TABLE_PARAM).rewritten == 1 and report.count(ObjectKind.TABLE_PARAM).skipped == 1
    # HMS 2.3's alter_database / alter_function drop locationUri / resource URIs without an error: read
    # back, they are reported as failed, never as rewritten.
    assert report.count(ObjectKind.DATABASE).failed == 1 and report.status == "partial"
    assert report.count(ObjectKind.FUNCTION_RESOURCE).failed == 1
    assert any("ignored the new locations of this database" in e for e in report.errors)
    assert report.conflicted == 0 and report.failed == 2
    assert report.tables_touched == [f"{db}.dim", f"{db}.events"]

    with hive_metastore.client() as hms:
        assert hms.get_database(db).locationUri == f"{old}/{db}.db"
        table = hms.get_table(db, "events")
        assert (table.sd.location, table.parameters["path"], table.parameters["comment"]) == \
            (f"{new}/{db}.db/events", f"{new}/{db}.db/events", f"{old}/x")
        assert table.sd.serdeInfo.parameters["path"] == f"{new}/{db}.db/events"
        parts = hms.get_partitions(db, "events", -1)
        assert len(parts) == PARTITIONS
        assert all(p.sd.location == f"{new}/{db}.db/events/dt={p.values[0]}/n={p.values[1]}" for p in parts)
        assert all(p.parameters["path"] == p.sd.location for p in parts)
        assert hms.get_table(db, "outside").sd.location.endswith("/elsewhere/outside")
        assert hms.get_function(db, "udf").resourceUris[0].uri == f"{old}/jars/udf.jar"

    undone = catalog.undo(report.run_id)
    assert undone.count(ObjectKind.PARTITION).rewritten == PARTITIONS and undone.conflicted == 0
    assert dump(hive_metastore, db) == before
    catalog.close()


def test_partition_filter_limits_the_scope(hive_metastore, lake, journal_url) -> None:
    old, new, db = lake
    report = thrift_catalog(hive_metastore, journal_url).relocate(
        RelocationRequest(old, new, Scope(db, "events", "n >= 10 AND n < 20 OR dt = '2026-02-01'")))
    assert report.count(ObjectKind.PARTITION).rewritten == 11 and ObjectKind.TABLE not in report.counts
    with hive_metastore.client() as hms:
        moved = {int(p.values[1]) for p in hms.get_partitions(db, "events", -1) if p.sd.location.startswith(new)}
    assert moved == set(range(10, 20)) | {31}


def test_partition_changed_between_plan_and_write_is_kept(hive_metastore, lake, journal_url) -> None:
    old, new, db = lake
    catalog = thrift_catalog(hive_metastore, journal_url, batch_size=25)
    theirs = f"file:/elsewhere/{db}/p3"
    reread = catalog.backend.reread_partitions

    def someone_else_moves_partition_3_first(database, table, values):
        if (_day(3), "3") in values:
            with hive_metastore.client() as hms:
                part = hms.get_partitions_by_names(db, "events", [f"dt={_day(3)}/n=3"])[0]
                part.sd.location = theirs
                hms.alter_partition(db, "events", part)
        return reread(database, table, values)
    catalog.backend.reread_partitions = someone_else_moves_partition_3_first
    report = catalog.relocate(RelocationRequest(old, new, Scope(db, "events")))
    assert report.count(ObjectKind.PARTITION).conflicted == 1
    assert report.count(ObjectKind.PARTITION).rewritten == PARTITIONS - 1
    with hive_metastore.client() as hms:
        assert hms.get_partitions_by_names(db, "events", [f"dt={_day(3)}/n=3"])[0].sd.location == theirs


@pytest.mark.parametrize("make_request,reason", [
    (lambda old, new, db: RelocationRequest(old, new, Scope(db)), "iceberg"),
    (lambda old, new, db: RelocationRequest(old, "s3://bucket/x", Scope(db)), "scheme-change"),
    (lambda old, new, db: RelocationRequest(old, f"{old}/inner", Scope(db)), "overlap"),
    (lambda old, new, db: RelocationRequest(old, new, Scope(f"{db}_missing")), "not-found"),
    (lambda old, new, db: RelocationRequest(old, new, Scope(db, "missing")), "not-found"),
    (lambda old, new, db: RelocationRequest(old, new, Scope(db, "events", "n LIKE '1%'")), "invalid-filter"),
])
def test_every_refusal_changes_nothing(hive_metastore, lake, journal_url, make_request, reason) -> None:
    old, new, db = lake
    with hive_metastore.client() as hms:
        hms.create_table(hive_table(db, "ice", f"{old}/{db}.db/ice", params={"table_type": "ICEBERG"}))
    before = dump(hive_metastore, db)
    with pytest.raises(RelocationRefused) as refused:
        thrift_catalog(hive_metastore, journal_url).relocate(make_request(old, new, db))
    assert reason in {r.reason for r in refused.value.refusals}
    assert dump(hive_metastore, db) == before


def test_cli_relocates_over_thrift(hive_metastore, lake, tmp_path, capsys) -> None:
    old, new, db = lake
    before = dump(hive_metastore, db)
    common = ["relocate", "--catalog", f"thrift://127.0.0.1:{hive_metastore.port}",
              "--journal-url", f"sqlite:///{tmp_path / 'j.db'}"]
    assert cli.main([*common, "--from", old, "--to", new, "--database", db, "--table", "events",
                     "--dry-run"]) == 0
    assert "dry run" in capsys.readouterr().out and dump(hive_metastore, db) == before
    assert cli.main([*common, "--from", old, "--to", new, "--database", db, "--table", "events"]) == 0
    out = capsys.readouterr().out
    run_id = out.split()[1]
    assert f"{db}.events" in out
    assert cli.main([*common, "--undo", run_id]) == 0
    assert dump(hive_metastore, db) == before


def test_several_connections_move_the_same_locations_and_undo_exactly(hive_metastore, lake, journal_url,
                                                                     monkeypatch) -> None:
    """connections=1 and connections=4 (chunks of 5 partitions: 12 of them, written 4 at once over their own
    connections) leave the same metastore, and each undo restores the one before."""
    from hmsclient import hmsclient

    old, new, db = lake
    before = dump(hive_metastore, db)
    alter = hmsclient.HMSClient.alter_partitions_with_environment_context
    writers: set[int] = set()

    def recorded(self, *args):
        writers.add(id(self))
        return alter(self, *args)
    monkeypatch.setattr(hmsclient.HMSClient, "alter_partitions_with_environment_context", recorded)
    results = []
    for connections in (1, 4):
        writers.clear()
        catalog = thrift_catalog(hive_metastore, journal_url, batch_size=5, connections=connections)
        report = catalog.relocate(RelocationRequest(old, new, Scope(db)))
        results.append((dump(hive_metastore, db), {k: c.__dict__ for k, c in report.counts.items()},
                        report.tables_touched, len(writers)))
        undone = catalog.undo(report.run_id)
        assert undone.conflicted == 0 and dump(hive_metastore, db) == before
        catalog.close()
    (serial, serial_counts, serial_tables, one), (parallel, counts, tables, several) = results
    assert parallel == serial and counts == serial_counts and tables == serial_tables
    assert serial_counts[ObjectKind.PARTITION]["rewritten"] == PARTITIONS
    assert all(serial[key][0].startswith(new) for key in serial if key.startswith("events/"))
    assert one == 1 and several > 1
