"""update_unit_params is the one way hivecat writes table and partition parameters (replica bookkeeping).
This module holds what every backend shares of it: the checks of a batch before anything is written, the
tally of outcomes, and set_params / remove_params as a batch of one unit whose location is not checked.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TypeVar

from hivecat.catalog.model import PARTITION_GONE, TABLE_GONE, ParamsOutcome, UnitParams, UnitRefusal

T = TypeVar("T")


def chunks(items: Sequence[T], size: int) -> Iterator[Sequence[T]]:
    for start in range(0, len(items), size):
        yield items[start:start + size]


def split_units(updates: Sequence[UnitParams], key_count: int,
                qualified: str) -> tuple[list[UnitParams], list[UnitParams]]:
    """(table-level units, partition units), refusing (ValueError, before any write) a batch that names a
    unit twice or partition values that do not fit the table's partition keys: those are the caller's
    mistakes, not changes someone else made."""
    seen: set[tuple[str, ...] | None] = set()
    for unit in updates:
        if unit.partition_values in seen:
            raise ValueError(f"{qualified}: unit {_name(unit.partition_values)} is listed twice")
        seen.add(unit.partition_values)
        if unit.partition_values is not None and len(unit.partition_values) != key_count:
            raise ValueError(f"{qualified} has {key_count} partition keys, not the "
                             f"{len(unit.partition_values)} values of {list(unit.partition_values)}")
    return ([u for u in updates if u.partition_values is None],
            [u for u in updates if u.partition_values is not None])


def _name(values: tuple[str, ...] | None) -> str:
    return "(the table)" if values is None else str(list(values))


@dataclass
class Tally:
    written: int = 0
    conflicts: list[UnitRefusal] = field(default_factory=list)
    failed: list[UnitRefusal] = field(default_factory=list)

    def add(self, other: Tally) -> None:
        self.written += other.written
        self.conflicts += other.conflicts
        self.failed += other.failed

    def outcome(self) -> ParamsOutcome:
        return ParamsOutcome(self.written, tuple(self.conflicts), tuple(self.failed))


class UnitParamsWrites:
    """set_params / remove_params for a catalog that implements update_unit_params."""

    def update_unit_params(self, database: str, table: str, updates: Sequence[UnitParams]) -> ParamsOutcome:
        raise NotImplementedError

    def set_params(self, database: str, table: str, params: Mapping[str, str],
                   partition_values: Sequence[str] | None = None) -> None:
        self._write_one(database, table, UnitParams(_values(partition_values), None, params))

    def remove_params(self, database: str, table: str, keys: Sequence[str],
                      partition_values: Sequence[str] | None = None) -> None:
        self._write_one(database, table, UnitParams(_values(partition_values), None, (), tuple(keys)))

    def _write_one(self, database: str, table: str, unit: UnitParams) -> None:
        """Raises LookupError when the unit does not exist, RuntimeError when it was not written otherwise."""
        outcome = self.update_unit_params(database, table, [unit])
        for values, why in outcome.conflicts + outcome.failed:
            what = f"{database}.{table}" + ("" if values is None else f" partition {list(values)}")
            if why in (PARTITION_GONE, TABLE_GONE):
                raise LookupError(f"{what} does not exist")
            raise RuntimeError(f"parameters of {what} not written: {why}")


def _values(partition_values: Sequence[str] | None) -> tuple[str, ...] | None:
    return None if partition_values is None else tuple(partition_values)
