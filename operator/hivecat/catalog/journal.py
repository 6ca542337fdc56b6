"""The relocation journal: every run, and every value it changed (old and new), for resume and undo.

It lives in its own database (MySQL/MariaDB) or schema (PostgreSQL) — never inside the HMS schema — so
HMS upgrades and schematool never see it. The SQL backend keeps it on the metastore's own server so
that one transaction covers a chunk's metastore rows and their journal rows; Glue and Thrift keep it in
any SQLAlchemy database (SQLite by default), where a lock table (`hivecat_locks`) stands in for the
server-side locks SQL has: one run per catalog at a time.

Entry keys: SQL rows are keyed by their own ids (key1 = SD_ID, DB_ID, ..., key2 = PARAM_KEY, ...). API
entries (Glue, Thrift) use key1 = ordinal within the run, key2 = the slot (parameter key, ...) and
`object` = the object's identity as JSON (database, table, partition values, function).
"""

from __future__ import annotations

import datetime as dt
import json
import os
import socket
import uuid
from collections.abc import Iterable, Sequence
from dataclasses import asdict

import sqlalchemy as sa
from sqlalchemy.dialects import mysql

from hivecat.catalog.model import (
    ObjectKind, Refusal, RelocationRefused, RelocationReport, RelocationRequest, JournaledRun,
)
from hivecat.locations.prefix import rebase

# Entry states: planned -> applied | conflicted | failed; applied -> undone | undo-conflicted | undo-failed.
# failed / undo-failed (API backends only): the service refused the write for another reason than a concurrent change.
PLANNED, APPLIED, CONFLICTED, UNDONE, UNDO_CONFLICTED = "planned", "applied", "conflicted", "undone", "undo-conflicted"
ENTRY_FAILED, UNDO_FAILED = "failed", "undo-failed"
# Run states
RUNNING, DONE, FAILED, UNDOING, RUN_UNDONE = "running", "done", "failed", "undoing", "undone"


# Parameter values reach 32,672 characters (more on schema-script installs): MySQL's TEXT (64 KiB) could not
# hold them, and undo needs every old value whole.
VALUE = sa.Text().with_variant(mysql.MEDIUMTEXT(), "mysql", "mariadb")


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
        sa.Column("old_value", VALUE, nullable=False),
        # API backends store it; the SQL backend recomputes it from old_value and the run's prefixes (half the
        # bytes a plan writes). Journals before that stored it for every entry, and are read as they are.
        sa.Column("new_value", VALUE),
        sa.Column("state", sa.String(16), nullable=False),
        sa.Column("object", sa.Text),                         # API backends: the object's identity as JSON
        # Only API journals get an index on (run_id, chunk, state) (CHUNK_INDEX): their driver reads entries by
        # chunk. A SQL run finds its entries by the primary key's prefix, and the index cost a third of a
        # 1M-row plan.
    )
    return metadata, runs, entries


CHUNK_INDEX = "hivecat_entries_chunk"


def lock_table(metadata: sa.MetaData) -> sa.Table:
    """One row per locked catalog (API backends): who holds it and until when, unless renewed."""
    return sa.Table(
        "hivecat_locks", metadata,
        sa.Column("catalog", sa.String(512), primary_key=True),
        sa.Column("owner", sa.String(256), nullable=False),   # host:pid
        sa.Column("acquired_at", sa.DateTime, nullable=False),
        sa.Column("expires_at", sa.DateTime, nullable=False),
    )


def lock_owner() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"


def _owner_is_dead(owner: str) -> bool:
    """A lock of a process of this host that no longer runs is stale at once (a crashed run can resume)."""
    host, _, pid = owner.rpartition(":")
    if host != socket.gethostname() or not pid.isdigit():
        return False
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False
    return False


def _now() -> dt.datetime:
    return dt.datetime.now(dt.timezone.utc).replace(tzinfo=None, microsecond=0)


def request_to_json(request: RelocationRequest) -> str:
    return json.dumps(asdict(request), sort_keys=True)


class JournalUnavailable(Exception):
    """The journal cannot be created or written with the catalog's credentials. The message says what an
    administrator grants (or creates) once; nothing was written."""

    reason = "JournalUnavailable"


