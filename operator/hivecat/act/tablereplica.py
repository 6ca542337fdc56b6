"""A TableReplica's sync pass, carried out through `ReplicaPorts`: resolve (catalog backends, cluster registry,
primary and active cluster) → for each secondary: plan → read the end of the copy an earlier pass started →
check the units on the secondary → start a copy of those that need it (never waiting for it: a later pass
reads its end) → record the verified units in the catalog → housekeep → status (reconcile/replica_status.py).
What each step decides is reconcile/tablereplica.py's, without I/O.

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
from hivecat.copy.plan import CopyPlan
from hivecat.copy.storage import Storage, parse_uri
from hivecat.locations.partition_filter import FilterError
from hivecat.reconcile.clusterstorage import Backend
from hivecat.reconcile.conditions import Condition
from hivecat.reconcile.replica_status import (IN_SYNC, READY, SecondaryOutcome, first_of, replica_conditions,
                                              replica_status, sync_event)
from hivecat.reconcile.tablereplica import (Access, access_refused, copy_targets, lag_seconds, owner_of,
                                            require_access, resolve_clusters, unverified)
from hivecat.replication.bookkeeping import bookkeeping, forget, read_only_marks, replica_key
from hivecat.reconcile.failover_readiness import Remembered, readiness_status, unplanned_refusal
from hivecat.replication.failover import (FAILBACK_DIR, Moved, Recheck, Switch, SwitchPlan, SwitchRefused, check_switch,
                                         check_unplanned, left_behind, relocate_changed, switch_locations, unanswered,
                                         units_relist)
from hivecat.replication.readiness import readiness_of
from hivecat.replication.housekeeping import HousekeepingReport, housekeep
from hivecat.replication.launch import CANCELLED, WAITING, Launcher, LaunchResult
from hivecat.replication.placement import cluster_of
from hivecat.replication.planner import PlanRefused, ReplicaPlan, ReplicaScope, on_secondary, plan_replica
from hivecat.replication.registry import ClusterEntry
from hivecat.replication.verify import NOT_OWNED, SOURCE_MISSING, UNREADABLE, check_units
from hivecat.specs.errors import SpecInvalid
from hivecat.specs.tablereplica import UNPLANNED, TableReplicaSpec
from hivecat.timestamps import rfc3339


SHOWN_LEFT = 20  # unit ids of status.leftBehind
MAX_RUN_IDS = 64  # of a switch's relocation runs in status (the CRD's maxItems); a failback runs one per changed unit


class ReplicaPorts(Protocol):
    """What a pass reads and runs; the live implementation is in handlers/, tests bring their own."""

    def open(self, backend: Backend) -> Catalog: ...  # raises CatalogUnavailable or SecretUnavailable
    def launcher(self, secondary: ClusterEntry) -> Launcher: ...
    def storage(self) -> Storage: ...


def sync_secondary(spec: TableReplicaSpec, catalogs: Sequence[Catalog], source: ClusterEntry,
                   secondary: ClusterEntry, ports: ReplicaPorts, now: datetime, stopped: Callable[[], bool],
                   run_id: str = "", ended: Ended | None = None) -> tuple[SecondaryOutcome, ReplicaPlan | None]:
    """One secondary brought in sync and recorded. `catalogs[0]` is planned from; bookkeeping goes to each.
    `ended`: the end of this sync's copy to it, read (and its units recorded) by an earlier pass of the sync."""
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
    launcher = ports.launcher(secondary)
    earlier = launcher.observe()  # read before the check: a run that ended is judged by the check below
    checks = check_units(planned.plan.units, storage, spec.copy.verify, owner=owner)
    if earlier is None and ended is not None:
        earlier = ended.launch
    if earlier is not None and earlier.finished:
        out.launch = earlier
        out.unverified = unverified(earlier, checks)
    elif earlier is not None:
        out.copying = earlier  # its units are checked when it has ended
    copyable = [c.unit for c in checks if c.copyable]
    if copyable and out.copying is None and out.launch is None and not stopped():  # one copy per sync
        started = launcher.start(CopyPlan(tuple(copyable), owner), spec.copy)
        if started.finished:  # a launcher that runs to the end (the demo, the CLI), or one that could not start
            out.launch = started
            again = {c.unit.id: c for c in check_units(copyable, storage, spec.copy.verify, owner=owner)}
            checks = [again.get(c.unit.id, c) for c in checks]
            out.unverified = sum(not c.in_sync for c in again.values())
        else:
            out.copying = started
    stamp = rfc3339(now)
    book = bookkeeping(secondary.name, planned.refs, checks, stamp)
    conflicted: set[str] = set()
    unit_of = {ref.values: uid for uid, ref in planned.refs.items()}
    for catalog in catalogs:
        written = catalog.update_unit_params(spec.database, spec.table, book.updates)
        for values, why in (*written.conflicts, *written.failed):  # either way: not recorded
            uid = unit_of.get(tuple(values) if values is not None else None, str(values))
            conflicted.add(uid)
            out.conflicts.append(f"{uid}: {why}")
    out.recorded, out.cleared = book.recorded + (ended.recorded if ended else 0), book.cleared
    key = replica_key(secondary.name, "checksum")
    recorded = {uid: ref.parameters.get(key) for uid, ref in planned.refs.items()}
    recorded.update({c.unit.id: c.checksum for c in checks if c.in_sync and c.unit.id not in conflicted})
    out.readiness = readiness_of(secondary.name, checks, recorded, now)
    in_sync = [c for c in checks if c.in_sync and c.unit.id not in conflicted]
    out.units_in_sync, out.bytes_in_sync = len(in_sync), sum(c.bytes for c in in_sync)
    out.refused = [f"{c.unit.id}: {c.reason}" for c in checks if c.state in (NOT_OWNED, SOURCE_MISSING, UNREADABLE)]
    out.outside = [f"{uid} at {location}" for uid, location in planned.outside]
    out.lag_seconds = lag_seconds(checks, now)
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


