"""`hivecat route` through the installed CLI against the real HMS 2.3 database, with the design's examples:
T11 (partitioned) and T12 on C1, T21 on C2, T31 on C3; T11's copy on C2 recorded, partition by partition, in
the replica bookkeeping parameters the TableReplica reconciler writes (set here through the catalog)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import sqlalchemy as sa
from hmsclient.genthrift.hive_metastore.ttypes import Database, FieldSchema, Partition

from hivecat.catalog.sql.catalog import SqlCatalog
from hivecat.replication.registry import ClusterEntry, registry_document
from hivecat.replication.bookkeeping import replica_location_key
from support.hms_tables import hive_table, storage_descriptor
from support.services import unique_name

HIVECAT = Path(sys.executable).parent / "hivecat"
DAYS = ("2026-11-01", "2026-11-02")


@pytest.fixture
def design(hive_metastore, tmp_path: Path) -> Iterator[tuple[str, Path, dict[str, str]]]:
    """(database, clusters.json, cluster → filesystem) with the design's four tables."""
    fs = {c: (tmp_path / c).as_uri() for c in ("c1", "c2", "c3")}
    db = unique_name("hc_route")
    with hive_metastore.client() as hms:
        hms.create_database(Database(name=db, locationUri=f"{fs['c1']}/{db}.db", parameters={}))
        hms.create_table(hive_table(db, "t11", f"{fs['c1']}/t11", keys=[FieldSchema("dt", "string", "")]))
        hms.add_partitions([Partition(values=[d], dbName=db, tableName="t11", parameters={},
                                      sd=storage_descriptor(f"{fs['c1']}/t11/dt={d}")) for d in DAYS])
        hms.create_table(hive_table(db, "t12", f"{fs['c1']}/t12"))
        hms.create_table(hive_table(db, "t21", f"{fs['c2']}/t21"))
        hms.create_table(hive_table(db, "t31", f"{fs['c3']}/t31"))
    registry = tmp_path / "clusters.json"
    registry.write_text(registry_document({c: ClusterEntry(c, uri) for c, uri in fs.items()}))
    yield db, registry, fs
    with hive_metastore.client() as hms:
        hms.drop_database(db, True, True)


def route(hive_metastore, registry: Path, *args: str) -> subprocess.CompletedProcess:
    url = sa.make_url(hive_metastore.sql_url)
    return subprocess.run(
        [str(HIVECAT), "route", "--catalog", f"mysql://{url.username}@{url.host}:{url.port or 3306}/{url.database}",
         "--clusters", str(registry), *args], capture_output=True, text=True, timeout=120,
        env={**os.environ, "HIVECAT_CATALOG_PASSWORD": url.password or ""})


def test_the_design_examples_through_the_cli(hive_metastore, design) -> None:
    db, registry, fs = design
    t = {name: f"{db}.{name}" for name in ("t11", "t12", "t21", "t31")}

    same = route(hive_metastore, registry, t["t11"], t["t12"])
    assert (same.returncode, same.stdout.split(":")[0]) == (0, "c1"), same.stderr

    join = route(hive_metastore, registry, t["t11"], t["t21"], "--output", "json")
    assert join.returncode == 3 and "no cluster holds every input" in join.stderr
    assert json.loads(join.stdout)["reason"] == "NoCluster"
    insert = route(hive_metastore, registry, t["t11"], "--insert-into", t["t21"])
    assert insert.returncode == 3 and "c2" in insert.stderr

    # T11's copy on C2, recorded for one partition only: still not wholly there.
    catalog = SqlCatalog(hive_metastore.sql_url)
    try:
        key = replica_location_key("c2")
        catalog.set_params(db, "t11", {key: f"{fs['c2']}/t11/dt={DAYS[0]}"}, partition_values=[DAYS[0]])
        assert route(hive_metastore, registry, t["t11"], t["t21"]).returncode == 3
        catalog.set_params(db, "t11", {key: f"{fs['c2']}/t11/dt={DAYS[1]}"}, partition_values=[DAYS[1]])
    finally:
        catalog.close()

    join = route(hive_metastore, registry, t["t11"], t["t21"], "--output", "json")
    assert join.returncode == 0, join.stderr
    decided = json.loads(join.stdout)
    assert (decided["cluster"], decided["reason"]) == ("c2", "InputPrimary")
    assert decided["inputs"][0] == {"table": t["t11"], "exists": True, "primary": "c1", "holding": ["c1", "c2"]}
    insert = route(hive_metastore, registry, t["t11"], "--insert-into", t["t21"])
    assert (insert.returncode, insert.stdout.split(":")[0]) == (0, "c2")
    assert route(hive_metastore, registry, t["t11"], t["t31"]).returncode == 3
    assert route(hive_metastore, registry, t["t11"], "--cluster", "c2").returncode == 0
    assert route(hive_metastore, registry, t["t12"], "--cluster", "c2").returncode == 3


@pytest.mark.parametrize("args, message", [
    (("nodot",), "must be db.table"),
    (("db.t", "--cluster", "c9"), "not in the registry"),
])
def test_bad_input_is_one_line_and_exit_2(hive_metastore, design, args, message) -> None:
    _, registry, _ = design
    done = route(hive_metastore, registry, *args)
    assert done.returncode == 2 and message in done.stderr and "Traceback" not in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1


def test_an_unknown_table_is_bad_input(hive_metastore, design) -> None:
    db, registry, _ = design
    done = route(hive_metastore, registry, f"{db}.nothing")
    assert done.returncode == 2 and f"{db}.nothing" in done.stderr and "Traceback" not in done.stderr


def test_get_table_on_every_backend_names_a_missing_table_none(hive_metastore, design, moto) -> None:
    from hivecat.catalog.connect import open_catalog
    from hivecat.catalog.targets import GlueTarget, SqlTarget, ThriftTarget

    db, _, fs = design
    url = sa.make_url(hive_metastore.sql_url)
    catalogs = [open_catalog(ThriftTarget("127.0.0.1", hive_metastore.port)),
                open_catalog(SqlTarget("mysql", url.host, url.database, url.username, url.port),
                             password=url.password)]
    try:
        for catalog in catalogs:
            found = catalog.get_table(db, "t11")
            assert found is not None and found.location.endswith("/c1/t11") and found.partition_keys == ("dt",)
            assert catalog.get_table(db, "nothing") is None
            assert catalog.get_table("no_such_database", "t11") is None
    finally:
        for catalog in catalogs:
            catalog.close()
    glue = open_catalog(GlueTarget(moto.region, endpoint=moto.endpoint, functions=False))
    try:
        assert glue.get_table("no_such_database", "t") is None
    finally:
        glue.close()


def test_a_replica_plan_from_the_real_metastore(hive_metastore, design) -> None:
    """The TableReplica planner on the same catalog: HMS stores file:/x for file:///x, and the plan still
    rebases every partition of t11 from c1 to c2."""
    from hivecat.replication.planner import ReplicaScope, plan_replica

    db, _, fs = design
    catalog = SqlCatalog(hive_metastore.sql_url)
    try:
        planned = plan_replica(catalog, ReplicaScope(db, "t11", f"dt = '{DAYS[1]}'"),
                               ClusterEntry("c1", fs["c1"]), ClusterEntry("c2", fs["c2"]))
    finally:
        catalog.close()
    assert planned.unit_ids == (f"{db}.t11/dt={DAYS[1]}",) and planned.outside == ()
    assert planned.plan.units[0].target.uri.endswith(f"/c2/t11/dt={DAYS[1]}")
