"""A TableReplica's sync pass: resolve (catalog backends, cluster registry, primary and active cluster) →
for each secondary: plan → check the units on the secondary → copy only those that need it → check again →
record the verified units in the catalog → status.

Copies go from the active cluster (the primary until a failover) to each other cluster named. Nothing is
recorded from a launcher's word: only units the check finds whole and current on the secondary, and only
while the unit's location in the catalog is still the one the copy was made from.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, Protocol

from sqlalchemy.exc import DBAPIError, SQLAlchemyError

from hivecat import reasons
from hivecat.apierrors import SecretUnavailable
from hivecat.catalog.base import Catalog
from hivecat.catalog.connect import CatalogUnavailable, first_line
from hivecat.catalog.journal import JournalUnavailable
from hivecat.catalog.model import RelocationReport
from hivecat.copy.errors import CopyInputError
from hivecat.copy.owner import Owner
from hivecat.copy.plan import CopyPlan
from hivecat.copy.storage import Storage, parse_uri
from hivecat.locations.partition_filter import FilterError
from hivecat.reconcile.clusterstorage import Backend
from hivecat.reconcile.conditions import Condition
from hivecat.reconcile.policy import Violation
from hivecat.replication.bookkeeping import bookkeeping, read_only_marks
from hivecat.replication.failover import (FAILBACK_DIR, Moved, Switch, SwitchRefused, check_switch,
                                         relocate_changed, switch_locations)
from hivecat.replication.housekeeping import HousekeepingReport, housekeep
from hivecat.replication.launch import CANCELLED, SUCCEEDED, LaunchResult
from hivecat.replication.placement import cluster_of
from hivecat.replication.planner import PlanRefused, ReplicaPlan, ReplicaScope, on_secondary, plan_replica
from hivecat.replication.registry import ClusterEntry
from hivecat.replication.routes import ClusterAccess
from hivecat.replication.verify import NOT_OWNED, SOURCE_MISSING, UNREADABLE, UnitCheck, check_units
from hivecat.specs.errors import SpecInvalid
from hivecat.specs.tablereplica import CopySettings, TableReplicaSpec

READY, IN_SYNC, DEGRADED = "Ready", "InSync", "Degraded"
SHOWN = 5  # unit ids named in a condition message
MAX_RUN_IDS = 64  # of a switch's relocation runs in status (the CRD's maxItems); a failback runs one per changed unit


class Launcher(Protocol):
    def run(self, plan: CopyPlan, copy: CopySettings, stopped: Callable[[], bool]) -> LaunchResult: ...


class ReplicaPorts(Protocol):
    """What a pass reads and runs; the live implementation is in handlers/, tests bring their own."""

    def open(self, backend: Backend) -> Catalog: ...  # raises CatalogUnavailable or SecretUnavailable
    def launcher(self, secondary: ClusterEntry) -> Launcher: ...
    def storage(self) -> Storage: ...


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


@dataclass
class SecondaryOutcome:
    cluster: str
    location: str | None = None        # the table's directory on that cluster
    units_total: int = 0
    units_in_sync: int = 0
    bytes_in_sync: int = 0
    launch: LaunchResult | None = None
    lag_seconds: float | None = None   # age of the oldest source change not on the copy; 0 when in sync
    refused: list[str] = field(default_factory=list)  # "unit: why" of units no copy can fix
    outside: list[str] = field(default_factory=list)  # units in scope whose location is not on the active cluster
    conflicts: list[str] = field(default_factory=list)  # bookkeeping not written (the unit moved, or refused)
    unverified: int = 0                # units copied whose check afterwards failed
    housekeeping: HousekeepingReport | None = None  # copies of units gone from the table
    recorded: int = 0
    cleared: int = 0
    error: str | None = None           # the pass could not run for this secondary

    @property
    def state(self) -> str:
        if self.error is not None or (self.launch is not None and self.launch.outcome != SUCCEEDED):
            return "Failed"
        return "InSync" if self.units_in_sync == self.units_total and not self.conflicts else "Stale"


def sync_secondary(spec: TableReplicaSpec, catalogs: Sequence[Catalog], source: ClusterEntry,
                   secondary: ClusterEntry, ports: ReplicaPorts, now: datetime, stopped: Callable[[], bool],
                   run_id: str = "") -> tuple[SecondaryOutcome, ReplicaPlan | None]:
    """One secondary brought in sync and recorded. `catalogs[0]` is planned from; bookkeeping goes to each."""
    out = SecondaryOutcome(secondary.name)
    scope = ReplicaScope(spec.database, spec.table, spec.partition_filter, spec.most_recent)
    try:
        planned = plan_replica(catalogs[0], scope, source, secondary)
    except (PlanRefused, CopyInputError) as refused:
        out.error = getattr(refused, "message", str(refused))
        return out, None
    table = catalogs[0].get_table(spec.database, spec.table)
    out.location = on_secondary(table.location if table else None, source, secondary)
    out.units_total = len(planned.plan.units)
    storage = ports.storage()
    owner = owner_of(spec)
    checks = check_units(planned.plan.units, storage, spec.copy.verify, owner=owner)
    copyable = [c.unit for c in checks if c.copyable]
    if copyable and not stopped():
        out.launch = ports.launcher(secondary).run(CopyPlan(tuple(copyable), owner), spec.copy, stopped)
        again = {c.unit.id: c for c in check_units(copyable, storage, spec.copy.verify, owner=owner)}
        checks = [again.get(c.unit.id, c) for c in checks]
        out.unverified = sum(not c.in_sync for c in again.values())
    stamp = now.strftime("%Y-%m-%dT%H:%M:%SZ")
    book = bookkeeping(secondary.name, planned.refs, checks, stamp)
    conflicted: set[str] = set()
    unit_of = {ref.values: uid for uid, ref in planned.refs.items()}
    for catalog in catalogs:
        written = catalog.update_unit_params(spec.database, spec.table, book.updates)
        for values, why in (*written.conflicts, *written.failed):  # either way: not recorded
            uid = unit_of.get(tuple(values) if values is not None else None, str(values))
            conflicted.add(uid)
            out.conflicts.append(f"{uid}: {why}")
    out.recorded, out.cleared = book.recorded, book.cleared
    in_sync = [c for c in checks if c.in_sync and c.unit.id not in conflicted]
    out.units_in_sync, out.bytes_in_sync = len(in_sync), sum(c.bytes for c in in_sync)
    out.refused = [f"{c.unit.id}: {c.reason}" for c in checks if c.state in (NOT_OWNED, SOURCE_MISSING, UNREADABLE)]
    out.outside = [f"{uid} at {location}" for uid, location in planned.outside]
    out.lag_seconds = _lag(checks, now)
    if table is not None and table.partition_keys and out.location and not stopped():
        out.housekeeping = _housekeep(spec, catalogs[0], planned, source, secondary, table.partition_keys,
                                      out.location, storage, now, run_id)
    return out, planned


def _housekeep(spec: TableReplicaSpec, catalog: Catalog, planned: ReplicaPlan, source: ClusterEntry,
               secondary: ClusterEntry, keys: Sequence[str], table_copy: str, storage: Storage, now: datetime,
               run_id: str) -> HousekeepingReport:
    """Copies on the secondary of units gone from the table: marked, removed after spec.housekeeping.delay.
    Every unit of the table protects its own location and its copy's, in scope or not."""
    whole = planned
    if spec.partition_filter is not None or spec.most_recent is not None:
        whole = plan_replica(catalog, ReplicaScope(spec.database, spec.table), source, secondary)
    live = [location for u in whole.plan.units for location in (u.source, u.target)]
    for _, location in whole.outside:
        try:
            live.append(parse_uri(location or "", "a unit's location"))
        except CopyInputError:
            continue  # not a location a copy can be below
    return housekeep(storage, parse_uri(table_copy, "the table's copy"), len(keys), spec.qualified_table, live, now,
                     spec.housekeeping_delay, run_id, owner=owner_of(spec))


