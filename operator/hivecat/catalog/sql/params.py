"""Table and partition parameters (replica bookkeeping), written in one transaction each.

A mixin of SqlCatalog, on top of SqlReads.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import sqlalchemy as sa

from hivecat.catalog.sql.reads import SqlReads


class SqlParams(SqlReads):
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

