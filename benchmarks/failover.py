"""Failover of a 1,000-partition table: the time from spec.active changed to the locations switched, planned (the
primary answers: every copy checked against its original) and unplanned (the primary gone: every recorded copy
checked from itself), and the failback between them; beside them, as the floor, the location engine's bare
relocation of the same table (no checks, no second listing).

A real HMS 2.3 schema on MariaDB holds the table (relocate_support/hms_rows.py: HMS creates the schema, the
partitions are inserted set-based); its partitions live in a local directory (2 files each), copied once to a
second directory and recorded by a first sync. Each switch is one operator pass (act.tablereplica.sync_pass)
through the SQL catalog, as the operator runs it once it sees the spec change: what the watch adds before the
pass starts is not in these figures (benchmarks/operator_scale.py measures change latency). For the unplanned
failover the primary's directory is moved away first. Every switch's result is checked.

    python benchmarks/failover.py            # 1,000 partitions
    python benchmarks/failover.py --small    # 50 partitions

MariaDB comes from HIVECAT_TEST_MYSQL_URL (default: the `hivecat` user `make setup` creates). Every database,
process and file the run creates is removed at the end, also when it fails.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
import uuid
from datetime import datetime, timezone
from pathlib import Path

from hivecat.act.tablereplica import SyncOutcome, sync_pass
from hivecat.catalog.model import RelocationRequest, Scope
from hivecat.catalog.sql.catalog import SqlCatalog
from hivecat.copy.copier import Copier, CopyOptions
from hivecat.copy.storage import Storage, parse_uri
from hivecat.local.scratch_db import drop_database
from hivecat.reconcile.clusterstorage import Backend
from hivecat.reconcile.failover_readiness import remembered
from hivecat.replication.launch import FAILED, SUCCEEDED, LaunchResult
from hivecat.replication.registry import ClusterEntry
from hivecat.specs.tablereplica import parse_table_replica
from relocate_support import hms_rows

SERVER_URL = os.environ.get("HIVECAT_TEST_MYSQL_URL", "mysql+pymysql://hivecat:hivecat@127.0.0.1:3306")
FILES_PER_PARTITION = 2


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


class InProcess:
    """The copy engine in this process, as the demo's launcher."""

    def observe(self) -> None:
        return None

    def start(self, plan, copy) -> LaunchResult:
        summary = Copier(plan, CopyOptions(verify=copy.verify, delete=True), Storage(), engine="local").run()
        return LaunchResult(SUCCEEDED if summary.status == "succeeded" else FAILED, "", summary.run_id)


class Ports:
    def __init__(self, url: str, journal: str) -> None:
        self.url, self.journal = url, journal

    def open(self, backend: Backend) -> SqlCatalog:
        return SqlCatalog(self.url, journal_schema=self.journal)

    def launcher(self, secondary: ClusterEntry) -> InProcess:
        return InProcess()

    def storage(self) -> Storage:
        return Storage()


def replica(**spec) -> object:
    return parse_table_replica({"metadata": {"name": "events", "namespace": "bench", "uid": "bench-uid"},
                                "spec": {"catalogRef": {"name": "c"}, "database": hms_rows.DATABASE,
                                         "table": hms_rows.TABLE, "primary": "main", "secondaries": ["dr"],
                                         **spec}})


def switched(ports: Ports, cluster: ClusterEntry, partitions: int, who: str) -> None:
    catalog = ports.open(Backend("Database", None))
    try:
        found = [p.location for p in catalog.list_partitions(hms_rows.DATABASE, hms_rows.TABLE)]
        table = catalog.get_table(hms_rows.DATABASE, hms_rows.TABLE).location
    finally:
        catalog.close()
    root = parse_uri(cluster.filesystem, cluster.name).path + "/"
    under = [loc for loc in found if parse_uri(loc, "a partition").path.startswith(root)]
    if len(found) != partitions or len(under) != partitions or not parse_uri(table, "the table").path.startswith(root):
        raise AssertionError(f"{who}: {len(under)} of {len(found)} partitions on {cluster.name}")


def timed_pass(spec, clusters, ports: Ports, status: dict, who: str) -> tuple[float, SyncOutcome]:
    began = time.perf_counter()
    out = sync_pass(spec, [Backend("Database", None)], clusters, ports, f"bench-{uuid.uuid4().hex[:8]}",
                    memory=remembered(status))
    seconds = time.perf_counter() - began
    ready = next(c for c in out.conditions if c.type == "Ready")
    if ready.status != "True":
        raise AssertionError(f"{who}: {ready.reason}: {ready.message}")
    log(f"  {who}: {seconds:.2f} s")
    return seconds, out


