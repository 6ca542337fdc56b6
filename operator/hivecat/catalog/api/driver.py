"""The relocation driver for catalogs reached through an API without transactions (Glue, Thrift).

A run: list the scope -> plan every changed value with `rebase` -> journal the planned entries (object
identity, slot, old, new; grouped into chunks, one write call each) -> apply chunk by chunk: re-read the
chunk's objects right before writing, write only values that still hold the planned old value (others are
`conflicted`: reported, never clobbered), record the outcome in the journal. The backend's own checks
(Glue's table VersionId) catch changes that land between that re-read and the write; for everything else a
small window remains, documented in docs/relocate-consistency.md. Up to `backend.parallelism` chunks are
written at once (Thrift: one metastore connection each); the journal is written by the calling thread only.

A run that crashed resumes when the same request is rerun (a different request is refused while it is
unfinished). Undo writes back old values only where the object still holds what the run wrote. One run per
catalog at a time: a lock row in the journal database. A dry run reads only: no journal, no lock.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa

from hivecat.catalog.api.backend import ApiBackend, WriteRejected
from hivecat.catalog.api.bounded import run_bounded
from hivecat.catalog.api.params import ApiParams
from hivecat.catalog.engines import sql_engine
from hivecat.catalog.api.objects import (
    DATABASE, FUNCTION, PARTITION, TABLE, ObjectRef, Slot, read_slots, with_slots,
)
from hivecat.catalog.connect import first_line
from hivecat.catalog.journal import (
    APPLIED, CONFLICTED, ENTRY_FAILED, PLANNED, RUNNING, UNDO_CONFLICTED, UNDO_FAILED, UNDOING, UNDONE, Entry,
    Journal, JournalUnavailable,
)
from hivecat.catalog.model import (
    DatabaseInfo, ObjectKind, PartitionInfo, Refusal, RelocationRefused, RelocationReport, RelocationRequest, Scope,
    TableInfo, unsafe_table_refusal,
)
from hivecat.catalog.run import ChunkProgress, Confirmation, JournaledRelocation
from hivecat.config import config
from hivecat.locations.partition_filter import Expr, FilterError, evaluate, parse_filter
from hivecat.locations.prefix import LocationPrefix, rebase


PARAM_KINDS = frozenset({ObjectKind.SERDE_PARAM, ObjectKind.TABLE_PARAM, ObjectKind.PARTITION_PARAM})
LOCK_TTL_SECONDS = 600  # renewed after every chunk; a crashed holder's lock is stale after this (at once on its host)


def default_journal_url() -> str:
    """$HIVECAT_JOURNAL_URL, else a SQLite file in the state directory ($XDG_STATE_HOME/hivecat)."""
    settings = config()
    if settings.journal_url:
        return settings.journal_url
    settings.state_dir.mkdir(parents=True, exist_ok=True)
    return f"sqlite:///{settings.state_dir / 'journal.db'}"


def refusal_reason(info: TableInfo, force_acid: bool) -> str | None:
    """Why a table's locations must not be rewritten by a metastore update, if they must not."""
    params = {k.lower(): v for k, v in info.parameters.items()}
    if params.get("table_type", "").lower() == "iceberg" or "metadata_location" in params:
        return "iceberg"
    if params.get("transactional", "").lower() == "true" and not force_acid:
        return "acid"
    return None




@dataclass
class _ChunkOutcome:
    """What writing one chunk found: key1 -> new state, and why values were left (for the report)."""

    states: dict[int, str]
    errors: list[str]


@dataclass
class _Planned:
    """A run's plan before it is journaled (or, for a dry run, reported)."""

    rows: list[dict]
    report: RelocationReport