# --- the whole pass ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Ended:
    """The end of a sync's copy to a secondary, as an earlier pass of the sync read it."""

    launch: LaunchResult
    recorded: int  # units that pass and those before it recorded


@dataclass
class SyncOutcome:
    conditions: list[Condition] = field(default_factory=list)
    status: dict[str, Any] = field(default_factory=dict)
    events: list[tuple[str, str, str]] = field(default_factory=list)  # (type, reason, message)
    failed: bool = False  # retried with backoff rather than at the next interval
    secondaries: list[SecondaryOutcome] = field(default_factory=list)  # what each copy target got (metrics)
    relocations: list[RelocationReport] = field(default_factory=list)  # the switch's runs, if any (metrics)
    in_flight: bool = False  # a copy runs (or waits to start): a pass soon after its end reads it
    started: datetime | None = None  # when the sync began (its first pass)

    @property
    def waiting(self) -> bool:
        """In flight, but some copy has not started yet (no Local slot, an earlier workload being deleted), or
        the failback's copy runs: worth a look soon, where a running copy's end announces itself."""
        copying = [o.copying for o in self.secondaries if o.copying is not None]
        return self.in_flight and (not copying or any(c.outcome == WAITING for c in copying))

    @property
    def ended(self) -> dict[str, Ended]:
        """The ends of copies read so far in this sync, per secondary: for its next pass."""
        return {o.cluster: Ended(o.launch, o.recorded) for o in self.secondaries if o.launch is not None}