def build(workdir: Path, partitions: int, scratch: list[str]) -> tuple[str, str, dict[str, ClusterEntry]]:
    """The table in a fresh HMS schema, its partitions in workdir/main, the journal's name; the clusters."""
    schema, journal = f"hcb_{uuid.uuid4().hex[:8]}_failover", f"hcb_{uuid.uuid4().hex[:8]}_journal"
    scratch += [schema, journal]
    hms_rows.create_schema_with_table(SERVER_URL, schema, workdir / "hms")
    url = hms_rows.database_url(SERVER_URL, schema)
    hms_rows.fill_partitions(url, partitions)
    main, dr = workdir / "main", workdir / "dr"
    dr.mkdir()
    catalog = SqlCatalog(url, journal_schema=journal)
    try:  # the table onto the local directory that plays the primary cluster
        catalog.relocate(RelocationRequest(hms_rows.OLD_ROOT, f"file://{main}/warehouse", Scope(hms_rows.DATABASE),
                                           allow_scheme_change=True))
        for p in catalog.list_partitions(hms_rows.DATABASE, hms_rows.TABLE):
            unit = Path(parse_uri(p.location, "a partition").path)
            unit.mkdir(parents=True)
            for n in range(FILES_PER_PARTITION):
                (unit / f"part-{n:05d}.parquet").write_bytes(os.urandom(4096))
    finally:
        catalog.close()
    return url, journal, {"main": ClusterEntry("main", f"file://{main}"), "dr": ClusterEntry("dr", f"file://{dr}")}


def run(partitions: int, workdir: Path, scratch: list[str]) -> dict:
    url, journal, clusters = build(workdir, partitions, scratch)
    ports = Ports(url, journal)
    status: dict = {}
    first, out = timed_pass(replica(), clusters, ports, status, "first sync (copies every unit)")
    status.update(out.status)
    planned, out = timed_pass(replica(active="dr"), clusters, ports, status, "planned failover")
    switched(ports, clusters["dr"], partitions, "planned failover")
    status.update(out.status)
    failback, out = timed_pass(replica(), clusters, ports, status, "failback")
    switched(ports, clusters["main"], partitions, "failback")
    status.update(out.status)

    catalog = ports.open(Backend("Database", None))
    try:  # the floor: the location engine alone, then undone
        began = time.perf_counter()
        report = catalog.relocate(RelocationRequest(clusters["main"].filesystem, clusters["dr"].filesystem,
                                                    Scope(hms_rows.DATABASE, hms_rows.TABLE)))
        bare = time.perf_counter() - began
        catalog.undo(report.run_id)
    finally:
        catalog.close()
    log(f"  bare relocation: {bare:.2f} s")

    point = next(r for r in status["readiness"] if r["cluster"] == "dr")["recoveryPoint"]
    main = Path(clusters["main"].filesystem.removeprefix("file://"))
    main.rename(main.with_name("main-gone"))  # the primary is gone
    try:
        unplanned, out = timed_pass(replica(active="dr", failover={"kind": "Unplanned",
                                                                   "acceptRecoveryPoint": point}),
                                    clusters, ports, status, "unplanned failover")
        switched(ports, clusters["dr"], partitions, "unplanned failover")
    finally:
        main.with_name("main-gone").rename(main)
    return {"partitions": partitions, "files": partitions * FILES_PER_PARTITION,
            "first_sync_s": round(first, 3), "planned_failover_s": round(planned, 3),
            "failback_s": round(failback, 3), "unplanned_failover_s": round(unplanned, 3),
            "bare_relocation_s": round(bare, 4), "planned_over_bare": round(planned / bare, 2),
            "unplanned_over_bare": round(unplanned / bare, 2), "unplanned_over_planned": round(unplanned / planned, 3),
            "at": datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"), "load_1m": round(os.getloadavg()[0], 2)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--small", action="store_true", help="50 partitions")
    parser.add_argument("--partitions", type=int, default=1000)
    args = parser.parse_args(argv)
    partitions = 50 if args.small else args.partitions
    workdir = Path(tempfile.mkdtemp(prefix="hivecat-bench-failover-"))
    scratch: list[str] = []
    try:
        figures = run(partitions, workdir, scratch)
    finally:
        for name in scratch:
            drop_database(SERVER_URL, name)
        shutil.rmtree(workdir, ignore_errors=True)
    print(f"failover of {partitions} partitions: planned {figures['planned_failover_s']} s, unplanned "
          f"{figures['unplanned_failover_s']} s, failback {figures['failback_s']} s; the bare relocation "
          f"{figures['bare_relocation_s']} s")
    print(json.dumps(figures, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
