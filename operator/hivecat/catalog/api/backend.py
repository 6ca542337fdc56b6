"""What an API catalog backend (Glue, Thrift) gives the shared relocation driver: reads, writes, and where
its objects keep locations. Backends hold no relocation logic of their own."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any, Protocol

from hivecat.catalog.api.objects import ObjectRef, Place
from hivecat.catalog.model import DatabaseInfo, PartitionInfo, TableInfo
from hivecat.locations.partition_filter import Expr


class WriteRejected(Exception):
    """The service refused a write. conflict: the object changed or vanished meanwhile (reported as
    conflicted); otherwise a failure for another reason (reported as failed). Neither is retried blindly."""

    def __init__(self, message: str, *, conflict: bool):
        super().__init__(message)
        self.conflict = conflict


class ApiBackend(Protocol):
    name: str                                   # the catalog's name in journals and locks
    places: dict[str, tuple[Place, ...]]        # object type -> where it keeps locations
    batch_size: int                             # partitions per write call
    parallelism: int                            # chunks the driver may write at once (from several threads)

    # reads; a missing object is None
    def get_databases(self) -> Iterator[Any]: ...
    def get_database(self, name: str) -> Any | None: ...
    def get_tables(self, database: str) -> Iterator[Any]: ...
    def get_table(self, database: str, name: str) -> Any | None: ...
    def get_partitions(self, database: str, table: Any, expr: Expr | None) -> Iterator[Any]:
        """The table's partitions, filtered server-side by `expr` where the service can (a superset is
        fine: the driver evaluates the filter again on every partition)."""
        ...
    def reread_partitions(self, database: str, table: str,
                          values: Sequence[tuple[str, ...]]) -> dict[tuple[str, ...], Any]: ...
    def get_functions(self, database: str) -> Iterator[Any]: ...
    def get_function(self, database: str, name: str) -> Any | None: ...

    # what the objects say
    def database_info(self, raw: Any) -> DatabaseInfo: ...
    def table_info(self, database: str, raw: Any) -> TableInfo: ...
    def partition_key_types(self, table: Any) -> dict[str, str]: ...
    def partition_info(self, database: str, table: str, raw: Any) -> PartitionInfo: ...
    def function_name(self, raw: Any) -> str: ...
    def with_params(self, raw: Any, params: dict[str, str]) -> Any:
        """A copy of a table or partition with these parameters instead of its own."""
        ...

    # writes
    def write(self, ref: ObjectRef, new: Any, old: Any) -> None:
        """Write one database, table or function (old: as last read, for optimistic locking)."""
        ...
    def write_partitions(self, database: str, table: str,
                         partitions: Sequence[Any]) -> dict[tuple[str, ...], WriteRejected]:
        """Write at most batch_size partitions; returns the rejected ones by values."""
        ...
