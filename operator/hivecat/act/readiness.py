"""A TableReplica's readiness check: for each secondary, whether an unplanned failover to it would be possible now
and what it would lose (replication/readiness.py), from one listing of both sides. It copies nothing and writes
no bookkeeping, so it runs on its own interval (spec.schedule.readinessInterval), also while syncs are suspended.
Every sync measures the same from its own checks; this keeps the figures current between syncs and while
they are paused. A secondary that cannot be measured (its primary does not answer) keeps its last entry."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from sqlalchemy.exc import SQLAlchemyError

from hivecat.act.tablereplica import ReplicaPorts
from hivecat.apierrors import SecretUnavailable
from hivecat.catalog.base import Catalog
from hivecat.catalog.connect import CatalogUnavailable
from hivecat.copy.errors import CopyInputError
from hivecat.locations.partition_filter import FilterError
from hivecat.reconcile.clusterstorage import Backend
from hivecat.reconcile.failover_readiness import Remembered, readiness_status
from hivecat.reconcile.tablereplica import Access, access_refused, copy_targets, owner_of, resolve_clusters
from hivecat.replication.bookkeeping import replica_key
from hivecat.replication.placement import cluster_of
from hivecat.replication.planner import PlanRefused, ReplicaScope, plan_replica
from hivecat.replication.readiness import Readiness, readiness_of
from hivecat.replication.registry import ClusterEntry
from hivecat.replication.verify import check_units
from hivecat.specs.errors import SpecInvalid
from hivecat.specs.tablereplica import TableReplicaSpec


@dataclass
class ReadinessOutcome:
    measured: list[Readiness] = field(default_factory=list)
    status: list[dict[str, Any]] = field(default_factory=list)  # status.readiness
    error: str | None = None  # why nothing could be measured (the catalog, the spec); status stays as it was


def readiness_pass(spec: TableReplicaSpec, backends: Sequence[Backend], clusters: Mapping[str, ClusterEntry],
                   ports: ReplicaPorts, *, memory: Remembered, access: Access | None = None,
                   known_primary: str | None = None, clock: Callable[[], datetime]) -> ReadinessOutcome:
    """Measure each secondary the table's locations would sync to now, through the first backend."""
    out = ReadinessOutcome()
    catalog: Catalog | None = None
    try:
        catalog = ports.open(backends[0])
        table = catalog.get_table(spec.database, spec.table)
        if table is None:
            raise LookupError(f"table {spec.qualified_table} does not exist")
        resolved = resolve_clusters(spec, clusters, table.location, known_primary)
        current_name = cluster_of(table.location, clusters)
        if current_name is None or current_name not in {c.name for c in resolved.named}:
            raise LookupError(f"the location of {spec.qualified_table} is on none of the clusters it names")
        targets = copy_targets(resolved, clusters[current_name])
        for target in targets:
            if access_refused(access, target.name) is None and access_refused(access, current_name) is None:
                measured = _measure(spec, catalog, clusters[current_name], target, ports, clock)
                if measured is not None:
                    out.measured.append(measured)
        out.status = readiness_status(memory.readiness, out.measured, [t.name for t in targets])
    except (CatalogUnavailable, SecretUnavailable, SpecInvalid, PlanRefused) as error:
        out.error = f"{error.reason}: {error.message}"
    except (FilterError, LookupError, ValueError, OSError, CopyInputError, SQLAlchemyError) as error:
        out.error = f"{type(error).__name__}: {str(error).splitlines()[0] if str(error) else ''}"
    finally:
        close = getattr(catalog, "close", None)
        if close is not None:
            close()
    return out


def _measure(spec: TableReplicaSpec, catalog: Catalog, source: ClusterEntry, target: ClusterEntry,
             ports: ReplicaPorts, clock: Callable[[], datetime]) -> Readiness | None:
    began = clock()
    scope = ReplicaScope(spec.database, spec.table, spec.partition_filter, spec.most_recent)
    planned = plan_replica(catalog, scope, source, target)
    checks = check_units(planned.plan.units, ports.storage(), spec.copy.verify, owner=owner_of(spec))
    key = replica_key(target.name, "checksum")
    return readiness_of(target.name, checks, {uid: ref.parameters.get(key) for uid, ref in planned.refs.items()},
                        began)
