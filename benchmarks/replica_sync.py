"""TableReplica sync, first and no-change: the operator's pass for one secondary (plan from the catalog, check
every unit on the secondary against the source, bookkeeping) vs the copy engine's own run of the same plan
(`Copier.run`, which lists both sides and reads every manifest too).

A partitioned table (by default 1,000 partitions of 4 files of 64 KiB) on a local directory. The first sync
copies every partition to a second directory (the copy engine in-process, as a Local copy runs it) and records
them: `first_sync_s`, and per partition. Then each contender runs over the unchanged data, alternating, median
of `--rounds`. The catalog is an in-memory one with the planner's and bookkeeping's calls (the metastore's own
read time is not the operator's overhead; the route and relocate benchmarks time real metastores).
`overhead_ratio` = operator pass / engine rerun: the operator's price for trusting the data rather than an exit
code (target <= 1.2). A no-change pass that launched a copy or wrote a parameter would fail the run.

    python benchmarks/replica_sync.py                                    # 1,000 partitions x 4 x 64 KiB
    python benchmarks/replica_sync.py --partitions 100000 --files 1 --file-bytes 1024 --rounds 3
    python benchmarks/replica_sync.py --small                            # 50 partitions, seconds
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import tempfile
import time
from collections.abc import Sequence
from datetime import datetime, timezone
from pathlib import Path

from hivecat.catalog.model import ParamsOutcome, PartitionInfo, TableInfo, UnitParams
from hivecat.copy.copier import Copier, CopyOptions
from hivecat.copy.storage import Storage
from hivecat.replication.registry import ClusterEntry
from hivecat.act.tablereplica import sync_secondary
from hivecat.replication.launch import SUCCEEDED, LaunchResult
from hivecat.replication.planner import ReplicaScope, plan_replica
from hivecat.specs.tablereplica import parse_table_replica



class Catalog:
    """One partitioned table in memory; counts parameter writes."""

    def __init__(self, location: str, days: Sequence[str]) -> None:
        self.table = TableInfo("sales", "events", location, partition_keys=("dt",))
        self.partitions = {(d,): PartitionInfo("sales", "events", (d,), f"{location}/dt={d}") for d in days}
        self.written = 0

    def get_table(self, database: str, table: str) -> TableInfo:
        return self.table

    def list_partitions(self, database: str, table: str, partition_filter: str | None = None):
        return iter(self.partitions.values())

    def update_unit_params(self, database: str, table: str, updates: Sequence[UnitParams]) -> ParamsOutcome:
        for unit in updates:
            found = self.partitions[unit.partition_values]
            self.partitions[unit.partition_values] = PartitionInfo(
                "sales", "events", found.values, found.location, unit.applied(found.parameters))
        self.written += len(updates)
        return ParamsOutcome(len(updates))


class EngineInProcess:
    def __init__(self) -> None:
        self.launched = 0

    def observe(self) -> None:
        return None

    def start(self, plan, copy) -> LaunchResult:
        self.launched += 1
        summary = Copier(plan, CopyOptions(delete=True), Storage(), engine="local").run()
        return LaunchResult(SUCCEEDED if summary.status == "succeeded" else "Failed", "", summary.run_id)


class Ports:
    def __init__(self, launcher: EngineInProcess) -> None:
        self.launcher_ = launcher

    def launcher(self, secondary):
        return self.launcher_

    def storage(self) -> Storage:
        return Storage()


def build(root: Path, partitions: int, files: int, file_bytes: int) -> tuple[Catalog, ClusterEntry, ClusterEntry]:
    days = [f"p{i:06d}" for i in range(partitions)]
    table = root / "main" / "sales.db" / "events"
    payload = b"x" * file_bytes
    for day in days:
        unit = table / f"dt={day}"
        unit.mkdir(parents=True)
        for n in range(files):
            (unit / f"part-{n:05d}.parquet").write_bytes(payload)
    (root / "dr").mkdir()
    return (Catalog(f"file://{table}", days), ClusterEntry("main", f"file://{root / 'main'}"),
            ClusterEntry("dr", f"file://{root / 'dr'}"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--small", action="store_true", help="50 partitions")
    parser.add_argument("--partitions", type=int, help="partitions in the table (default 1,000)")
    parser.add_argument("--files", type=int, default=4, help="files per partition (default 4)")
    parser.add_argument("--file-bytes", type=int, default=64 * 1024, help="bytes per file (default 64 KiB)")
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    partitions = args.partitions or (50 if args.small else 1000)
    spec = parse_table_replica({"metadata": {"name": "events", "namespace": "bench"},
                                "spec": {"catalogRef": {"name": "c"}, "database": "sales", "table": "events",
                                         "primary": "main", "secondaries": ["dr"]}})
    with tempfile.TemporaryDirectory(prefix="hivecat-replica-bench-") as scratch:
        catalog, primary, secondary = build(Path(scratch), partitions, args.files, args.file_bytes)
        launcher = EngineInProcess()
        now = datetime.now(timezone.utc)
        began = time.perf_counter()
        first, _ = sync_secondary(spec, [catalog], primary, secondary, Ports(launcher), now, lambda: False)
        first_s = time.perf_counter() - began
        assert first.units_in_sync == partitions and launcher.launched == 1, first
        plan = plan_replica(catalog, ReplicaScope("sales", "events"), primary, secondary).plan
        writes_before = catalog.written
        operator_s, engine_s = [], []
        for _ in range(args.rounds):
            began = time.perf_counter()
            again, _ = sync_secondary(spec, [catalog], primary, secondary, Ports(launcher), now, lambda: False)
            operator_s.append(time.perf_counter() - began)
            assert again.units_in_sync == partitions and again.launch is None, again
            began = time.perf_counter()
            summary = Copier(plan, CopyOptions(delete=True), Storage(), engine="local").run()
            engine_s.append(time.perf_counter() - began)
            assert summary.totals()["units_skipped"] == partitions, summary.totals()
        assert launcher.launched == 1 and catalog.written == writes_before  # no-change: no copy, no write
    operator, engine = statistics.median(operator_s), statistics.median(engine_s)
    peak_rss_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    figures = {"partitions": partitions, "files": partitions * args.files, "file_bytes": args.file_bytes,
               "first_sync_s": round(first_s, 3), "first_sync_ms_per_partition": round(1000 * first_s / partitions, 3),
               "operator_no_change_sync_s": round(operator, 4), "engine_no_change_rerun_s": round(engine, 4),
               "overhead_ratio": round(operator / engine, 3), "rounds": args.rounds,
               "peak_rss_mib": round(peak_rss_mib, 1)}
    print(f"first sync of {partitions} partitions ({args.files} x {args.file_bytes} bytes each): {first_s:.2f}s, "
          f"{1000 * first_s / partitions:.2f} ms per partition; peak RSS {peak_rss_mib:.0f} MiB")
    print(f"no-change sync of {partitions} partitions: operator pass {operator:.3f}s, "
          f"copy engine rerun {engine:.3f}s, ratio {operator / engine:.2f} (target <= 1.2; medians of {args.rounds})")
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