def _lag(checks: Sequence[UnitCheck], now: datetime) -> float:
    pending = [c.oldest_change_ns for c in checks if not c.in_sync and c.oldest_change_ns is not None]
    if not pending:
        return 0.0
    return max(0.0, now.timestamp() - min(pending) / 1e9)


# --- the whole pass ----------------------------------------------------------------------------------------

@dataclass
class SyncOutcome:
    conditions: list[Condition] = field(default_factory=list)
    status: dict[str, Any] = field(default_factory=dict)
    events: list[tuple[str, str, str]] = field(default_factory=list)  # (type, reason, message)
    failed: bool = False  # retried with backoff rather than at the next interval
    secondaries: list[SecondaryOutcome] = field(default_factory=list)  # what each copy target got (metrics)
    relocations: list[RelocationReport] = field(default_factory=list)  # the switch's runs, if any (metrics)


Access = Mapping[str, "ClusterAccess | Violation"]


def sync_pass(spec: TableReplicaSpec, backends: Sequence[Backend], clusters: Mapping[str, ClusterEntry],
              ports: ReplicaPorts, run_id: str, *, known_primary: str | None = None, journal_configured: bool = True,
              access: Access | None = None, stopped: Callable[[], bool] = lambda: False,
              clock: Callable[[], datetime] = lambda: datetime.now(timezone.utc)) -> SyncOutcome:
    """Switch the locations where spec.active asks (gated), then sync from where they point. `known_primary`:
    status.primary; `journal_configured`: whether Glue/Thrift relocations have a durable journal; `access`:
    per cluster, how the namespace may reach it or why it may not (reconcile.access.cluster_access; None: every
    cluster, as the CLI and the demo run it). A cluster the pass may not use is neither read nor written: the
    pass stops when it is where the locations point (or must point), and skips it as a secondary."""
    out = SyncOutcome()
    opened: list[Catalog] = []
    try:
        for backend in backends:
            opened.append(ports.open(backend))
        journaled = journal_configured or not any(b.journaled_elsewhere for b in backends)
        return _sync(spec, opened, clusters, ports, run_id, known_primary, journaled, stopped, clock, out,
                     access)
    except (CatalogUnavailable, SecretUnavailable) as error:
        return _not_ready(out, error.reason, error.message, failed=True)
    except SpecInvalid as invalid:
        # What the spec names is not (yet) in the catalog: the table, its cluster. Applied together (GitOps),
        # the TableReplica is often first; retried with backoff, never parked until the spec changes.
        return _not_ready(out, invalid.reason, invalid.message, failed=True, phase="Pending")
    except PlanRefused as refused:  # e.g. the table gone while a switch was checked
        return _not_ready(out, refused.reason, refused.message, failed=True)
    except JournalUnavailable as error:  # a switch needs the journal; the message says what to grant
        return _not_ready(out, error.reason, str(error), failed=True)
    except FilterError as error:  # the filter's grammar depends on the table's key types: known only here
        return _not_ready(out, reasons.INVALID_FILTER, f"spec.partitions.filter: {error}")
    except (LookupError, ValueError, OSError, CopyInputError) as error:
        # e.g. the table dropped between plan and record, a storage that stopped answering: the pass fails
        # with the reason in status and is retried with backoff, never a traceback in the operator's log
        return _not_ready(out, reasons.SYNC_ERROR, f"{type(error).__name__}: {error}", failed=True)
    except SQLAlchemyError as error:  # a journal or metastore database that stopped answering mid-pass
        detail = first_line(error.orig) if isinstance(error, DBAPIError) else type(error).__name__
        return _not_ready(out, reasons.DATABASE_UNREACHABLE, f"a database of the pass failed: {detail}", failed=True)
    finally:
        for catalog in opened:
            close = getattr(catalog, "close", None)
            if close is not None:
                close()


