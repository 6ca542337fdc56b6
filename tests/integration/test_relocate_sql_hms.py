"""Relocation on the schema the real HMS created in MariaDB, with tables Spark created through it.

Each test relocates, then proves it through the real clients: Spark SQL reads every row from the new
place, HMS Thrift reports the new locations; refusals and dry runs change nothing (full dumps compared).
"""

from __future__ import annotations

import shutil

import pytest

from hivecat.catalog.model import ObjectKind, RelocationRefused, RelocationRequest, Scope
from hivecat.catalog.sql.catalog import SqlCatalog
from support.location_dump import dump_locations
from support.services import refresh_table, unique_name

ROWS = [(1, "a", "2026-11-01"), (2, "b", "2026-11-01"), (3, "c", "2026-11-02")]


@pytest.fixture(scope="module")
def tables(spark, hive_database, hive_metastore):
    """A datasource table (location in SERDE_PARAMS `path` too), a Hive-format one, an unpartitioned one."""
    db = hive_database
    spark.sql(f"CREATE TABLE {db}.events (id INT, v STRING, dt STRING) USING parquet PARTITIONED BY (dt)")
    spark.sql(f"CREATE TABLE {db}.logs (id INT, v STRING) PARTITIONED BY (dt STRING) STORED AS PARQUET")
    spark.sql(f"CREATE TABLE {db}.dim (id INT, v STRING) USING parquet")
    values = ", ".join(f"({i}, '{v}', '{d}')" for i, v, d in ROWS)
    spark.sql(f"INSERT INTO {db}.events VALUES {values}")
    spark.sql(f"INSERT INTO {db}.logs PARTITION (dt) VALUES {values}")
    spark.sql(f"INSERT INTO {db}.dim VALUES " + ", ".join(f"({i}, '{v}')" for i, v, _ in ROWS))
    return {"events": f"{db}.events", "logs": f"{db}.logs", "dim": f"{db}.dim"}


@pytest.fixture
def catalog(hive_metastore, mariadb_server):
    journal = unique_name("hc_journal")
    catalog = SqlCatalog(hive_metastore.sql_url, journal_schema=journal)
    yield catalog
    catalog.close()
    from hivecat.local.scratch_db import drop_database

    drop_database(mariadb_server, journal)


def _db_location(hive_metastore, db: str) -> str:
    return (hive_metastore.warehouse / f"{db}.db").as_uri().replace("file:///", "file:/")


def _read_all(spark, tables) -> dict[str, list]:
    result = {}
    for name, qualified in tables.items():
        refresh_table(spark, qualified)
        result[name] = sorted(tuple(r) for r in spark.sql(f"SELECT * FROM {qualified}").collect())
    return result


def test_dry_run_counts_every_kind_and_writes_nothing(catalog, tables, hive_metastore, hive_database):
    old = _db_location(hive_metastore, hive_database)
    before = dump_locations(hive_metastore.sql_url)
    report = catalog.relocate(RelocationRequest(old, old.replace("/warehouse/", "/elsewhere/"),
                                                Scope(hive_database), dry_run=True))
    assert dump_locations(hive_metastore.sql_url) == before
    assert report.count(ObjectKind.DATABASE).rewritten == 1
    assert report.count(ObjectKind.TABLE).rewritten == 3
    assert report.count(ObjectKind.PARTITION).rewritten == 4  # 2 partitions in each partitioned table
    assert report.count(ObjectKind.SERDE_PARAM).rewritten >= 2  # `path` of the datasource tables
    assert report.tables_touched == sorted(tables.values())
    assert all(new.startswith(old.replace("/warehouse/", "/elsewhere/")) for _, new in report.sample)


def test_relocate_move_files_and_spark_reads_every_row(catalog, spark, tables, hive_metastore, hive_database,
                                                       tmp_path):
    expected = _read_all(spark, tables)
    old_dir = hive_metastore.warehouse / f"{hive_database}.db"
    new_dir = tmp_path / "moved" / f"{hive_database}.db"
    old, new = _db_location(hive_metastore, hive_database), new_dir.as_uri()
    stored = new.replace("file:///", "file:/")  # HMS's own spelling of file URIs, which rebase writes

    report = catalog.relocate(RelocationRequest(old, new, Scope(hive_database)))
    assert report.rewritten > 0 and report.conflicted == 0
    shutil.copytree(old_dir, new_dir)
    shutil.rmtree(old_dir)  # the old place is gone: only the new locations can serve the rows
    try:
        assert _read_all(spark, tables) == expected
        with hive_metastore.client() as client:
            assert client.get_database(hive_database).locationUri == stored
            for name in tables:
                table = client.get_table(hive_database, name)
                assert table.sd.location == f"{stored}/{name}"
                for part in client.get_partitions(hive_database, name, -1):
                    assert part.sd.location == f"{stored}/{name}/dt={part.values[0]}"
    finally:
        # Put everything back for the other tests of this module (undo is tested separately).
        undo = catalog.undo(report.run_id)
        assert undo.rewritten == report.rewritten
        shutil.copytree(new_dir, old_dir)
    assert _read_all(spark, tables) == expected


