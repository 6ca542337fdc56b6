"""Replica bookkeeping: where a unit's verified copies are, kept in the catalog itself as parameters of the
table (unpartitioned) or partition, so any client can see them and `hivecat route` can read them:

    hivecat.replica.<cluster>.location   the copy's directory on that cluster
    hivecat.replica.<cluster>.syncedAt   when a copy with this content was first verified (RFC 3339)
    hivecat.replica.<cluster>.checksum   the fingerprint of the copy's manifest (replication/verify.py)

Written only for units verified in sync, and only while the unit's own location is still the one the copy
was made from (compare-and-set in the catalog). A unit not known to be in sync loses its `location`: a copy
that may no longer match the source is not one a query is routed to. Its `checksum` and `syncedAt` stay while
they still describe a whole copy there -- the unit is out of date but its last verified copy is intact, or the
source could not be read at all -- because that copy is what an unplanned failover takes when the primary is
gone (replication/verify.py:check_copies judges it from itself). They go with the copy: when it is replaced,
damaged, someone else's, or its source unit no longer exists. `SDS.LOCATION` is never touched here.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from hivecat.catalog.model import UnitParams
from hivecat.replication.unit_states import STALE, UNREADABLE

if TYPE_CHECKING:  # not at run time: `hivecat route` reads the keys without loading the copy engine
    from hivecat.replication.planner import UnitRef
    from hivecat.replication.verify import UnitCheck

REPLICA_PREFIX = "hivecat.replica."
FIELDS = ("location", "syncedAt", "checksum")
# On the table: "true" while the table's locations point elsewhere, for writers that check before writing
# there (after a failover, the old primary's directories). Nothing enforces it: hivecat cannot stop a
# writer that writes to a path directly.
READ_ONLY = "readOnly"


def replica_key(cluster: str, field: str) -> str:
    return f"{REPLICA_PREFIX}{cluster}.{field}"


def replica_location_key(cluster: str) -> str:
    return replica_key(cluster, "location")


def replica_keys(cluster: str) -> tuple[str, ...]:
    """Every key hivecat writes for `cluster`, on partitions and on the table."""
    return tuple(replica_key(cluster, f) for f in (*FIELDS, READ_ONLY))


def read_only_marks(left: str, now_active: str) -> UnitParams:
    """The table-level change after a switch from `left` to `now_active`: `left` is marked read-only."""
    return UnitParams(None, None, {replica_key(left, READ_ONLY): "true"}, (replica_key(now_active, READ_ONLY),))


@dataclass(frozen=True)
class Bookkeeping:
    updates: tuple[UnitParams, ...]
    recorded: int  # units newly recorded (or re-recorded with new content)
    cleared: int   # units no longer recorded as in sync (their location removed)


def bookkeeping(cluster: str, refs: Mapping[str, UnitRef], checks: Iterable[UnitCheck], now: str) -> Bookkeeping:
    """The parameter writes that make the catalog say what `checks` found on `cluster`; none for a unit whose
    recorded keys already say it (a no-change sync writes nothing)."""
    unit_keys = tuple(replica_key(cluster, f) for f in FIELDS)
    location_key, synced_key, checksum_key = unit_keys
    updates: list[UnitParams] = []
    recorded = cleared = 0
    for check in checks:
        ref = refs[check.unit.id]
        current = ref.parameters
        if check.in_sync:
            wanted = {location_key: check.unit.target.uri, checksum_key: check.checksum or ""}
            if all(current.get(k) == v for k, v in wanted.items()) and current.get(synced_key):
                continue
            updates.append(UnitParams(ref.values, ref.location, {**wanted, synced_key: now}))
            recorded += 1
        elif check.adopting:
            continue  # the keys name the copy being adopted: kept until the next copy records its owner
        elif _last_copy_intact(check, current.get(checksum_key)):
            if location_key in current:
                updates.append(UnitParams(ref.values, ref.location, {}, (location_key,)))
                cleared += 1
        elif any(k in current for k in (location_key, synced_key, checksum_key)):
            updates.append(UnitParams(ref.values, ref.location, {}, unit_keys))
            cleared += 1
    return Bookkeeping(tuple(updates), recorded, cleared)


def _last_copy_intact(check: UnitCheck, recorded: str | None) -> bool:
    """Whether the copy the keys recorded may still be whole: out of date but the same copy (its manifest's
    fingerprint unchanged and current), or not known at all (the source, or the copy, could not be read)."""
    if recorded is None:
        return False
    return check.state == UNREADABLE or (check.state == STALE and check.copy_fingerprint == recorded)


def forget(clusters: Sequence[str], units: Sequence[tuple[tuple[str, ...] | None, Mapping[str, str]]]
           ) -> list[UnitParams]:
    """Removal of every key of `clusters` from the units (values, parameters) that carry any, one update per unit:
    when a TableReplica goes. Locations are not compared: the keys go whatever the unit's location."""
    keys = tuple(k for cluster in clusters for k in replica_keys(cluster))
    return [UnitParams(values, None, {}, tuple(k for k in keys if k in parameters))
            for values, parameters in units if any(k in parameters for k in keys)]
