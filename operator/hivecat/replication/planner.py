"""A TableReplica's copy plan for one secondary: the table's units in scope, each from its location on the
primary cluster to the same path under the secondary's filesystem (the location engine's anchored rules), as
the copy engine's versioned plan.

A unit is an unpartitioned table or one partition. Units whose location is not under the primary cluster's
filesystem (or one of its aliases) are reported, never copied: hivecat only copies what it can place. With
`most_recent`, only the N partitions with the greatest values (in the order of the partition keys) are in
scope: the way date-partitioned tables are kept hot on a secondary.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from hivecat import reasons
from hivecat.catalog.base import Catalog
from hivecat.catalog.model import PartitionInfo
from hivecat.copy.plan import CopyPlan, Unit, check_overlaps
from hivecat.copy.storage import parse_uri
from hivecat.locations.prefix import rebase
from hivecat.replication.registry import ClusterEntry
from hivecat.replication.bookkeeping import replica_key


class PlanRefused(Exception):
    """The scope cannot be planned (no such table); `reason` is CamelCase, the message in words."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason, self.message = reason, message


@dataclass(frozen=True)
class ReplicaScope:
    database: str
    table: str
    partition_filter: str | None = None  # the location engine's filter grammar
    most_recent: int | None = None


@dataclass(frozen=True)
class UnitRef:
    """A planned unit as the catalog has it: what bookkeeping writes compare and set."""

    values: tuple[str, ...] | None       # partition values; None for an unpartitioned table
    location: str                        # the unit's location as the catalog spells it (compare-and-set)
    parameters: Mapping[str, str]        # its parameters when planned (what is recorded already)


@dataclass(frozen=True)
class ReplicaPlan:
    plan: CopyPlan
    outside: tuple[tuple[str, str | None], ...]  # (unit id, location) of units not on the primary cluster
    refs: Mapping[str, UnitRef] = field(default_factory=dict)  # unit id -> the unit in the catalog

    @property
    def unit_ids(self) -> tuple[str, ...]:
        return tuple(u.id for u in self.plan.units)


def unit_id(database: str, table: str, keys: Sequence[str] = (), values: Sequence[str] = ()) -> str:
    """db.table, or db.table/k1=v1/k2=v2 for a partition (Hive's own partition name)."""
    name = f"{database}.{table}"
    return name + "".join(f"/{k}={v}" for k, v in zip(keys, values))


def plan_replica(catalog: Catalog, scope: ReplicaScope, primary: ClusterEntry,
                 secondary: ClusterEntry) -> ReplicaPlan:
    table = catalog.get_table(scope.database, scope.table)
    if table is None:
        raise PlanRefused(reasons.TABLE_NOT_FOUND, f"table {scope.database}.{scope.table} does not exist")
    if table.partition_keys:
        partitions = list(catalog.list_partitions(scope.database, scope.table, scope.partition_filter))
        if scope.most_recent is not None:
            partitions = sorted(partitions, key=_values)[-scope.most_recent:] if scope.most_recent > 0 else []
        units = [(unit_id(scope.database, scope.table, table.partition_keys, p.values), p.location,
                  tuple(p.values), p.parameters) for p in sorted(partitions, key=_values)]
    else:
        units = [(unit_id(scope.database, scope.table), table.location, None, table.parameters)]
    planned: list[Unit] = []
    outside: list[tuple[str, str | None]] = []
    refs: dict[str, UnitRef] = {}
    for uid, location, values, parameters in units:
        target = on_secondary(location, primary, secondary)
        if target is None or location is None:
            outside.append((uid, location))
            continue
        planned.append(Unit(uid, parse_uri(location, f"unit {uid!r}: source"),
                            parse_uri(target, f"unit {uid!r}: target"), adopt=_recorded(parameters, secondary, target)))
        refs[uid] = UnitRef(values, location, dict(parameters))
    check_overlaps(planned)
    return ReplicaPlan(CopyPlan(tuple(planned)), tuple(outside), refs)


def _recorded(parameters: Mapping[str, str], secondary: ClusterEntry, target: str) -> str | None:
    """The fingerprint the catalog's bookkeeping recorded for the copy at `target`, if it names that copy: a copy
    made before copies had owners is adopted only when it is exactly the one recorded (copy/owner.py)."""
    if parameters.get(replica_key(secondary.name, "location")) != target:
        return None
    return parameters.get(replica_key(secondary.name, "checksum")) or None


def _values(partition: PartitionInfo) -> tuple[str, ...]:
    return tuple(partition.values)


def on_secondary(location: str | None, primary: ClusterEntry, secondary: ClusterEntry) -> str | None:
    """`location` under the secondary's filesystem, rebased from whichever of the primary's own prefixes holds it."""
    if not location:
        return None
    for prefix in (primary.filesystem, *primary.aliases):
        moved = rebase(location, prefix, secondary.filesystem)
        if moved is not None:
            return moved
    return None
