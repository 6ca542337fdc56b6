"""Would an unplanned failover to a secondary be possible now, and what would it lose? Decided from one listing of
both sides (the checks a sync or a readiness pass made), without I/O here.

- The recovery point: every change on the primary before it is on the secondary. It is the oldest change not
  yet copied (the mtime of the oldest file of a stale unit that its copy lacks), or, with every unit in sync,
  when the listing began. An unplanned failover loses what changed after it.
- Units behind: those not in sync, whose changes after the recovery point an unplanned failover loses; among
  them the units without a copy, which it could not move at all (replication/failover.check_unplanned):
  neither in sync and recorded, nor stale with the last recorded copy still intact.

Measured only when the primary answered: with any unit unreadable the measurement is None, and status keeps
the last one with its time (reconcile/replica_status.py).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone

from hivecat.replication.unit_states import UNREADABLE
from hivecat.replication.verify import UnitCheck


@dataclass(frozen=True)
class Readiness:
    cluster: str
    measured_at: datetime          # when the listing began
    recovery_point: datetime       # every change on the primary before it is on the cluster
    without_copy: tuple[str, ...]  # unit ids an unplanned failover could not move
    units: int                     # units in scope
    behind: tuple[str, ...] = ()   # unit ids not in sync: what changed after the recovery point is in these

    @property
    def failover_ready(self) -> bool:
        """An unplanned failover would move every unit (it may still lose what changed after the point)."""
        return not self.without_copy


def readiness_of(cluster: str, checks: Sequence[UnitCheck], recorded: Mapping[str, str | None],
                 began: datetime) -> Readiness | None:
    """`recorded`: per unit id, the copy fingerprint the catalog records for `cluster` (after this pass's
    bookkeeping, when a sync made the checks). None when a unit could not be read: nothing measured."""
    if any(c.state == UNREADABLE for c in checks):
        return None
    point = began
    without = []
    for check in checks:
        if check.in_sync:
            if check.checksum is None or recorded.get(check.unit.id) != check.checksum:
                without.append(check.unit.id)
            continue
        if check.oldest_change_ns is not None:
            point = min(point, datetime.fromtimestamp(check.oldest_change_ns / 1e9, timezone.utc))
        kept = recorded.get(check.unit.id)
        if check.copy_fingerprint is None or kept != check.copy_fingerprint:
            without.append(check.unit.id)
    return Readiness(cluster, began, point, tuple(without), len(checks),
                     tuple(c.unit.id for c in checks if not c.in_sync))
