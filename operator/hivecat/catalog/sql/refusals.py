"""What a SQL relocation refuses before writing anything, and why: unknown names and bad filters in the
scope, Iceberg and ACID tables, new values too long for their column, characters the metastore's
character set cannot store.

A mixin of SqlCatalog, on top of SqlReads (it also needs `journal` and `targets`).
"""

from __future__ import annotations

import sqlalchemy as sa

from hivecat.catalog.journal import Journal
from hivecat.catalog.model import ObjectKind, Refusal, RelocationRefused, Scope, unsafe_table_refusal
from hivecat.catalog.sql.charsets import mysql_charsets, postgresql_charsets, unstorable
from hivecat.catalog.sql.reads import SqlReads
from hivecat.catalog.sql.relocation import RelocationPlan, count_in_scope, too_long, too_long_planned
from hivecat.catalog.sql.targets import ScopeFilter, Target
from hivecat.locations.partition_filter import FilterError


class SqlRefusals(SqlReads):
    journal: Journal
    targets: list[Target]

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

    def _refusals(self, conn: sa.Connection, plan: RelocationPlan, unsafe: dict[int, tuple[str, str]]) -> list[Refusal]:
        refusals = []
        for tbl_id, (qualified, reason) in sorted(unsafe.items()):
            only = RelocationPlan(plan.targets, plan.scope, plan.old, plan.new, plan.param_keys, only_tables=(tbl_id,))
            counts = count_in_scope(conn, self.schema, only)
            if any(n for n, _ in counts.values()):
                refusals.append(unsafe_table_refusal(qualified, reason))
        return refusals

    def _too_long(self, conn: sa.Connection, plan: RelocationPlan, limit: int = 10, run_id: str | None = None) -> list[Refusal]:
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

    def _refuse_too_long(self, conn: sa.Connection, plan: RelocationPlan, run_id: str | None = None) -> None:
        # Not a per-table safety refusal: skip_refused does not apply (see _too_long).
        refusals = self._too_long(conn, plan, run_id=run_id)
        if refusals:
            raise RelocationRefused(refusals)

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