def _not_ready(out: SyncOutcome, reason: str, message: str, failed: bool = False,
               phase: str | None = None) -> SyncOutcome:
    """failed: retried with backoff; else parked ("Invalid") until the spec changes."""
    out.conditions = [Condition.of(READY, False, reason, message), Condition(IN_SYNC, "Unknown", reason, message)]
    out.status["phase"] = phase or ("Degraded" if failed else "Invalid")
    out.failed = failed
    return out


def _sync(spec: TableReplicaSpec, catalogs: list[Catalog], clusters: Mapping[str, ClusterEntry],
          ports: ReplicaPorts, run_id: str, known_primary: str | None, journaled: bool,
          stopped: Callable[[], bool], clock: Callable[[], datetime], out: SyncOutcome,
          access: Access | None) -> SyncOutcome:
    table = catalogs[0].get_table(spec.database, spec.table)
    if table is None:
        raise SpecInvalid(reasons.TABLE_NOT_FOUND, f"table {spec.qualified_table} does not exist in the catalog")
    resolved = resolve_clusters(spec, clusters, table.location, known_primary)
    current_name = cluster_of(table.location, clusters)
    if current_name is None or current_name not in {c.name for c in resolved.named}:
        raise SpecInvalid(reasons.ACTIVE_UNKNOWN, f"the location of {spec.qualified_table} ({table.location}) is on none of "
                                           "the clusters this TableReplica names")
    current = clusters[current_name]
    _require(access, current.name)
    if current.name != resolved.active.name:
        _require(access, resolved.active.name)
    switch_refused = None
    if current.name != resolved.active.name:
        switch = Switch(current, resolved.active, failback=resolved.active.name == resolved.primary.name,
                        home=f"{spec.namespace}/{spec.name}")
        try:
            if not journaled:
                raise SwitchRefused(reasons.JOURNAL_NOT_CONFIGURED, "relocations of a Glue or Thrift catalog are journaled "
                                    "in the operator's journal database, which is not configured (Helm value "
                                    "journal.urlSecretRef): the table stays where it is")
            _switch(spec, catalogs, switch, ports, clock, stopped, out)
            current = resolved.active
            table = catalogs[0].get_table(spec.database, spec.table) or table
        except SwitchRefused as refused:
            switch_refused = Condition.of(READY, False, refused.reason, refused.message)
            out.events.append(("Warning", refused.reason, refused.message))
            out.status["phase"] = "Degraded"
    started = clock()
    outcomes = []
    for target in copy_targets(resolved, current):
        if stopped():
            break
        denied = _denied(access, target.name)
        if denied is not None:  # the policy narrowed: nothing written there any more, nothing deleted
            outcomes.append(SecondaryOutcome(target.name, error=f"{denied.reason}: {denied.message}"))
            continue
        outcome, _ = sync_secondary(spec, catalogs, current, target, ports, clock(), stopped, run_id)
        outcomes.append(outcome)
    out.secondaries = outcomes
    cancelled = any(o.launch is not None and o.launch.outcome == CANCELLED for o in outcomes)
    out.status = {**replica_status(resolved, current, table.location, outcomes, run_id, started, clock()),
                  **out.status}
    out.conditions = _conditions(spec, current, outcomes, switch_refused)
    out.failed = any(o.state == "Failed" for o in outcomes) and not cancelled
    if not cancelled:
        out.events.append(_event(run_id, outcomes))
    return out


