"""The story `hivecat demo` tells, on a real Hive Metastore and Spark, with the operator's own passes (the
TableReplica sync and switch, the ClusterStorage drift scan and repair) and `hivecat route`'s rules, run
in this process without Kubernetes:

1. two local-directory clusters, `main` and `dr`, and Spark's partitioned table demo.sales on main;
2. a replica synced to dr (copied, verified, recorded in the metastore), then a new partition: only it is copied;
3. a failover to dr: with main's directory moved away, Spark reads every row from dr; then the failback;
4. "Wrong FS" drift: demo.events whose files moved to main while the metastore still names the old place:
   found, repaired through the journaled location engine, and Spark reads it again;
5. `hivecat route` for two queries.
Each step checks its own result, so the demo also proves the product works on this machine.
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from hivecat import reasons
from hivecat.catalog.base import Catalog
from hivecat.catalog.connect import JournalSettings, open_catalog
from hivecat.catalog.targets import ThriftTarget
from hivecat.copy.copier import new_run_id
from hivecat.copy.storage import Storage
from hivecat.act.clusterstorage import scan_pass
from hivecat.reconcile.clusterstorage import Backend
from hivecat.replication.registry import ClusterEntry
from hivecat.act.tablereplica import SyncOutcome, sync_pass
from hivecat.replication.launch import LocalLauncher, LocalRuns
from hivecat.replication.placement import placement_of
from hivecat.replication.routing import route
from hivecat.specs.clusterstorage import parse_cluster_storage
from hivecat.specs.tablereplica import parse_table_replica


COPY_POLL_SECONDS = 0.2


class DemoFailed(Exception):
    """A step did not end as it must: the message says which and what was seen."""


@dataclass
class Story:
    root: Path
    port: int
    spark: Any
    say: Callable[[str], None]
    summary: list[tuple[str, str]] = field(default_factory=list)
    runs: LocalRuns = field(default_factory=lambda: LocalRuns(cap=1))  # the copy children, as in the operator

    @property
    def clusters(self) -> dict[str, ClusterEntry]:
        return {name: ClusterEntry(name, (self.root / "clusters" / name).as_uri()) for name in ("main", "dr")}

    @property
    def backends(self) -> list[Backend]:
        return [Backend("Metastore", ThriftTarget("127.0.0.1", self.port), journaled_elsewhere=True)]

    # --- the ports the passes use (hivecat.handlers has the live ones) ------------------------------------

    def open(self, backend: Backend) -> Catalog:
        journal = JournalSettings(url=f"sqlite:///{self.root / 'journal.db'}")  # the demo's own, kept in workdir
        return open_catalog(backend.target, journal=journal)

    def launcher(self, secondary: ClusterEntry) -> LocalLauncher:
        return LocalLauncher(self.root / "copies", self.runs, ("demo", "sales", secondary.name))

    def storage(self) -> Storage:
        return Storage()

    # --- the story -------------------------------------------------------------------------------------

    def tell(self) -> None:
        self.replicate()
        self.fail_over_and_back()
        self.repair_drift()
        self.route_queries()

    def replicate(self) -> None:
        self.say(f"clusters: main = {self.clusters['main'].filesystem}, dr = {self.clusters['dr'].filesystem}")
        out = self.sync("the first sync")
        self.summary.append(("replica synced", _event(out, reasons.SYNCED)))
        self.spark.sql("INSERT INTO demo.sales VALUES (5, 20.0, '2026-11-23')")
        out = self.sync("the sync after Spark added partition dt=2026-11-23")
        copied = [r for r in out.status["replicas"] if r["cluster"] == "dr"][0]
        if copied["units"] != 4:
            raise DemoFailed(f"after the new partition, dr holds {copied['units']} of 4 units: {out.status}")
        self.summary.append(("incremental sync", _event(out, reasons.SYNCED)))

    def fail_over_and_back(self) -> None:
        out = self.sync("the failover to dr", active="dr")
        if out.status.get("active") != "dr":
            raise DemoFailed(f"the failover did not happen: {_conditions(out)}")
        self.summary.append(("failover", _event(out, reasons.FAILED_OVER)))
        table_dir = self.root / "clusters" / "main" / "warehouse" / "demo.db" / "sales"
        away = table_dir.with_name("sales.away")
        table_dir.rename(away)  # main's copy out of reach: the rows can only come from dr now
        try:
            rows = self.count("demo.sales")
        finally:
            away.rename(table_dir)
        if rows != 5:
            raise DemoFailed(f"Spark read {rows} rows of demo.sales from dr, not 5")
        self.say(f"Spark read all {rows} rows of demo.sales from dr, with main's directory moved away")
        self.summary.append(("Spark on dr", f"{rows} rows read with main's data out of reach"))
        out = self.sync("the failback to main")
        if out.status.get("active") != "main":
            raise DemoFailed(f"the failback did not happen: {_conditions(out)}")
        self.summary.append(("failback", _event(out, reasons.FAILED_BACK)))

    def repair_drift(self) -> None:
        old = self.root / "clusters" / "main-old"
        events_old = old / "warehouse" / "demo.db" / "events"
        self.spark.sql(f"CREATE TABLE demo.events (id INT, kind STRING) USING parquet LOCATION '{events_old.as_uri()}'")
        self.spark.sql("INSERT INTO demo.events VALUES (1, 'click'), (2, 'view'), (3, 'click')")
        moved = self.root / "clusters" / "main" / "warehouse" / "demo.db" / "events"
        shutil.move(str(events_old), str(moved))  # the data moved; the metastore still names the old place
        shutil.rmtree(old)
        self.say(f"demo.events' files moved to main; the metastore still says {events_old.as_uri()}")
        spec = parse_cluster_storage({"metadata": {"name": "main", "namespace": "demo"},
                                      "spec": {"catalogRef": {"name": "demo"}, "filesystem": self.clusters["main"]
                                               .filesystem, "repair": "Auto"}}, default_scan_interval=3600)
        previous = [old.as_uri()]
        out = scan_pass(spec, previous, self.backends, self, journal_configured=True)
        drift = out.drift or {}
        if not drift.get("lastRepairRunId") or drift.get("driftedLocations"):
            raise DemoFailed(f"the drift repair did not finish: {out.conditions} {drift}")
        self.say(f"drift scan found and repaired {drift['lastRepairRewritten']} locations in journaled run "
                 f"{drift['lastRepairRunId']} (undo: hivecat relocate --undo {drift['lastRepairRunId']})")
        rows = self.count("demo.events")
        if rows != 3:
            raise DemoFailed(f"Spark read {rows} rows of demo.events after the repair, not 3")
        self.summary.append(("drift repaired", f"{drift['lastRepairRewritten']} locations rewritten, Spark reads "
                                               f"{rows} rows"))

    def route_queries(self) -> None:
        catalog = self.open(self.backends[0])
        try:
            sales, events = (placement_of(catalog, self.clusters, t) for t in ("demo.sales", "demo.events"))
        finally:
            catalog.close()
        for words, decision in (("SELECT … FROM demo.sales JOIN demo.events", route([sales, events])),
                                ("the same query forced onto dr", route([sales, events], cluster="dr"))):
            answer = decision.cluster or f"refused ({decision.reason})"
            self.say(f"route {words}: {answer}: {decision.message}")
            self.summary.append((f"route: {words}", answer))
        if route([sales, events]).cluster != "main" or route([sales, events], cluster="dr").cluster is not None:
            raise DemoFailed("hivecat route did not answer main, then refuse dr (demo.events has no copy there)")

    # --- helpers ---------------------------------------------------------------------------------------

    def sync(self, what: str, active: str | None = None) -> SyncOutcome:
        body = {"metadata": {"name": "sales", "namespace": "demo"},
                "spec": {"catalogRef": {"name": "demo"}, "database": "demo", "table": "sales", "primary": "main",
                         "secondaries": ["dr"], **({"active": active} if active else {})}}
        began = time.monotonic()
        run_id, spec = new_run_id(), parse_table_replica(body)
        out = sync_pass(spec, self.backends, self.clusters, self, run_id, clock=lambda: datetime.now(timezone.utc))
        while out.in_flight:  # as the operator's daemon: the pass started the copies; the next reads their end
            while not self.runs.ended(("demo", "sales")):
                time.sleep(COPY_POLL_SECONDS)
            out = sync_pass(spec, self.backends, self.clusters, self, run_id, clock=lambda: datetime.now(timezone.utc),
                            ended=out.ended, started=out.started)
        for _, reason, message in out.events:
            self.say(f"{what}: {reason}: {message}")
        ready = next((c for c in out.conditions if c.type == "Ready"), None)
        if out.failed or ready is None or ready.status != "True":
            raise DemoFailed(f"{what} did not end ready: {_conditions(out)}")
        self.say(f"{what} took {time.monotonic() - began:.1f}s")
        self.spark.catalog.refreshTable("demo.sales")  # Spark caches file listings; the locations may have moved
        return out

    def count(self, table: str) -> int:
        self.spark.catalog.refreshTable(table)
        return int(self.spark.sql(f"SELECT count(*) FROM {table}").collect()[0][0])


def _event(out: SyncOutcome, reason: str) -> str:
    """The Event's figures, for the summary: after `what: `, before the undo hint."""
    message = next((m for _, r, m in out.events if r == reason), "")
    return message.split(": ", 1)[-1].split("; an undo")[0]


def _conditions(out: SyncOutcome) -> str:
    return "; ".join(f"{c.type}={c.status} {c.reason}: {c.message}" for c in out.conditions)
