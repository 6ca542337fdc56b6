"""A Hive catalog read and written directly in its HMS database (MySQL/MariaDB or PostgreSQL)."""

from __future__ import annotations

import hashlib
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager

import sqlalchemy as sa

from hivecat.catalog.journal import (
    APPLIED, CONFLICTED, DONE, PLANNED, RUN_UNDONE, UNDO_CONFLICTED, UNDONE, UNDOING, Journal,
)
from hivecat.catalog.model import (
    DatabaseInfo, ObjectKind, PartitionInfo, Refusal, RelocationRefused, RelocationReport, RelocationRequest,
    RunSummary, Scope, TableInfo,
)
from hivecat.catalog.sql.relocation import (
    Plan, Progress, count_in_scope, one_target_per_kind, rewrite_planned, sample_in_scope, swap, tables_in_scope,
    too_long, too_long_planned, write_plan,
)
from hivecat.catalog.sql.charsets import mysql_charsets, postgresql_charsets, unstorable
from hivecat.catalog.sql.schema import HmsSchema, detect_schema
from hivecat.catalog.sql.targets import ScopeFilter, build_targets
from hivecat.locations.partition_filter import FilterError, parse_filter, to_sql
from hivecat.locations.prefix import InvalidLocation, check_relocation


def catalog_id(url: sa.URL) -> str:
    """Names the catalog in journals and locks; never holds credentials."""
    backend = "postgresql" if url.get_backend_name() == "postgresql" else "mysql"
    return f"{backend}://{url.host or 'localhost'}:{url.port or ''}/{url.database}"


