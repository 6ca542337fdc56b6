"""Every place the HMS schema keeps a location, as a scoped SELECT of (key1, key2, tbl_id, value).

One Target per (object kind, owner path): e.g. SERDE_PARAMS reached through a table's storage
descriptor and through a partition's are two targets of one kind. Relocation plans, applies and undoes
all targets the same way, so adding a place here is the whole change for a new location column.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import sqlalchemy as sa

from hivecat.catalog.model import ObjectKind
from hivecat.catalog.sql.schema import HmsSchema


# tbl_id of rows no table owns (databases, catalogs, functions); typed, as PostgreSQL insists.
NO_TABLE = sa.cast(sa.null(), sa.BigInteger)


@dataclass(frozen=True)
class ScopeFilter:
    """SQL predicates of a Scope; partition_predicate takes the PARTITIONS alias it filters."""

    database: str | None
    table: str | None
    partition_predicate: Callable[[sa.FromClause], sa.ColumnElement[bool]] | None
    catalog_name: str | None  # Hive 3+: the HMS catalog (CTLG_NAME) every scope stays inside

    @property
    def whole_catalog(self) -> bool:
        return self.database is None


@dataclass(frozen=True)
class Target:
    kind: ObjectKind
    base: sa.Table                    # the table whose value column is rewritten
    key1: str                         # its key columns (key2 may be None)
    key2: str | None
    value: str
    select: Callable[[HmsSchema, ScopeFilter], sa.Select | None]  # (key1, key2, value, tbl_id); None: out of scope
    param_keyed: bool = False         # value is a *_PARAMS value: only caller-named keys are rewritten


def _db_scope(s: HmsSchema, scope: ScopeFilter, dbs: sa.FromClause) -> list[sa.ColumnElement[bool]]:
    # Every scope, the whole catalog included, stays inside its HMS catalog: database names repeat across them.
    conds = []
    if s.has_catalogs and scope.catalog_name:
        conds.append(dbs.c.CTLG_NAME == scope.catalog_name)
    if scope.database is not None:
        conds.append(dbs.c.NAME == scope.database)
    return conds


def _table_scope(s: HmsSchema, scope: ScopeFilter, tbls: sa.FromClause, dbs: sa.FromClause) -> list:
    conds = _db_scope(s, scope, dbs)
    if scope.table is not None:
        conds.append(tbls.c.TBL_NAME == scope.table)
    return conds


Owned = tuple[sa.FromClause, list, sa.ColumnElement]  # (FROM with owner joins, scope conditions, TBL_ID)


def _table_owner(s: HmsSchema, scope: ScopeFilter, frm: sa.FromClause, sd_id: sa.ColumnElement) -> Owned | None:
    """Rows whose storage descriptor is a table's own."""
    if scope.partition_predicate is not None:
        return None  # a partition filter touches partitions only
    t, d = s["TBLS"].alias("t"), s["DBS"].alias("d")
    frm = frm.join(t, t.c.SD_ID == sd_id)
    conds = _table_scope(s, scope, t, d)
    if conds:
        frm = frm.join(d, d.c.DB_ID == t.c.DB_ID)
    else:
        conds.append(t.c.DB_ID.is_not(None))  # what the join to DBS (a foreign key) kept out
    return frm, conds, t.c.TBL_ID


def _partition_owner(s: HmsSchema, scope: ScopeFilter, frm: sa.FromClause, sd_id: sa.ColumnElement) -> Owned:
    """Rows whose storage descriptor is a partition's."""
    p, t, d = s["PARTITIONS"].alias("p"), s["TBLS"].alias("t"), s["DBS"].alias("d")
    frm = frm.join(p, p.c.SD_ID == sd_id)
    conds = _table_scope(s, scope, t, d)
    if conds:
        frm = frm.join(t, t.c.TBL_ID == p.c.TBL_ID).join(d, d.c.DB_ID == t.c.DB_ID)
    else:  # the owner is p.TBL_ID (a foreign key): joining TBLS and DBS only cost time (a third of a 1M plan)
        conds.append(p.c.TBL_ID.is_not(None))
    if scope.partition_predicate is not None:
        conds.append(scope.partition_predicate(p))
    return frm, conds, p.c.TBL_ID


def _sd_owned(kind: ObjectKind, base: str, key1: str, key2: str | None, value: str, owner,
              via_serde: bool = False, param_keyed: bool = False) -> Callable[[HmsSchema], Target]:
    """A target whose rows hang off a storage descriptor (directly, or through its SERDE)."""
    def select(s: HmsSchema, scope: ScopeFilter) -> sa.Select | None:
        b = s[base].alias("b")
        if via_serde:
            sd = s["SDS"].alias("sd")
            frm, sd_id = b.join(sd, sd.c.SERDE_ID == b.c.SERDE_ID), sd.c.SD_ID
        else:
            frm, sd_id = b, b.c.SD_ID
        owned = owner(s, scope, frm, sd_id)
        if owned is None:
            return None
        frm, conds, tbl_id = owned
        key2_col = sa.cast(b.c[key2], sa.String(256)) if key2 else sa.literal("")
        return sa.select(b.c[key1], key2_col, b.c[value], tbl_id).select_from(frm).where(*conds)
    return lambda s: Target(kind, s[base], key1, key2, value, select, param_keyed)


