"""The Catalog protocol: what every metastore backend (SQL, Glue, Thrift) offers."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Protocol, runtime_checkable

from hivecat.catalog.model import (
    ChunkProgress, Confirm, DatabaseInfo, ParamsOutcome, PartitionInfo, RelocationReport, RelocationRequest, JournaledRun, TableInfo,
    UnitParams,
)


@runtime_checkable
class Catalog(Protocol):
    """A Hive catalog. Reads are plain; every write is transactional (SQL) or journaled (Glue, Thrift)."""

    name: str  # identifies the catalog in journals and locks (e.g. mysql://host:3306/hms, glue://region/id)

    def list_databases(self) -> Iterator[DatabaseInfo]: ...

    def list_tables(self, database: str) -> Iterator[TableInfo]: ...

    def get_table(self, database: str, table: str) -> TableInfo | None:
        """One table, or None when it (or its database) does not exist."""
        ...

    def list_partitions(self, database: str, table: str, partition_filter: str | None = None) -> Iterator[PartitionInfo]: ...

    def relocate(self, request: RelocationRequest, progress: ChunkProgress | None = None,
                 confirm: Confirm | None = None) -> RelocationReport:
        """Rewrite locations under request.old_prefix to request.new_prefix within request.scope (only those
        equal to one of request.expected_locations, when given).

        Raises RelocationRefused (and writes nothing) for invalid or unsafe requests, and when `confirm` names
        a change (the run rolled back, or undone).
        """
        ...

    def undo(self, run_id: str) -> RelocationReport:
        """Restore every value run_id changed that still holds what the run wrote."""
        ...

    def history(self) -> Sequence[JournaledRun]: ...

    def update_unit_params(self, database: str, table: str, updates: Sequence[UnitParams]) -> ParamsOutcome:
        """Set and remove parameters of many units (the table itself, or its partitions) in one call,
        batched. Compare-and-set: a unit is written only while its storage location is exactly its
        expected_location (when given); a unit whose location changed or that no longer exists is a
        conflict and left alone; the others are written.

        Raises LookupError (nothing written) when the table does not exist, ValueError when a unit is
        listed twice or its values do not fit the table's partition keys.
        """
        ...

    def set_params(self, database: str, table: str, params: Mapping[str, str],
                   partition_values: Sequence[str] | None = None) -> None:
        """Set table parameters (or a partition's, when partition_values is given), whatever its location:
        update_unit_params with one unit. LookupError when the table or partition does not exist."""
        ...

    def remove_params(self, database: str, table: str, keys: Sequence[str],
                      partition_values: Sequence[str] | None = None) -> None: ...