def sync_pass(spec: TableReplicaSpec, backends: Sequence[Backend], clusters: Mapping[str, ClusterEntry],
              ports: ReplicaPorts, run_id: str, *, known_primary: str | None = None, journal_configured: bool = True,
              access: Access | None = None, stopped: Callable[[], bool] = lambda: False,
              clock: Callable[[], datetime] = lambda: datetime.now(timezone.utc),
              ended: Mapping[str, Ended] | None = None, started: datetime | None = None,
              memory: Remembered = Remembered()) -> SyncOutcome:
    """Switch the locations where spec.active asks (gated), then sync from where they point. `known_primary`:
    status.primary; `journal_configured`: whether Glue/Thrift relocations have a durable journal; `access`:
    per cluster, how the namespace may reach it or why it may not (reconcile.access.cluster_access; None: every
    cluster, as the CLI and the demo run it). A cluster the pass may not use is neither read nor written: the
    pass stops when it is where the locations point (or must point), and skips it as a secondary.

    A sync may take several passes: one starts the copies, the next ones read their ends. Those passes continue
    the sync `run_id` that began at `started`, with `ended`: per secondary, the copy's end an earlier pass of it
    read (SyncOutcome.ended holds them for the next pass). `memory`: what earlier passes left in status (where a
    switch left units it did not verify, which this pass moves; the last readiness of each secondary)."""
    out = SyncOutcome()
    opened: list[Catalog] = []
    try:
        for backend in backends:
            opened.append(ports.open(backend))
        journaled = journal_configured or not any(b.journaled_elsewhere for b in backends)
        return _sync(spec, opened, clusters, ports, run_id, known_primary, journaled, stopped, clock, out,
                     access, ended or {}, started, memory)
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
          access: Access | None, ended: Mapping[str, Ended], sync_started: datetime | None,
          memory: Remembered) -> SyncOutcome:
    table = catalogs[0].get_table(spec.database, spec.table)
    if table is None:
        raise SpecInvalid(reasons.TABLE_NOT_FOUND, f"table {spec.qualified_table} does not exist in the catalog")
    resolved = resolve_clusters(spec, clusters, table.location, known_primary)
    current_name = cluster_of(table.location, clusters)
    if current_name is None or current_name not in {c.name for c in resolved.named}:
        raise SpecInvalid(reasons.ACTIVE_UNKNOWN, f"the location of {spec.qualified_table} ({table.location}) is on none of "
                                           "the clusters this TableReplica names")
    current = clusters[current_name]
    require_access(access, current.name)
    if current.name != resolved.active.name:
        require_access(access, resolved.active.name)
    switch_refused = None
    if current.name != resolved.active.name:
        switch = Switch(current, resolved.active, failback=resolved.active.name == resolved.primary.name,
                        home=f"{spec.namespace}/{spec.name}")
        try:
            if not journaled:
                raise SwitchRefused(reasons.JOURNAL_NOT_CONFIGURED, "relocations of a Glue or Thrift catalog are journaled "
                                    "in the operator's journal database, which is not configured (Helm value "
                                    "journal.urlSecretRef): the table stays where it is")
            unplanned = not switch.failback and spec.failover.kind == UNPLANNED
            refusal = unplanned_refusal(spec.failover, switch.target.name, memory) if unplanned else None
            if refusal is not None:
                raise SwitchRefused(reasons.FAILOVER_REFUSED, f"unplanned failover to {switch.target.name} refused, "
                                                              f"nothing was read or changed: {refusal}")
            switch_refused = _switch(spec, catalogs, switch, ports, clock, stopped, out, unplanned=unplanned)
            current = resolved.active
            table = catalogs[0].get_table(spec.database, spec.table) or table
        except SwitchWaiting as waiting:
            switch_refused = Condition.of(READY, False, waiting.reason, waiting.message)
            out.in_flight = True
        except SwitchRefused as refused:  # retried with backoff: nothing announces what would let it through
            switch_refused = Condition.of(READY, False, refused.reason, refused.message)
            out.events.append(("Warning", refused.reason, refused.message))
            out.status["phase"] = "Degraded"
            out.failed = True
    elif memory.left_on in {c.name for c in resolved.named} - {current.name}:
        switch_refused = _finish_switch(spec, catalogs, Switch(clusters[memory.left_on], current,
                                                               failback=current.name == resolved.primary.name,
                                                               home=f"{spec.namespace}/{spec.name}"),
                                        ports, clock, stopped, run_id, access, out)
    started = sync_started or clock()
    outcomes = []
    for target in copy_targets(resolved, current):
        if stopped():
            break
        denied = access_refused(access, target.name)
        if denied is not None:  # the policy narrowed: nothing written there any more, nothing deleted
            outcomes.append(SecondaryOutcome(target.name, error=f"{denied.reason}: {denied.message}"))
            continue
        outcome, _ = sync_secondary(spec, catalogs, current, target, ports, clock(), stopped, run_id,
                                    ended.get(target.name))
        outcomes.append(outcome)
    out.secondaries, out.started = outcomes, started
    cancelled = any(o.launch is not None and o.launch.outcome == CANCELLED for o in outcomes)
    out.in_flight = out.in_flight or any(o.copying is not None for o in outcomes)
    out.status = {**replica_status(resolved.primary, current, table.location, outcomes, run_id, started, clock()),
                  "readiness": readiness_status(memory.readiness, [o.readiness for o in outcomes if o.readiness],
                                                [o.cluster for o in outcomes]),
                  **out.status}
    out.conditions = replica_conditions(spec, current, outcomes, switch_refused)
    out.failed = (out.failed or any(o.state == "Failed" for o in outcomes)) and not cancelled
    if not cancelled and not out.in_flight:  # one Event per sync, when its copies have ended
        out.events.append(sync_event(run_id, outcomes))
    return out


