"""A Hive catalog read and written directly in its HMS database (MySQL/MariaDB or PostgreSQL).

The steps of a run (validate, lock, plan or resume, apply, record) are catalog.run's; this module holds the
SQL run modes: one transaction (with a faster locked path on MySQL/MariaDB), or chunks that commit one by
one and resume after a crash. Reads, parameters, refusals and the run lock live beside it (reads.py,
params.py, refusals.py, locks.py).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import AbstractContextManager, contextmanager

import sqlalchemy as sa

from hivecat.catalog.engines import sql_engine
from hivecat.catalog.journal import (
    APPLIED, CONFLICTED, PLANNED, UNDO_CONFLICTED, UNDONE, UNDOING, Journal, JournalUnavailable, state_code,
)
from hivecat.catalog.model import (
    EVENTS_AUTO, EVENTS_NOT_WRITABLE, ObjectKind, Refusal, RelocationRefused, RelocationReport, RelocationRequest,
)
from hivecat.catalog.run import ChunkProgress, Confirmation, JournaledRelocation
from hivecat.catalog.sql.blocks import unpack
from hivecat.catalog.sql.locks import run_lock
from hivecat.catalog.sql.notifications import EventLog, event_log, publish
from hivecat.catalog.sql.params import SqlParams
from hivecat.catalog.sql.refusals import SqlRefusals
from hivecat.catalog.sql.relocation import (
    Moves, RelocationPlan, changes, count_in_scope, one_target_per_kind, packable, params_under, rewrite_matching,
    rewrite_planned, sample_in_scope, swap, swap_applied, tables_in_scope, unrestricted, write_plan,
)
from hivecat.catalog.sql.schema import HmsSchema, detect_schema
from hivecat.catalog.sql.targets import Target, build_targets
from hivecat.locations.prefix import LocationPrefix, parse_prefix


JOURNAL_NAME = re.compile(r"[A-Za-z0-9_]{1,64}")  # pasted into DDL: never anything that needs quoting


def _permission_denied(error: BaseException | None) -> bool:
    """A driver error that means "not allowed" (MySQL 1044/1142/1143, PostgreSQL SQLSTATE 42501)."""
    if error is None:
        return False
    code = error.args[0] if error.args and isinstance(error.args[0], int) else None
    return code in (1044, 1142, 1143) or getattr(error, "sqlstate", None) == "42501"


def catalog_id(url: sa.URL) -> str:
    """Names the catalog in journals and locks; never holds credentials."""
    backend = "postgresql" if url.get_backend_name() == "postgresql" else "mysql"
    return f"{backend}://{url.host or 'localhost'}:{url.port or ''}/{url.database}"


class _Events:
    """A run's notification events: whether it logs them, and how many it logged."""

    def __init__(self, log: EventLog) -> None:
        self.log, self.written = log, 0

    def report(self, report: RelocationReport) -> None:
        report.notification_events += self.written
        if self.log.note and self.log.note not in report.notes:
            report.notes.append(self.log.note)


