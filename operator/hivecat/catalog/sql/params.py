"""Table and partition parameters (replica bookkeeping) in the metastore database: update_unit_params,
batched and compare-and-set. A mixin of SqlCatalog, on top of SqlReads.

Units go in chunks of CHUNK, one transaction per chunk rather than one per call: a call may cover 100k
partitions, and one transaction would keep their PARTITIONS and SDS rows locked for the whole call, stalling
the metastore's own writes to them past its lock wait timeout. Units are independent, so all-or-nothing
gains nothing: a call that fails part way (a database error raises) leaves whole chunks written, and a
rerun writes the same values.

A chunk takes a fixed number of statements, whatever its size: its partitions by PART_NAME through the
(PART_NAME, TBL_ID) unique index; their key values, to match exactly (MySQL collations fold case and
trailing spaces; PART_NAME escaping is HMS's convention: a partition not found by name is looked up again
by its key values, one more query only when some are missing); their SDS rows; one DELETE per distinct
set of keys and one multi-row INSERT.

Compare-and-set: the PARTITIONS (or TBLS) rows and their SDS rows are read with SELECT ... FOR UPDATE.
A locking read sees the latest committed row, not the transaction's snapshot (InnoDB and PostgreSQL
alike), and the lock holds until commit, so a concurrent location change (HMS alter_partition, `hivecat
relocate`, a drop) either committed before the check, and is reported as a conflict, or waits until the
parameters are written. A deadlock with such a writer rolls the chunk back; it is retried.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa

from hivecat.catalog.model import PARTITION_GONE, TABLE_GONE, ParamsOutcome, UnitParams
from hivecat.catalog.partition_names import partition_name
from hivecat.catalog.sql.charsets import mysql_charsets, postgresql_charsets, unstorable
from hivecat.catalog.sql.limits import Capacity, capacity
from hivecat.catalog.sql.reads import SqlReads
from hivecat.catalog.unit_params import Tally, UnitParamsWrites, chunks, split_units

CHUNK = 1000  # units per transaction: ~5 statements each
DEADLOCK_RETRIES = 3

Owner = tuple[int, int | None]  # (TBL_ID or PART_ID, SD_ID)


def _deadlock(error: BaseException | None) -> bool:
    """MySQL ER_LOCK_DEADLOCK (1213), PostgreSQL deadlock_detected (40P01)."""
    if error is None:
        return False
    code = error.args[0] if error.args and isinstance(error.args[0], int) else None
    return code == 1213 or getattr(error, "sqlstate", None) == "40P01"


@dataclass(frozen=True)
class _Column:
    """PARAM_KEY or PARAM_VALUE of a parameter table, with what it can store (read from the schema)."""

    name: str  # TABLE.COLUMN, for messages
    cap: Capacity | None
    charsets: tuple[str, ...]
    dialect: str

    def unfit(self, text: str) -> str | None:
        if self.cap is not None:
            size = len(text.encode()) if self.cap.unit == "bytes" else len(text)
            if size > self.cap.limit:
                return f"is {size} {self.cap.unit} long, {self.name} holds {self.cap.limit}"
        for charset in self.charsets:
            char = unstorable(text, charset, self.dialect)
            if char is not None:
                return f"holds {char!r} (U+{ord(char):04X}), which {self.name} ({charset}) cannot store"
        return None


@dataclass(frozen=True)
class _Target:
    """TABLE_PARAMS or PARTITION_PARAMS."""

    table: sa.Table
    owner: sa.Column
    key: _Column
    value: _Column

    def unfit(self, unit: UnitParams) -> str | None:
        """Why the unit's parameters cannot be stored, refused before writing (strict MariaDB and
        PostgreSQL would fail the whole chunk; non-strict MariaDB would truncate or write '?')."""
        for k, v in unit.set:
            why = self.key.unfit(k)
            if why:
                return f"key {k[:80]!r} {why}"
            why = self.value.unfit(v)
            if why:
                return f"value of {k} {why}"
        return None


class SqlParams(SqlReads, UnitParamsWrites):
    def update_unit_params(self, database: str, table: str, updates: Sequence[UnitParams]) -> ParamsOutcome:
        qualified = f"{database}.{table}"
        with self.engine.connect() as conn:
            tbl_id = self._table_id(conn, database, table)
            if tbl_id is None:
                raise LookupError(f"table {qualified} does not exist")
            keys = [name for name, _ in self._partition_keys(conn, tbl_id)]
            table_units, partition_units = split_units(updates, len(keys), qualified)
            table_target = self._param_target(conn, "TABLE_PARAMS", "TBL_ID") if table_units else None
            partition_target = self._param_target(conn, "PARTITION_PARAMS", "PART_ID") if partition_units else None
        tally = Tally()
        for unit in self._storable(table_units, table_target, tally):
            tally.add(self._retrying(self._table_unit, table_target, tbl_id, unit))
        for chunk in chunks(self._storable(partition_units, partition_target, tally), CHUNK):
            tally.add(self._retrying(self._partition_chunk, partition_target, tbl_id, keys, chunk))
        return tally.outcome()

    # --- before any transaction ----------------------------------------------------------------------

    def _param_target(self, conn: sa.Connection, name: str, owner: str) -> _Target:
        table, dialect = self.schema[name], conn.dialect.name

        def column(column_name: str) -> _Column:
            charsets = (postgresql_charsets(conn) if dialect == "postgresql"
                        else mysql_charsets(conn, [(table.name, table.c[column_name].name)]))
            return _Column(f"{name}.{column_name}", capacity(table.c[column_name], dialect), tuple(sorted(charsets)),
                           dialect)
        return _Target(table, table.c[owner], column("PARAM_KEY"), column("PARAM_VALUE"))

    @staticmethod
    def _storable(units: list[UnitParams], target: _Target | None, tally: Tally) -> list[UnitParams]:
        """The units whose parameters the columns can hold; the others are failed (no units: no target)."""
        kept = []
        for unit in units:
            why = target.unfit(unit) if target is not None else None
            if why is None:
                kept.append(unit)
            else:
                tally.failed.append((unit.partition_values, why))
        return kept

    def _retrying(self, work: Callable[..., Tally], *args: Any) -> Tally:
        """work(conn, *args) in a transaction of its own, again after a deadlock (rolled back: nothing of
        it was written)."""
        for attempt in range(DEADLOCK_RETRIES):
            try:
                with self.engine.begin() as conn:
                    return work(conn, *args)
            except sa.exc.DBAPIError as exc:
                if attempt + 1 == DEADLOCK_RETRIES or not _deadlock(exc.orig):
                    raise
        raise AssertionError("unreachable")

    # --- inside a chunk's transaction ----------------------------------------------------------------

    def _table_unit(self, conn: sa.Connection, target: _Target, tbl_id: int, unit: UnitParams) -> Tally:
        return self._write_units(conn, target, [unit], self._lock_table(conn, tbl_id), TABLE_GONE)

    def _partition_chunk(self, conn: sa.Connection, target: _Target, tbl_id: int, keys: list[str],
                         units: Sequence[UnitParams]) -> Tally:
        owners = self._lock_partitions(conn, tbl_id, keys, [u.partition_values for u in units])
        return self._write_units(conn, target, units, owners, PARTITION_GONE)

    def _lock_table(self, conn: sa.Connection, tbl_id: int) -> dict[tuple[str, ...] | None, Owner]:
        t = self.schema["TBLS"]
        row = conn.execute(sa.select(t.c.TBL_ID, t.c.SD_ID).where(t.c.TBL_ID == tbl_id).with_for_update()).first()
        return {} if row is None else {None: (row.TBL_ID, row.SD_ID)}

    def _lock_partitions(self, conn: sa.Connection, tbl_id: int, keys: list[str],
                         values: list[tuple[str, ...]]) -> dict[tuple[str, ...] | None, Owner]:
        """values -> (PART_ID, SD_ID) of the table's partitions among `values`, their rows locked."""
        p, kv = self.schema["PARTITIONS"], self.schema["PARTITION_KEY_VALS"]
        found = self._matching(conn, sa.select(p.c.PART_ID, p.c.SD_ID).where(
            p.c.TBL_ID == tbl_id, p.c.PART_NAME.in_([partition_name(keys, v) for v in values])), set(values))
        missing = [v for v in values if v not in found]
        if missing:
            joined, columns = p, []
            for i in range(len(keys)):
                kv_i = kv.alias(f"kv{i}")
                joined = joined.join(kv_i, sa.and_(kv_i.c.PART_ID == p.c.PART_ID, kv_i.c.INTEGER_IDX == i))
                columns.append(kv_i.c.PART_KEY_VAL)
            by_values = (columns[0].in_([v[0] for v in missing]) if len(columns) == 1
                         else sa.tuple_(*columns).in_(missing))
            found.update(self._matching(conn, sa.select(p.c.PART_ID, p.c.SD_ID).select_from(joined)
                                        .where(p.c.TBL_ID == tbl_id, by_values), set(missing)))
        return found

    def _matching(self, conn: sa.Connection, select: sa.Select,
                  wanted: set[tuple[str, ...]]) -> dict[tuple[str, ...] | None, Owner]:
        rows = conn.execute(select.with_for_update()).all()
        values = self._key_values(conn, [r.PART_ID for r in rows])
        return {values[r.PART_ID]: (r.PART_ID, r.SD_ID) for r in rows if values.get(r.PART_ID) in wanted}

    def _write_units(self, conn: sa.Connection, target: _Target, units: Sequence[UnitParams],
                     owners: dict[tuple[str, ...] | None, Owner], gone: str) -> Tally:
        """Check each unit's location (its SDS row locked) and write the units that pass."""
        sd = self.schema["SDS"]
        sd_ids = sorted({sd_id for _, sd_id in owners.values() if sd_id is not None})
        locations = dict(conn.execute(sa.select(sd.c.SD_ID, sd.c.LOCATION).where(sd.c.SD_ID.in_(sd_ids))
                                      .with_for_update()).all()) if sd_ids else {}
        tally, writes = Tally(), []
        for unit in units:
            owner = owners.get(unit.partition_values)
            why = gone if owner is None else unit.conflict(locations.get(owner[1]))
            if why is None:
                writes.append((owner[0], unit))
            else:
                tally.conflicts.append((unit.partition_values, why))
        # Replace the units' keys: one DELETE per distinct set of keys (usually one), one INSERT of every row.
        by_keys: dict[tuple[str, ...], list[int]] = {}
        for owner_id, unit in writes:
            by_keys.setdefault(tuple(sorted(unit.keys)), []).append(owner_id)
        for keys, ids in by_keys.items():
            if keys:
                conn.execute(target.table.delete().where(target.owner.in_(ids), target.table.c.PARAM_KEY.in_(keys)))
        rows = [{target.owner.name: owner_id, target.table.c.PARAM_KEY.name: k, target.table.c.PARAM_VALUE.name: v}
                for owner_id, unit in writes for k, v in unit.set]
        if rows:
            conn.execute(target.table.insert(), rows)
        tally.written = len(writes)
        return tally
