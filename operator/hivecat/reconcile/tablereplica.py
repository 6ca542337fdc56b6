"""What a TableReplica's sync decides, with no I/O: the clusters its spec names as registered, where a sync
copies to, which clusters the namespace may reach, and figures from a check's results. The pass itself
(plan → check → start or read a copy → record → housekeep, and a switch) runs in act/tablereplica.py; status
is rendered by reconcile/replica_status.py.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime

from hivecat import reasons
from hivecat.copy.owner import Owner
from hivecat.reconcile.policy import Violation
from hivecat.replication.launch import SUCCEEDED, LaunchResult
from hivecat.replication.placement import cluster_of
from hivecat.replication.registry import ClusterEntry
from hivecat.replication.routes import ClusterAccess
from hivecat.replication.verify import UnitCheck
from hivecat.specs.errors import SpecInvalid
from hivecat.specs.tablereplica import TableReplicaSpec

Access = Mapping[str, "ClusterAccess | Violation"]


@dataclass(frozen=True)
class Resolved:
    primary: ClusterEntry
    active: ClusterEntry                  # where spec.active wants the locations
    named: tuple[ClusterEntry, ...]       # primary first, then the secondaries


def resolve_clusters(spec: TableReplicaSpec, clusters: Mapping[str, ClusterEntry], table_location: str | None,
                     known_primary: str | None = None) -> Resolved:
    """The clusters of the spec as registered; SpecInvalid("ClusterNotRegistered" | "PrimaryUnknown").
    `known_primary`: the primary an earlier pass resolved (status.primary), which a failover does not change."""
    primary_name = spec.primary or known_primary or cluster_of(table_location, clusters)
    if primary_name is None:
        raise SpecInvalid(reasons.PRIMARY_UNKNOWN, f"the location of {spec.qualified_table} ({table_location}) is on no "
                                            "registered ClusterStorage: name spec.primary, or register its cluster")
    if primary_name in spec.secondaries:
        raise SpecInvalid(reasons.INVALID_CLUSTERS, f"{spec.qualified_table} is on {primary_name}, which spec.secondaries "
                                             "lists: a cluster cannot be both the primary and a secondary")
    missing = [n for n in (primary_name, *spec.secondaries, spec.active) if n and n not in clusters]
    if missing:
        raise SpecInvalid(reasons.CLUSTER_NOT_REGISTERED, f"ClusterStorage {', '.join(sorted(set(missing)))} is not "
                                                  "registered in the catalog's cluster registry (missing, refused, "
                                                  "or not yet reconciled)")
    active_name = spec.active or primary_name
    return Resolved(clusters[primary_name], clusters[active_name],
                    tuple(clusters[n] for n in (primary_name, *spec.secondaries)))


def owner_of(spec: TableReplicaSpec) -> Owner | None:
    """Who the copies of this TableReplica belong to (recorded in each copy's manifest). A body without a uid
    (a pass run outside Kubernetes, e.g. the demo) makes copies without an owner, as `hivecat distcp` does."""
    return Owner(spec.namespace, spec.name, spec.uid, spec.catalog) if spec.uid else None


def copy_targets(resolved: Resolved, current: ClusterEntry) -> tuple[ClusterEntry, ...]:
    """Where a sync copies to from `current` (where the locations point): every named cluster but itself, and
    never the primary while failed over: its directories are the user's originals, never written."""
    return tuple(c for c in resolved.named if c.name != current.name
                 and not (c.name == resolved.primary.name and current.name != resolved.primary.name))


def unverified(run: LaunchResult, checks: Sequence[UnitCheck]) -> int:
    """Units the run was given that the check does not find in sync, after a run that says it succeeded."""
    given = set(run.units)
    return sum(not c.in_sync for c in checks if c.unit.id in given) if run.outcome == SUCCEEDED else 0


def lag_seconds(checks: Sequence[UnitCheck], now: datetime) -> float:
    pending = [c.oldest_change_ns for c in checks if not c.in_sync and c.oldest_change_ns is not None]
    if not pending:
        return 0.0
    return max(0.0, now.timestamp() - min(pending) / 1e9)


# --- the whole pass ----------------------------------------------------------------------------------------


def access_refused(access: Access | None, cluster: str) -> Violation | None:
    if access is None:
        return None
    found = access.get(cluster)
    if isinstance(found, ClusterAccess):
        return None
    return found if found is not None else Violation(reasons.CLUSTER_NOT_REGISTERED, f"ClusterStorage {cluster} is not "
                                                                             "registered")


def require_access(access: Access | None, cluster: str) -> None:
    denied = access_refused(access, cluster)
    if denied is not None:
        raise SpecInvalid(denied.reason, denied.message)
