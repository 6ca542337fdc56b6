"""Hive Metastore Thrift reads and writes (hmsclient) for the shared relocation driver.

Partitions are listed by name (get_partition_names) and fetched in batches (get_partitions_by_names), so a
table with many partitions never travels in one message; partition filters are evaluated client-side by
the driver (HMS's own filter semantics differ, e.g. LIKE is a regular expression there). Writes use
alter_database / alter_table / alter_partitions (one metastore transaction per batch) / alter_function,
with DO_NOT_UPDATE_STATS, and database and function writes are read back (HMS 2.x ignores their locations).

Race window (docs/relocate-consistency.md): the Thrift API has no compare-and-set. Objects are re-read right
before each batch is written; a change landing between that re-read and the write is overwritten.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator, Sequence
from typing import Any

from hmsclient.genthrift.hive_metastore.ttypes import (
    EnvironmentContext, InvalidOperationException, MetaException, NoSuchObjectException,
)

from hivecat.catalog.api.backend import WriteRejected
from hivecat.catalog.api.objects import (
    DATABASE, FUNCTION, PARTITION, TABLE, ObjectRef, Place, StorageFields, read_slots,
)
from hivecat.catalog.model import DatabaseInfo, ObjectKind, PartitionInfo, TableInfo
from hivecat.catalog.partition_names import partition_name
from hivecat.catalog.thrift.clients import ClientPool
from hivecat.locations.partition_filter import Expr

DEFAULT_BATCH = 500
TABLES_PER_CALL = 100
THRIFT_ERRORS = (NoSuchObjectException, InvalidOperationException, MetaException)
# Without it HMS recomputes numFiles/totalSize of every altered table and partition by listing its (new)
# location: slow on object stores, and a change to values relocation did not mean to touch.
KEEP_STATS = EnvironmentContext({"DO_NOT_UPDATE_STATS": "true"})


# Skewed-value locations are listed for completeness: hmsclient 0.1.1 cannot even read a table that has them
# (its generated code uses a list as a dict key), so such tables fail on read, never half-written.
_STORAGE = StorageFields("sd", "location", "serdeInfo", "parameters", "skewedInfo", "skewedColValueLocationMaps",
                         "parameters")


PLACES: dict[str, tuple[Place, ...]] = {
    DATABASE: (Place(ObjectKind.DATABASE, ("locationUri",)),),
    TABLE: _STORAGE.places(ObjectKind.TABLE, ObjectKind.TABLE_PARAM),
    PARTITION: _STORAGE.places(ObjectKind.PARTITION, ObjectKind.PARTITION_PARAM),
    FUNCTION: (Place(ObjectKind.FUNCTION_RESOURCE, ("resourceUris",), "list", "uri"),),
}


def _rejection(exc: Exception) -> WriteRejected:
    message = f"{type(exc).__name__}: {getattr(exc, 'message', '') or exc}"
    # The object is gone or no longer what the write assumed: a concurrent change.
    return WriteRejected(message, conflict=isinstance(exc, (NoSuchObjectException, InvalidOperationException)))


class ThriftBackend:
    """`client`: an hmsclient client, which serves one thread; or, for `parallelism` > 1 (the driver then
    writes that many chunks at once, each on a thread of its own), a ClientPool."""

    places = PLACES

    def __init__(self, client: Any, name: str, batch_size: int = DEFAULT_BATCH, parallelism: int = 1):
        if batch_size < 1:
            raise ValueError("batch size must be at least 1")
        if parallelism > 1 and not isinstance(client, ClientPool):
            raise ValueError("writing chunks in parallel needs a ClientPool: one hmsclient client serves one thread")
        self.client = client
        self.name = name
        self.batch_size = batch_size
        self.parallelism = parallelism

    # --- reads ---------------------------------------------------------------------------------------

    def _get(self, read, *args: Any) -> Any | None:
        try:
            return read(*args)
        except NoSuchObjectException:
            return None

    def get_databases(self) -> Iterator[Any]:
        for name in self.client.get_all_databases():
            database = self.get_database(name)
            if database is not None:
                yield database

    def get_database(self, name: str) -> Any | None:
        return self._get(self.client.get_database, name)

    def get_tables(self, database: str) -> Iterator[Any]:
        names = self.client.get_all_tables(database)
        for start in range(0, len(names), TABLES_PER_CALL):
            yield from self.client.get_table_objects_by_name(database, names[start:start + TABLES_PER_CALL])

    def get_table(self, database: str, name: str) -> Any | None:
        return self._get(self.client.get_table, database, name)

    def get_partitions(self, database: str, table: Any, expr: Expr | None) -> Iterator[Any]:
        names = self.client.get_partition_names(database, table.tableName, -1)
        for start in range(0, len(names), self.batch_size):
            yield from self.client.get_partitions_by_names(database, table.tableName,
                                                           names[start:start + self.batch_size])

    def reread_partitions(self, database: str, table: str,
                          values: Sequence[tuple[str, ...]]) -> dict[tuple[str, ...], Any]:
        raw_table = self.get_table(database, table)
        if raw_table is None:
            return {}
        keys = [k.name for k in raw_table.partitionKeys or ()]
        found: dict[tuple[str, ...], Any] = {}
        for start in range(0, len(values), self.batch_size):
            names = [partition_name(keys, v) for v in values[start:start + self.batch_size]]
            found.update({tuple(p.values): p for p in self.client.get_partitions_by_names(database, table, names)})
        return found

    def get_functions(self, database: str) -> Iterator[Any]:
        for name in self.client.get_functions(database, "*"):
            function = self.get_function(database, name)
            if function is not None:
                yield function

    def get_function(self, database: str, name: str) -> Any | None:
        return self._get(self.client.get_function, database, name)

    # --- what the objects say ------------------------------------------------------------------------

    def database_info(self, raw: Any) -> DatabaseInfo:
        return DatabaseInfo(raw.name, raw.locationUri, None, dict(raw.parameters or {}))

    def table_info(self, database: str, raw: Any) -> TableInfo:
        sd = raw.sd
        serde = sd.serdeInfo if sd is not None else None
        return TableInfo(database, raw.tableName, sd.location if sd is not None else None, raw.tableType,
                         tuple(k.name for k in raw.partitionKeys or ()), dict(raw.parameters or {}),
                         dict((serde.parameters if serde is not None else None) or {}))

    def partition_key_types(self, table: Any) -> dict[str, str]:
        return {k.name: k.type for k in table.partitionKeys or ()}

    def partition_info(self, database: str, table: str, raw: Any) -> PartitionInfo:
        return PartitionInfo(database, table or raw.tableName, tuple(raw.values or ()),
                             raw.sd.location if raw.sd is not None else None, dict(raw.parameters or {}))

    def function_name(self, raw: Any) -> str:
        return raw.functionName

    def with_params(self, raw: Any, params: dict[str, str]) -> Any:
        new = copy.deepcopy(raw)
        new.parameters = dict(params)
        return new

    # --- writes --------------------------------------------------------------------------------------

    def write(self, ref: ObjectRef, new: Any, old: Any) -> None:
        try:
            if ref.type == DATABASE:
                self.client.alter_database(ref.database, new)
                written = self.get_database(ref.database)
            elif ref.type == TABLE:
                self.client.alter_table_with_environment_context(ref.database, ref.name, new, KEEP_STATS)
                written = self.get_table(ref.database, ref.name)
            elif ref.type == FUNCTION:
                self.client.alter_function(ref.database, ref.name, new)
                written = self.get_function(ref.database, ref.name)
            else:
                raise ValueError(f"write partitions with write_partitions, not {ref}")
        except THRIFT_ERRORS as exc:
            raise _rejection(exc) from None
        # HMS 2.x's alter_database and alter_function drop a new locationUri / resource URIs without an
        # error (only Hive 3+ applies them): read back, so an ignored change is failed, never "rewritten".
        wanted, before = read_slots(PLACES[ref.type], new), read_slots(PLACES[ref.type], old)
        after = read_slots(PLACES[ref.type], written) if written is not None else {}
        if any(after.get(slot) != value for slot, value in wanted.items() if before.get(slot) != value):
            raise WriteRejected(f"the metastore ignored the new locations of this {ref.type} (Hive 2.x "
                                f"alter_{ref.type} cannot change them): relocate it through the metastore's "
                                "SQL database", conflict=False)

    def write_partitions(self, database: str, table: str,
                         partitions: Sequence[Any]) -> dict[tuple[str, ...], WriteRejected]:
        rejected: dict[tuple[str, ...], WriteRejected] = {}
        for start in range(0, len(partitions), self.batch_size):
            batch = list(partitions[start:start + self.batch_size])
            try:
                self.client.alter_partitions_with_environment_context(database, table, batch, KEEP_STATS)
            except THRIFT_ERRORS:
                # One metastore transaction per call: nothing of the batch was written. Find out which
                # partitions are the problem by writing them one by one.
                for partition in batch:
                    try:
                        self.client.alter_partitions_with_environment_context(database, table, [partition],
                                                                              KEEP_STATS)
                    except THRIFT_ERRORS as exc:
                        rejected[tuple(partition.values)] = _rejection(exc)
        return rejected