class ApiCatalog(ApiParams, JournaledRelocation):
    """The Catalog protocol over an ApiBackend; GlueCatalog and ThriftCatalog are this with their backend.
    Parameters (replica bookkeeping) are written by ApiParams (api/params.py)."""

    def __init__(self, backend: ApiBackend, journal_url: str | None = None):
        self.backend = backend
        self.name = backend.name
        self.engine = sql_engine(journal_url or default_journal_url())
        self.journal = Journal(self.engine, None)

    def close(self) -> None:
        self.engine.dispose()

    # --- reading ------------------------------------------------------------------------------------

    def list_databases(self) -> Iterator[DatabaseInfo]:
        for raw in self.backend.get_databases():
            yield self.backend.database_info(raw)

    def list_tables(self, database: str) -> Iterator[TableInfo]:
        for raw in self.backend.get_tables(database):
            yield self.backend.table_info(database, raw)

    def get_table(self, database: str, table: str) -> TableInfo | None:
        raw = self.backend.get_table(database, table)
        return None if raw is None else self.backend.table_info(database, raw)

    def _table(self, database: str, table: str) -> Any:
        raw = self.backend.get_table(database, table)
        if raw is None:
            raise LookupError(f"table {database}.{table} does not exist")
        return raw

    def _partitions(self, database: str, table: Any, expr: Expr | None) -> Iterator[Any]:
        keys = list(self.backend.partition_key_types(table))
        for raw in self.backend.get_partitions(database, table, expr):
            # Evaluated here too: a server-side filter is only ever a narrowing first pass.
            if expr is None or evaluate(expr, dict(zip(keys, self.backend.partition_info(database, "", raw).values))):
                yield raw

    def list_partitions(self, database: str, table: str, partition_filter: str | None = None) -> Iterator[PartitionInfo]:
        raw_table = self._table(database, table)
        expr = parse_filter(partition_filter, self.backend.partition_key_types(raw_table)) if partition_filter else None
        for raw in self._partitions(database, raw_table, expr):
            yield self.backend.partition_info(database, table, raw)

    # --- planning -----------------------------------------------------------------------------------

    def _check_scope(self, scope: Scope) -> tuple[list[Any], Any | None, Expr | None]:
        """(databases in scope, the scoped table, the parsed filter); refuses unknown names and bad filters."""
        if scope.database is None:
            return list(self.backend.get_databases()), None, None
        database = self.backend.get_database(scope.database)
        if database is None:
            raise RelocationRefused([Refusal("not-found", f"database {scope.database} does not exist")])
        if scope.table is None:
            return [database], None, None
        table = self.backend.get_table(scope.database, scope.table)
        if table is None:
            raise RelocationRefused([Refusal("not-found", f"table {scope.database}.{scope.table} does not exist")])
        expr = None
        if scope.partition_filter:
            try:
                expr = parse_filter(scope.partition_filter, self.backend.partition_key_types(table))
            except FilterError as exc:
                raise RelocationRefused([Refusal("invalid-filter", str(exc))]) from None
        return [database], table, expr

    def _objects(self, scope: Scope, databases: list[Any], table: Any | None,
                 expr: Expr | None) -> Iterator[tuple[ObjectRef, Any, TableInfo | None]]:
        """Every object in scope, with the table it belongs to (for refusals), in write order."""
        for raw_db in databases:
            db = self.backend.database_info(raw_db).name
            if scope.table is None:
                yield ObjectRef(DATABASE, db), raw_db, None
                for raw_fn in self.backend.get_functions(db):
                    yield ObjectRef(FUNCTION, db, self.backend.function_name(raw_fn)), raw_fn, None
            for raw_table in [table] if table is not None else self.backend.get_tables(db):
                info = self.backend.table_info(db, raw_table)
                if scope.partition_filter is None:
                    yield ObjectRef(TABLE, db, info.name), raw_table, info
                if info.partition_keys:
                    for raw in self._partitions(db, raw_table, expr):
                        values = self.backend.partition_info(db, info.name, raw).values
                        yield ObjectRef(PARTITION, db, info.name, values), raw, info

    def _plan(self, request: RelocationRequest, old: LocationPrefix, new: LocationPrefix) -> _Planned:
        databases, table, expr = self._check_scope(request.scope)
        report = RelocationReport("", self.name, request.old_prefix, request.new_prefix, request.dry_run)
        rows: list[dict] = []
        refused: dict[str, Refusal] = {}
        batch_size = request.chunk_size or self.backend.batch_size  # partitions re-read and written together
        chunk, batch_table, batch_count = -1, None, 0
        expected = None if request.expected_locations is None else frozenset(request.expected_locations)
        for ref, raw, info in self._objects(request.scope, databases, table, expr):
            changes = []
            for slot, value in read_slots(self.backend.places[ref.type], raw).items():
                moved = rebase(value, old, new)
                if moved is None or (expected is not None and value not in expected):
                    continue
                if slot.kind in PARAM_KINDS and slot.key not in request.param_keys:
                    report.count(slot.kind).skipped += 1
                    continue
                changes.append((slot, value, moved))
            if not changes:
                continue
            reason = refusal_reason(info, request.force_acid) if info is not None else None
            if reason is not None:
                refused.setdefault(info.qualified_name, unsafe_table_refusal(info.qualified_name, reason))
                for slot, _, _ in changes:
                    report.count(slot.kind).refused += 1
                continue
            # One chunk per write: a database, table or function alone; up to batch_size partitions of a table.
            if ref.type != PARTITION or batch_table != ref.table or batch_count >= batch_size:
                chunk, batch_count = chunk + 1, 0
            batch_table = ref.table if ref.type == PARTITION else None
            batch_count += 1
            for slot, value, moved in changes:
                rows.append({"kind": slot.kind.value, "key1": len(rows), "key2": slot.key, "object": ref.to_json(),
                             "chunk": chunk, "old_value": value, "new_value": moved, "state": PLANNED})
                if request.dry_run:
                    report.count(slot.kind).rewritten += 1
                    report.add_sample(value, moved)
        report.refusals = list(refused.values())
        if report.refusals and not request.skip_refused:
            raise RelocationRefused(report.refusals)
        if request.dry_run:
            report.tables_touched = sorted({ObjectRef.from_json(r["object"]).table for r in rows} - {None})
        return _Planned(rows, report)

    # --- running ------------------------------------------------------------------------------------

    # --- the hooks of catalog.run ------------------------------------------------------------------

    def _ensure_journal(self) -> None:
        try:
            self.journal.ensure(locks=True)
        except sa.exc.OperationalError as exc:  # e.g. a journal database that does not exist: a refusal, said once
            raise JournalUnavailable(f"the relocation journal's database cannot be used: {first_line(exc.orig)}; "
                                     "create it (or fix the journal URL) and grant the journal's user rights there"
                                     ) from None

    @contextmanager
    def _run_lock(self) -> Iterator[None]:
        if not self.journal.acquire_lock(self.name, LOCK_TTL_SECONDS):
            raise RelocationRefused([Refusal("locked", f"another hivecat run holds catalog {self.name}")])
        try:
            yield
        finally:
            self.journal.release_lock(self.name)

    def _dry_run(self, request: RelocationRequest, old: LocationPrefix, new: LocationPrefix) -> RelocationReport:
        return self._plan(request, old, new).report  # reads only: no journal, no lock

    def _execute(self, request: RelocationRequest, old: LocationPrefix, new: LocationPrefix,
                 progress: ChunkProgress | None, confirm: Confirmation) -> RelocationReport:
        with self.engine.connect() as conn:
            resumed = self.journal.resumable_run(conn, self.name, request)
        if resumed is not None:  # planned before the crash: apply what is left
            run_id = resumed
            report = self._planned_report(run_id, request)
        else:
            planned = self._plan(request, old, new)
            report = planned.report
            with self.engine.begin() as conn:
                run_id = self.journal.new_run(conn, self.name, request)
                self.journal.add_entries(conn, run_id, planned.rows)
                # What only planning knows (skipped, refused), for the report of a resumed run.
                self.journal.set_status(conn, run_id, RUNNING, report.to_dict())
        self._apply(run_id, report, undo=False, progress=progress)
        self._finish(report, run_id, APPLIED, CONFLICTED, ENTRY_FAILED)
        return report

    def _planned_report(self, run_id: str, request: RelocationRequest) -> RelocationReport:
        """A resumed run's report, starting from the skipped and refused counts its planning recorded."""
        report = RelocationReport("", self.name, request.old_prefix, request.new_prefix, False)
        with self.engine.connect() as conn:
            saved = self.journal.run(conn, run_id).report
        planned = json.loads(saved) if saved else {}
        for kind, counts in planned.get("counts", {}).items():
            report.count(ObjectKind(kind)).skipped = counts["skipped"]
            report.count(ObjectKind(kind)).refused = counts["refused"]
        report.refusals = [Refusal(**refusal) for refusal in planned.get("refusals", [])]
        return report

    def _undo_run(self, run_id: str, report: RelocationReport) -> None:
        with self.engine.begin() as conn:
            self.journal.set_status(conn, run_id, UNDOING)
        self._apply(run_id, report, undo=True)
        self._finish(report, run_id, UNDONE, UNDO_CONFLICTED, UNDO_FAILED)

    def _apply(self, run_id: str, report: RelocationReport, *, undo: bool,
               progress: ChunkProgress | None = None) -> None:
        """Write the run's pending chunks, up to backend.parallelism of them at once.

        Workers only re-read, compare and write (`_swap`); the journal is read and written here, on the
        calling thread, as each chunk ends. A worker's error stops new chunks; those still running end and
        are recorded before it is raised, and whatever was written but not recorded, a rerun finds done.
        """
        # Undo also looks at planned entries: a crash between a write and its journal update leaves them so.
        states = (APPLIED, UNDO_FAILED, PLANNED) if undo else (PLANNED,)
        with self.engine.connect() as conn:
            chunks = self.journal.pending_chunks(conn, run_id, states)
        recorded = 0

        def entries(chunk: int) -> list[Entry]:
            with self.engine.connect() as conn:
                return self.journal.chunk_entries(conn, run_id, chunk, states)

        def record(outcome: _ChunkOutcome) -> None:
            nonlocal recorded
            with self.engine.begin() as conn:
                self.journal.set_states(conn, run_id, outcome.states)
            for error in outcome.errors:
                report.add_error(error)
            self.journal.renew_lock(self.name, LOCK_TTL_SECONDS)
            recorded += 1
            if progress:
                progress(recorded, len(chunks))

        run_bounded(chunks, entries, lambda rows: self._swap(rows, undo=undo), record, self.backend.parallelism)

    def _reread(self, refs: list[ObjectRef]) -> dict[ObjectRef, Any]:
        """The chunk's objects as they are now (absent: gone)."""
        if refs[0].type == PARTITION:
            found = self.backend.reread_partitions(refs[0].database, refs[0].name, [r.values for r in refs])
            return {r: found[r.values] for r in refs if r.values in found}
        read = {DATABASE: lambda r: self.backend.get_database(r.database),
                TABLE: lambda r: self.backend.get_table(r.database, r.name),
                FUNCTION: lambda r: self.backend.get_function(r.database, r.name)}
        return {r: raw for r in refs if (raw := read[r.type](r)) is not None}

    def _swap(self, rows: Sequence[Entry], *, undo: bool) -> _ChunkOutcome:
        """Write one chunk: each entry's value moves only where the object still holds the expected one.

        Forward expects old and writes new; undo expects new and writes old. Runs on a worker thread: it
        touches neither the journal nor the report, it returns what they need.
        """
        done, conflict, failed = (UNDONE, UNDO_CONFLICTED, UNDO_FAILED) if undo else (APPLIED, CONFLICTED, ENTRY_FAILED)
        by_ref: dict[ObjectRef, list[Entry]] = {}
        for row in rows:
            by_ref.setdefault(ObjectRef.from_json(row.object), []).append(row)
        current = self._reread(list(by_ref))
        states: dict[int, str] = {}
        errors: list[str] = []
        writes: list[tuple[ObjectRef, Any, Any, list[int]]] = []
        for ref, entries in by_ref.items():
            raw = current.get(ref)
            slots = read_slots(self.backend.places[ref.type], raw) if raw is not None else {}
            changes: dict[Slot, str] = {}
            pending: list[int] = []
            for row in entries:
                expect, write = (row.new_value, row.old_value) if undo else (row.old_value, row.new_value)
                value = slots.get(Slot(ObjectKind(row.kind), row.key2))
                if raw is not None and value == expect:
                    changes[Slot(ObjectKind(row.kind), row.key2)] = write
                    pending.append(row.key1)
                elif undo and row.state == PLANNED:
                    continue  # never written by this run: nothing to restore
                elif raw is not None and value == write:
                    states[row.key1] = done  # an earlier attempt of this run wrote it
                else:
                    states[row.key1] = conflict
                    errors.append(f"{ref.to_json()} {row.kind} {row.key2}: changed meanwhile "
                                  f"(expected {expect!r}, found {value!r})")
            if changes:
                writes.append((ref, with_slots(self.backend.places[ref.type], raw, changes), raw, pending))
        rejected = self._write(writes)
        errors += [f"{ref.to_json()}: {rejection}" for ref, rejection in rejected.items()]
        for ref, _, _, pending in writes:
            rejection = rejected.get(ref)
            state = done if rejection is None else conflict if rejection.conflict else failed
            states.update({key1: state for key1 in pending})
        return _ChunkOutcome(states, errors)

    def _write(self, writes: list[tuple[ObjectRef, Any, Any, list[int]]]) -> dict[ObjectRef, WriteRejected]:
        rejected: dict[ObjectRef, WriteRejected] = {}
        partitions = [(ref, new) for ref, new, _, _ in writes if ref.type == PARTITION]
        if partitions:
            first = partitions[0][0]
            by_values = self.backend.write_partitions(first.database, first.name, [new for _, new in partitions])
            rejected.update({ref: by_values[ref.values] for ref, _ in partitions if ref.values in by_values})
        for ref, new, old, _ in writes:
            if ref.type != PARTITION:
                try:
                    self.backend.write(ref, new, old)
                except WriteRejected as exc:
                    rejected[ref] = exc
        return rejected

    def _finish(self, report: RelocationReport, run_id: str, done: str, conflict: str, failed: str) -> None:
        report.run_id = run_id
        with self.engine.connect() as conn:
            self.journal.tally(conn, run_id, report, done, conflict, failed)
            tables = {ObjectRef.from_json(text).table for text in self.journal.objects(conn, run_id, done)}
        report.tables_touched = sorted(tables - {None})
        if report.failed:
            report.status = "partial"
