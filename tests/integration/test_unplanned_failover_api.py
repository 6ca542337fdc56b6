"""The unplanned failover on the catalogs reached through an API: Glue (moto server) and Thrift (the real Hive
Metastore 2.3), each with a journal of its own. A partitioned table whose partitions live in a local directory
is synced to a second one; a partition is then appended to and another added; a sync that copies nothing
measures the readiness; the primary's directory is moved away (every read of it fails); an unplanned failover
with the measured recovery point and leaveBehind switches every unit with a whole recorded copy (the appended
one to its last copy) and leaves the new one; the locations are what the catalog itself reports, and the
failover's journaled run undoes to exactly the locations before it."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime, timezone
from pathlib import Path

import pytest
from hmsclient.genthrift.hive_metastore.ttypes import Database, FieldSchema, Partition

from hivecat.act.tablereplica import sync_pass
from hivecat.catalog.glue import GlueCatalog
from hivecat.catalog.thrift import ThriftCatalog
from hivecat.copy.copier import Copier, CopyOptions
from hivecat.copy.storage import Storage
from hivecat.reconcile.clusterstorage import Backend
from hivecat.reconcile.failover_readiness import remembered
from hivecat.replication.launch import FAILED, SUCCEEDED, LaunchResult
from hivecat.replication.registry import ClusterEntry
from hivecat.specs.tablereplica import parse_table_replica
from support.glue_lake import storage_descriptor as glue_sd
from support.hms_tables import hive_table, storage_descriptor
from support.services import unique_name

DAYS = ("2026-11-01", "2026-11-02", "2026-11-03")


class Copies:
    def observe(self) -> None:
        return None

    def start(self, plan, copy) -> LaunchResult:
        summary = Copier(plan, CopyOptions(delete=True), Storage(), engine="local").run()
        return LaunchResult(SUCCEEDED if summary.status == "succeeded" else FAILED, "", summary.run_id)


class NoCopies(Copies):
    def start(self, plan, copy) -> LaunchResult:  # syncs suspended, say: nothing is copied
        return LaunchResult(SUCCEEDED, "")


class Ports:
    def __init__(self, opened, launcher) -> None:
        self.opened, self.launcher_ = opened, launcher

    def open(self, backend: Backend):
        return self.opened()

    def launcher(self, secondary: ClusterEntry):
        return self.launcher_

    def storage(self) -> Storage:
        return Storage()


def write(unit: Path, name: str) -> None:
    unit.mkdir(parents=True, exist_ok=True)
    (unit / name).write_bytes(name.encode() * 500)


@pytest.fixture(params=["glue", "thrift"])
def lake(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple]:
    """(opens the catalog, adds a partition, the database, the table's directory on main, the clusters)."""
    main, dr = tmp_path / "main", tmp_path / "dr"
    dr.mkdir()
    table = main / "sales.db" / "events"
    for day in DAYS:
        write(table / f"dt={day}", "part-0.parquet")
    journal = f"sqlite:///{tmp_path / 'journal.db'}"
    clusters = {"main": ClusterEntry("main", f"file://{main}"), "dr": ClusterEntry("dr", f"file://{dr}")}
    if request.param == "glue":
        moto = request.getfixturevalue("moto")
        glue, db = moto.client("glue"), "sales"
        glue.create_database(DatabaseInput={"Name": db})
        glue.create_table(DatabaseName=db, TableInput={
            "Name": "events", "TableType": "EXTERNAL_TABLE", "PartitionKeys": [{"Name": "dt", "Type": "string"}],
            "StorageDescriptor": glue_sd(f"file://{table}")})

        def add(day: str) -> None:
            glue.create_partition(DatabaseName=db, TableName="events", PartitionInput={
                "Values": [day], "StorageDescriptor": glue_sd(f"file://{table}/dt={day}")})
        for day in DAYS:
            add(day)
        yield (lambda: GlueCatalog(moto.region, endpoint_url=moto.endpoint, journal_url=journal, functions=False),
               add, db, table, clusters)
        return
    hive_metastore = request.getfixturevalue("hive_metastore")
    db = unique_name("hc_unplanned")
    with hive_metastore.client() as hms:
        hms.create_database(Database(name=db, locationUri=f"file://{main}/{db}.db", parameters={}))
        hms.create_table(hive_table(db, "events", f"file://{table}", keys=[FieldSchema("dt", "string", "")]))

    def add_thrift(day: str) -> None:
        with hive_metastore.client() as hms:
            hms.add_partitions([Partition(values=[day], dbName=db, tableName="events", parameters={},
                                          sd=storage_descriptor(f"file://{table}/dt={day}"))])
    for day in DAYS:
        add_thrift(day)
    yield (lambda: ThriftCatalog(f"thrift://127.0.0.1:{hive_metastore.port}", journal_url=journal), add_thrift, db,
           table, clusters)
    with hive_metastore.client() as hms:
        hms.drop_database(db, True, True)


def replica(db: str, **spec):
    return parse_table_replica({"metadata": {"name": "events", "namespace": "ns", "uid": "u-1"},
                                "spec": {"catalogRef": {"name": "c"}, "database": db, "table": "events",
                                         "primary": "main", "secondaries": ["dr"], **spec}})


def run(spec, opened, clusters, launcher, status: dict) -> dict:
    out = sync_pass(spec, [Backend("Database", None)], clusters, Ports(opened, launcher), "r",
                    memory=remembered(status), clock=lambda: datetime.now(timezone.utc))
    ready = next(c for c in out.conditions if c.type == "Ready")
    return {**status, **out.status, "ready": (ready.status, ready.reason, ready.message)}


def locations(opened, db: str) -> dict[str, str]:
    """As the catalog reports them, file:/// and file:/ spelt alike (HMS writes the latter)."""
    catalog = opened()
    try:
        found = {p.values[0]: p.location for p in catalog.list_partitions(db, "events")}
        found["table"] = catalog.get_table(db, "events").location
        return {k: v.replace("file:///", "file:/") for k, v in found.items()}
    finally:
        catalog.close()


def test_an_unplanned_failover_switches_every_recorded_copy_without_the_primary_and_undoes(lake) -> None:
    opened, add, db, table, clusters = lake
    status = run(replica(db), opened, clusters, Copies(), {})
    assert status["inSync"] == "1/1", status["ready"]
    write(table / "dt=2026-11-02", "part-1.parquet")  # appended after the copy
    write(table / "dt=2026-11-04", "part-0.parquet")
    add("2026-11-04")
    status = run(replica(db, suspend=True), opened, clusters, NoCopies(), status)
    (readiness,) = status["readiness"]
    assert readiness["behind"] == [f"{db}.events/dt=2026-11-02", f"{db}.events/dt=2026-11-04"]
    before = locations(opened, db)

    table.parent.parent.rename(table.parent.parent.with_name("main-gone"))  # the primary is gone
    spec = {"kind": "Unplanned", "acceptRecoveryPoint": readiness["recoveryPoint"], "leaveBehind": True}
    status = run(replica(db, active="dr", failover=spec), opened, clusters, Copies(), status)
    assert status["active"] == "dr", status["ready"]
    after = locations(opened, db)
    copies = Path(clusters["dr"].filesystem.removeprefix("file://")) / "sales.db" / "events"
    assert after["2026-11-04"] == before["2026-11-04"]
    assert {k: v for k, v in after.items() if k != "2026-11-04"} == {
        "table": f"file:{copies}", **{day: f"file:{copies}/dt={day}" for day in DAYS}}
    assert status["leftBehind"] == {"cluster": "main", "units": 1, "first": [f"{db}.events/dt=2026-11-04"]}

    catalog = opened()
    try:
        for run_id in reversed(status["lastFailoverRunIds"]):
            assert catalog.undo(run_id).conflicted == 0
    finally:
        catalog.close()
    assert locations(opened, db) == before
