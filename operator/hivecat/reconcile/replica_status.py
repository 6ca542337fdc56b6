"""What a TableReplica's pass concluded, as the resource shows it: each secondary's outcome, status (replicas,
phase, lag), the conditions and the sync's Event. Pure: from the outcomes, no I/O."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from hivecat import reasons
from hivecat.reconcile.conditions import Condition
from hivecat.replication.housekeeping import HousekeepingReport
from hivecat.replication.launch import SUCCEEDED, WAITING, LaunchResult
from hivecat.replication.readiness import Readiness
from hivecat.replication.registry import ClusterEntry
from hivecat.specs.tablereplica import TableReplicaSpec
from hivecat.timestamps import rfc3339

READY, IN_SYNC, DEGRADED = "Ready", "InSync", "Degraded"
SHOWN = 5  # unit ids named in a condition message


@dataclass
class SecondaryOutcome:
    cluster: str
    location: str | None = None        # the table's directory on that cluster
    units_total: int = 0
    units_in_sync: int = 0
    bytes_in_sync: int = 0
    launch: LaunchResult | None = None   # the end of the run read in this pass
    copying: LaunchResult | None = None  # the run in flight (RUNNING), or waiting to start (WAITING)
    lag_seconds: float | None = None   # age of the oldest source change not on the copy; 0 when in sync
    refused: list[str] = field(default_factory=list)  # "unit: why" of units no copy can fix
    outside: list[str] = field(default_factory=list)  # units in scope whose location is not on the active cluster
    conflicts: list[str] = field(default_factory=list)  # bookkeeping not written (the unit moved, or refused)
    unverified: int = 0                # units copied whose check afterwards failed
    housekeeping: HousekeepingReport | None = None  # copies of units gone from the table
    recorded: int = 0
    cleared: int = 0
    error: str | None = None           # the pass could not run for this secondary
    readiness: Readiness | None = None  # would an unplanned failover to it be possible; None: not measured

    @property
    def state(self) -> str:
        if self.error is not None or (self.launch is not None and self.launch.outcome != SUCCEEDED):
            return "Failed"
        if self.units_in_sync == self.units_total and not self.conflicts:
            return "InSync"
        return "Copying" if self.copying is not None else "Stale"


def replica_status(primary: ClusterEntry, current: ClusterEntry, table_location: str | None,
                   outcomes: Sequence[SecondaryOutcome], run_id: str, started: datetime,
                   finished: datetime) -> dict[str, Any]:
    stamp = rfc3339(finished)
    replicas: list[dict[str, Any]] = [{"cluster": current.name, "role": "Active", "location": table_location or ""}]
    if current.name != primary.name:  # failed over: the originals stay on the primary, not synced
        replicas.append({"cluster": primary.name, "role": "Primary"})
    for o in outcomes:
        entry: dict[str, Any] = {"cluster": o.cluster, "role": "Secondary", "state": o.state, "lastRunId": run_id,
                                 "lastCopiedTime": stamp, "units": o.units_in_sync, "unitsTotal": o.units_total,
                                 "bytes": o.bytes_in_sync}
        if _outcome(o) is not None:
            entry["lastOutcome"] = _outcome(o)
        if o.location:
            entry["location"] = o.location
        if o.launch is not None:
            entry["bytesCopied"] = o.launch.bytes_copied
        if o.copying is not None and o.copying.copy_run_id:
            entry["copyRunId"] = o.copying.copy_run_id
        if o.lag_seconds is not None:
            entry["lag"] = format_duration(o.lag_seconds)
        if o.state == "InSync":
            entry["lastSyncTime"] = stamp
        if o.housekeeping is not None:
            entry["unitsDropped"] = o.housekeeping.pending
            entry["unitsRemoved"] = len(o.housekeeping.removed)
        replicas.append(entry)
    in_sync = sum(o.state == "InSync" for o in outcomes)
    lags = [o.lag_seconds for o in outcomes if o.lag_seconds is not None]
    status: dict[str, Any] = {"active": current.name, "primary": primary.name,
                              "unitsOutside": max((len(o.outside) for o in outcomes), default=0),
                              "inSync": f"{in_sync}/{len(outcomes)}",
                              "lag": format_duration(max(lags)) if lags else "", "replicas": replicas,
                              "lastRunId": run_id, "lastRunTime": rfc3339(started)}
    if in_sync == len(outcomes):
        status["lastSyncTime"] = stamp
    status["phase"] = "InSync" if in_sync == len(outcomes) else \
        "Degraded" if any(o.state == "Failed" for o in outcomes) else "Syncing"
    return status


def _outcome(o: SecondaryOutcome) -> str | None:
    if o.error is not None:
        return "Failed"
    if o.launch is None:
        if o.copying is not None:
            return None  # its outcome is the next pass's
        return "NoChange" if o.state == "InSync" else "NotCopied"
    return "Unverified" if o.launch.outcome == SUCCEEDED and o.unverified else o.launch.outcome


def replica_conditions(spec: TableReplicaSpec, current: ClusterEntry, outcomes: Sequence[SecondaryOutcome],
                switch_refused: Condition | None = None) -> list[Condition]:
    ready = switch_refused or Condition.of(READY, True, reasons.ACTIVE_AVAILABLE, f"{spec.qualified_table} is served "
                                                                           f"from {current.name}")
    behind = [o for o in outcomes if o.state != "InSync"]
    if not behind:
        in_sync = Condition.of(IN_SYNC, True, reasons.ALL_UNITS_VERIFIED, "every unit in scope is verified on "
                               + ", ".join(o.cluster for o in outcomes))
    else:
        in_sync = Condition.of(IN_SYNC, False, reasons.UNITS_BEHIND, "; ".join(
            f"{o.cluster}: {o.units_in_sync}/{o.units_total} units in sync" + _copying_words(o) for o in behind))
    problems = []
    for o in outcomes:
        if o.error is not None:
            problems.append(f"{o.cluster}: {o.error}")
        elif o.launch is not None and o.launch.outcome == "Failed":
            problems.append(f"{o.cluster}: copy failed: {o.launch.message}")
        elif o.unverified:
            problems.append(f"{o.cluster}: the copy ended without error, but {o.unverified} units are not "
                            "verified on the secondary; nothing was recorded for them")
        if o.refused:
            problems.append(f"{o.cluster}: {len(o.refused)} units cannot be copied: {first_of(o.refused)}")
        if o.conflicts:
            problems.append(f"{o.cluster}: {len(o.conflicts)} units could not be recorded in the catalog: "
                            f"{first_of(o.conflicts)}")
        if o.housekeeping is not None and o.housekeeping.kept:
            problems.append(f"{o.cluster}: {len(o.housekeeping.kept)} copies of units gone from the table are "
                            f"kept: {first_of(o.housekeeping.kept)}")
    outside = next((o.outside for o in outcomes if o.outside), [])  # the same units for every secondary
    if outside:
        problems.append(f"{len(outside)} units in scope are not on {current.name}, where the table's locations "
                        "point, so they are not copied (e.g. partitions added on the primary after a failover): "
                        f"{first_of(outside)}")
    degraded = Condition.of(DEGRADED, bool(problems), reasons.SYNC_PROBLEMS if problems else reasons.NO_PROBLEMS,
                            "; ".join(problems))
    return [ready, in_sync, degraded]


def _copying_words(o: SecondaryOutcome) -> str:
    if o.copying is None:
        return ""
    if o.copying.outcome == WAITING:
        return f", the copy waits: {o.copying.message}"
    return f", copying (run {o.copying.copy_run_id})" if o.copying.copy_run_id else ", copying"


def first_of(items: Sequence[str]) -> str:
    more = f" (and {len(items) - SHOWN} more)" if len(items) > SHOWN else ""
    return "; ".join(items[:SHOWN]) + more


def sync_event(run_id: str, outcomes: Sequence[SecondaryOutcome]) -> tuple[str, str, str]:
    parts = [f"{o.cluster}: {o.units_in_sync}/{o.units_total} units in sync, {o.recorded} recorded"
             + (f", {o.launch.files_copied} files ({o.launch.bytes_copied} bytes) copied"
                if o.launch is not None else ", nothing to copy") + _housekeeping_words(o.housekeeping)
             for o in outcomes]
    failed = any(o.state == "Failed" for o in outcomes)
    return ("Warning" if failed else "Normal", reasons.SYNC_FAILED if failed else reasons.SYNCED,
            f"sync {run_id}: " + ("; ".join(parts) or "no cluster to copy to (while failed over, the primary's "
                                                       "directories are never written)"))


def _housekeeping_words(report: HousekeepingReport | None) -> str:
    if report is None or not (report.marked or report.removed):
        return ""
    words = [f"{len(report.marked)} copies of gone units marked for removal" if report.marked else "",
             f"{len(report.removed)} removed after the delay" if report.removed else ""]
    return ", " + ", ".join(w for w in words if w)


def format_duration(seconds: float) -> str:
    """12m, 1h5m, 3d4h: the lag as status shows it (whole seconds under a minute)."""
    total = int(round(seconds))
    if total < 60:
        return f"{total}s"
    days, rest = divmod(total, 86400)
    hours, rest = divmod(rest, 3600)
    minutes = rest // 60
    parts = [f"{days}d" if days else "", f"{hours}h" if hours else "", f"{minutes}m" if minutes else ""]
    return "".join(parts) or "0s"
