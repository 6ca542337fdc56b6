"""The relocation journal: every run, and every value it changed (old and new), for resume and undo.

It lives in its own database (MySQL/MariaDB) or schema (PostgreSQL) — never inside the HMS schema — so
HMS upgrades and schematool never see it. The SQL backend keeps it on the metastore's own server so
that one transaction covers a chunk's metastore rows and their journal rows; Glue and Thrift keep it in
any SQLAlchemy database (SQLite by default), where a lock table (`hivecat_locks`) stands in for the
server-side locks SQL has: one run per catalog at a time.

Entry keys: SQL rows are keyed by their own ids (key1 = SD_ID, DB_ID, ..., key2 = PARAM_KEY, ...). API
entries (Glue, Thrift) use key1 = ordinal within the run, key2 = the slot (parameter key, ...) and
`object` = the object's identity as JSON (database, table, partition values, function).

Layout 2 (this one) keeps an entry narrow, since a SQL plan writes one per row in scope: the run's number
(runs keep their public id), the kind and the state as small integer codes (KIND_CODES, STATE_CODES: stored,
so never renumbered), no chunk for SQL entries (a SQL chunk is a key1 range) and no new value for them (the
run's prefixes recompute it). Layout 1 (`hivecat_runs`, `hivecat_entries`: strings throughout, and in its
oldest form new_value NOT NULL, no `object`, an index on (run_id, chunk, state)) is copied into this one by
the first Journal.ensure that meets it, unfinished runs included, and then dropped.

Blocks (`hivecat_journal_blocks`): MySQL/MariaDB's one-transaction path over the whole catalog writes the entries
of a storage-descriptor kind packed, up to BLOCK_KEYS key1 values per row (per owning table and key range):
a JSON array of `[key1, key2, old value]`, so any character survives. Journals written before that hold
`key1,len(key2),key2` `len(old),old` per entry (lengths in characters); parse_block reads both. A million
single-row inserts cost about as much as the bare UPDATE itself. Those entries are all applied when written;
anything that needs them one by one first unpacks them into entries (sql/blocks.py, same transaction).
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import os
import socket
import uuid
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass

import sqlalchemy as sa
from sqlalchemy.dialects import mysql

from hivecat import reasons
from hivecat.catalog.model import (
    ObjectKind, Refusal, RelocationRefused, RelocationReport, RelocationRequest, JournaledRun,
)
from hivecat.locations.prefix import rebase

# Entry states: planned -> applied | conflicted | failed; applied -> undone | undo-conflicted | undo-failed.
# failed / undo-failed (API backends only): the service refused the write for another reason than a concurrent change.
PLANNED, APPLIED, CONFLICTED, UNDONE, UNDO_CONFLICTED = "planned", "applied", "conflicted", "undone", "undo-conflicted"
ENTRY_FAILED, UNDO_FAILED = "failed", "undo-failed"
# The codes entries store for states and kinds. Journals keep them: a code is never reused or renumbered.
STATE_CODES: dict[str, int] = {PLANNED: 1, APPLIED: 2, CONFLICTED: 3, UNDONE: 4, UNDO_CONFLICTED: 5,
                               ENTRY_FAILED: 6, UNDO_FAILED: 7}
KIND_CODES: dict[ObjectKind, int] = {
    ObjectKind.CATALOG: 1, ObjectKind.DATABASE: 2, ObjectKind.DATABASE_MANAGED: 3, ObjectKind.TABLE: 4,
    ObjectKind.PARTITION: 5, ObjectKind.SERDE_PARAM: 6, ObjectKind.TABLE_PARAM: 7, ObjectKind.PARTITION_PARAM: 8,
    ObjectKind.SKEWED_LOCATION: 9, ObjectKind.FUNCTION_RESOURCE: 10}
_STATES = {code: state for state, code in STATE_CODES.items()}
_KINDS = {code: kind for kind, code in KIND_CODES.items()}


def state_code(state: str) -> int:
    return STATE_CODES[state]


def kind_code(kind: ObjectKind | str) -> int:
    return KIND_CODES[ObjectKind(kind)]


def state_of(code: int) -> str:
    return _STATES[code]


def kind_of(code: int) -> ObjectKind:
    return _KINDS[code]
# Run states
RUNNING, DONE, FAILED, UNDOING, RUN_UNDONE = "running", "done", "failed", "undoing", "undone"


# Parameter values reach 32,672 characters (more on schema-script installs): MySQL's TEXT (64 KiB) could not
# hold them, and undo needs every old value whole.
VALUE = sa.Text().with_variant(mysql.MEDIUMTEXT(), "mysql", "mariadb")


# Packed entries are text in utf8mb4, whatever the journal's charset: no character is lost on the way.
PAYLOAD = sa.Text().with_variant(mysql.LONGTEXT(charset="utf8mb4", collation="utf8mb4_bin"), "mysql", "mariadb")


RUNS, ENTRIES, BLOCKS = "hivecat_journal_runs", "hivecat_journal_entries", "hivecat_journal_blocks"
TOUCHED = "hivecat_journal_touched"
# key1 values per block: at most 256 locations of 4,000 characters, some 4 MB, well below the 16 MB packet
# (max_allowed_packet) a block is read back in
BLOCK_KEYS = 256
# a block's payload is a JSON array of [key1, key2, old value] entries; one an earlier hivecat wrote (length-
# prefixed text) opens with a digit
JSON_BLOCK_OPEN = "["
LAYOUT1_RUNS, LAYOUT1_ENTRIES = "hivecat_runs", "hivecat_entries"
# SQLite numbers rows itself only for an INTEGER PRIMARY KEY.
RUN_NO = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def parse_block(payload: str) -> list[tuple[int, str, str]]:
    """(key1, key2, old value) of each entry of a block's payload, in either format; ValueError when damaged."""
    if payload.startswith(JSON_BLOCK_OPEN):
        entries = json.loads(payload)
        if not all(isinstance(e, list) and len(e) == 3 and type(e[0]) is int and isinstance(e[1], str)
                   and isinstance(e[2], str) for e in entries):
            raise ValueError("a journal block holds an entry of another shape")
        return [(key1, key2, old) for key1, key2, old in entries]
    entries, at = [], 0

    def number(at: int) -> tuple[int, int]:
        comma = payload.index(",", at)
        return int(payload[at:comma]), comma + 1

    while at < len(payload):  # the earlier format: `key1,n,key2` then `m,old`, n and m lengths in characters
        key1, at = number(at)
        n, at = number(at)
        key2, at = payload[at:at + n], at + n
        m, at = number(at)
        old, at = payload[at:at + m], at + m
        if len(old) != m:
            raise ValueError("a journal block ends inside an entry")
        entries.append((key1, key2, old))
    return entries


