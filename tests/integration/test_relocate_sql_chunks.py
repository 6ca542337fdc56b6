"""Chunked relocation on the real HMS schema: a killed run resumes, undo restores, conflicts are kept."""

from __future__ import annotations

import copy
import os
import subprocess
import sys
import textwrap

import pytest
import sqlalchemy as sa

from hivecat.catalog.model import ObjectKind, RelocationRequest, Scope
from hivecat.catalog.sql.catalog import SqlCatalog
from hivecat.locations.prefix import rebase
from hivecat.local.scratch_db import drop_database
from support.journal_layouts import to_layout1
from support.location_dump import dump_locations
from support.services import unique_name

PARTITIONS = 600
CHUNK = 25


@pytest.fixture(scope="module")
def big_table(spark, hive_database, hive_metastore) -> str:
    """A Hive table with PARTITIONS partitions, added in one Thrift call (Spark would take minutes)."""
    spark.sql(f"CREATE TABLE {hive_database}.big (v STRING) PARTITIONED BY (n INT) STORED AS PARQUET")
    with hive_metastore.client() as client:
        table = client.get_table(hive_database, "big")
        from hmsclient.genthrift.hive_metastore.ttypes import Partition

        parts = []
        for n in range(PARTITIONS):
            sd = copy.deepcopy(table.sd)
            sd.location = f"{table.sd.location}/n={n}"
            parts.append(Partition(values=[str(n)], dbName=hive_database, tableName="big", sd=sd, parameters={}))
        client.add_partitions(parts)
    return hive_database


@pytest.fixture
def journal_schema(mariadb_server):
    name = unique_name("hc_journal")
    yield name
    drop_database(mariadb_server, name)


def _location_of(db: str) -> sa.TextClause:
    return sa.text(f"SELECT DB_LOCATION_URI FROM DBS WHERE NAME = '{db}'")


KILLER = textwrap.dedent("""
    import os, signal, sys
    from hivecat.catalog.model import RelocationRequest, Scope
    from hivecat.catalog.sql.catalog import SqlCatalog
    url, journal, db, old, new, chunk, kill_after = sys.argv[1:]
    def progress(done, total):
        print(f"chunk {done}/{total}", flush=True)
        if done == int(kill_after):
            os.kill(os.getpid(), signal.SIGKILL)  # a crash: no cleanup, no rollback of committed chunks
    SqlCatalog(url, journal_schema=journal).relocate(
        RelocationRequest(old, new, Scope(db), chunk_size=int(chunk)), progress=progress)
""")


def to_earlier_layout(url: str, schema: str) -> None:
    """The journal as hivecat wrote it before layout 2, in its oldest form: strings throughout, the chunk
    stored, new_value stored for every entry and NOT NULL, and the index on (run_id, chunk, state)."""
    engine = sa.create_engine(url)
    try:
        to_layout1(engine, schema, oldest=True, chunk_size=CHUNK,
                   new_value=lambda value, old, new: rebase(value, old, new))
    finally:
        engine.dispose()


