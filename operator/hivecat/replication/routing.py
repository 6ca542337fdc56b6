"""Which cluster can run a query, by Hive's multi-datacenter rules, from where each table's data is.

A query that writes runs on its output table's primary cluster; a query that only reads runs on a cluster that
holds every partition of every input, trying each input's primary cluster in turn. A cluster holds a table when
the table is wholly there: it is the table's primary cluster (every unit's location under it) or every unit has
a verified copy there (the replica bookkeeping). An output table that does not exist yet does not count. A
cluster asked for by name is only checked against the same rules. Pure: the placements come from
replication/placement.py.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from hivecat import reasons


@dataclass(frozen=True)
class Placement:
    """Where one table's data is."""

    table: str                      # db.table
    exists: bool = True
    primary: str | None = None      # the cluster whose filesystem holds the table's locations (None: none does)
    holding: frozenset[str] = frozenset()  # clusters that hold every unit in scope (the primary included)


@dataclass(frozen=True)
class Route:
    cluster: str | None             # None: no cluster can run it
    reason: str                     # OutputPrimary | InputPrimary | Forced | NoCluster | NotOnCluster | ...
    message: str


def route(inputs: Sequence[Placement], output: Placement | None = None, cluster: str | None = None) -> Route:
    missing_input = next((p for p in inputs if not p.exists), None)
    if missing_input is not None:
        return Route(None, reasons.TABLE_NOT_FOUND, f"input table {missing_input.table} does not exist")
    writes_to = output if output is not None and output.exists else None
    if writes_to is not None and writes_to.primary is None:
        return Route(None, reasons.OUTPUT_WITHOUT_PRIMARY, f"output table {writes_to.table} is on no registered cluster")
    if cluster is not None:
        if writes_to is not None and writes_to.primary != cluster:
            return Route(None, reasons.NOT_OUTPUT_PRIMARY, f"output table {writes_to.table} is written on its primary "
                                                   f"cluster {writes_to.primary}, not on {cluster}")
        lacking = _lacking(inputs, cluster)
        if lacking:
            return Route(None, reasons.NOT_ON_CLUSTER, f"{cluster} does not hold {_names(lacking)}")
        return Route(cluster, reasons.FORCED, f"{cluster} holds every input" + _writing(writes_to))
    if writes_to is not None:
        target = writes_to.primary
        assert target is not None
        lacking = _lacking(inputs, target)
        if lacking:
            return Route(None, reasons.NO_CLUSTER, f"output table {writes_to.table} is written on its primary cluster "
                                            f"{target}, which does not hold {_names(lacking)}")
        return Route(target, reasons.OUTPUT_PRIMARY, f"{target} is the primary cluster of output table {writes_to.table} "
                                              "and holds every input")
    tried: list[str] = []
    for candidate in (p.primary for p in inputs):
        if candidate is None or candidate in tried:
            continue
        tried.append(candidate)
        if not _lacking(inputs, candidate):
            return Route(candidate, reasons.INPUT_PRIMARY, f"{candidate} holds every input")
    why = "; ".join(f"{c} lacks {_names(_lacking(inputs, c))}" for c in tried) or "no input is on a registered cluster"
    return Route(None, reasons.NO_CLUSTER, f"no cluster holds every input: {why}")


def _lacking(inputs: Sequence[Placement], cluster: str) -> list[Placement]:
    return [p for p in inputs if cluster not in p.holding]


def _names(placements: Sequence[Placement]) -> str:
    return ", ".join(p.table for p in placements)


def _writing(output: Placement | None) -> str:
    return f" and is the primary cluster of output table {output.table}" if output is not None else ""