def _finish_switch(spec: TableReplicaSpec, catalogs: Sequence[Catalog], switch: Switch, ports: ReplicaPorts,
                   clock: Callable[[], datetime], stopped: Callable[[], bool], run_id: str, access: Access | None,
                   out: SyncOutcome) -> Condition | None:
    """Units an earlier switch left on its source (status.leftBehind): a failover copies them to where the table
    points now, then they move as any switch moves units; a failback moves them as it moved the rest. The
    refusal, if any, as the Ready condition."""
    try:
        require_access(access, switch.source.name)
        silent = unanswered(ports.storage(), switch.source)
        if silent is not None:
            raise SwitchRefused(reasons.FAILOVER_REFUSED, f"the units an earlier switch left on {switch.source.name} "
                                                          f"stay there until it answers ({silent})")
        if not switch.failback:
            copied, _ = sync_secondary(spec, catalogs, switch.source, switch.target, ports, clock(), stopped, run_id)
            if copied.copying is not None:
                raise SwitchWaiting(reasons.SWITCH_FINISHING, f"the copy to {switch.target.name} of the units left on "
                                                              f"{switch.source.name} runs; their switch follows it")
            if copied.error:
                raise SwitchRefused(reasons.FAILOVER_REFUSED, copied.error)
        return _switch(spec, catalogs, switch, ports, clock, stopped, out)
    except SwitchWaiting as waiting:
        out.in_flight = True
        return Condition.of(READY, False, waiting.reason, waiting.message)
    except SwitchRefused as refused:
        out.events.append(("Warning", refused.reason, refused.message))
        out.status["phase"] = "Degraded"
        out.failed = True  # retried with backoff, e.g. until the cluster the units were left on answers
        return Condition.of(READY, False, refused.reason, refused.message)