def journal_tables(schema: str | None) -> tuple[sa.MetaData, sa.Table, sa.Table, sa.Table]:
    metadata = sa.MetaData(schema=schema)
    runs = sa.Table(
        RUNS, metadata,
        sa.Column("run_no", RUN_NO, primary_key=True, autoincrement=True),  # what entries refer to
        sa.Column("run_id", sa.String(36), nullable=False, unique=True),     # what users and reports see
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
        ENTRIES, metadata,
        sa.Column("run_no", sa.BigInteger, primary_key=True, autoincrement=False),
        sa.Column("kind", sa.SmallInteger, primary_key=True, autoincrement=False),  # KIND_CODES
        sa.Column("key1", sa.BigInteger, primary_key=True, autoincrement=False),  # SD_ID, DB_ID, TBL_ID, ...
        sa.Column("key2", sa.String(256), primary_key=True),  # PARAM_KEY, INTEGER_IDX, ...; '' when unused
        sa.Column("tbl_id", sa.BigInteger),                   # owning table, for "tables touched"
        sa.Column("chunk", sa.BigInteger),                    # API entries only: a SQL chunk is a key1 range
        sa.Column("old_value", VALUE, nullable=False),
        # API backends store it; the SQL backend recomputes it from old_value and the run's prefixes (half the
        # bytes a plan writes). Journals of layout 1 stored it for every SQL entry too, and keep it.
        sa.Column("new_value", VALUE),
        sa.Column("state", sa.SmallInteger, nullable=False),  # STATE_CODES
        sa.Column("object", sa.Text),                         # API backends: the object's identity as JSON
        # Only API journals get an index on (run_no, chunk, state) (CHUNK_INDEX): their driver reads entries by
        # chunk. A SQL run finds its entries by the primary key's prefix (a chunk: a range of it), and an index
        # would cost a third of a 1M-row plan.
    )
    blocks = sa.Table(
        BLOCKS, metadata,
        sa.Column("run_no", sa.BigInteger, primary_key=True, autoincrement=False),
        sa.Column("kind", sa.SmallInteger, primary_key=True, autoincrement=False),
        sa.Column("tbl_id", sa.BigInteger, primary_key=True, autoincrement=False),  # owning table; 0: none
        sa.Column("block", sa.BigInteger, primary_key=True, autoincrement=False),   # key1 // BLOCK_KEYS
        sa.Column("entries", sa.Integer, nullable=False),
        sa.Column("payload", PAYLOAD, nullable=False),  # its entries, all applied (parse_block)
        sa.Column("longest", sa.BigInteger),  # the longest new value, where the column's capacity is checked
    )
    return metadata, runs, entries, blocks


