"""The relocation journal: every run, and every value it changed (old and new), for resume and undo.

It lives in its own database (MySQL/MariaDB) or schema (PostgreSQL) — never inside the HMS schema — so
HMS upgrades and schematool never see it. The SQL backend keeps it on the metastore's own server so
that one transaction covers a chunk's metastore rows and their journal rows; Glue and Thrift keep it in
any SQLAlchemy database (SQLite by default).
"""

from __future__ import annotations

import datetime as dt
import json
import uuid
from dataclasses import asdict

import sqlalchemy as sa

from hivecat.catalog.model import RelocationRequest, RunSummary

# Entry states: planned -> applied | conflicted; applied -> undone | undo-conflicted
PLANNED, APPLIED, CONFLICTED, UNDONE, UNDO_CONFLICTED = "planned", "applied", "conflicted", "undone", "undo-conflicted"
# Run states
RUNNING, DONE, FAILED, UNDOING, RUN_UNDONE = "running", "done", "failed", "undoing", "undone"


def journal_tables(schema: str | None) -> tuple[sa.MetaData, sa.Table, sa.Table]:
    metadata = sa.MetaData(schema=schema)
    runs = sa.Table(
        "hivecat_runs", metadata,
        sa.Column("run_id", sa.String(36), primary_key=True),
        sa.Column("catalog", sa.String(512), nullable=False, index=True),
        sa.Column("old_prefix", sa.String(4000), nullable=False),
        sa.Column("new_prefix", sa.String(4000), nullable=False),
        sa.Column("request", sa.Text, nullable=False),  # the RelocationRequest as JSON: resume re-reads it
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("started_at", sa.DateTime, nullable=False),
        sa.Column("finished_at", sa.DateTime),
        sa.Column("report", sa.Text),
    )
    entries = sa.Table(
        "hivecat_entries", metadata,
        sa.Column("run_id", sa.String(36), primary_key=True),
        sa.Column("kind", sa.String(32), primary_key=True),
        sa.Column("key1", sa.BigInteger, primary_key=True, autoincrement=False),  # SD_ID, DB_ID, TBL_ID, ...
        sa.Column("key2", sa.String(256), primary_key=True),  # PARAM_KEY, INTEGER_IDX, ...; '' when unused
        sa.Column("tbl_id", sa.BigInteger),                   # owning table, for "tables touched"
        sa.Column("chunk", sa.BigInteger, nullable=False),
        sa.Column("old_value", sa.Text, nullable=False),
        sa.Column("new_value", sa.Text, nullable=False),
        sa.Column("state", sa.String(16), nullable=False),
        sa.Index("hivecat_entries_chunk", "run_id", "chunk", "state"),
    )
    return metadata, runs, entries


def _now() -> dt.datetime:
    return dt.datetime.now(dt.timezone.utc).replace(tzinfo=None, microsecond=0)


def request_to_json(request: RelocationRequest) -> str:
    return json.dumps(asdict(request), sort_keys=True)


class Journal:
    def __init__(self, engine: sa.Engine, schema: str | None):
        self.engine = engine
        self.schema = schema
        self.metadata, self.runs, self.entries = journal_tables(schema)

    def ensure(self) -> None:
        """Create the journal's schema and tables when missing (idempotent)."""
        with self.engine.begin() as conn:
            if self.schema and self.schema not in sa.inspect(conn).get_schema_names():
                conn.execute(sa.schema.CreateSchema(self.schema))
            self.metadata.create_all(conn)

    def new_run(self, conn: sa.Connection, catalog: str, request: RelocationRequest) -> str:
        run_id = uuid.uuid4().hex
        conn.execute(self.runs.insert().values(
            run_id=run_id, catalog=catalog, old_prefix=request.old_prefix, new_prefix=request.new_prefix,
            request=request_to_json(request), status=RUNNING, started_at=_now()))
        return run_id

    def unfinished_run(self, conn: sa.Connection, catalog: str) -> sa.Row | None:
        return conn.execute(sa.select(self.runs).where(
            self.runs.c.catalog == catalog, self.runs.c.status.in_([RUNNING, UNDOING]),
        ).order_by(self.runs.c.started_at.desc())).first()

    def run(self, conn: sa.Connection, run_id: str) -> sa.Row | None:
        return conn.execute(sa.select(self.runs).where(self.runs.c.run_id == run_id)).first()

    def set_status(self, conn: sa.Connection, run_id: str, status: str, report: dict | None = None) -> None:
        values: dict = {"status": status}
        if status in (DONE, FAILED, RUN_UNDONE):
            values["finished_at"] = _now()
        if report is not None:
            values["report"] = json.dumps(report, sort_keys=True)
        conn.execute(self.runs.update().where(self.runs.c.run_id == run_id).values(**values))

    def history(self, conn: sa.Connection, catalog: str) -> list[RunSummary]:
        counts = (sa.select(self.entries.c.run_id, sa.func.count().label("rows"))
                  .group_by(self.entries.c.run_id).subquery())
        rows = conn.execute(
            sa.select(self.runs, sa.func.coalesce(counts.c.rows, 0).label("rows"))
            .outerjoin(counts, counts.c.run_id == self.runs.c.run_id)
            .where(self.runs.c.catalog == catalog).order_by(self.runs.c.started_at, self.runs.c.run_id))
        return [RunSummary(r.run_id, r.catalog, r.old_prefix, r.new_prefix, r.status, r.started_at.isoformat(),
                           r.finished_at.isoformat() if r.finished_at else None, int(r.rows)) for r in rows]

    def chunks(self, conn: sa.Connection, run_id: str, state: str) -> list[tuple[str, int]]:
        """(kind, chunk) pairs that still have entries in `state`, in order."""
        e = self.entries
        rows = conn.execute(sa.select(e.c.kind, e.c.chunk).distinct()
                            .where(e.c.run_id == run_id, e.c.state == state).order_by(e.c.kind, e.c.chunk))
        return [(r[0], int(r[1])) for r in rows]

    def state_counts(self, conn: sa.Connection, run_id: str) -> dict[tuple[str, str], int]:
        """(kind, state) -> number of entries."""
        rows = conn.execute(sa.select(self.entries.c.kind, self.entries.c.state, sa.func.count())
                            .where(self.entries.c.run_id == run_id)
                            .group_by(self.entries.c.kind, self.entries.c.state))
        return {(kind, state): int(n) for kind, state, n in rows}

    def sample(self, conn: sa.Connection, run_id: str, limit: int = 10) -> list[tuple[str, str]]:
        rows = conn.execute(sa.select(self.entries.c.old_value, self.entries.c.new_value)
                            .where(self.entries.c.run_id == run_id)
                            .order_by(self.entries.c.kind, self.entries.c.key1, self.entries.c.key2).limit(limit))
        return [(r[0], r[1]) for r in rows]