class SqlCatalog:
    def __init__(self, url: str | sa.URL, *, journal_schema: str = "hivecat", hive_catalog: str = "hive",
                 hms_schema: str | None = None, engine: sa.Engine | None = None):
        self.url = sa.make_url(url)
        self.engine = engine or sa.create_engine(self.url, pool_pre_ping=True)
        self.hive_catalog = hive_catalog
        if journal_schema == (self.url.database or "") and self.engine.dialect.name != "postgresql":
            raise ValueError("the journal must not live inside the HMS database")
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

    # --- reading --------------------------------------------------------------------------------

    def _dbs_in_catalog(self, dbs: sa.FromClause) -> list[sa.ColumnElement[bool]]:
        return [dbs.c.CTLG_NAME == self.hive_catalog] if self.schema.has_catalogs else []

    def list_databases(self) -> Iterator[DatabaseInfo]:
        d = self.schema["DBS"]
        managed = d.c.DB_MANAGED_LOCATION_URI if self.schema.has_managed_location else sa.null()
        with self.engine.connect() as conn:
            rows = conn.execute(sa.select(d.c.NAME, d.c.DB_LOCATION_URI, managed)
                                .where(*self._dbs_in_catalog(d)).order_by(d.c.NAME)).all()
        for name, location, managed_location in rows:
            yield DatabaseInfo(name, location, managed_location)

    def _table_id(self, conn: sa.Connection, database: str, table: str) -> int | None:
        t, d = self.schema["TBLS"], self.schema["DBS"]
        return conn.execute(sa.select(t.c.TBL_ID).join(d, d.c.DB_ID == t.c.DB_ID).where(
            d.c.NAME == database, t.c.TBL_NAME == table, *self._dbs_in_catalog(d))).scalar()

    def _partition_keys(self, conn: sa.Connection, tbl_id: int) -> list[tuple[str, str]]:
        k = self.schema["PARTITION_KEYS"]
        return [(r[0], r[1]) for r in conn.execute(
            sa.select(k.c.PKEY_NAME, k.c.PKEY_TYPE).where(k.c.TBL_ID == tbl_id).order_by(k.c.INTEGER_IDX))]

    def list_tables(self, database: str) -> Iterator[TableInfo]:
        s = self.schema
        t, d, sd = s["TBLS"], s["DBS"], s["SDS"]
        tp, sp = s["TABLE_PARAMS"], s["SERDE_PARAMS"]
        with self.engine.connect() as conn:
            rows = conn.execute(
                sa.select(t.c.TBL_ID, t.c.TBL_NAME, t.c.TBL_TYPE, sd.c.LOCATION, sd.c.SERDE_ID)
                .join(d, d.c.DB_ID == t.c.DB_ID).outerjoin(sd, sd.c.SD_ID == t.c.SD_ID)
                .where(d.c.NAME == database, *self._dbs_in_catalog(d)).order_by(t.c.TBL_NAME)).all()
            ids, serdes = [r.TBL_ID for r in rows], [r.SERDE_ID for r in rows if r.SERDE_ID is not None]
            params: dict[int, dict[str, str]] = {}
            for tbl_id, key, value in conn.execute(sa.select(tp.c.TBL_ID, tp.c.PARAM_KEY, tp.c.PARAM_VALUE)
                                                   .where(tp.c.TBL_ID.in_(ids))):
                params.setdefault(tbl_id, {})[key] = value
            serde_params: dict[int, dict[str, str]] = {}
            for serde_id, key, value in conn.execute(sa.select(sp.c.SERDE_ID, sp.c.PARAM_KEY, sp.c.PARAM_VALUE)
                                                     .where(sp.c.SERDE_ID.in_(serdes))):
                serde_params.setdefault(serde_id, {})[key] = value
            keys = {r.TBL_ID: tuple(name for name, _ in self._partition_keys(conn, r.TBL_ID)) for r in rows}
        for r in rows:
            yield TableInfo(database, r.TBL_NAME, r.LOCATION, r.TBL_TYPE, keys[r.TBL_ID],
                            params.get(r.TBL_ID, {}), serde_params.get(r.SERDE_ID, {}))

    def _partition_predicate(self, conn: sa.Connection, tbl_id: int, text: str):
        """The SQL form of an HMS partition filter, for a PARTITIONS alias."""
        key_list = self._partition_keys(conn, tbl_id)
        expr = parse_filter(text, {name: type_ for name, type_ in key_list})
        index = {name.lower(): i for i, (name, _) in enumerate(key_list)}
        kv = self.schema["PARTITION_KEY_VALS"]

        def predicate(p: sa.FromClause) -> sa.ColumnElement[bool]:
            def value_of(key: str) -> sa.ColumnElement:
                v = kv.alias()
                return (sa.select(v.c.PART_KEY_VAL)
                        .where(v.c.PART_ID == p.c.PART_ID, v.c.INTEGER_IDX == index[key.lower()])
                        .scalar_subquery())
            return to_sql(expr, value_of)
        return predicate

    def list_partitions(self, database: str, table: str, partition_filter: str | None = None) -> Iterator[PartitionInfo]:
        s = self.schema
        p, sd, kv, pp = s["PARTITIONS"].alias("p"), s["SDS"], s["PARTITION_KEY_VALS"], s["PARTITION_PARAMS"]
        with self.engine.connect() as conn:
            tbl_id = self._table_id(conn, database, table)
            if tbl_id is None:
                raise LookupError(f"table {database}.{table} does not exist")
            conds = [p.c.TBL_ID == tbl_id]
            if partition_filter:
                conds.append(self._partition_predicate(conn, tbl_id, partition_filter)(p))
            rows = conn.execute(sa.select(p.c.PART_ID, sd.c.LOCATION).outerjoin(sd, sd.c.SD_ID == p.c.SD_ID)
                                .where(*conds).order_by(p.c.PART_NAME)).all()
            ids = [r.PART_ID for r in rows]
            values: dict[int, list[str]] = {}
            for part_id, value in conn.execute(sa.select(kv.c.PART_ID, kv.c.PART_KEY_VAL)
                                               .where(kv.c.PART_ID.in_(ids)).order_by(kv.c.PART_ID, kv.c.INTEGER_IDX)):
                values.setdefault(part_id, []).append(value)
            params: dict[int, dict[str, str]] = {}
            for part_id, key, value in conn.execute(sa.select(pp.c.PART_ID, pp.c.PARAM_KEY, pp.c.PARAM_VALUE)
                                                    .where(pp.c.PART_ID.in_(ids))):
                params.setdefault(part_id, {})[key] = value
        for r in rows:
            yield PartitionInfo(database, table, tuple(values.get(r.PART_ID, ())), r.LOCATION,
                                params.get(r.PART_ID, {}))

    # --- parameters (replica bookkeeping) ------------------------------------------------------

    def _params_target(self, conn: sa.Connection, database: str, table: str,
                       partition_values: Sequence[str] | None) -> tuple[sa.Table, sa.Column, int]:
        tbl_id = self._table_id(conn, database, table)
        if tbl_id is None:
            raise LookupError(f"table {database}.{table} does not exist")
        if partition_values is None:
            tp = self.schema["TABLE_PARAMS"]
            return tp, tp.c.TBL_ID, tbl_id
        p, kv = self.schema["PARTITIONS"], self.schema["PARTITION_KEY_VALS"]
        select_ids = sa.select(p.c.PART_ID).where(p.c.TBL_ID == tbl_id)
        for i, value in enumerate(partition_values):
            select_ids = select_ids.where(sa.exists().where(kv.c.PART_ID == p.c.PART_ID, kv.c.INTEGER_IDX == i,
                                                            kv.c.PART_KEY_VAL == value))
        part_id = conn.execute(select_ids).scalar()
        if part_id is None:
            raise LookupError(f"partition {list(partition_values)} of {database}.{table} does not exist")
        pp = self.schema["PARTITION_PARAMS"]
        return pp, pp.c.PART_ID, part_id

    def set_params(self, database: str, table: str, params: Mapping[str, str],
                   partition_values: Sequence[str] | None = None) -> None:
        with self.engine.begin() as conn:
            target, owner, owner_id = self._params_target(conn, database, table, partition_values)
            conn.execute(target.delete().where(owner == owner_id, target.c.PARAM_KEY.in_(list(params))))
            if params:
                conn.execute(target.insert(), [{owner.name: owner_id, "PARAM_KEY": k, "PARAM_VALUE": v}
                                               for k, v in params.items()])

    def remove_params(self, database: str, table: str, keys: Sequence[str],
                      partition_values: Sequence[str] | None = None) -> None:
        with self.engine.begin() as conn:
            target, owner, owner_id = self._params_target(conn, database, table, partition_values)
            conn.execute(target.delete().where(owner == owner_id, target.c.PARAM_KEY.in_(list(keys))))

    # --- relocation -----------------------------------------------------------------------------

    def ensure_journal(self) -> None:
        if self.engine.dialect.name != "postgresql":
            # Same charset as the metastore, so byte-exact compare-and-set compares like with like.
            with self.engine.begin() as conn:
                charset = conn.execute(sa.text(
                    "SELECT DEFAULT_CHARACTER_SET_NAME FROM information_schema.SCHEMATA WHERE SCHEMA_NAME = DATABASE()"
                )).scalar_one()
                conn.execute(sa.text(f"CREATE DATABASE IF NOT EXISTS `{self.journal.schema}` "
                                     f"CHARACTER SET {charset} COLLATE {charset}_bin"))
        self.journal.ensure()

    @contextmanager
    def _lock(self) -> Iterator[None]:
        """One run per catalog: a server-side lock held on a connection of its own."""
        digest = hashlib.sha256(self.name.encode()).digest()
        with self.engine.connect() as conn:
            if self.engine.dialect.name == "postgresql":
                key = int.from_bytes(digest[:8], "big", signed=True)
                acquired = conn.execute(sa.text("SELECT pg_try_advisory_lock(:k)"), {"k": key}).scalar()
                release = sa.text("SELECT pg_advisory_unlock(:k)"), {"k": key}
            else:
                name = f"hivecat:{digest.hex()[:40]}"
                acquired = conn.execute(sa.text("SELECT GET_LOCK(:n, 0)"), {"n": name}).scalar() == 1
                release = sa.text("SELECT RELEASE_LOCK(:n)"), {"n": name}
            if not acquired:
                raise RelocationRefused([Refusal("locked", f"another hivecat run holds catalog {self.name}")])
            try:
                yield
            finally:
                conn.execute(*release)
                conn.commit()

    def _scope_filter(self, conn: sa.Connection, scope: Scope) -> ScopeFilter:
        predicate = None
        if self.schema.has_catalogs:
            c = self.schema["CTLGS"]
            if conn.execute(sa.select(c.c.CTLG_ID).where(c.c.NAME == self.hive_catalog)).first() is None:
                raise RelocationRefused([Refusal("not-found", f"catalog {self.hive_catalog} does not exist")])
        if scope.database is not None:
            d = self.schema["DBS"]
            exists = conn.execute(sa.select(d.c.DB_ID).where(d.c.NAME == scope.database,
                                                             *self._dbs_in_catalog(d))).first()
            if exists is None:
                raise RelocationRefused([Refusal("not-found", f"database {scope.database} does not exist")])
        if scope.table is not None:
            tbl_id = self._table_id(conn, scope.database, scope.table)
            if tbl_id is None:
                raise RelocationRefused([Refusal("not-found", f"table {scope.database}.{scope.table} does not exist")])
            if scope.partition_filter:
                try:
                    predicate = self._partition_predicate(conn, tbl_id, scope.partition_filter)
                except FilterError as exc:
                    raise RelocationRefused([Refusal("invalid-filter", str(exc))]) from None
        return ScopeFilter(scope.database, scope.table, predicate,
                           self.hive_catalog if self.schema.has_catalogs else None)

    def _unsafe_tables(self, conn: sa.Connection, scope: ScopeFilter, force_acid: bool) -> dict[int, tuple[str, str]]:
        """Tables in scope that must not be relocated: tbl_id -> (db.table, reason)."""
        t, d, tp = self.schema["TBLS"], self.schema["DBS"], self.schema["TABLE_PARAMS"]
        key, value = sa.func.lower(tp.c.PARAM_KEY), sa.func.lower(tp.c.PARAM_VALUE)
        iceberg = sa.or_(sa.and_(key == "table_type", value == "iceberg"), key == "metadata_location")
        acid = sa.and_(key == "transactional", value == "true")
        conds = [sa.or_(iceberg, acid) if not force_acid else iceberg]
        if scope.database is not None:
            conds.append(d.c.NAME == scope.database)
        if scope.table is not None:
            conds.append(t.c.TBL_NAME == scope.table)
        rows = conn.execute(sa.select(t.c.TBL_ID, d.c.NAME, t.c.TBL_NAME, iceberg.label("iceberg"))
                            .join(d, d.c.DB_ID == t.c.DB_ID).join(tp, tp.c.TBL_ID == t.c.TBL_ID)
                            .where(*conds, *self._dbs_in_catalog(d)))
        unsafe: dict[int, tuple[str, str]] = {}
        for tbl_id, db, name, is_iceberg in rows:
            if unsafe.get(tbl_id, ("", ""))[1] != "iceberg":
                unsafe[tbl_id] = (f"{db}.{name}", "iceberg" if is_iceberg else "acid")
        return unsafe

    def _refusals(self, conn: sa.Connection, plan: Plan, unsafe: dict[int, tuple[str, str]]) -> list[Refusal]:
        why = {"iceberg": "is an Iceberg table: its metadata files hold absolute paths that a metastore "
                          "rewrite cannot change",
               "acid": "is a transactional (ACID) table: its delta directories and write ids are tied to the "
                       "location (use --force-acid after moving its data consistently)"}
        refusals = []
        for tbl_id, (qualified, reason) in sorted(unsafe.items()):
            only = Plan(plan.targets, plan.scope, plan.old, plan.new, plan.param_keys, only_tables=(tbl_id,))
            counts = count_in_scope(conn, self.schema, only)
            if any(n for n, _ in counts.values()):
                refusals.append(Refusal(reason, f"{qualified} {why[reason]}", qualified))
        return refusals

    def _too_long(self, conn: sa.Connection, plan: Plan, limit: int = 10, run_id: str | None = None) -> list[Refusal]:
        """Rows whose new value would not fit their column, named; the whole run is refused for them.

        With a run_id, read from the run's fresh plan in the journal (same transaction: a refusal rolls the
        plan back); without (dry run), recomputed over the scope.
        skip_refused leaves these in: the new prefix does not fit the schema, which is a property of the
        request, not of a table; skipping them would silently split a database between two places.
        """
        s = self.schema
        t, d = s["TBLS"], s["DBS"]
        refusals = []
        rows = (too_long(conn, s, plan, limit) if run_id is None
                else too_long_planned(conn, self.journal, plan, run_id, limit))
        for row in rows:
            kind, column = row.target.kind, f"{row.target.base.name}.{row.target.value}"
            if row.tbl_id is not None:
                owner = conn.execute(sa.select(d.c.NAME, t.c.TBL_NAME).join(d, d.c.DB_ID == t.c.DB_ID)
                                     .where(t.c.TBL_ID == row.tbl_id)).one()
                qualified, what = f"{owner[0]}.{owner[1]}", f"table {owner[0]}.{owner[1]}"
            else:
                qualified, what = None, self._untabled_object(conn, kind, row.key1)
            refusals.append(Refusal(
                "too-long",
                f"{what} ({kind.value}): {column} would become {row.new_length} {row.limit.unit} long, more than "
                f"the {row.limit.limit} the column holds: {row.old_value[:120]}; use a shorter new prefix",
                qualified))
        return refusals

    def _untabled_object(self, conn: sa.Connection, kind: ObjectKind, key: int) -> str:
        """Names a database, catalog or function (rows no table owns) for messages."""
        s = self.schema
        d = s["DBS"]
        if kind is ObjectKind.CATALOG:
            c = s["CTLGS"]
            return f"catalog {conn.execute(sa.select(c.c.NAME).where(c.c.CTLG_ID == key)).scalar()}"
        if kind is ObjectKind.FUNCTION_RESOURCE:
            f = s["FUNCS"]
            name = conn.execute(sa.select(d.c.NAME, f.c.FUNC_NAME).join(d, d.c.DB_ID == f.c.DB_ID)
                                .where(f.c.FUNC_ID == key)).one()
            return f"function {name[0]}.{name[1]}"
        return f"database {conn.execute(sa.select(d.c.NAME).where(d.c.DB_ID == key)).scalar()}"

    def _refuse_unstorable(self, new_prefix: str) -> None:
        """Refuse a new prefix holding a character the metastore's columns cannot store (see charsets.py)."""
        dialect = self.engine.dialect.name
        with self.engine.connect() as conn:
            charsets = (postgresql_charsets(conn) if dialect == "postgresql"
                        else mysql_charsets(conn, ((t.base.name, t.value) for t in self.targets)))
        for charset in sorted(charsets):
            char = unstorable(new_prefix, charset, dialect)
            if char is not None:
                raise RelocationRefused([Refusal(
                    "unstorable", f"the new prefix {new_prefix!r} holds {char!r} (U+{ord(char):04X}), which the "
                                  f"metastore's {charset} columns cannot store")])

    def relocate(self, request: RelocationRequest, progress: Progress | None = None) -> RelocationReport:
        began = time.monotonic()
        try:
            old, new = check_relocation(request.old_prefix, request.new_prefix, request.allow_scheme_change)
        except InvalidLocation as exc:
            raise RelocationRefused([Refusal(getattr(exc, "reason", "invalid-prefix"), str(exc))]) from None
        if request.chunk_size is not None and request.chunk_size < 1:
            raise RelocationRefused([Refusal("invalid-chunk-size", "--chunk-size must be at least 1")])
        self._refuse_unstorable(request.new_prefix)
        if not request.dry_run:
            self.ensure_journal()  # the journal's own tables: not a write to the metastore
        with self._lock():
            with self.engine.connect() as conn:
                scope = self._scope_filter(conn, request.scope)
                plan = Plan(self.targets, scope, old, new, tuple(request.param_keys), chunk_size=request.chunk_size)
                unsafe = self._unsafe_tables(conn, scope, request.force_acid)
                refusals = self._refusals(conn, plan, unsafe) if unsafe else []
                if refusals and not request.skip_refused:
                    raise RelocationRefused(refusals)
                refused_ids = tuple(tbl_id for tbl_id, (q, _) in unsafe.items() if q in {r.table for r in refusals})
                report = RelocationReport("", self.name, request.old_prefix, request.new_prefix, request.dry_run,
                                          refusals=refusals)
                if refused_ids:
                    only_refused = Plan(plan.targets, scope, old, new, plan.param_keys, only_tables=refused_ids)
                    for kind, (n, _) in count_in_scope(conn, self.schema, only_refused).items():
                        report.count(kind).refused += n
                plan = Plan(plan.targets, scope, old, new, plan.param_keys, refused_ids, request.chunk_size)
                if request.dry_run:  # a real run checks its plan instead (_plan)
                    self._refuse_too_long(conn, plan)
                for kind, (n, skipped) in count_in_scope(conn, self.schema, plan, rewrites=request.dry_run).items():
                    report.count(kind).skipped += skipped
                    if request.dry_run:
                        report.count(kind).rewritten += n
                if request.dry_run:
                    report.run_id, report.status = "dry-run", "dry-run"
                    report.sample = sample_in_scope(conn, self.schema, plan, report.SAMPLE_SIZE)
                    report.tables_touched = tables_in_scope(conn, self.schema, plan)
                    report.seconds = round(time.monotonic() - began, 3)
                    return report
            run_id, applied = self._run(request, plan, progress)
            self._finish_report(report, run_id, APPLIED, CONFLICTED, applied)
            report.seconds = round(time.monotonic() - began, 3)
            with self.engine.begin() as conn:
                self.journal.set_status(conn, run_id, DONE, report.to_dict())
            return report

    def _refuse_too_long(self, conn: sa.Connection, plan: Plan, run_id: str | None = None) -> None:
        # Not a per-table safety refusal: skip_refused does not apply (see _too_long).
        refusals = self._too_long(conn, plan, run_id=run_id)
        if refusals:
            raise RelocationRefused(refusals)

    @contextmanager
    def _transaction(self) -> Iterator[sa.Connection]:
        """One transaction, at REPEATABLE READ on MySQL/MariaDB whatever the server's default: there a
        plan's INSERT ... SELECT takes shared locks on the rows it reads, held until commit."""
        with self.engine.connect() as conn:
            if self.engine.dialect.name != "postgresql":
                conn = conn.execution_options(isolation_level="REPEATABLE READ")
            with conn.begin():
                yield conn

    def _plan(self, conn: sa.Connection, request: RelocationRequest, plan: Plan,
              state: str = PLANNED) -> tuple[str, dict[ObjectKind, int]]:
        """A new run with its plan journaled, refused (rolled back with the caller's transaction) when a
        new value would not fit its column."""
        run_id = self.journal.new_run(conn, self.name, request)
        planned = write_plan(conn, self.schema, self.journal, run_id, plan, state)
        self._refuse_too_long(conn, plan, run_id)
        return run_id, planned

    def _run(self, request: RelocationRequest, plan: Plan,
             progress: Progress | None) -> tuple[str, dict[ObjectKind, int] | None]:
        """Plan and apply; resume the catalog's unfinished run when it is this same request.

        Returns the run id and, when every planned entry is known to be applied, their counts per kind.
        """
        by_kind = one_target_per_kind(self.targets)
        with self.engine.connect() as conn:
            resumed = self.journal.resumable_run(conn, self.name, request)
        if resumed is not None:
            run_id = resumed
        elif plan.chunk_size is None and self.engine.dialect.name != "postgresql":
            return self._run_locked(request, plan)
        elif plan.chunk_size is None:
            with self._transaction() as conn:  # plan and apply in one transaction: all or nothing
                run_id, _ = self._plan(conn, request, plan)
                for target in by_kind.values():
                    swap(conn, self.journal, target, run_id, None)
            return run_id, None
        else:
            with self._transaction() as conn:
                run_id, _ = self._plan(conn, request, plan)
        with self.engine.connect() as conn:
            chunks = self.journal.chunks(conn, run_id, PLANNED)
        for done, (kind, chunk) in enumerate(chunks, 1):
            with self.engine.begin() as conn:  # each chunk commits with its journal entries
                swap(conn, self.journal, by_kind[ObjectKind(kind)], run_id, chunk)
            if progress:
                progress(done, len(chunks))
        return run_id, None

    def _run_locked(self, request: RelocationRequest, plan: Plan) -> tuple[str, dict[ObjectKind, int]]:
        """MySQL/MariaDB, one transaction: the plan's shared locks keep every planned row at its planned
        value until commit, so each kind is rewritten by a single-table UPDATE of its planned keys (no
        compare-and-set join) and journaled as applied up front. Any count that differs from the plan
        rolls back everything, the plan included."""
        by_kind = one_target_per_kind(self.targets)
        with self._transaction() as conn:
            run_id, planned = self._plan(conn, request, plan, APPLIED)
            planned = {kind: n for kind, n in planned.items() if n}
            for kind, n in planned.items():
                rewritten = rewrite_planned(conn, self.journal, by_kind[kind], run_id, plan, n)
                if rewritten != n:  # raising rolls the transaction back
                    raise RelocationRefused([Refusal("changed-during-run", (
                        f"{kind.value}: {rewritten} rows held their planned value, {n} were planned; the run "
                        f"was rolled back and changed nothing: rerun it"))])
        return run_id, planned

    def _finish_report(self, report: RelocationReport, run_id: str, done_state: str, conflict_state: str,
                       done: dict[ObjectKind, int] | None = None) -> None:
        """`done`: the entries per kind, when all are known to be in done_state (spares counting them)."""
        report.run_id = run_id
        with self.engine.connect() as conn:
            known = None if done is None else {(kind.value, done_state): n for kind, n in done.items()}
            self.journal.tally(conn, run_id, report, done_state, conflict_state, counts=known)
            report.tables_touched = self._tables_touched(conn, run_id, done_state)

    def _tables_touched(self, conn: sa.Connection, run_id: str, state: str) -> list[str]:
        e, t, d = self.journal.entries, self.schema["TBLS"], self.schema["DBS"]
        rows = conn.execute(sa.select(d.c.NAME, t.c.TBL_NAME).distinct()
                            .select_from(e.join(t, t.c.TBL_ID == e.c.tbl_id).join(d, d.c.DB_ID == t.c.DB_ID))
                            .where(e.c.run_id == run_id, e.c.state == state).order_by(d.c.NAME, t.c.TBL_NAME))
        return [f"{db}.{name}" for db, name in rows]

    def undo(self, run_id: str) -> RelocationReport:
        began = time.monotonic()
        self.ensure_journal()
        with self._lock():
            with self.engine.connect() as conn:
                run = self.journal.undoable_run(conn, self.name, run_id)
            with self.engine.begin() as conn:  # all or nothing
                self.journal.set_status(conn, run_id, UNDOING)
                for target in one_target_per_kind(self.targets).values():
                    swap(conn, self.journal, target, run_id, None, undo=True)
            report = RelocationReport("", self.name, run.new_prefix, run.old_prefix, False, status="undone")
            self._finish_report(report, run_id, UNDONE, UNDO_CONFLICTED)
            report.seconds = round(time.monotonic() - began, 3)
            with self.engine.begin() as conn:
                self.journal.set_status(conn, run_id, RUN_UNDONE)
            return report

    def history(self) -> list[RunSummary]:
        self.ensure_journal()
        with self.engine.connect() as conn:
            return self.journal.history(conn, self.name)