def _switch(spec: TableReplicaSpec, catalogs: Sequence[Catalog], switch: Switch, ports: ReplicaPorts,
            clock: Callable[[], datetime], stopped: Callable[[], bool], out: SyncOutcome, *,
            unplanned: bool = False) -> Condition | None:
    """Check the gate on the first backend; on failback copy the units changed while failed over to new
    directories on the primary and verify them; then relocate on each backend (the same table in every one).
    Returns the Ready condition while a failback holds diverged units (they stay where they are)."""
    scope = ReplicaScope(spec.database, spec.table, spec.partition_filter, spec.most_recent)
    if unplanned:
        plan = check_unplanned(catalogs[0], scope, switch, ports.storage(), spec.copy.verify, owner=owner_of(spec),
                               leave_behind=spec.failover.leave_behind)
    else:
        plan = check_switch(catalogs[0], scope, switch, ports.storage(), spec.copy.verify, owner=owner_of(spec),
                            diverged_winner=spec.diverged_winner)
    if plan.changed:
        _copy_changed(spec, plan.changed, switch, ports, stopped)
    recheck = Recheck()
    new_homes = units_relist([m.unit for m in plan.changed], ports.storage(), spec.copy.verify, owner_of(spec))
    runs = [report for catalog in catalogs
            for report in relocate_changed(catalog, scope, plan.changed, recheck, new_homes)]
    runs += [report for catalog in catalogs for report in switch_locations(catalog, scope, switch, plan, recheck)]
    out.relocations.extend(runs)
    left = left_behind(catalogs[0], scope, switch)
    held = sorted(d.partition(": ")[0] for d in plan.diverged)
    if runs or not held:  # something moved: where not to write, the Event, the runs to undo
        for catalog in catalogs:  # for cooperating writers: where not to write any more (not enforced)
            catalog.update_unit_params(spec.database, spec.table, [read_only_marks(switch.source.name,
                                                                                   switch.target.name)])
        out.events.append(("Normal", reasons.FAILED_BACK if switch.failback else reasons.FAILED_OVER,
                           _switch_words(spec, switch, plan, runs, left, held, unplanned)))
        out.status["lastFailoverTime"] = rfc3339(clock())
        out.status["lastFailoverRunIds"] = [r.run_id for r in runs][:MAX_RUN_IDS]
    out.status["leftBehind"] = ({"cluster": switch.source.name, "units": len(left), "first": left[:SHOWN_LEFT]}
                                if left else None)
    out.status["diverged"] = ({"cluster": switch.source.name, "units": len(held), "first": held[:SHOWN_LEFT]}
                              if held else None)
    if not held:
        return None
    message = (f"{len(held)} units changed on {switch.target.name} after the copy the table points at was made, "
               f"and may have changed on {switch.source.name} too: they stay on {switch.source.name}, and both "
               f"versions are kept: {first_of(list(plan.diverged))}; spec.failback.divergedWinner (Primary or "
               "Secondary) says which version the table points at")
    if runs:
        out.events.append(("Warning", reasons.DIVERGED, message))
    return Condition.of(READY, False, reasons.DIVERGED, message)


def _switch_words(spec: TableReplicaSpec, switch: Switch, plan: SwitchPlan, runs: Sequence[RelocationReport],
                  left: Sequence[str], held: Sequence[str], unplanned: bool) -> str:
    """The FailedOver / FailedBack Event's message."""
    word = "failed back" if switch.failback else "failed over"
    if unplanned:
        word += f" (unplanned, recovery point {rfc3339(spec.failover.accept_recovery_point)} accepted)"
    copied = (f"; {len(plan.changed)} units changed while failed over were copied to new directories under "
              f"{switch.target.filesystem.rstrip('/')}/{FAILBACK_DIR}/{switch.home} (their originals stay "
              "as they were)" if plan.changed else "")
    won = (f"; {len(plan.originals_won)} diverged units point at their originals again "
           f"(spec.failback.divergedWinner Primary): {first_of(list(plan.originals_won))}" if plan.originals_won
           else "")
    stayed = (f"; {len(plan.behind)} units without a whole recorded copy stay on {switch.source.name} "
              f"(spec.failover.leaveBehind): {first_of(list(plan.behind))}" if plan.behind else "")
    after = sorted(set(left) - {b.partition(": ")[0] for b in plan.behind} - set(held))
    stayed += (f"; {len(after)} units changed or added after the check stay on {switch.source.name} until the "
               f"next pass copies them and moves them: {first_of(after)}" if after else "")
    return (f"{spec.qualified_table} {word} from {switch.source.name} to {switch.target.name}: {plan.units} units "
            f"verified, {sum(r.rewritten for r in runs)} locations rewritten in run(s) "
            f"{', '.join(r.run_id for r in runs) or 'none'}{copied}{won}{stayed}; an undo of a run restores its "
            "locations")


