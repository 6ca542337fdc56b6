"""Table and partition parameters (replica bookkeeping) of catalogs reached through an API (Glue, Thrift):
update_unit_params, batched and compare-and-set. A mixin of ApiCatalog; not journaled.

Partition units go in chunks of the backend's batch size (Glue: at most 100, BatchUpdatePartition's limit,
which GlueBackend enforces because moto does not): each chunk is re-read right before it is written
(reread_partitions: BatchGetPartition or get_partitions_by_names, in their own batch sizes), each unit's
location compared with the one expected, and the units that pass are written with one write_partitions
call. A table-level unit is written by `write` with the table as read (on Glue its VersionId then refuses
the write if the table changed meanwhile: a conflict).

Race window (docs/relocate-consistency.md): neither service compares a partition's location on write, and
both write whole objects. A location changed between the re-read and the write (one round trip) is
overwritten with the re-read one, as in relocation's own writes. A unit that already holds its parameters
is not written again.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from hivecat.catalog.api.backend import ApiBackend, WriteRejected
from hivecat.catalog.api.objects import TABLE, ObjectRef
from hivecat.catalog.model import PARTITION_GONE, ParamsOutcome, UnitParams
from hivecat.catalog.unit_params import Tally, UnitParamsWrites, chunks, split_units


def _rejected(tally: Tally, values: tuple[str, ...] | None, rejection: WriteRejected) -> None:
    if rejection.conflict:
        tally.conflicts.append((values, f"changed meanwhile ({rejection})"))
    else:
        tally.failed.append((values, str(rejection)))


class ApiParams(UnitParamsWrites):
    backend: ApiBackend
    _table: Callable[[str, str], Any]  # ApiCatalog's: the table as read; LookupError when it does not exist

    def update_unit_params(self, database: str, table: str, updates: Sequence[UnitParams]) -> ParamsOutcome:
        raw_table = self._table(database, table)
        table_units, partition_units = split_units(updates, len(self.backend.partition_key_types(raw_table)),
                                                   f"{database}.{table}")
        tally = Tally()
        for unit in table_units:  # at most one; first, while the table as read is fresh
            self._write_table(database, table, raw_table, unit, tally)
        for chunk in chunks(partition_units, self.backend.batch_size):
            self._write_partitions(database, table, chunk, tally)
        return tally.outcome()

    def _write_table(self, database: str, table: str, raw: Any, unit: UnitParams, tally: Tally) -> None:
        info = self.backend.table_info(database, raw)
        why = unit.conflict(info.location)
        if why is not None:
            tally.conflicts.append((None, why))
            return
        params = unit.applied(info.parameters)
        if params != info.parameters:
            try:
                self.backend.write(ObjectRef(TABLE, database, table), self.backend.with_params(raw, params), raw)
            except WriteRejected as exc:
                _rejected(tally, None, exc)
                return
        tally.written += 1

    def _write_partitions(self, database: str, table: str, units: Sequence[UnitParams], tally: Tally) -> None:
        current = self.backend.reread_partitions(database, table, [u.partition_values for u in units])
        writes: dict[tuple[str, ...], Any] = {}
        for unit in units:
            raw = current.get(unit.partition_values)
            if raw is None:
                tally.conflicts.append((unit.partition_values, PARTITION_GONE))
                continue
            info = self.backend.partition_info(database, table, raw)
            why = unit.conflict(info.location)
            if why is not None:
                tally.conflicts.append((unit.partition_values, why))
                continue
            params = unit.applied(info.parameters)
            if params == info.parameters:
                tally.written += 1
            else:
                writes[unit.partition_values] = self.backend.with_params(raw, params)
        rejected = self.backend.write_partitions(database, table, list(writes.values())) if writes else {}
        for values in writes:
            if values in rejected:
                _rejected(tally, values, rejected[values])
            else:
                tally.written += 1