def touched_table(metadata: sa.MetaData) -> sa.Table:
    """Rows of a packed run's plan, kept only inside its transaction (deleted before it commits): what its
    notification events are made from, since blocks cannot be joined."""
    return sa.Table(
        TOUCHED, metadata,
        sa.Column("run_no", sa.BigInteger, primary_key=True, autoincrement=False),
        sa.Column("kind", sa.SmallInteger, primary_key=True, autoincrement=False),
        sa.Column("key1", sa.BigInteger, primary_key=True, autoincrement=False),
        sa.Column("key2", sa.String(256), primary_key=True),
        sa.Column("old_value", VALUE, nullable=False),
    )


CHUNK_INDEX = "hivecat_journal_entries_chunk"


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
    """The request as the run row keeps it (resume compares it, nothing parses it back). Expected locations, as
    many as a table has units, are kept as their count and digest: the row's column is a TEXT (64 KiB on MySQL),
    and each planned entry records its old value anyway."""
    data = asdict(request)
    expected = data.pop("expected_locations")
    if expected is not None:
        text = "\n".join(sorted(expected)).encode()
        data["expected_locations"] = {"count": len(expected), "sha256": hashlib.sha256(text).hexdigest()}
    return json.dumps(data, sort_keys=True)


@dataclass(frozen=True)
class Entry:
    """An API entry as the driver reads it: kind and state decoded."""

    kind: str
    key1: int
    key2: str
    object: str | None
    old_value: str
    new_value: str | None
    state: str


class JournalUnavailable(Exception):
    """The journal cannot be created or written with the catalog's credentials. The message says what an
    administrator grants (or creates) once; nothing was written."""

    reason = reasons.JOURNAL_UNAVAILABLE


