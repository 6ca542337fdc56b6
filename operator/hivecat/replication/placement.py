"""Where a table's data is, read from the catalog and the cluster registry: its primary cluster (the
registered cluster whose filesystem, or an alias or previous filesystem of it, holds every unit's location)
and the clusters holding a verified copy of every unit (the replica bookkeeping parameters).

Bookkeeping: a unit (an unpartitioned table, or one partition) copied to cluster C and verified carries the
parameter `hivecat.replica.C.location` (replication/bookkeeping.py). Only the TableReplica reconciler writes
it; routing only reads it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from hivecat.catalog.base import Catalog
from hivecat.catalog.model import TableInfo
from hivecat.locations.prefix import InvalidLocation, is_under
from hivecat.replication.registry import ClusterEntry
from hivecat.replication.bookkeeping import replica_location_key
from hivecat.replication.routing import Placement


def cluster_of(location: str | None, clusters: Mapping[str, ClusterEntry]) -> str | None:
    """The registered cluster whose filesystem (or alias, or previous filesystem) holds `location`."""
    if not location:
        return None
    for name, entry in sorted(clusters.items()):
        for prefix in (entry.filesystem, *entry.aliases, *entry.previous_filesystems):
            try:
                if is_under(location, prefix):
                    return name
            except InvalidLocation:
                continue
    return None


def placement_of(catalog: Catalog, clusters: Mapping[str, ClusterEntry], qualified: str) -> Placement:
    """The placement of `db.table`; a table that does not exist is a Placement with exists=False."""
    database, _, name = qualified.partition(".")
    table = _find(catalog, database, name)
    if table is None:
        return Placement(qualified, exists=False)
    if table.partition_keys:
        units = [(p.location, p.parameters) for p in catalog.list_partitions(database, name)]
    else:
        units = [(table.location, table.parameters)]
    return _placement(qualified, table, units, clusters)


def _find(catalog: Catalog, database: str, name: str) -> TableInfo | None:
    return catalog.get_table(database, name) if database and name else None


def _placement(qualified: str, table: TableInfo, units: Iterable[tuple[str | None, Mapping[str, str]]],
               clusters: Mapping[str, ClusterEntry]) -> Placement:
    homes: set[str | None] = set()
    holding: set[str] | None = None
    for location, parameters in units:
        homes.add(cluster_of(location, clusters))
        copies = {c for c in clusters if parameters.get(replica_location_key(c))}
        holding = copies if holding is None else holding & copies
    if holding is None:  # a partitioned table without partitions: only its own location says where it is
        homes, holding = {cluster_of(table.location, clusters)}, set()
    primary = next(iter(homes)) if len(homes) == 1 else None  # units on several clusters: no single primary
    whole = {primary} if primary is not None else set()
    return Placement(qualified, True, primary, frozenset(whole | holding))