def _denied(access: Access | None, cluster: str) -> Violation | None:
    if access is None:
        return None
    found = access.get(cluster)
    if isinstance(found, ClusterAccess):
        return None
    return found if found is not None else Violation(reasons.CLUSTER_NOT_REGISTERED, f"ClusterStorage {cluster} is not "
                                                                             "registered")


def _require(access: Access | None, cluster: str) -> None:
    denied = _denied(access, cluster)
    if denied is not None:
        raise SpecInvalid(denied.reason, denied.message)


def _switch(spec: TableReplicaSpec, catalogs: Sequence[Catalog], switch: Switch, ports: ReplicaPorts,
            clock: Callable[[], datetime], stopped: Callable[[], bool], out: SyncOutcome) -> None:
    """Check the gate on the first backend; on failback copy the units changed while failed over to new
    directories on the primary and verify them; then relocate on each backend (the same table in every one)."""
    scope = ReplicaScope(spec.database, spec.table, spec.partition_filter, spec.most_recent)
    plan = check_switch(catalogs[0], scope, switch, ports.storage(), spec.copy.verify, owner=owner_of(spec))
    if plan.changed:
        _copy_changed(spec, plan.changed, switch, ports, stopped)
    runs = [report for catalog in catalogs for report in relocate_changed(catalog, scope, plan.changed)]
    runs += [report for catalog in catalogs for report in switch_locations(catalog, scope, switch)]
    out.relocations.extend(runs)
    for catalog in catalogs:  # for cooperating writers: where not to write any more (not enforced)
        catalog.update_unit_params(spec.database, spec.table, [read_only_marks(switch.source.name,
                                                                               switch.target.name)])
    word, reason = ("failed back", reasons.FAILED_BACK) if switch.failback else ("failed over", reasons.FAILED_OVER)
    copied = (f"; {len(plan.changed)} units changed while failed over were copied to new directories under "
              f"{switch.target.filesystem.rstrip('/')}/{FAILBACK_DIR}/{switch.home} (their originals stay "
              "as they were)" if plan.changed else "")
    out.events.append(("Normal", reason, f"{spec.qualified_table} {word} from {switch.source.name} to "
                                         f"{switch.target.name}: {plan.units} units verified, "
                                         f"{sum(r.rewritten for r in runs)} locations rewritten in run(s) "
                                         f"{', '.join(r.run_id for r in runs) or 'none'}{copied}; an undo of a "
                                         "run restores its locations"))
    out.status["lastFailoverTime"] = clock().strftime("%Y-%m-%dT%H:%M:%SZ")
    out.status["lastFailoverRunIds"] = [r.run_id for r in runs][:MAX_RUN_IDS]