class SqlCatalog(SqlParams, SqlRefusals, JournaledRelocation):
    def __init__(self, url: str | sa.URL, *, journal_schema: str = "hivecat", hive_catalog: str = "hive",
                 hms_schema: str | None = None, engine: sa.Engine | None = None,
                 notification_events: str = EVENTS_AUTO):
        self.url = sa.make_url(url)
        self.notification_events = notification_events
        self.engine = engine or sql_engine(self.url, pool_pre_ping=True)
        self.hive_catalog = hive_catalog
        if not JOURNAL_NAME.fullmatch(journal_schema):
            raise ValueError(f"the journal database or schema name must be 1-64 letters, digits and _, not "
                             f"{journal_schema[:80]!r}")
        if journal_schema == (self.url.database or "") and self.engine.dialect.name != "postgresql":
            raise ValueError(f"the relocation journal needs a database of its own beside the metastore's, not "
                             f"the metastore database {journal_schema} itself (HMS schema tools own every table "
                             "there)")
        with self.engine.connect() as conn:
            self.schema: HmsSchema = detect_schema(conn, hms_schema)
        if not self.schema.has_catalogs and hive_catalog != "hive":
            raise ValueError(f"this metastore schema has no catalogs (before Hive 3): only 'hive' exists, "
                             f"not {hive_catalog!r}")
        # Journal runs, resume and the run lock belong to one HMS catalog: a run of another must not resume here.
        self.name = catalog_id(self.url) + (f"#{hive_catalog}" if self.schema.has_catalogs else "")
        self.targets = build_targets(self.schema)
        self.journal = Journal(self.engine, journal_schema)

    def close(self) -> None:
        self.engine.dispose()

    # --- the hooks of catalog.run ---------------------------------------------------------------

    def _ensure_journal(self) -> None:
        """The journal's database (MySQL) or schema (PostgreSQL) and tables, created when the user may;
        otherwise JournalUnavailable says what an administrator runs once."""
        mysql = self.engine.dialect.name != "postgresql"
        charset = "latin1"  # what HMS databases on MySQL use; read from the server below
        try:
            with self.engine.begin() as conn:
                # Same charset as the metastore, so byte-exact compare-and-set compares like with like.
                charset = conn.execute(sa.text(
                    "SELECT DEFAULT_CHARACTER_SET_NAME FROM information_schema.SCHEMATA WHERE SCHEMA_NAME = DATABASE()"
                )).scalar_one() if mysql else ""
                if mysql and self.journal.schema not in sa.inspect(conn).get_schema_names():
                    conn.execute(sa.text(f"CREATE DATABASE `{self.journal.schema}` "
                                         f"CHARACTER SET {charset} COLLATE {charset}_bin"))
            self.journal.ensure()
            self.journal.check_writable()
        except sa.exc.DBAPIError as exc:
            if not _permission_denied(exc.orig):
                raise
            raise JournalUnavailable(self._journal_grants(charset)) from None

    def _journal_grants(self, charset: str) -> str:
        user, schema = self.url.username or "CURRENT_USER", self.journal.schema
        if self.engine.dialect.name == "postgresql":
            return (f'{user} may not create or write the relocation journal, schema "{schema}" of database '
                    f"{self.url.database}. An administrator runs once, in that database: "
                    f'CREATE SCHEMA IF NOT EXISTS "{schema}" AUTHORIZATION "{user}"; '
                    "or names another journal schema the user owns")
        return (f"{user} may not create or write the relocation journal, database `{schema}` beside the "
                f"metastore. An administrator runs once: CREATE DATABASE IF NOT EXISTS `{schema}` CHARACTER SET "
                f"{charset} COLLATE {charset}_bin; GRANT SELECT, INSERT, UPDATE, DELETE, CREATE, ALTER, INDEX "
                f"ON `{schema}`.* TO '{user}'@'%'; (with the user's own host) or names another journal database "
                "the user may write")

    def _run_lock(self) -> AbstractContextManager[None]:
        return run_lock(self.engine, self.name)

    def _check_request(self, request: RelocationRequest) -> None:
        self._refuse_unstorable(request.new_prefix)

    def _prepare(self, conn: sa.Connection, request: RelocationRequest, old: LocationPrefix,
                 new: LocationPrefix) -> tuple[RelocationPlan, RelocationReport]:
        """The plan in scope without refused tables, and a report counting what is refused and skipped."""
        scope = self._scope_filter(conn, request.scope)
        plan = RelocationPlan(self.targets, scope, old, new, tuple(request.param_keys),
                              chunk_size=request.chunk_size, expected=request.expected_locations)
        unsafe = self._unsafe_tables(conn, scope, request.force_acid)
        refusals = self._refusals(conn, plan, unsafe) if unsafe else []
        if refusals and not request.skip_refused:
            raise RelocationRefused(refusals)
        refused_ids = tuple(tbl_id for tbl_id, (q, _) in unsafe.items() if q in {r.table for r in refusals})
        report = RelocationReport("", self.name, request.old_prefix, request.new_prefix, request.dry_run,
                                  refusals=refusals)
        if refused_ids:
            only_refused = RelocationPlan(plan.targets, scope, old, new, plan.param_keys, only_tables=refused_ids,
                                          expected=plan.expected)
            for kind, (n, _) in count_in_scope(conn, self.schema, only_refused).items():
                report.count(kind).refused += n
        plan = RelocationPlan(plan.targets, scope, old, new, plan.param_keys, refused_ids, request.chunk_size,
                              expected=plan.expected)
        if request.dry_run:  # a real run checks its journaled plan instead (_plan), and counts after it
            self._refuse_too_long(conn, plan)
            self._count(conn, plan, report, rewrites=True)
        return plan, report

    def _count(self, conn: sa.Connection, plan: RelocationPlan, report: RelocationReport, rewrites: bool) -> None:
        """Add to `report` the rows in scope left alone (unnamed parameter keys) and, for rewrites, those the
        plan rewrites."""
        for kind, (n, skipped) in count_in_scope(conn, self.schema, plan, rewrites=rewrites).items():
            report.count(kind).skipped += skipped
            report.count(kind).rewritten += n

    def _scan_params(self, plan: RelocationPlan) -> None:
        """Whether each parameter table holds values under the old prefix (params_under), on a connection
        of its own."""
        with self.engine.connect() as conn:
            for target in plan.targets:
                if target.param_keyed:
                    params_under(conn, target, plan)

    def _dry_run(self, request: RelocationRequest, old: LocationPrefix, new: LocationPrefix) -> RelocationReport:
        with self._run_lock(), self.engine.connect() as conn:
            plan, report = self._prepare(conn, request, old, new)
            report.sample = sample_in_scope(conn, self.schema, plan, report.SAMPLE_SIZE)
            report.tables_touched = tables_in_scope(conn, self.schema, plan)
        return report

    def _execute(self, request: RelocationRequest, old: LocationPrefix, new: LocationPrefix,
                 progress: ChunkProgress | None, confirm: Confirmation) -> RelocationReport:
        with self.engine.connect() as conn:
            plan, report = self._prepare(conn, request, old, new)
        # The parameter tables are scanned (a second per million rows each) on a second connection while the
        # run plans its storage descriptors: the plan waits for a table's answer only when it reaches it.
        events = self._events()
        with ThreadPoolExecutor(1, thread_name_prefix="hivecat-params") as pool:
            pool.submit(self._scan_params, plan)
            run_id, applied = self._run(request, plan, progress, confirm, events)
        with self.engine.connect() as conn:  # rows left alone stay under the old prefix: counted after
            self._count(conn, plan, report, rewrites=False)
        self._finish_report(report, run_id, APPLIED, CONFLICTED, applied)
        events.report(report)
        return report

    def _events(self) -> _Events:
        with self.engine.connect() as conn:
            return _Events(event_log(conn, self.schema, self.notification_events))

    def _log_events(self, conn: sa.Connection, events: _Events, run_id: str, state: str, moves: RelocationPlan | Moves,
                    *, undo: bool = False, kind: ObjectKind | None = None, chunk: tuple[int, int] | None = None) -> None:
        """Log the transaction's changes (its entries in `state`, of `kind` and `chunk`, and its staged packed
        rows) as notification events, last before the commit: they hold the listener's lock until then."""
        if not events.log.write:
            return
        def changed(kinds: Iterable[ObjectKind]) -> sa.Subquery:
            return changes(conn, self.journal, run_id, state, moves, [k for k in kinds if kind in (None, k)],
                           undo=undo, chunk=chunk)

        try:
            events.written += publish(conn, self.engine, self.schema, changed,
                                      self.hive_catalog if self.schema.has_catalogs else None, events.log.format)
        except sa.exc.DBAPIError as exc:  # the transaction rolls back: nothing of the run is committed
            if not _permission_denied(exc.orig):
                raise
            user = self.url.username or "this user"
            raise RelocationRefused([Refusal(EVENTS_NOT_WRITABLE, (
                f"{user} may not log the metastore's notification events: it needs SELECT, INSERT and UPDATE on "
                "NOTIFICATION_LOG, NOTIFICATION_SEQUENCE and SEQUENCE_TABLE (what the metastore's own user has); "
                "nothing was changed"), option="notification_events")]) from None
        t = self.journal.touched
        conn.execute(sa.delete(t).where(t.c.run_no == self.journal.run_no(conn, run_id)))

    def _undo_run(self, run_id: str, report: RelocationReport) -> None:
        events = self._events()
        with self.engine.begin() as conn:  # all or nothing
            run = self.journal.run(conn, run_id)
            moves = Moves(parse_prefix(run.old_prefix), parse_prefix(run.new_prefix))
            self.journal.set_status(conn, run_id, UNDOING)
            unpacked = unpack(conn, self.journal, run_id, UNDONE)  # undo compares and sets entry by entry
            for kind, target in one_target_per_kind(self.targets).items():
                if unpacked.get(kind):  # a packed kind has no other entries
                    swap_applied(conn, self.journal, target, run_id, unpacked[kind], moves, undo=True)
                else:
                    swap(conn, self.journal, target, run_id, None, moves, undo=True)
            self._log_events(conn, events, run_id, UNDONE, moves, undo=True)
        self._finish_report(report, run_id, UNDONE, UNDO_CONFLICTED)
        events.report(report)

    # --- run modes -------------------------------------------------------------------------------

    @contextmanager
    def _transaction(self) -> Iterator[sa.Connection]:
        """One transaction, at REPEATABLE READ on MySQL/MariaDB whatever the server's default: there a
        plan's INSERT ... SELECT takes shared locks on the rows it reads, held until commit."""
        with self.engine.connect() as conn:
            if self.engine.dialect.name != "postgresql":
                conn = conn.execution_options(isolation_level="REPEATABLE READ")
            with conn.begin():
                yield conn

    def _plan(self, conn: sa.Connection, request: RelocationRequest, plan: RelocationPlan,
              state: str = PLANNED, packed: frozenset[ObjectKind] = frozenset(),
              stage_packed: bool = False) -> tuple[str, dict[ObjectKind, int]]:
        """A new run with its plan journaled (kinds in `packed` as blocks, staged for events too when asked),
        refused (rolled back with the caller's transaction) when a new value would not fit its column."""
        run_id = self.journal.new_run(conn, self.name, request)
        planned = write_plan(conn, self.schema, self.journal, run_id, plan, state, packed, stage_packed)
        self._refuse_too_long(conn, plan, run_id)
        return run_id, planned

    def _run(self, request: RelocationRequest, plan: RelocationPlan, progress: ChunkProgress | None,
             confirm: Confirmation, events: _Events) -> tuple[str, dict[ObjectKind, int] | None]:
        """Plan and apply; resume the catalog's unfinished run when it is this same request. A run in one
        transaction asks `confirm` before it commits (chunks commit one by one: the skeleton asks after).

        Returns the run id and, when every planned entry is known to be applied, their counts per kind.
        """
        by_kind = one_target_per_kind(self.targets)
        with self.engine.connect() as conn:
            resumed = self.journal.resumable_run(conn, self.name, request)
        if resumed is not None:
            run_id = resumed
        elif plan.chunk_size is None and self.engine.dialect.name != "postgresql":
            return self._run_locked(request, plan, confirm, events)
        elif plan.chunk_size is None:
            with self._transaction() as conn:  # plan and apply in one transaction: all or nothing
                run_id, planned = self._plan(conn, request, plan, APPLIED)
                for kind, n in planned.items():
                    if n:
                        swap_applied(conn, self.journal, by_kind[kind], run_id, n, plan)
                confirm()  # raising rolls everything back
                self._log_events(conn, events, run_id, APPLIED, plan)
            return run_id, None
        else:
            with self._transaction() as conn:
                run_id, _ = self._plan(conn, request, plan)
        size = plan.chunk_size or 1 << 62  # a run without one commits whole: it is never found unfinished
        with self.engine.connect() as conn:
            chunks = self.journal.key_chunks(conn, run_id, PLANNED, size)
        for done, (kind, chunk) in enumerate(chunks, 1):
            with self.engine.begin() as conn:  # each chunk commits with its journal entries and its events
                swap(conn, self.journal, by_kind[kind], run_id, (chunk, size), plan)
                self._log_events(conn, events, run_id, APPLIED, plan, kind=kind, chunk=(chunk, size))
            if progress:
                progress(done, len(chunks))
        return run_id, None

    def _run_locked(self, request: RelocationRequest, plan: RelocationPlan,
                    confirm: Confirmation, events: _Events) -> tuple[str, dict[ObjectKind, int]]:
        """MySQL/MariaDB, one transaction: the plan's shared locks keep every planned row at its planned
        value until commit, so each column is rewritten by a single-table UPDATE (of everything under the old
        prefix when the plan is unrestricted, else of each kind's planned keys; no compare-and-set join) and
        journaled as applied up front. Any count that differs from the plan rolls back everything, the plan
        included."""
        by_kind = one_target_per_kind(self.targets)
        packed = packable(plan) if self.journal.can_pack() else frozenset()
        with self._transaction() as conn:
            run_id, planned = self._plan(conn, request, plan, APPLIED, packed, stage_packed=events.log.write)
            applied = {kind: n for kind, n in planned.items() if n}
            done = self._rewrite_columns(conn, plan, applied, by_kind)
            if packed & (set(applied) - set(done)):
                unpack(conn, self.journal, run_id)  # rewrite_planned reads planned keys from entries
            for kind, n in applied.items():
                if kind in done:
                    continue
                rewritten = rewrite_planned(conn, self.journal, by_kind[kind], run_id, plan, n)
                if rewritten != n:  # raising rolls the transaction back
                    raise RelocationRefused([Refusal("changed-during-run", (
                        f"{kind.value}: {rewritten} rows held their planned value, {n} were planned; the run "
                        f"was rolled back and changed nothing: rerun it"))])
            confirm()  # raising rolls everything back
            self._log_events(conn, events, run_id, APPLIED, plan)
        return run_id, applied

    def _rewrite_columns(self, conn: sa.Connection, plan: RelocationPlan, planned: dict[ObjectKind, int],
                         by_kind: dict[ObjectKind, Target]) -> list[ObjectKind]:
        """The kinds rewritten by one UPDATE per column (rewrite_matching), when the plan is unrestricted:
        e.g. tables' and partitions' SDS.LOCATION together, as the bare UPDATE does."""
        if not unrestricted(plan):
            return []
        columns: dict[tuple[str, str], list[ObjectKind]] = {}
        for kind in planned:
            target = by_kind[kind]
            if not target.param_keyed:  # parameters: only caller-named keys, never a whole column
                columns.setdefault((target.base.name, target.value), []).append(kind)
        done: list[ObjectKind] = []
        for kinds in columns.values():
            if rewrite_matching(conn, by_kind[kinds[0]], plan, sum(planned[k] for k in kinds)):
                done += kinds
        return done

    def _finish_report(self, report: RelocationReport, run_id: str, done_state: str, conflict_state: str,
                       done: dict[ObjectKind, int] | None = None) -> None:
        """`done`: the entries per kind, when all are known to be in done_state (spares counting them)."""
        report.run_id = run_id
        with self.engine.connect() as conn:
            known = None if done is None else {(kind.value, done_state): n for kind, n in done.items()}
            self.journal.tally(conn, run_id, report, done_state, conflict_state, counts=known)
            report.tables_touched = self._tables_touched(conn, run_id, done_state)

    def _tables_touched(self, conn: sa.Connection, run_id: str, state: str) -> list[str]:
        e, b, t, d = self.journal.entries, self.journal.blocks, self.schema["TBLS"], self.schema["DBS"]
        run_no = self.journal.run_no(conn, run_id)
        selects = [sa.select(e.c.tbl_id.label("tbl_id")).where(e.c.run_no == run_no, e.c.state == state_code(state))]
        if state == APPLIED:  # blocks hold applied entries only
            selects.append(sa.select(b.c.tbl_id).where(b.c.run_no == run_no))
        ids = sa.union(*selects).subquery()
        rows = conn.execute(sa.select(d.c.NAME, t.c.TBL_NAME).distinct()
                            .select_from(ids.join(t, t.c.TBL_ID == ids.c.tbl_id).join(d, d.c.DB_ID == t.c.DB_ID))
                            .order_by(d.c.NAME, t.c.TBL_NAME))
        return [f"{db}.{name}" for db, name in rows]

