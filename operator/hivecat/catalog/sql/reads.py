"""Reading a metastore database: databases, tables and partitions as the Catalog protocol lists them.

A mixin of SqlCatalog: it needs `engine`, `schema` (the detected HmsSchema) and `hive_catalog`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import sqlalchemy as sa

from hivecat.catalog.model import DatabaseInfo, PartitionInfo, TableInfo
from hivecat.catalog.sql.schema import HmsSchema
from hivecat.locations.filter_sql import to_sql
from hivecat.locations.partition_filter import parse_filter


class SqlReads:
    engine: sa.Engine
    schema: HmsSchema
    hive_catalog: str

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

    def _key_values(self, conn: sa.Connection, part_ids: list[int]) -> dict[int, tuple[str, ...]]:
        """Each partition's values, in key order."""
        kv = self.schema["PARTITION_KEY_VALS"]
        values: dict[int, list[str]] = {}
        for part_id, value in conn.execute(sa.select(kv.c.PART_ID, kv.c.PART_KEY_VAL).where(kv.c.PART_ID.in_(part_ids))
                                           .order_by(kv.c.PART_ID, kv.c.INTEGER_IDX)):
            values.setdefault(part_id, []).append(value)
        return {part_id: tuple(v) for part_id, v in values.items()}

    def get_table(self, database: str, table: str) -> TableInfo | None:
        # HMS keeps names in lower case; a missing database lists no tables.
        return next((t for t in self.list_tables(database.lower()) if t.name == table.lower()), None)

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

    def _partition_predicate(self, conn: sa.Connection, tbl_id: int,
                             text: str) -> Callable[[sa.FromClause], sa.ColumnElement[bool]]:
        """The SQL form of an HMS partition filter, for a PARTITIONS alias: its PART_ID is one of the
        table's partitions whose key values pass the filter.

        Each key the filter names is read once, by one outer join of PARTITION_KEY_VALS in that subquery,
        however many predicates and IN values use it. (A scalar subquery per use made MariaDB build one
        subquery per IN value: 1,000 values took minutes and hundreds of MB of server memory.) The join is
        outer so a missing key value reads as NULL, unknown, as a scalar subquery would make it.
        """
        key_list = self._partition_keys(conn, tbl_id)
        expr = parse_filter(text, {name: type_ for name, type_ in key_list})
        index = {name.lower(): i for i, (name, _) in enumerate(key_list)}
        partitions, key_vals = self.schema["PARTITIONS"], self.schema["PARTITION_KEY_VALS"]

        def predicate(p: sa.FromClause) -> sa.ColumnElement[bool]:
            parts = partitions.alias("filter_p")
            joined: dict[int, sa.FromClause] = {}

            def value_of(key: str) -> sa.ColumnElement[str]:
                i = index[key.lower()]
                if i not in joined:
                    joined[i] = key_vals.alias(f"filter_k{i}")
                return joined[i].c.PART_KEY_VAL

            condition = to_sql(expr, value_of)  # fills `joined` with the keys the filter uses
            source: sa.FromClause = parts
            for i, kv in sorted(joined.items()):
                source = source.outerjoin(kv, sa.and_(kv.c.PART_ID == parts.c.PART_ID, kv.c.INTEGER_IDX == i))
            return p.c.PART_ID.in_(sa.select(parts.c.PART_ID).select_from(source)
                                   .where(parts.c.TBL_ID == tbl_id, condition))
        return predicate

    def list_partitions(self, database: str, table: str, partition_filter: str | None = None) -> Iterator[PartitionInfo]:
        s = self.schema
        p, sd, pp = s["PARTITIONS"].alias("p"), s["SDS"], s["PARTITION_PARAMS"]
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
            values = self._key_values(conn, ids)
            params: dict[int, dict[str, str]] = {}
            for part_id, key, value in conn.execute(sa.select(pp.c.PART_ID, pp.c.PARAM_KEY, pp.c.PARAM_VALUE)
                                                    .where(pp.c.PART_ID.in_(ids))):
                params.setdefault(part_id, {})[key] = value
        for r in rows:
            yield PartitionInfo(database, table, values.get(r.PART_ID, ()), r.LOCATION,
                                params.get(r.PART_ID, {}))