class Journal:
    def __init__(self, engine: sa.Engine, schema: str | None):
        self.engine = engine
        self.schema = schema
        self.metadata, self.runs, self.entries = journal_tables(schema)
        self.locks = lock_table(sa.MetaData(schema=schema))  # API backends only: SQL locks server-side

    def ensure(self, *, locks: bool = False) -> None:
        """Create the journal's schema and tables when missing, and bring a journal of an earlier layout to
        this one in place (idempotent): every earlier run stays resumable and undoable."""
        with self.engine.begin() as conn:
            if self.schema and self.schema not in sa.inspect(conn).get_schema_names():
                conn.execute(sa.schema.CreateSchema(self.schema))
            self.metadata.create_all(conn)
            if locks:  # an API journal
                self.locks.metadata.create_all(conn)
            self._migrate(conn, api=locks)

    def _migrate(self, conn: sa.Connection, *, api: bool) -> None:
        """Earlier layouts: without `object` (before API backends); new_value NOT NULL and CHUNK_INDEX in every
        journal (before the SQL backend stopped storing new values). The index stays where API runs are
        journaled (their lock table is there), and is created there when missing."""
        inspector = sa.inspect(conn)
        quote, dialect = self.engine.dialect.identifier_preparer, self.engine.dialect.name
        table = quote.format_table(self.entries)
        columns = {c["name"].lower(): c for c in inspector.get_columns(self.entries.name, schema=self.schema)}
        for column in self.entries.columns:
            if column.name not in columns and column.nullable:
                kind = column.type.compile(dialect=self.engine.dialect)
                conn.execute(sa.text(f"ALTER TABLE {table} ADD COLUMN {quote.quote(column.name)} {kind}"))
        indexed = CHUNK_INDEX in {i["name"] for i in inspector.get_indexes(self.entries.name, schema=self.schema)}
        api_runs_here = api or self.locks.name in inspector.get_table_names(schema=self.schema)
        if api_runs_here and not indexed:
            e = self.entries
            sa.Index(CHUNK_INDEX, e.c.run_id, e.c.chunk, e.c.state).create(conn)
        elif indexed and not api_runs_here:
            on = f" ON {table}" if dialect in ("mysql", "mariadb") else ""
            name = quote.quote(CHUNK_INDEX) if dialect in ("mysql", "mariadb") or not self.schema \
                else f"{quote.quote_schema(self.schema)}.{quote.quote(CHUNK_INDEX)}"
            conn.execute(sa.text(f"DROP INDEX {name}{on}"))
        # SQLite journals hold API entries only, which always store new_value (SQLite cannot relax a column).
        if not columns["new_value"]["nullable"] and dialect != "sqlite":
            if dialect == "postgresql":
                conn.execute(sa.text(f"ALTER TABLE {table} ALTER COLUMN new_value DROP NOT NULL"))
            else:
                conn.execute(sa.text(f"ALTER TABLE {table} MODIFY new_value {VALUE.compile(dialect=self.engine.dialect)}"
                                     " NULL"))

    def check_writable(self) -> None:
        """Statements of every kind a run sends, matching no row, in a transaction rolled back: a user who
        may read the journal but not write it is found before a run starts, not in its middle."""
        with self.engine.connect() as conn, conn.begin() as transaction:
            for table in (self.runs, self.entries):
                columns = [table.c[name] for name in table.c.keys()]
                conn.execute(table.insert().from_select(columns, sa.select(*columns).where(sa.false())))
                conn.execute(table.update().where(sa.false()).values({columns[0].name: columns[0]}))
                conn.execute(table.delete().where(sa.false()))
            transaction.rollback()

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

    def resumable_run(self, conn: sa.Connection, catalog: str, request: RelocationRequest) -> str | None:
        """The catalog's unfinished run if it is this same request (to resume); refuses any other request."""
        unfinished = self.unfinished_run(conn, catalog)
        if unfinished is not None and unfinished.request != request_to_json(request):
            raise RelocationRefused([Refusal(
                "unfinished-run",
                f"run {unfinished.run_id} ({unfinished.old_prefix} -> {unfinished.new_prefix}) did not finish: "
                f"rerun that same request to resume it, or undo run {unfinished.run_id}", option="undo")])
        return unfinished.run_id if unfinished is not None else None

    def undoable_run(self, conn: sa.Connection, catalog: str, run_id: str) -> sa.Row:
        """The run to undo; refuses one that is unknown here or already undone."""
        run = self.run(conn, run_id)
        if run is None or run.catalog != catalog:
            raise RelocationRefused([Refusal("not-found", f"no run {run_id} in the journal of {catalog}")])
        if run.status == RUN_UNDONE:
            raise RelocationRefused([Refusal("already-undone", f"run {run_id} was already undone")])
        return run

    def run(self, conn: sa.Connection, run_id: str) -> sa.Row | None:
        return conn.execute(sa.select(self.runs).where(self.runs.c.run_id == run_id)).first()

    def set_status(self, conn: sa.Connection, run_id: str, status: str, report: dict | None = None) -> None:
        values: dict = {"status": status}
        if status in (DONE, FAILED, RUN_UNDONE):
            values["finished_at"] = _now()
        if report is not None:
            values["report"] = json.dumps(report, sort_keys=True)
        conn.execute(self.runs.update().where(self.runs.c.run_id == run_id).values(**values))

    def history(self, conn: sa.Connection, catalog: str) -> list[JournaledRun]:
        counts = (sa.select(self.entries.c.run_id, sa.func.count().label("rows"))
                  .group_by(self.entries.c.run_id).subquery())
        rows = conn.execute(
            sa.select(self.runs, sa.func.coalesce(counts.c.rows, 0).label("rows"))
            .outerjoin(counts, counts.c.run_id == self.runs.c.run_id)
            .where(self.runs.c.catalog == catalog).order_by(self.runs.c.started_at, self.runs.c.run_id))
        return [JournaledRun(r.run_id, r.catalog, r.old_prefix, r.new_prefix, r.status, r.started_at.isoformat(),
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

    def tally(self, conn: sa.Connection, run_id: str, report: RelocationReport, done: str, conflict: str,
              failed: str | None = None, counts: dict[tuple[str, str], int] | None = None) -> None:
        """Add the run's entries to `report` per kind (done: rewritten, conflict: conflicted, failed: failed)
        and a sample of them. `counts`: (kind, state) -> entries when already known (spares counting)."""
        for (kind, state), n in (self.state_counts(conn, run_id) if counts is None else counts).items():
            kind_counts = report.count(ObjectKind(kind))
            if state == done:
                kind_counts.rewritten += n
            elif state == conflict:
                kind_counts.conflicted += n
            elif failed is not None and state == failed:
                kind_counts.failed += n
        report.sample = self.sample(conn, run_id, report.SAMPLE_SIZE)

    def sample(self, conn: sa.Connection, run_id: str, limit: int = 10) -> list[tuple[str, str]]:
        """(old, new) of a few entries; a new value not stored is the run's rebase of the old one."""
        run = self.run(conn, run_id)
        rows = conn.execute(sa.select(self.entries.c.old_value, self.entries.c.new_value)
                            .where(self.entries.c.run_id == run_id)
                            .order_by(self.entries.c.kind, self.entries.c.key1, self.entries.c.key2).limit(limit))
        return [(old, new if new is not None else rebase(old, run.old_prefix, run.new_prefix) or old)
                for old, new in rows]

    # --- API backends (Glue, Thrift): entries keyed by ordinal, with the object's identity --------

    def add_entries(self, conn: sa.Connection, rows: Sequence[dict]) -> None:
        """rows: run_id, kind, key1 (ordinal), key2, object, chunk, old_value, new_value, state."""
        if rows:
            conn.execute(self.entries.insert(), [{"tbl_id": None, **row} for row in rows])

    def pending_chunks(self, conn: sa.Connection, run_id: str, states: Iterable[str]) -> list[int]:
        e = self.entries
        rows = conn.execute(sa.select(e.c.chunk).distinct()
                            .where(e.c.run_id == run_id, e.c.state.in_(list(states))).order_by(e.c.chunk))
        return [int(r[0]) for r in rows]

    def chunk_entries(self, conn: sa.Connection, run_id: str, chunk: int, states: Iterable[str]) -> list[sa.Row]:
        e = self.entries
        return conn.execute(sa.select(e).where(e.c.run_id == run_id, e.c.chunk == chunk,
                                               e.c.state.in_(list(states))).order_by(e.c.key1)).all()

    def set_states(self, conn: sa.Connection, run_id: str, states: dict[int, str]) -> None:
        """key1 (ordinal) -> new state."""
        by_state: dict[str, list[int]] = {}
        for key1, state in states.items():
            by_state.setdefault(state, []).append(key1)
        e = self.entries
        for state, keys in by_state.items():
            for start in range(0, len(keys), 500):  # bounded IN lists
                conn.execute(e.update().where(e.c.run_id == run_id, e.c.key1.in_(keys[start:start + 500]))
                             .values(state=state))

    def objects(self, conn: sa.Connection, run_id: str, state: str) -> list[str]:
        """The distinct object identities (JSON) of a run's entries in `state`."""
        e = self.entries
        return [r[0] for r in conn.execute(sa.select(e.c.object).distinct().where(
            e.c.run_id == run_id, e.c.state == state, e.c.object.is_not(None)))]

    # --- the lock table (API backends) ----------------------------------------------------------

    def acquire_lock(self, catalog: str, ttl_seconds: int) -> bool:
        """Take the catalog's lock unless a live holder has it; expired and dead holders' locks are stale."""
        now, owner = _now(), lock_owner()
        with self.engine.begin() as conn:
            held = conn.execute(sa.select(self.locks).where(self.locks.c.catalog == catalog)).first()
            if held is not None:
                if held.expires_at > now and not _owner_is_dead(held.owner):
                    return False
                stale = conn.execute(self.locks.delete().where(self.locks.c.catalog == catalog,
                                                               self.locks.c.owner == held.owner,
                                                               self.locks.c.expires_at == held.expires_at))
                if stale.rowcount != 1:
                    return False  # someone else took it over in between
            try:
                conn.execute(self.locks.insert().values(catalog=catalog, owner=owner, acquired_at=now,
                                                        expires_at=now + dt.timedelta(seconds=ttl_seconds)))
            except sa.exc.IntegrityError:
                return False
        return True

    def renew_lock(self, catalog: str, ttl_seconds: int) -> None:
        with self.engine.begin() as conn:
            conn.execute(self.locks.update().where(self.locks.c.catalog == catalog,
                                                   self.locks.c.owner == lock_owner())
                         .values(expires_at=_now() + dt.timedelta(seconds=ttl_seconds)))

    def release_lock(self, catalog: str) -> None:
        with self.engine.begin() as conn:
            conn.execute(self.locks.delete().where(self.locks.c.catalog == catalog,
                                                   self.locks.c.owner == lock_owner()))
