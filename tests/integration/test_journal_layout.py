"""A relocation journal of layout 1 (either form: tests/support/journal_layouts.py) is copied into this layout by
Journal.ensure, on both servers the SQL backend keeps it on, keeping every run and entry exactly (its kind and
state as codes, its chunk); layout 1's tables are dropped; another ensure changes nothing, and neither does one
meeting layout-1 tables again whose runs were copied already (a crash between the copy and the drop).
(test_relocate_sql_chunks resumes and undoes a run killed under layout 1.)"""

from __future__ import annotations

import datetime as dt

import pytest
import sqlalchemy as sa

from hivecat.catalog.journal import CHUNK_INDEX, Journal
from support.journal_layouts import layout1_ddl
from support.services import unique_name

STARTED = dt.datetime(2026, 1, 2, 3, 4, 5)
RUNS = [  # one finished run, one killed mid-run
    {"run_id": "r1", "catalog": "hive", "old_prefix": "hdfs://a", "new_prefix": "hdfs://b", "request": "{}",
     "status": "done", "started_at": STARTED, "finished_at": STARTED, "report": "{}"},
    {"run_id": "r2", "catalog": "hive", "old_prefix": "hdfs://b", "new_prefix": "hdfs://c", "request": '{"x": 1}',
     "status": "running", "started_at": STARTED + dt.timedelta(hours=1), "finished_at": None, "report": None},
]
ENTRIES = [
    {"run_id": "r1", "kind": "partition", "key1": 7, "key2": "", "tbl_id": 3, "chunk": 0, "old_value": "hdfs://a/x",
     "new_value": "hdfs://b/x", "state": "applied"},
    {"run_id": "r1", "kind": "serde_param", "key1": 9, "key2": "path", "tbl_id": 3, "chunk": 0,
     "old_value": "hdfs://a/y", "new_value": "hdfs://b/y", "state": "conflicted"},
    {"run_id": "r2", "kind": "partition", "key1": 7, "key2": "", "tbl_id": 3, "chunk": 1, "old_value": "hdfs://b/x",
     "new_value": "hdfs://c/x", "state": "planned"},
]


@pytest.fixture(params=["mysql", "postgresql"])
def server(request, scratch_mariadb, scratch_postgres):
    url = scratch_mariadb if request.param == "mysql" else scratch_postgres
    engine = sa.create_engine(url)
    schema = unique_name("hc_journal") if request.param == "postgresql" else sa.make_url(url).database
    if request.param == "postgresql":
        with engine.begin() as conn:
            conn.execute(sa.text(f"CREATE SCHEMA {schema}"))
    yield engine, schema
    if request.param == "postgresql":
        with engine.begin() as conn:
            conn.execute(sa.text(f"DROP SCHEMA {schema} CASCADE"))
    engine.dispose()


def write_layout1(engine: sa.Engine, schema: str, oldest: bool) -> None:
    with engine.begin() as conn:
        for statement in layout1_ddl(engine.dialect.name, schema, oldest=oldest):
            conn.execute(sa.text(statement))
        metadata = sa.MetaData(schema=schema)
        runs = sa.Table("hivecat_runs", metadata, autoload_with=conn)
        entries = sa.Table("hivecat_entries", metadata, autoload_with=conn)
        conn.execute(runs.insert(), RUNS)
        conn.execute(entries.insert(), [e if oldest else {**e, "object": None} for e in ENTRIES])


def journal_as_layout1(journal: Journal) -> tuple[list[dict], list[dict]]:
    """The journal's runs and entries, decoded into layout 1's terms."""
    with journal.engine.connect() as conn:
        runs = [{k: v for k, v in r.items() if k != "run_no"}
                for r in conn.execute(sa.select(journal.runs).order_by(journal.runs.c.run_no)).mappings()]
        entries = []
        for run in runs:
            for (kind, state), n in journal.state_counts(conn, run["run_id"]).items():
                entries.append((run["run_id"], kind, state, n))
        e, r = journal.entries, journal.runs
        values = conn.execute(sa.select(r.c.run_id, e.c.key1, e.c.key2, e.c.tbl_id, e.c.chunk, e.c.old_value,
                                        e.c.new_value, e.c.object).join_from(e, r, r.c.run_no == e.c.run_no)
                              .order_by(r.c.run_id, e.c.key1)).all()
    return runs, sorted(entries) + [tuple(v) for v in values]


@pytest.mark.parametrize("oldest", [True, False], ids=["oldest-form", "last-form"])
def test_a_layout1_journal_is_copied_into_this_layout(server, oldest):
    engine, schema = server
    write_layout1(engine, schema, oldest)
    journal = Journal(engine, schema)
    journal.ensure()
    runs, entries = journal_as_layout1(journal)
    assert runs == RUNS
    assert entries == sorted([("r1", "partition", "applied", 1), ("r1", "serde_param", "conflicted", 1),
                              ("r2", "partition", "planned", 1)]) + [
        ("r1", 7, "", 3, 0, "hdfs://a/x", "hdfs://b/x", None), ("r1", 9, "path", 3, 0, "hdfs://a/y", "hdfs://b/y", None),
        ("r2", 7, "", 3, 1, "hdfs://b/x", "hdfs://c/x", None)]
    tables = set(sa.inspect(engine).get_table_names(schema=schema))
    assert not {"hivecat_runs", "hivecat_entries"} & tables
    with engine.connect() as conn:
        assert journal.unfinished_run(conn, "hive").run_id == "r2"  # resumable

    journal.ensure()  # idempotent
    assert journal_as_layout1(journal) == (runs, entries)
    write_layout1(engine, schema, oldest)  # as if the last copy died before its drop
    journal.ensure()
    assert journal_as_layout1(journal) == (runs, entries)
    assert not {"hivecat_runs", "hivecat_entries"} & set(sa.inspect(engine).get_table_names(schema=schema))


def indexes(engine: sa.Engine, schema: str | None) -> list[str]:
    return [i["name"] for i in sa.inspect(engine).get_indexes("hivecat_journal_entries", schema=schema)]


def test_api_journals_keep_their_chunk_index_and_sql_journals_have_none(scratch_mariadb, tmp_path):
    # API runs (Glue, Thrift) read entries chunk by chunk: a fresh API journal gets the index ...
    api = Journal(sa.create_engine(f"sqlite:///{tmp_path / 'api.db'}"), None)
    api.ensure(locks=True)
    assert indexes(api.engine, None) == [CHUNK_INDEX]
    # ... a fresh SQL journal does not ...
    engine = sa.create_engine(scratch_mariadb)
    schema = sa.make_url(scratch_mariadb).database
    Journal(engine, schema).ensure()
    assert indexes(engine, schema) == []
    # ... and a SQL run meeting a journal API runs use too (its lock table is there) leaves their index alone.
    Journal(engine, schema).ensure(locks=True)
    Journal(engine, schema).ensure()
    assert indexes(engine, schema) == [CHUNK_INDEX]
    engine.dispose()
    api.engine.dispose()
