"""Moving a table's locations (`SDS.LOCATION` of the table and its partitions) from the cluster they point at to
another one holding complete, verified copies: failover to a secondary, failback to the primary.

The gate, checked at switch time from the data (replication/verify.py), not from bookkeeping alone:
- every unit of the table under the current cluster is in scope (a partition outside spec.partitions would
  move with the table and point at a copy that does not exist);
- failover (to a cluster holding copies): every unit's copy there is whole and current against the original;
- failback (to the primary, whose directories are the user's originals): every original is still what the
  copy on the current cluster was made from, and no unit exists only on the current cluster (written while
  failed over): copying changes back into new directories on the primary is not built, and the user's
  original directories are never written. Failback is refused until then, with the units named.

The switch itself is the location engine's relocation of the table (scope: that table, every prefix of the
current cluster), journaled and undoable like a drift repair, on every backend of the catalog.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from hivecat.catalog.base import Catalog
from hivecat.catalog.model import RelocationRefused, RelocationReport, RelocationRequest, Scope
from hivecat.copy.plan import Unit
from hivecat.copy.storage import Storage
from hivecat.reconcile.registry import ClusterEntry
from hivecat.replication.planner import PlanRefused, ReplicaScope, plan_replica
from hivecat.replication.verify import check_units

SHOWN = 5


class SwitchRefused(PlanRefused):
    """The switch would point a unit at data that is not there or not current; nothing was written."""


@dataclass(frozen=True)
class Switch:
    source: ClusterEntry   # where the locations point now
    target: ClusterEntry   # where they are to point
    failback: bool         # the target is the primary: its directories are the originals


def check_switch(catalog: Catalog, scope: ReplicaScope, switch: Switch, storage: Storage, verify: str) -> int:
    """Refuse (SwitchRefused) unless every unit may move; returns the number of units that move."""
    word = "failback" if switch.failback else "failover"
    reason = "FailbackRefused" if switch.failback else "FailoverRefused"
    whole = plan_replica(catalog, ReplicaScope(scope.database, scope.table), switch.source, switch.target)
    planned = plan_replica(catalog, scope, switch.source, switch.target)
    left_out = sorted(set(whole.unit_ids) - set(planned.unit_ids))
    if left_out:
        raise SwitchRefused(reason, f"{word} moves every location of the table, and {len(left_out)} units under "
                                    f"{switch.source.name} are outside spec.partitions (no copy is kept for them): "
                                    f"{_first(left_out)}")
    units: Sequence[Unit] = planned.plan.units
    if switch.failback:  # the copies (with their manifests) are on the source; the originals on the target
        units = [Unit(u.id, u.target, u.source) for u in units]
    checks = check_units(units, storage, verify)
    missing = [f"{c.unit.id}: {c.reason}" for c in checks if not c.in_sync]
    if missing:
        where = (f"no original on {switch.target.name} matches the copy on {switch.source.name}" if switch.failback
                 else f"not whole and current on {switch.target.name}")
        raise SwitchRefused(reason, f"{word} to {switch.target.name} refused, nothing was changed: {len(missing)} "
                                    f"of {len(checks)} units {where}: {_first(missing)}")
    return len(checks)


def switch_locations(catalog: Catalog, scope: ReplicaScope, switch: Switch) -> list[RelocationReport]:
    """Relocate the table from each of the source cluster's prefixes to the target's filesystem (journaled)."""
    reports = []
    for prefix in (switch.source.filesystem, *switch.source.aliases):
        request = RelocationRequest(prefix, switch.target.filesystem, Scope(scope.database, scope.table),
                                    allow_scheme_change=True)
        try:
            dry = catalog.relocate(RelocationRequest(**{**request.__dict__, "dry_run": True}))
        except RelocationRefused as refused:
            raise SwitchRefused("RelocationRefused", str(refused)) from None
        if not dry.rewritten:
            continue
        try:
            reports.append(catalog.relocate(request))
        except RelocationRefused as refused:
            raise SwitchRefused("RelocationRefused", str(refused)) from None
    return reports


def _first(items: Sequence[str]) -> str:
    more = f" (and {len(items) - SHOWN} more)" if len(items) > SHOWN else ""
    return "; ".join(items[:SHOWN]) + more
