"""A relocation journal of the earlier layout (new_value NOT NULL, an index on (run_id, chunk, state)) is brought
to this one in place by Journal.ensure, on both servers the SQL backend keeps it on, keeping every row; a second
ensure changes nothing. (test_relocate_sql_chunks resumes and undoes a run killed under the earlier layout.)"""

from __future__ import annotations

import pytest
import sqlalchemy as sa

from hivecat.catalog.journal import CHUNK_INDEX, Journal
from support.services import unique_name

EARLIER = {  # the DDL the previous version's metadata emitted, per dialect
    "mysql": ["CREATE TABLE {s}.hivecat_entries (run_id VARCHAR(36) NOT NULL, kind VARCHAR(32) NOT NULL, "
              "key1 BIGINT NOT NULL, key2 VARCHAR(256) NOT NULL, tbl_id BIGINT, chunk BIGINT NOT NULL, "
              "old_value MEDIUMTEXT NOT NULL, new_value MEDIUMTEXT NOT NULL, state VARCHAR(16) NOT NULL, "
              "object TEXT, PRIMARY KEY (run_id, kind, key1, key2))",
              "CREATE INDEX hivecat_entries_chunk ON {s}.hivecat_entries (run_id, chunk, state)"],
    "postgresql": ["CREATE SCHEMA {s}",
                   "CREATE TABLE {s}.hivecat_entries (run_id VARCHAR(36) NOT NULL, kind VARCHAR(32) NOT NULL, "
                   "key1 BIGINT NOT NULL, key2 VARCHAR(256) NOT NULL, tbl_id BIGINT, chunk BIGINT NOT NULL, "
                   "old_value TEXT NOT NULL, new_value TEXT NOT NULL, state VARCHAR(16) NOT NULL, object TEXT, "
                   "PRIMARY KEY (run_id, kind, key1, key2))",
                   "CREATE INDEX hivecat_entries_chunk ON {s}.hivecat_entries (run_id, chunk, state)"],
}
ROW = "('r1', 'partition', 7, '', 3, 0, 'hdfs://a/x', 'hdfs://b/x', 'applied', NULL)"


@pytest.mark.parametrize("server", ["mysql", "postgresql"])
def test_an_earlier_journal_is_migrated_in_place(server, scratch_mariadb, scratch_postgres):
    url = scratch_mariadb if server == "mysql" else scratch_postgres
    engine = sa.create_engine(url)
    schema = unique_name("hc_journal") if server == "postgresql" else sa.make_url(url).database
    try:
        with engine.begin() as conn:
            for statement in EARLIER[server]:
                conn.execute(sa.text(statement.format(s=schema)))
            conn.execute(sa.text(f"INSERT INTO {schema}.hivecat_entries VALUES {ROW}"))
        journal = Journal(engine, schema)
        for _ in range(2):  # idempotent
            journal.ensure()
            inspector = sa.inspect(engine)
            assert [i["name"] for i in inspector.get_indexes("hivecat_entries", schema=schema)] == []
            columns = {c["name"]: c["nullable"] for c in inspector.get_columns("hivecat_entries", schema=schema)}
            assert columns["new_value"] and not columns["old_value"]
            with engine.connect() as conn:
                assert conn.execute(sa.select(journal.entries.c.old_value, journal.entries.c.new_value)).all() \
                    == [("hdfs://a/x", "hdfs://b/x")]
        assert "hivecat_runs" in sa.inspect(engine).get_table_names(schema=schema)
    finally:
        if server == "postgresql":
            with engine.begin() as conn:
                conn.execute(sa.text(f"DROP SCHEMA {schema} CASCADE"))
        engine.dispose()


def indexes(engine: sa.Engine, schema: str | None) -> list[str]:
    return [i["name"] for i in sa.inspect(engine).get_indexes("hivecat_entries", schema=schema)]


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
