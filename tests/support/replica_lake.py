"""A TableReplica's world in memory for unit tests: local directories as clusters, the real copy engine in-process
as the launcher (or one that lies), and a catalog of one partitioned table that writes parameters
compare-and-set and relocates as the location engine does."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timezone
from pathlib import Path

import pytest

from hivecat.catalog.model import (CHANGED_AFTER_CHECK, ObjectKind, ParamsOutcome, PartitionInfo, Refusal,
                                   RelocationRefused, RelocationReport, RelocationRequest, TableInfo, UnitParams)
from hivecat.copy.copier import Copier, CopyOptions
from hivecat.copy.plan import CopyPlan
from hivecat.copy.storage import Storage
from hivecat.locations.prefix import rebase
from hivecat.reconcile.clusterstorage import Backend
from hivecat.replication.registry import ClusterEntry
from hivecat.act.tablereplica import sync_pass
from hivecat.reconcile.failover_readiness import remembered
from hivecat.replication.launch import FAILED, SUCCEEDED, LaunchResult
from hivecat.specs.tablereplica import CopySettings, parse_table_replica

NOW = datetime(2026, 11, 25, 12, 0, tzinfo=timezone.utc)


class MemoryCatalog:
    """One partitioned table; update_unit_params compares each unit's location before writing."""

    def __init__(self, location: str, days: Sequence[str]) -> None:
        self.table = TableInfo("sales", "events", location, partition_keys=("dt",))
        self.partitions = {(d,): PartitionInfo("sales", "events", (d,), f"{location}/dt={d}") for d in days}
        self.writes: list[UnitParams] = []
        self.relocations: list[RelocationRequest] = []

    def get_table(self, database: str, table: str) -> TableInfo | None:
        return self.table if (database, table) == ("sales", "events") else None

    def list_partitions(self, database: str, table: str, partition_filter: str | None = None):
        return iter(sorted(self.partitions.values(), key=lambda p: p.values))

    def relocate(self, request: RelocationRequest, progress=None, confirm=None) -> RelocationReport:
        """The location engine's effect on this one table: every location under old_prefix moved (only those in
        expected_locations, when given); a change `confirm` names puts everything back and refuses the run."""
        self.relocations.append(request)
        report = RelocationReport(f"run-{len(self.relocations)}", "memory", request.old_prefix, request.new_prefix,
                                  request.dry_run)
        before = (self.table, dict(self.partitions))
        expected = request.expected_locations

        def moved_to(location: str) -> str | None:
            if expected is not None and location not in expected:
                return None
            return rebase(location, request.old_prefix, request.new_prefix)
        moved = 0
        new_table = moved_to(self.table.location)
        if new_table is not None:
            moved += 1
            if not request.dry_run:
                self.table = TableInfo("sales", "events", new_table, partition_keys=("dt",),
                                       parameters=self.table.parameters)
        for values, found in list(self.partitions.items()):
            new = moved_to(found.location)
            if new is not None:
                moved += 1
                if not request.dry_run:
                    self.partitions[values] = PartitionInfo("sales", "events", values, new, found.parameters)
        changed = list(confirm()) if confirm is not None and not request.dry_run else []
        if changed:
            self.table, self.partitions = before[0], before[1]
            raise RelocationRefused([Refusal(CHANGED_AFTER_CHECK, "; ".join(changed))])
        report.count(ObjectKind.PARTITION).rewritten = moved
        return report

    def update_unit_params(self, database: str, table: str, updates: Sequence[UnitParams]) -> ParamsOutcome:
        conflicts = []
        for unit in updates:
            if unit.partition_values is None:  # the table itself
                t = self.table
                self.table = TableInfo(t.database, t.name, t.location, partition_keys=t.partition_keys,
                                       parameters=unit.applied(t.parameters))
                self.writes.append(unit)
                continue
            found = self.partitions.get(unit.partition_values)
            if found is None:
                conflicts.append((unit.partition_values, "partition no longer exists"))
                continue
            why = unit.conflict(found.location)
            if why:
                conflicts.append((unit.partition_values, why))
                continue
            self.partitions[unit.partition_values] = PartitionInfo(
                "sales", "events", found.values, found.location, unit.applied(found.parameters))
            self.writes.append(unit)
        return ParamsOutcome(len(updates) - len(conflicts), tuple(conflicts))

    def params(self, day: str) -> dict[str, str]:
        return self.partitions[(day,)].parameters