def _copy_changed(spec: TableReplicaSpec, changed: Sequence[Moved], switch: Switch, ports: ReplicaPorts,
                  stopped: Callable[[], bool]) -> None:
    """Copy, then verify from the data; SwitchRefused (nothing relocated) unless every new directory is whole."""
    units = [m.unit for m in changed]
    storage = ports.storage()
    owner = owner_of(spec)
    pending = [c.unit for c in check_units(units, storage, spec.copy.verify, owner=owner) if not c.in_sync]
    if pending:  # a failback tried before may have copied some already
        launch = ports.launcher(switch.target).run(CopyPlan(tuple(pending), owner), spec.copy, stopped)
        if launch.outcome == CANCELLED:
            raise SwitchRefused(reasons.FAILBACK_CANCELLED, "the failback's copy was cancelled (the operator stopped); "
                                                     "the next pass resumes it")
    behind = [f"{c.unit.id}: {c.reason}" for c in check_units(units, storage, spec.copy.verify, owner=owner)
              if not c.in_sync]
    if behind:
        raise SwitchRefused(reasons.FAILBACK_REFUSED, f"failback to {switch.target.name} refused, nothing was changed: "
                                               f"{len(behind)} of {len(units)} units changed while failed over are "
                                               f"not yet copied whole to new directories there: {_first(behind)}")