def _copy_changed(spec: TableReplicaSpec, changed: Sequence[Moved], switch: Switch, ports: ReplicaPorts,
                  stopped: Callable[[], bool]) -> None:
    """Copy, then verify from the data; SwitchRefused (nothing relocated) unless every new directory is whole."""
    units = [m.unit for m in changed]
    storage = ports.storage()
    owner = owner_of(spec)
    launcher = ports.launcher(switch.target)
    earlier = launcher.observe()
    if earlier is not None and not earlier.finished:
        raise SwitchWaiting(reasons.FAILBACK_COPYING, f"the failback's copy to {switch.target.name} runs "
                                                      f"({earlier.message or earlier.outcome}); the switch follows it")
    pending = [c.unit for c in check_units(units, storage, spec.copy.verify, owner=owner) if not c.in_sync]
    if pending and not stopped():  # a failback tried before may have copied some already
        launch = launcher.start(CopyPlan(tuple(pending), owner), spec.copy)
        if not launch.finished:
            raise SwitchWaiting(reasons.FAILBACK_COPYING, f"the failback's copy of {len(pending)} units to "
                                                          f"{switch.target.name} started ({launch.message or launch.outcome}); "
                                                          "the switch follows it")
        if launch.outcome == CANCELLED:
            raise SwitchRefused(reasons.FAILBACK_CANCELLED, "the failback's copy was cancelled (the operator stopped); "
                                                     "the next pass resumes it")
    behind = [f"{c.unit.id}: {c.reason}" for c in check_units(units, storage, spec.copy.verify, owner=owner)
              if not c.in_sync]
    if behind:
        raise SwitchRefused(reasons.FAILBACK_REFUSED, f"failback to {switch.target.name} refused, nothing was changed: "
                                               f"{len(behind)} of {len(units)} units changed while failed over are "
                                               f"not yet copied whole to new directories there: {first_of(behind)}")


class SwitchWaiting(SwitchRefused):
    """The switch waits for its copy, which runs: nothing was written, nothing is wrong."""


# --- a deletion ----------------------------------------------------------------------------------------------

@dataclass
class Forgotten:
    removed: int = 0  # units whose hivecat.replica.* keys of this TableReplica's clusters were removed
    left: list[str] = field(default_factory=list)  # per backend that could not be opened: what stays there


def forget_pass(spec: TableReplicaSpec, backends: Sequence[Backend], ports: ReplicaPorts) -> Forgotten:
    """A TableReplica deleted while not failed over (no location depends on it): its bookkeeping leaves each
    backend; data and locations stay. A backend that cannot be opened keeps its parameters, said in `left`."""
    out = Forgotten()
    for backend in backends:
        try:
            catalog = ports.open(backend)
        except (CatalogUnavailable, SecretUnavailable) as error:
            out.left.append(f"{backend.label}: {error.message}; the hivecat.replica.* parameters of "
                            f"{spec.qualified_table} stay in the catalog, where `hivecat route` still counts those "
                            "copies until the parameters are removed")
            continue
        try:
            table = catalog.get_table(spec.database, spec.table)
            if table is None:
                continue
            units = [(None, table.parameters)]  # the table's own keys (readOnly; all of them when unpartitioned)
            if table.partition_keys:
                units += [(tuple(p.values), p.parameters) for p in catalog.list_partitions(spec.database, spec.table)]
            updates = forget(spec.clusters(), units)
            if updates:
                catalog.update_unit_params(spec.database, spec.table, updates)
            out.removed += len(updates)
        finally:
            close = getattr(catalog, "close", None)
            if close is not None:
                close()
    return out
