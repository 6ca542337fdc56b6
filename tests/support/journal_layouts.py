"""Relocation journals as earlier versions of hivecat wrote them (layout 1), made from a journal of this
version, for the tests that prove the first run meeting one copies it into this layout.

Layout 1: `hivecat_runs` keyed by the run id, `hivecat_entries` keyed by (run_id, kind, key1, key2) with
strings for kind and state and a stored chunk. Its oldest form (before API backends and before the SQL
backend stopped storing new values) has no `object`, new_value NOT NULL and an index on (run_id, chunk,
state); its last form has `object`, a nullable new_value and no index.
"""

from __future__ import annotations

from collections.abc import Callable

import sqlalchemy as sa

from hivecat.catalog.journal import Journal, kind_of, state_of

RUNS_DDL = ("CREATE TABLE {s}hivecat_runs (run_id VARCHAR(36) NOT NULL PRIMARY KEY, catalog VARCHAR(512) NOT NULL, "
            "old_prefix VARCHAR(4000) NOT NULL, new_prefix VARCHAR(4000) NOT NULL, request TEXT NOT NULL, "
            "status VARCHAR(16) NOT NULL, started_at {datetime} NOT NULL, finished_at {datetime}, report TEXT)")
ENTRIES_DDL = ("CREATE TABLE {s}hivecat_entries (run_id VARCHAR(36) NOT NULL, kind VARCHAR(32) NOT NULL, "
               "key1 BIGINT NOT NULL, key2 VARCHAR(256) NOT NULL, tbl_id BIGINT, chunk BIGINT NOT NULL, "
               "old_value {text} NOT NULL, new_value {text}{new_null}, state VARCHAR(16) NOT NULL{object}, "
               "PRIMARY KEY (run_id, kind, key1, key2))")
INDEX_DDL = "CREATE INDEX hivecat_entries_chunk ON {s}hivecat_entries (run_id, chunk, state)"


def layout1_ddl(dialect: str, schema: str | None, *, oldest: bool) -> list[str]:
    s = f"{schema}." if schema else ""
    text = "MEDIUMTEXT" if dialect in ("mysql", "mariadb") else "TEXT"
    datetime = "TIMESTAMP" if dialect == "postgresql" else "DATETIME"
    ddl = [RUNS_DDL.format(s=s, datetime=datetime),
           ENTRIES_DDL.format(s=s, text=text, new_null=" NOT NULL" if oldest else "",
                              object="" if oldest else ", object TEXT")]
    return ddl + ([INDEX_DDL.format(s=s)] if oldest else [])


def to_layout1(engine: sa.Engine, schema: str | None, *, oldest: bool, chunk_size: int = 0,
               new_value: Callable[[str, str, str], str] | None = None) -> None:
    """Rewrite the journal in `schema` as layout 1 holds it: the same runs and entries, this layout's tables
    dropped. new_value(old_value, old_prefix, new_prefix) fills a new value not stored (oldest form)."""
    journal = Journal(engine, schema)
    r, e = journal.runs, journal.entries
    with engine.begin() as conn:
        runs = conn.execute(sa.select(r)).mappings().all()
        entries = conn.execute(sa.select(e, r.c.run_id, r.c.old_prefix, r.c.new_prefix)
                               .join_from(e, r, r.c.run_no == e.c.run_no)).mappings().all()
        for statement in layout1_ddl(engine.dialect.name, schema, oldest=oldest):
            conn.execute(sa.text(statement))
        old_runs = sa.Table("hivecat_runs", sa.MetaData(schema=schema), autoload_with=conn)
        old_entries = sa.Table("hivecat_entries", sa.MetaData(schema=schema), autoload_with=conn)
        if runs:
            conn.execute(old_runs.insert(), [{k: v for k, v in run.items() if k != "run_no"} for run in runs])
        rows = []
        for entry in entries:
            row = {"run_id": entry["run_id"], "kind": kind_of(entry["kind"]).value, "key1": entry["key1"],
                   "key2": entry["key2"], "tbl_id": entry["tbl_id"], "old_value": entry["old_value"],
                   "new_value": entry["new_value"], "state": state_of(entry["state"]),
                   "chunk": entry["chunk"] if entry["chunk"] is not None
                   else (entry["key1"] // chunk_size if chunk_size else 0)}
            if row["new_value"] is None and oldest:
                row["new_value"] = new_value(entry["old_value"], entry["old_prefix"], entry["new_prefix"])
            if not oldest:
                row["object"] = entry["object"]
            rows.append(row)
        if rows:
            conn.execute(old_entries.insert(), rows)
    with engine.begin() as conn:
        e.drop(conn)
        r.drop(conn)