def test_undo_restores_the_exact_prior_state(catalog, tables, hive_metastore, hive_database):
    old = _db_location(hive_metastore, hive_database)
    before = dump_locations(hive_metastore.sql_url)
    report = catalog.relocate(RelocationRequest(old, "file:/srv/new-home", Scope(hive_database)))
    assert dump_locations(hive_metastore.sql_url) != before
    catalog.undo(report.run_id)
    assert dump_locations(hive_metastore.sql_url) == before
    history = {r.run_id: r for r in catalog.history()}
    assert history[report.run_id].status == "undone"
    with pytest.raises(RelocationRefused, match="already undone"):
        catalog.undo(report.run_id)


def test_table_scope_touches_only_that_table(catalog, tables, hive_metastore, hive_database):
    old = _db_location(hive_metastore, hive_database)
    report = catalog.relocate(RelocationRequest(old, "file:/srv/only-events", Scope(hive_database, "events")))
    try:
        assert report.tables_touched == [tables["events"]]
        assert ObjectKind.DATABASE not in report.counts
        listed = {t.name: t.location for t in catalog.list_tables(hive_database)}
        assert listed["events"] == "file:/srv/only-events/events"
        assert listed["logs"] == f"{old}/logs"
    finally:
        catalog.undo(report.run_id)


def test_partition_filter_scope(catalog, tables, hive_metastore, hive_database):
    old = _db_location(hive_metastore, hive_database)
    report = catalog.relocate(RelocationRequest(
        old, "file:/srv/cold", Scope(hive_database, "logs", "dt < '2026-11-02'")))
    try:
        assert set(report.counts) <= {ObjectKind.PARTITION, ObjectKind.SERDE_PARAM, ObjectKind.PARTITION_PARAM}
        assert report.count(ObjectKind.PARTITION).rewritten == 1
        parts = {p.values: p.location for p in catalog.list_partitions(hive_database, "logs")}
        assert parts[("2026-11-01",)] == "file:/srv/cold/logs/dt=2026-11-01"
        assert parts[("2026-11-02",)] == f"{old}/logs/dt=2026-11-02"
    finally:
        catalog.undo(report.run_id)


@pytest.mark.parametrize("params,reason", [
    ({"table_type": "ICEBERG", "metadata_location": "file:/x/metadata/v1.json"}, "iceberg"),
    ({"transactional": "true"}, "acid"),
])
def test_unsafe_tables_are_refused_with_zero_writes(catalog, tables, hive_metastore, hive_database, params, reason):
    old = _db_location(hive_metastore, hive_database)
    catalog.set_params(hive_database, "dim", params)
    try:
        before = dump_locations(hive_metastore.sql_url)
        with pytest.raises(RelocationRefused) as refused:
            catalog.relocate(RelocationRequest(old, "file:/srv/x", Scope(hive_database)))
        assert [(r.reason, r.table) for r in refused.value.refusals] == [(reason, tables["dim"])]
        assert dump_locations(hive_metastore.sql_url) == before
        # --skip-refused relocates the rest and counts what it left alone.
        report = catalog.relocate(RelocationRequest(old, "file:/srv/x", Scope(hive_database), skip_refused=True))
        assert tables["dim"] not in report.tables_touched
        assert report.count(ObjectKind.TABLE).refused == 1
        catalog.undo(report.run_id)
        assert dump_locations(hive_metastore.sql_url) == before
    finally:
        catalog.remove_params(hive_database, "dim", list(params))


@pytest.mark.parametrize("old,new,scope,reason", [
    ("{old}", "{old}/sub", Scope(), "overlap"),
    ("{old}", "relative/path", Scope(), "invalid"),
    ("", "file:/x", Scope(), "invalid"),
    ("{old}", "hdfs://nn:8020/x", Scope(), "scheme"),
    ("{old}", "file:/x", Scope("no_such_db"), "not-found"),
    ("{old}", "file:/x", Scope("{db}", "no_such_table"), "not-found"),
    ("{old}", "file:/x", Scope("{db}", "logs", "nokey = 1"), "invalid-filter"),
])
def test_bad_requests_are_refused_with_zero_writes(catalog, tables, hive_metastore, hive_database,
                                                   old, new, scope, reason):
    base = _db_location(hive_metastore, hive_database)
    fill = lambda s: s.format(old=base, db=hive_database) if s else s  # noqa: E731
    scope = Scope(fill(scope.database), scope.table, scope.partition_filter)
    before = dump_locations(hive_metastore.sql_url)
    with pytest.raises(RelocationRefused) as refused:
        catalog.relocate(RelocationRequest(fill(old), fill(new), scope))
    assert any(reason in r.reason for r in refused.value.refusals), refused.value.refusals
    assert dump_locations(hive_metastore.sql_url) == before