class InProcess:
    """The real copy engine, in this process, as a launcher; records the plans it got."""

    def __init__(self) -> None:
        self.plans: list[CopyPlan] = []

    def observe(self) -> None:
        return None

    def start(self, plan: CopyPlan, copy: CopySettings) -> LaunchResult:
        self.plans.append(plan)
        summary = Copier(plan, CopyOptions(verify=copy.verify, delete=True), Storage(), engine="local").run()
        totals = summary.totals()
        return LaunchResult(SUCCEEDED if summary.status == "succeeded" else FAILED, "", summary.run_id,
                            totals["files_copied"], totals["bytes_copied"])


class Liar:
    """Says it succeeded; copies nothing (a Job completed by kwok, say)."""

    def __init__(self) -> None:
        self.runs = 0

    def observe(self) -> None:
        return None

    def start(self, plan: CopyPlan, copy: CopySettings) -> LaunchResult:
        self.runs += 1
        return LaunchResult(SUCCEEDED, "")


class Ports:
    def __init__(self, catalog: MemoryCatalog, launcher) -> None:
        self.catalog, self.launcher_ = catalog, launcher

    def open(self, backend: Backend):
        return self.catalog

    def launcher(self, secondary: ClusterEntry):
        return self.launcher_

    def storage(self) -> Storage:
        return Storage()


@pytest.fixture()
def lake(tmp_path: Path):
    """(cluster roots, clusters, catalog, the table's directory on main) with three partitions on main."""
    roots = {name: tmp_path / name for name in ("main", "dr1", "dr2")}
    for root in roots.values():
        root.mkdir()
    days = ["2026-11-01", "2026-11-02", "2026-11-03"]
    table_dir = roots["main"] / "sales.db" / "events"
    for day in days:
        write_partition(table_dir, day)
    clusters = {name: ClusterEntry(name, f"file://{root}") for name, root in roots.items()}
    catalog = MemoryCatalog(f"file://{table_dir}", days)
    return roots, clusters, catalog, table_dir


def write_partition(table_dir: Path, day: str, files: int = 2) -> None:
    part = table_dir / f"dt={day}"
    part.mkdir(parents=True, exist_ok=True)
    for i in range(files):
        (part / f"part-{i}.parquet").write_bytes(f"{day}-{i}".encode() * 100)


def replica(**spec) -> object:
    body = {"metadata": {"name": "events", "namespace": "ns"},
            "spec": {"catalogRef": {"name": "lake"}, "database": "sales", "table": "events",
                     "primary": "main", "secondaries": ["dr1", "dr2"], **spec}}
    return parse_table_replica(body)


def run(spec, catalog, clusters, launcher, run_id="r1", now=NOW, status=None):
    """One pass; `status`: what earlier passes left in the TableReplica's status (a dict, as the API has it)."""
    backend = Backend("Database", None)  # type: ignore[arg-type]  (the fake ports ignore it)
    return sync_pass(spec, [backend], clusters, Ports(catalog, launcher), run_id, clock=lambda: now,
                     memory=remembered(status))




def add_partition(catalog: MemoryCatalog, directory: Path, day: str) -> None:
    catalog.partitions[(day,)] = PartitionInfo("sales", "events", (day,), f"file://{directory}/dt={day}")


def locations(catalog: MemoryCatalog) -> list[str]:
    return [catalog.table.location, *(p.location for p in catalog.list_partitions("sales", "events"))]