@pytest.mark.parametrize("earlier_layout", [False, True], ids=["journal", "journal-of-the-earlier-layout"])
def test_killed_chunked_run_resumes_and_undo_restores_exactly(big_table, hive_metastore, journal_schema,
                                                              earlier_layout):
    url = sa.make_url(hive_metastore.sql_url)
    with sa.create_engine(url).connect() as conn:
        old = conn.execute(_location_of(big_table)).scalar_one()
    new = "file:/srv/resumed"
    before = dump_locations(hive_metastore.sql_url)

    killed = subprocess.run([sys.executable, "-c", KILLER, hive_metastore.sql_url, journal_schema, big_table,
                             old, new, str(CHUNK), "3"], capture_output=True, text=True, timeout=120)
    assert killed.returncode == -9, killed.stderr
    assert killed.stdout.splitlines()[-1].startswith("chunk 3/")
    if earlier_layout:  # killed by a version of layout 1: this one copies the journal, resumes and undoes
        to_earlier_layout(hive_metastore.sql_url, journal_schema)

    catalog = SqlCatalog(hive_metastore.sql_url, journal_schema=journal_schema)
    try:
        [run] = catalog.history()
        assert run.status == "running"
        with catalog.engine.connect() as conn:
            states = catalog.journal.state_counts(conn, run.run_id)
        applied = states.get((ObjectKind.PARTITION.value, "applied"), 0)
        assert 0 < applied < PARTITIONS  # killed in the middle
        assert applied + states[(ObjectKind.PARTITION.value, "planned")] == PARTITIONS
        # The journal says exactly what the metastore holds: committed chunks moved, nothing else.
        moved = [p for p in catalog.list_partitions(big_table, "big") if p.location.startswith(new)]
        assert len(moved) == applied

        # The same command through the CLI resumes the run instead of starting another.
        cli = subprocess.run(
            [sys.executable, "-m", "hivecat", "relocate", "--catalog",
             f"mysql://{url.username}@{url.host}:{url.port}/{url.database}", "--journal-schema", journal_schema,
             "--from", old, "--to", new, "--database", big_table, "--chunk-size", str(CHUNK), "--output", "json"],
            capture_output=True, text=True, timeout=120, env={**os.environ, "HIVECAT_CATALOG_PASSWORD": url.password})
        assert cli.returncode == 0, cli.stderr
        assert f'"run_id": "{run.run_id}"' in cli.stdout

        parts = list(catalog.list_partitions(big_table, "big"))
        assert len(parts) == PARTITIONS
        assert all(p.location == f"{new}/big/n={p.values[0]}" for p in parts)
        assert [r.status for r in catalog.history()] == ["done"]

        catalog.undo(run.run_id)
        assert dump_locations(hive_metastore.sql_url) == before
        tables = set(sa.inspect(catalog.engine).get_table_names(schema=journal_schema))  # the layout it writes
        assert {"hivecat_journal_runs", "hivecat_journal_entries"} <= tables
        assert not {"hivecat_runs", "hivecat_entries"} & tables
    finally:
        catalog.close()


def test_concurrent_change_is_reported_not_clobbered(big_table, hive_metastore, journal_schema):
    catalog = SqlCatalog(hive_metastore.sql_url, journal_schema=journal_schema)
    engine = sa.create_engine(hive_metastore.sql_url)
    try:
        with engine.connect() as conn:
            old = conn.execute(_location_of(big_table)).scalar_one()
            victim = conn.execute(sa.text(
                "SELECT s.SD_ID FROM SDS s JOIN PARTITIONS p ON p.SD_ID = s.SD_ID "
                "JOIN TBLS t ON t.TBL_ID = p.TBL_ID JOIN DBS d ON d.DB_ID = t.DB_ID "
                "WHERE d.NAME = :db ORDER BY s.SD_ID DESC LIMIT 1"), {"db": big_table}).scalar_one()

        def someone_else_moves_a_partition(done: int, total: int) -> None:
            if done == 1:  # after the first chunk committed, before the victim's chunk
                with engine.begin() as conn:
                    conn.execute(sa.text("UPDATE SDS SET LOCATION = 'file:/somebody/else' WHERE SD_ID = :id"),
                                 {"id": victim})

        report = catalog.relocate(RelocationRequest(old, "file:/srv/conflict", Scope(big_table), chunk_size=CHUNK),
                                  progress=someone_else_moves_a_partition)
        assert report.count(ObjectKind.PARTITION).conflicted == 1
        assert report.count(ObjectKind.PARTITION).rewritten == PARTITIONS - 1
        with engine.connect() as conn:
            kept = conn.execute(sa.text("SELECT LOCATION FROM SDS WHERE SD_ID = :id"), {"id": victim}).scalar_one()
        assert kept == "file:/somebody/else"
        catalog.undo(report.run_id)
        with engine.begin() as conn:  # restore the victim for other tests
            conn.execute(sa.text("UPDATE SDS SET LOCATION = :loc WHERE SD_ID = :id"),
                         {"id": victim, "loc": f"{old}/big/n={PARTITIONS - 1}"})
    finally:
        catalog.close()
        engine.dispose()