def _table_params(s: HmsSchema, scope: ScopeFilter) -> sa.Select | None:
    if scope.partition_predicate is not None:
        return None
    b, t, d = s["TABLE_PARAMS"].alias("b"), s["TBLS"].alias("t"), s["DBS"].alias("d")
    return (sa.select(b.c.TBL_ID, sa.cast(b.c.PARAM_KEY, sa.String(256)), b.c.PARAM_VALUE, t.c.TBL_ID)
            .select_from(b.join(t, t.c.TBL_ID == b.c.TBL_ID).join(d, d.c.DB_ID == t.c.DB_ID))
            .where(*_table_scope(s, scope, t, d)))


def _partition_params(s: HmsSchema, scope: ScopeFilter) -> sa.Select:
    b, p = s["PARTITION_PARAMS"].alias("b"), s["PARTITIONS"].alias("p")
    t, d = s["TBLS"].alias("t"), s["DBS"].alias("d")
    conds = _table_scope(s, scope, t, d)
    if scope.partition_predicate is not None:
        conds.append(scope.partition_predicate(p))
    return (sa.select(b.c.PART_ID, sa.cast(b.c.PARAM_KEY, sa.String(256)), b.c.PARAM_VALUE, t.c.TBL_ID)
            .select_from(b.join(p, p.c.PART_ID == b.c.PART_ID).join(t, t.c.TBL_ID == p.c.TBL_ID)
                         .join(d, d.c.DB_ID == t.c.DB_ID))
            .where(*conds))


def _databases(column: str) -> Callable[[HmsSchema, ScopeFilter], sa.Select | None]:
    def select(s: HmsSchema, scope: ScopeFilter) -> sa.Select | None:
        if scope.table is not None:
            return None  # a table scope never moves its database
        b = s["DBS"].alias("b")
        return (sa.select(b.c.DB_ID, sa.literal(""), b.c[column], NO_TABLE)
                .where(b.c[column].is_not(None), *_db_scope(s, scope, b)))
    return select


def _catalogs(s: HmsSchema, scope: ScopeFilter) -> sa.Select | None:
    if not scope.whole_catalog:
        return None
    b = s["CTLGS"].alias("b")
    return (sa.select(b.c.CTLG_ID, sa.literal(""), b.c.LOCATION_URI, NO_TABLE)
            .where(b.c.NAME == scope.catalog_name))


def _functions(s: HmsSchema, scope: ScopeFilter) -> sa.Select | None:
    if scope.table is not None:
        return None
    b, f, d = s["FUNC_RU"].alias("b"), s["FUNCS"].alias("f"), s["DBS"].alias("d")
    return (sa.select(b.c.FUNC_ID, sa.cast(b.c.INTEGER_IDX, sa.String(256)), b.c.RESOURCE_URI, NO_TABLE)
            .select_from(b.join(f, f.c.FUNC_ID == b.c.FUNC_ID).join(d, d.c.DB_ID == f.c.DB_ID))
            .where(*_db_scope(s, scope, d)))


def build_targets(s: HmsSchema) -> list[Target]:
    """The targets this schema has, bound to its tables."""
    sd_owned = [
        _sd_owned(ObjectKind.TABLE, "SDS", "SD_ID", None, "LOCATION", _table_owner),
        _sd_owned(ObjectKind.PARTITION, "SDS", "SD_ID", None, "LOCATION", _partition_owner),
        *(_sd_owned(ObjectKind.SERDE_PARAM, "SERDE_PARAMS", "SERDE_ID", "PARAM_KEY", "PARAM_VALUE", owner,
                    via_serde=True, param_keyed=True) for owner in (_table_owner, _partition_owner)),
    ]
    if s.has("SKEWED_COL_VALUE_LOC_MAP"):
        sd_owned += [_sd_owned(ObjectKind.SKEWED_LOCATION, "SKEWED_COL_VALUE_LOC_MAP", "SD_ID", "STRING_LIST_ID_KID",
                               "LOCATION", owner) for owner in (_table_owner, _partition_owner)]
    targets = [make(s) for make in sd_owned]
    targets += [
        Target(ObjectKind.TABLE_PARAM, s["TABLE_PARAMS"], "TBL_ID", "PARAM_KEY", "PARAM_VALUE", _table_params, True),
        Target(ObjectKind.PARTITION_PARAM, s["PARTITION_PARAMS"], "PART_ID", "PARAM_KEY", "PARAM_VALUE",
               _partition_params, True),
        Target(ObjectKind.DATABASE, s["DBS"], "DB_ID", None, "DB_LOCATION_URI", _databases("DB_LOCATION_URI")),
    ]
    if s.has_managed_location:
        targets.append(Target(ObjectKind.DATABASE_MANAGED, s["DBS"], "DB_ID", None, "DB_MANAGED_LOCATION_URI",
                              _databases("DB_MANAGED_LOCATION_URI")))
    if s.has("FUNCS") and s.has("FUNC_RU"):
        targets.append(Target(ObjectKind.FUNCTION_RESOURCE, s["FUNC_RU"], "FUNC_ID", "INTEGER_IDX", "RESOURCE_URI",
                              _functions))
    if s.has_catalogs:
        targets.append(Target(ObjectKind.CATALOG, s["CTLGS"], "CTLG_ID", None, "LOCATION_URI", _catalogs))
    return targets