class Journal:
    def __init__(self, engine: sa.Engine, schema: str | None):
        self.engine = engine
        self.schema = schema
        self.metadata, self.runs, self.entries, self.blocks = journal_tables(schema)
        self.touched = touched_table(self.metadata)
        self.locks = lock_table(sa.MetaData(schema=schema))  # API backends only: SQL locks server-side
        self._run_numbers: dict[str, int] = {}  # run id -> run number: both never change

    def run_no(self, conn: sa.Connection, run_id: str) -> int:
        """The number of run `run_id`, which its entries carry."""
        if run_id not in self._run_numbers:
            self._run_numbers[run_id] = conn.execute(
                sa.select(self.runs.c.run_no).where(self.runs.c.run_id == run_id)).scalar_one()
        return self._run_numbers[run_id]

    def _of_run(self, conn: sa.Connection, run_id: str) -> sa.ColumnElement[bool]:
        return self.entries.c.run_no == self.run_no(conn, run_id)

    def ensure(self, *, locks: bool = False) -> None:
        """Create the journal's schema and tables when missing, and copy a journal of layout 1 into this
        layout (idempotent): every earlier run, finished or not, stays resumable and undoable."""
        with self.engine.begin() as conn:
            if self.schema and self.schema not in sa.inspect(conn).get_schema_names():
                conn.execute(sa.schema.CreateSchema(self.schema))
            self.metadata.create_all(conn)
            if locks:  # an API journal
                self.locks.metadata.create_all(conn)
            inspector = sa.inspect(conn)
            names = set(inspector.get_table_names(schema=self.schema))
            indexed = CHUNK_INDEX in {i["name"] for i in inspector.get_indexes(ENTRIES, schema=self.schema)}
            if (locks or self.locks.name in names) and not indexed:  # API runs are journaled here
                e = self.entries
                sa.Index(CHUNK_INDEX, e.c.run_no, e.c.chunk, e.c.state).create(conn)
        if LAYOUT1_ENTRIES in names or LAYOUT1_RUNS in names:
            self._copy_layout1()

    def _copy_layout1(self) -> None:
        """Copy the runs of a layout-1 journal not copied yet, and their entries, in one transaction; then
        drop its tables (MySQL commits DDL at once: a crash in between leaves runs already copied, which the
        next call skips)."""
        metadata = sa.MetaData(schema=self.schema)
        with self.engine.begin() as conn:
            names = set(sa.inspect(conn).get_table_names(schema=self.schema))
            old_runs = sa.Table(LAYOUT1_RUNS, metadata, autoload_with=conn) if LAYOUT1_RUNS in names else None
            old = sa.Table(LAYOUT1_ENTRIES, metadata, autoload_with=conn) if LAYOUT1_ENTRIES in names else None
            fresh = [] if old_runs is None else list(conn.execute(
                sa.select(old_runs.c.run_id).where(old_runs.c.run_id.not_in(sa.select(self.runs.c.run_id)))
                .order_by(old_runs.c.started_at, old_runs.c.run_id)).scalars())
            for start in range(0, len(fresh), 500):  # bounded IN lists
                batch = fresh[start:start + 500]
                columns = [c for c in self.runs.c.keys() if c != "run_no"]
                conn.execute(self.runs.insert().from_select(columns, sa.select(*(old_runs.c[c] for c in columns))
                             .where(old_runs.c.run_id.in_(batch)).order_by(old_runs.c.started_at, old_runs.c.run_id)))
                if old is not None:
                    conn.execute(self.entries.insert().from_select(
                        ["run_no", "kind", "key1", "key2", "tbl_id", "chunk", "old_value", "new_value", "state",
                         "object"],
                        sa.select(self.runs.c.run_no, sa.case({k.value: c for k, c in KIND_CODES.items()},
                                                              value=old.c.kind),
                                  old.c.key1, old.c.key2, old.c.tbl_id, old.c.chunk, old.c.old_value,
                                  old.c.new_value, sa.case(STATE_CODES, value=old.c.state),
                                  old.c.object if "object" in old.c else sa.null())  # none before API backends
                        .join_from(old, self.runs, self.runs.c.run_id == old.c.run_id)
                        .where(old.c.run_id.in_(batch))))
        with self.engine.begin() as conn:
            for table in (old, old_runs):
                if table is not None:
                    table.drop(conn)

    def check_writable(self) -> None:
        """Statements of every kind a run sends, matching no row, in a transaction rolled back: a user who
        may read the journal but not write it is found before a run starts, not in its middle."""
        with self.engine.connect() as conn, conn.begin() as transaction:
            for table in (self.runs, self.entries, self.blocks):
                columns = [table.c[name] for name in table.c.keys()]
                conn.execute(table.insert().from_select(columns, sa.select(*columns).where(sa.false())))
                conn.execute(table.update().where(sa.false()).values({columns[0].name: columns[0]}))
                conn.execute(table.delete().where(sa.false()))
            transaction.rollback()

    def new_run(self, conn: sa.Connection, catalog: str, request: RelocationRequest) -> str:
        run_id = uuid.uuid4().hex
        inserted = conn.execute(self.runs.insert().values(
            run_id=run_id, catalog=catalog, old_prefix=request.old_prefix, new_prefix=request.new_prefix,
            request=request_to_json(request), status=RUNNING, started_at=_now()))
        self._run_numbers[run_id] = inserted.inserted_primary_key[0]
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
        rows_of = sa.union_all(sa.select(self.entries.c.run_no, sa.literal(1).label("n")),
                               sa.select(self.blocks.c.run_no, self.blocks.c.entries.label("n"))).subquery()
        counts = (sa.select(rows_of.c.run_no, sa.func.sum(rows_of.c.n).label("rows"))
                  .group_by(rows_of.c.run_no).subquery())
        rows = conn.execute(
            sa.select(self.runs, sa.func.coalesce(counts.c.rows, 0).label("rows"))
            .outerjoin(counts, counts.c.run_no == self.runs.c.run_no)
            .where(self.runs.c.catalog == catalog).order_by(self.runs.c.started_at, self.runs.c.run_id))
        return [JournaledRun(r.run_id, r.catalog, r.old_prefix, r.new_prefix, r.status, r.started_at.isoformat(),
                           r.finished_at.isoformat() if r.finished_at else None, int(r.rows)) for r in rows]

    def key_chunks(self, conn: sa.Connection, run_id: str, state: str, size: int) -> list[tuple[ObjectKind, int]]:
        """(kind, chunk) pairs that still have SQL entries in `state`, in order; chunk c is the key1 range
        [c * size, (c + 1) * size) (key_range)."""
        e = self.entries
        chunk = sa.cast((e.c.key1 - e.c.key1 % size) / size, sa.BigInteger)  # floor division in every dialect
        rows = conn.execute(sa.select(e.c.kind, chunk).distinct()
                            .where(self._of_run(conn, run_id), e.c.state == state_code(state)).order_by(e.c.kind, chunk))
        return [(kind_of(r[0]), int(r[1])) for r in rows]

    def key_range(self, chunk: int, size: int) -> list[sa.ColumnElement[bool]]:
        """The entries of SQL chunk `chunk`: a range of the primary key after (run, kind)."""
        return [self.entries.c.key1 >= chunk * size, self.entries.c.key1 < (chunk + 1) * size]

    def state_counts(self, conn: sa.Connection, run_id: str) -> dict[tuple[str, str], int]:
        """(kind, state) -> number of entries."""
        rows = conn.execute(sa.select(self.entries.c.kind, self.entries.c.state, sa.func.count())
                            .where(self._of_run(conn, run_id))
                            .group_by(self.entries.c.kind, self.entries.c.state))
        return {(kind_of(kind).value, state_of(state)): int(n) for kind, state, n in rows}

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
                            .where(self._of_run(conn, run_id))
                            .order_by(self.entries.c.kind, self.entries.c.key1, self.entries.c.key2).limit(limit)).all()
        if not rows:  # a packed run: the first block's entries
            payload = conn.execute(sa.select(self.blocks.c.payload).where(self.blocks.c.run_no == self.run_no(conn, run_id))
                                   .order_by(self.blocks.c.kind, self.blocks.c.tbl_id, self.blocks.c.block).limit(1)).scalar()
            rows = [(old, None) for _, _, old in sorted(parse_block(payload or ""))[:limit]]
        return [(old, new if new is not None else rebase(old, run.old_prefix, run.new_prefix) or old)
                for old, new in rows]

    # --- packed entries (MySQL/MariaDB) ---------------------------------------------------------

    def can_pack(self) -> bool:
        """Whether runs here may pack entries into blocks: MySQL/MariaDB (GROUP_CONCAT)."""
        return self.engine.dialect.name in ("mysql", "mariadb")

    # --- API backends (Glue, Thrift): entries keyed by ordinal, with the object's identity --------

    def add_entries(self, conn: sa.Connection, run_id: str, rows: Sequence[dict]) -> None:
        """rows: kind, key1 (ordinal), key2, object, chunk, old_value, new_value, state."""
        if rows:
            run_no = self.run_no(conn, run_id)
            conn.execute(self.entries.insert(), [
                {**row, "tbl_id": None, "run_no": run_no, "kind": kind_code(row["kind"]),
                 "state": state_code(row["state"])} for row in rows])

    def pending_chunks(self, conn: sa.Connection, run_id: str, states: Iterable[str]) -> list[int]:
        e = self.entries
        rows = conn.execute(sa.select(e.c.chunk).distinct()
                            .where(self._of_run(conn, run_id), e.c.state.in_([state_code(s) for s in states]))
                            .order_by(e.c.chunk))
        return [int(r[0]) for r in rows]

    def chunk_entries(self, conn: sa.Connection, run_id: str, chunk: int, states: Iterable[str]) -> list[Entry]:
        e = self.entries
        rows = conn.execute(sa.select(e).where(self._of_run(conn, run_id), e.c.chunk == chunk,
                                               e.c.state.in_([state_code(s) for s in states])).order_by(e.c.key1))
        return [Entry(kind_of(r.kind).value, r.key1, r.key2, r.object, r.old_value, r.new_value, state_of(r.state))
                for r in rows]

    def set_states(self, conn: sa.Connection, run_id: str, states: dict[int, str]) -> None:
        """key1 (ordinal) -> new state."""
        by_state: dict[str, list[int]] = {}
        for key1, state in states.items():
            by_state.setdefault(state, []).append(key1)
        e = self.entries
        for state, keys in by_state.items():
            for start in range(0, len(keys), 500):  # bounded IN lists
                conn.execute(e.update().where(self._of_run(conn, run_id), e.c.key1.in_(keys[start:start + 500]))
                             .values(state=state_code(state)))

    def objects(self, conn: sa.Connection, run_id: str, state: str) -> list[str]:
        """The distinct object identities (JSON) of a run's entries in `state`."""
        e = self.entries
        return [r[0] for r in conn.execute(sa.select(e.c.object).distinct().where(
            self._of_run(conn, run_id), e.c.state == state_code(state), e.c.object.is_not(None)))]

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
