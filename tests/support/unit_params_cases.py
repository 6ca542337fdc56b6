"""The replica bookkeeping cases every catalog backend must pass (update_unit_params), run by the SQL, Thrift
and Glue integration tests on a lake of their own: `events` with N partitions (each with a parameter
`keep`), `dim` unpartitioned.

Planning reads the partitions; then someone else moves one partition and drops another; then every unit
(2,000 in a fresh lake) is recorded in one call: the moved one and the dropped one are conflicts and not written, every other
one is, and nothing else changes. Then a table-level unit, current and stale, and the removal of the keys.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

import pytest

from hivecat.catalog.base import Catalog
from hivecat.catalog.model import PARTITION_GONE, PartitionInfo, UnitParams

N = 2000
KEYS = ("hivecat.replica.c2.location", "hivecat.replica.c2.syncedAt", "hivecat.replica.c2.checksum")
SYNCED = "2026-11-02T03:04:05Z"


def partition_values(i: int) -> tuple[str, str]:
    """Two keys, so lookups go by more than one value; dt repeats, n does not."""
    return f"2026-{1 + (i // 28) % 12:02d}-{1 + i % 28:02d}", str(i)


def copy_of(location: str) -> str:
    return location.replace("://", "://c2-copy.", 1)


def recorded(p: PartitionInfo) -> UnitParams:
    assert p.location is not None
    return UnitParams(p.values, p.location, {KEYS[0]: copy_of(p.location), KEYS[1]: SYNCED,
                                             KEYS[2]: f"sha256:{p.values[1]}"})


@dataclass
class Lake:
    catalog: Catalog
    database: str
    move: Callable[[tuple[str, ...]], str]   # someone else moves a partition; returns its new location
    drop: Callable[[tuple[str, ...]], None]  # someone else drops a partition
    dropped: list[tuple[str, ...]] = field(default_factory=list)  # by record_everything


def replica_params(params: dict[str, str]) -> dict[str, str]:
    return {k: v for k, v in params.items() if k.startswith("hivecat.replica.")}


def record_everything(lake: Lake) -> float:
    """The call for every partition (N in a fresh lake), one of them moved and one dropped after planning;
    returns the seconds the call took."""
    cat, db = lake.catalog, lake.database
    planned = sorted(cat.list_partitions(db, "events"), key=lambda p: int(p.values[1]))
    n = len(planned)
    moved, dropped = planned[10], planned[n - 7]
    now_at = lake.move(moved.values)
    lake.drop(dropped.values)
    lake.dropped.append(dropped.values)

    began = time.monotonic()
    outcome = cat.update_unit_params(db, "events", [recorded(p) for p in planned])
    seconds = time.monotonic() - began

    assert (outcome.written, outcome.failed) == (n - 2, ())
    assert dict(outcome.conflicts) == {
        moved.values: f"location is now {now_at!r}, expected {moved.location!r}", dropped.values: PARTITION_GONE}
    after = {p.values: p for p in cat.list_partitions(db, "events")}
    assert len(after) == n - 1 and dropped.values not in after
    assert replica_params(after[moved.values].parameters) == {} and after[moved.values].location == now_at
    for p in planned:
        if p.values in (moved.values, dropped.values):
            continue
        got = after[p.values]
        assert got.location == p.location and got.parameters.get("keep") == "1"
        assert replica_params(got.parameters) == {KEYS[0]: copy_of(p.location or ""), KEYS[1]: SYNCED,
                                                  KEYS[2]: f"sha256:{p.values[1]}"}
    return seconds


def table_level_and_removal(lake: Lake) -> None:
    """After record_everything: an unpartitioned table's own parameters, then the keys removed."""
    cat, db = lake.catalog, lake.database
    dim = cat.get_table(db, "dim")
    assert dim is not None and dim.location
    written = cat.update_unit_params(db, "dim", [UnitParams(None, dim.location, {KEYS[0]: copy_of(dim.location)})])
    assert (written.written, written.conflicts) == (1, ())
    stale = cat.update_unit_params(db, "dim", [UnitParams(None, f"{dim.location}-before", {KEYS[1]: SYNCED})])
    assert stale.written == 0 and stale.conflicts == (
        (None, f"location is now {dim.location!r}, expected {dim.location + '-before'!r}"),)
    dim_after = cat.get_table(db, "dim")
    assert dim_after is not None and replica_params(dim_after.parameters) == {KEYS[0]: copy_of(dim.location)}

    units = [UnitParams(p.values, None, remove=KEYS) for p in cat.list_partitions(db, "events")]
    gone = lake.dropped[-1]
    removed = cat.update_unit_params(db, "events", units + [UnitParams(gone, None, remove=KEYS)])
    assert (removed.written, removed.conflicts) == (len(units), ((gone, PARTITION_GONE),))
    assert all(replica_params(p.parameters) == {} and p.parameters.get("keep") == "1"
               for p in cat.list_partitions(db, "events"))
    cat.remove_params(db, "dim", list(KEYS))
    dim_after = cat.get_table(db, "dim")
    assert dim_after is not None and replica_params(dim_after.parameters) == {}
    with pytest.raises(LookupError, match="does not exist"):
        cat.set_params(db, "events", {KEYS[0]: "x"}, partition_values=gone)