def replica_status(resolved: Resolved, current: ClusterEntry, table_location: str | None,
                   outcomes: Sequence[SecondaryOutcome], run_id: str, started: datetime,
                   finished: datetime) -> dict[str, Any]:
    stamp = finished.strftime("%Y-%m-%dT%H:%M:%SZ")
    replicas: list[dict[str, Any]] = [{"cluster": current.name, "role": "Active", "location": table_location or ""}]
    if current.name != resolved.primary.name:  # failed over: the originals stay on the primary, not synced
        replicas.append({"cluster": resolved.primary.name, "role": "Primary"})
    for o in outcomes:
        entry: dict[str, Any] = {"cluster": o.cluster, "role": "Secondary", "state": o.state, "lastRunId": run_id,
                                 "lastCopiedTime": stamp, "units": o.units_in_sync, "unitsTotal": o.units_total,
                                 "bytes": o.bytes_in_sync, "lastOutcome": _outcome(o)}
        if o.location:
            entry["location"] = o.location
        if o.launch is not None:
            entry["bytesCopied"] = o.launch.bytes_copied
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
    status: dict[str, Any] = {"active": current.name, "primary": resolved.primary.name,
                              "unitsOutside": max((len(o.outside) for o in outcomes), default=0),
                              "inSync": f"{in_sync}/{len(outcomes)}",
                              "lag": format_duration(max(lags)) if lags else "", "replicas": replicas,
                              "lastRunId": run_id, "lastRunTime": started.strftime("%Y-%m-%dT%H:%M:%SZ")}
    if in_sync == len(outcomes):
        status["lastSyncTime"] = stamp
    status["phase"] = "InSync" if in_sync == len(outcomes) else \
        "Degraded" if any(o.state == "Failed" for o in outcomes) else "Syncing"
    return status


def _outcome(o: SecondaryOutcome) -> str:
    if o.error is not None:
        return "Failed"
    if o.launch is None:
        return "NoChange" if o.state == "InSync" else "NotCopied"
    return "Unverified" if o.launch.outcome == SUCCEEDED and o.unverified else o.launch.outcome


def _conditions(spec: TableReplicaSpec, current: ClusterEntry, outcomes: Sequence[SecondaryOutcome],
                switch_refused: Condition | None = None) -> list[Condition]:
    ready = switch_refused or Condition.of(READY, True, reasons.ACTIVE_AVAILABLE, f"{spec.qualified_table} is served "
                                                                           f"from {current.name}")
    behind = [o for o in outcomes if o.state != "InSync"]
    if not behind:
        in_sync = Condition.of(IN_SYNC, True, reasons.ALL_UNITS_VERIFIED, "every unit in scope is verified on "
                               + ", ".join(o.cluster for o in outcomes))
    else:
        in_sync = Condition.of(IN_SYNC, False, reasons.UNITS_BEHIND, "; ".join(
            f"{o.cluster}: {o.units_in_sync}/{o.units_total} units in sync" for o in behind))
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
            problems.append(f"{o.cluster}: {len(o.refused)} units cannot be copied: {_first(o.refused)}")
        if o.conflicts:
            problems.append(f"{o.cluster}: {len(o.conflicts)} units could not be recorded in the catalog: "
                            f"{_first(o.conflicts)}")
        if o.housekeeping is not None and o.housekeeping.kept:
            problems.append(f"{o.cluster}: {len(o.housekeeping.kept)} copies of units gone from the table are "
                            f"kept: {_first(o.housekeeping.kept)}")
    outside = next((o.outside for o in outcomes if o.outside), [])  # the same units for every secondary
    if outside:
        problems.append(f"{len(outside)} units in scope are not on {current.name}, where the table's locations "
                        "point, so they are not copied (e.g. partitions added on the primary after a failover): "
                        f"{_first(outside)}")
    degraded = Condition.of(DEGRADED, bool(problems), reasons.SYNC_PROBLEMS if problems else reasons.NO_PROBLEMS,
                            "; ".join(problems))
    return [ready, in_sync, degraded]


def _first(items: Sequence[str]) -> str:
    more = f" (and {len(items) - SHOWN} more)" if len(items) > SHOWN else ""
    return "; ".join(items[:SHOWN]) + more


def _event(run_id: str, outcomes: Sequence[SecondaryOutcome]) -> tuple[str, str, str]:
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
