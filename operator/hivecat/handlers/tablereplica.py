"""TableReplica handlers: take the spec, sync on schedule and on demand, release the bookkeeping on delete.

Syncs run on the TableReplicas' own thread pool (handlers/pools.py), never in the event loop: when the spec
changes, when the `hivecatalog.io/sync-now` annotation changes, every schedule.interval from the last start, and
after a failed sync with backoff. After a start, the first syncs of the TableReplicas found are spread over the
Helm value concurrency.startupSpreadSeconds. One daemon per TableReplica runs its passes one after the other,
so there is one run per TableReplica and secondary at a time. A pass never waits for a copy: it starts one and
ends; the copy's end (a copy Job's watch event, a Local child's exit, or at the latest RUNNING_SECONDS later)
brings the pass that verifies and records it.

Every pass first asks what the namespace's policy allows: the schedule within its minimums, the catalog's
backends, and for each cluster its storage and credentials (reconcile.access.cluster_access). A cluster the
namespace may not use is neither read nor written; the operator reaches every other with that cluster's own
credentials (replication/routes.py). One table has one TableReplica: a second one is refused, naming the
first (the older keeps it).
"""

from __future__ import annotations

import hashlib
import logging
import math
import time
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

import kopf

from hivecat import k8s, metrics, reasons
from hivecat.act.readiness import readiness_pass
from hivecat.act.tablereplica import Ended, SyncOutcome, forget_pass, sync_pass
from hivecat.config import config
from hivecat.copy.copier import new_run_id
from hivecat.handlers import pools, wakes
from hivecat.handlers.clusterstorage import claim_of
from hivecat.handlers.copy_launch import JOB, SPARK_APPLICATION
from hivecat.handlers.policy import policy_of
from hivecat.handlers.ports import catalog_backends, registry_text
from hivecat.handlers.replica_ports import LiveReplicaPorts
from hivecat.kinds import COMPONENT, GROUP, LABEL_COMPONENT, LABEL_MANAGED_BY, MANAGED_BY, TABLE_REPLICA, VERSION
from hivecat.reconcile.access import NamespacePolicy, check_table_replica, cluster_access, judged
from hivecat.reconcile.backoff import backoff
from hivecat.reconcile.clusterstorage import Backend
from hivecat.reconcile.conditions import Condition, merge
from hivecat.reconcile.failover_readiness import remembered
from hivecat.reconcile.policy import Violation
from hivecat.reconcile.replica_status import READY
from hivecat.replication.launch import RUNNING
from hivecat.replication.registry import ClusterEntry, parse_registry_document
from hivecat.replication.routes import ClusterAccess
from hivecat.specs.errors import SpecInvalid
from hivecat.specs.kerberos import spec_kerberos
from hivecat.specs.tablereplica import TableReplicaSpec, parse_table_replica
from hivecat.timestamps import API_TIME

TICK = 0.5  # the daemon's first look, after its spec handler (resume: the start-up spread) has run
IDLE = 10.0  # the longest sleep: events wake the daemon; this bounds what no event announces
COPY_POLL = 1.0  # while a copy runs: a Local child's exit is seen by polling
# The next pass at the latest this much later: while a copy waits to start, and while one runs (its end
# announces itself -- a Job's watch event, a Local child's exit -- but a SparkApplication's is not watched).
OBSERVE_SECONDS = 5.0
RUNNING_SECONDS = 30.0
_ended: set[tuple[str, str]] = set()  # (namespace, name) of TableReplicas whose copy Job has ended


# --- the spec ----------------------------------------------------------------------------------------------

@kopf.on.resume(GROUP, VERSION, TABLE_REPLICA.plural)
@kopf.on.create(GROUP, VERSION, TABLE_REPLICA.plural)
@kopf.on.update(GROUP, VERSION, TABLE_REPLICA.plural)
def reconcile(body: kopf.Body, memo: kopf.Memo, patch: kopf.Patch, reason: str, **_: Any) -> None:
    status = body.get("status") or {}
    patch.status["observedGeneration"] = body.meta.get("generation")
    try:
        spec = parse_table_replica(body)
    except SpecInvalid as invalid:
        patch.status["phase"] = "Invalid"
        patch.status["conditions"] = _conditions(body, [Condition.of(READY, False, invalid.reason, invalid.message)])
        return
    if spec.suspend:
        patch.status["phase"] = "Suspended"
    elif status.get("phase") in (None, "Invalid", "Suspended"):
        patch.status["phase"] = "Pending"
    memo["sync_now"] = True  # a new spec, a sync-now annotation (or a restart) syncs at once
    memo.pop("retry_at", None)
    if reason == "resume":  # found at a start: not every TableReplica at once
        memo["not_before"] = time.time() + startup_delay(body.meta.get("uid") or "", config().startup_spread_seconds)
    wakes.wake(TABLE_REPLICA.kind, body.meta.namespace, body.meta.name)


def startup_delay(uid: str, spread: float) -> float:
    """Where in [0, spread) seconds after a start this TableReplica's first sync goes: fixed by its uid, so
    that the syncs are spread evenly and a restart spreads them the same way."""
    if spread <= 0:
        return 0.0
    return int(hashlib.sha256(uid.encode()).hexdigest()[:8], 16) / 0x1_0000_0000 * spread


def _conditions(body: kopf.Body, conditions: list[Condition]) -> list[dict[str, Any]]:
    return merge((body.get("status") or {}).get("conditions"), conditions, generation=body.meta.get("generation"),
                 now=k8s.timestamp())


# --- syncs -------------------------------------------------------------------------------------------------

@kopf.index(GROUP, VERSION, TABLE_REPLICA.plural)
async def replicas_by_table(namespace: str, name: str, spec: kopf.Spec, meta: kopf.Meta,
                            **_: Any) -> dict[tuple[str, str, str, str], tuple[str, str]]:
    """(namespace, catalog, database, table) → (creationTimestamp, name) of the TableReplicas that keep it."""
    catalog = (spec.get("catalogRef") or {}).get("name") or ""
    database, table = str(spec.get("database") or "default").lower(), str(spec.get("table") or "").lower()
    return {(namespace, catalog, database, table): (meta.get("creationTimestamp") or "", name)}


@dataclass(frozen=True)
class Indexes:
    """The kopf indexes a pass reads (every handler gets them as keyword arguments)."""

    storages: kopf.Index  # storages_by_catalog
    policies: kopf.Index  # catalog_policies
    tables: kopf.Index    # replicas_by_table


@kopf.daemon(GROUP, VERSION, TABLE_REPLICA.plural, cancellation_timeout=60)
async def syncer(stopped: kopf.DaemonStopped, body: kopf.Body, memo: kopf.Memo, logger: logging.Logger,
                 storages_by_catalog: kopf.Index, catalog_policies: kopf.Index, replicas_by_table: kopf.Index,
                 **_: Any) -> None:
    indexes = Indexes(storages_by_catalog, catalog_policies, replicas_by_table)
    async with wakes.Sleeper((TABLE_REPLICA.kind, body.meta.namespace, body.meta.name), stopped) as sleeper:
        await sleeper.sleep(TICK)
        while not stopped:
            wait = IDLE if body.meta.get("deletionTimestamp") else _due_in(body, memo)
            check = _readiness_due_in(body, memo)
            if wait > 0 and check > 0:
                await sleeper.sleep(min(wait, check, IDLE))
                continue
            if wait > 0:  # only the readiness check is due (also while suspended)
                await pools.run(TABLE_REPLICA.kind, _check_readiness, body, memo, logger, indexes)
                continue
            await pools.run(TABLE_REPLICA.kind, _sync, body, memo, lambda: bool(stopped), logger, indexes)
            metrics.LOCAL_COPIES.set(pools.local_runs().running())


_COPY_RUN = {LABEL_MANAGED_BY: MANAGED_BY, LABEL_COMPONENT: COMPONENT.copy}


@kopf.on.event(JOB.group, JOB.version, JOB.plural, labels=_COPY_RUN)
async def copy_job_changed(body: kopf.Body, namespace: str, **_: Any) -> None:
    """A copy Job that ended brings its TableReplica's next pass, which reads and verifies it."""
    _copy_run_changed(JOB.state(body), body, namespace)


# Served only where spark-operator's CRD exists when the operator starts (or, cluster-wide, appears later):
# elsewhere kopf warns once that it cannot serve it, and a SparkApplication's end is read by the timed pass.
@kopf.on.event(SPARK_APPLICATION.group, SPARK_APPLICATION.version, SPARK_APPLICATION.plural, labels=_COPY_RUN)
async def copy_application_changed(body: kopf.Body, namespace: str, **_: Any) -> None:
    """A copy SparkApplication that ended brings its TableReplica's next pass, as a Job's end does."""
    _copy_run_changed(SPARK_APPLICATION.state(body), body, namespace)


def _copy_run_changed(state: str, body: kopf.Body, namespace: str) -> None:
    if state == RUNNING:
        return
    for owner in body.meta.get("ownerReferences") or ():
        if owner.get("kind") == TABLE_REPLICA.kind:
            _ended.add((namespace, owner.get("name")))
            wakes.wake(TABLE_REPLICA.kind, namespace, owner.get("name"))


def _due_in(body: kopf.Body, memo: kopf.Memo) -> float:
    """Seconds until the next pass is due (0: now; inf: only an event can make it due)."""
    status = body.get("status") or {}
    if status.get("observedGeneration") != body.meta.get("generation") or status.get("phase") == "Invalid":
        return math.inf  # the event handler has not taken the spec yet, or cannot: its patch wakes the daemon
    if body.spec.get("suspend"):
        return math.inf
    now = time.time()
    if now < memo.get("not_before", 0.0):
        return memo["not_before"] - now
    key = (body.meta.namespace, body.meta.name)
    if memo.get("copying"):  # a copy runs: the next pass when it has ended, or at the latest at observe_at
        ended = key in _ended or pools.local_runs().ended(key) or now >= memo["observe_at"]
        _ended.discard(key)
        if ended or memo.get("sync_now"):
            memo.pop("sync_now", None)
            return 0.0
        return min(COPY_POLL, memo["observe_at"] - now)
    if memo.pop("sync_now", False):
        return 0.0
    if "retry_at" in memo:
        return max(0.0, memo["retry_at"] - now)
    if memo.get("interval_generation") != body.meta.get("generation"):  # parse the interval once per spec
        memo["interval"] = _interval(body)
        memo["interval_generation"] = body.meta.get("generation")
    # The last pass's end as this daemon saw it, too: its status patch may not be in the daemon's view of the
    # body yet (a pass queued at once behind the one that just ended would sync again).
    ended: float | None = memo.get("last_ended")
    last = status.get("lastRunTime")
    if last is not None:
        ended = max(datetime.strptime(last, API_TIME).replace(tzinfo=timezone.utc).timestamp(), ended or 0.0)
    return 0.0 if ended is None else max(0.0, ended + memo["interval"] - now)


def _readiness_due_in(body: kopf.Body, memo: kopf.Memo) -> float:
    """Seconds until the next readiness check (inf: none while a sync's copies run and its passes measure it,
    or while the spec is not taken); the first one an interval after the start, every sync restarts the
    interval."""
    now = time.time()
    if memo.get("readiness_generation") != body.meta.get("generation"):  # parse the interval once per spec
        try:
            memo["readiness_interval"] = parse_table_replica(body).readiness_interval
        except SpecInvalid:
            memo["readiness_interval"] = math.inf
        memo["readiness_generation"] = body.meta.get("generation")
        memo["readiness_at"] = min(memo.get("readiness_at", math.inf), now + memo["readiness_interval"])
    status = body.get("status") or {}
    # While a sync's copies run its passes measure readiness, except when suspended: then no pass runs at all.
    copying = memo.get("copying") and not body.spec.get("suspend")
    if body.meta.get("deletionTimestamp") or copying or status.get("phase") == "Invalid" \
            or status.get("observedGeneration") != body.meta.get("generation"):
        return math.inf
    return max(0.0, memo["readiness_at"] - now)


def _check_readiness(body: kopf.Body, memo: kopf.Memo, logger: logging.Logger, indexes: Indexes) -> None:
    """parse → admitted by the policy → the readiness pass → status.readiness and its metrics. Nothing is
    copied or recorded; a pass that cannot measure leaves status as it was and says why in the log."""
    namespace, name = body.meta.namespace, body.meta.name
    memo["readiness_at"] = time.time() + memo.get("readiness_interval", math.inf)
    try:
        spec = parse_table_replica(body)
        policy = policy_of(namespace, indexes.policies)
        _admitted(spec, policy, indexes)
        backends, clusters = _resolve(spec, policy)
    except SpecInvalid as invalid:
        logger.info("TableReplica %s/%s readiness not checked: %s", namespace, name, invalid.reason)
        return
    access = _access(spec, clusters, policy, indexes)
    status = body.get("status") or {}
    with metrics.timed(TABLE_REPLICA.kind, "readiness"):
        out = readiness_pass(spec, backends, clusters, LiveReplicaPorts(body, spec.catalog, access),
                             memory=remembered(status), access=access, known_primary=status.get("primary"),
                             clock=lambda: datetime.now(timezone.utc))
    if out.error is not None:
        logger.info("TableReplica %s/%s readiness not measured: %s", namespace, name, out.error)
        return
    metrics.record_readiness(namespace, name, out.measured)
    try:
        k8s.patch_status(TABLE_REPLICA, namespace, name, {"readiness": out.status})
    except k8s.NamespaceTerminating:
        return
    logger.info("TableReplica %s/%s readiness: %s", namespace, name, ", ".join(
        f"{m.cluster} {len(m.behind)} behind, {len(m.without_copy)} without a copy" for m in out.measured) or "none")


def _interval(body: kopf.Body) -> float:
    try:
        return parse_table_replica(body).interval
    except SpecInvalid:
        return float("inf")


def _sync(body: kopf.Body, memo: kopf.Memo, stopped: Any, logger: logging.Logger, indexes: Indexes) -> None:
    """parse → the pass (which starts or reads copies) → when the next is due → patch status → Events."""
    namespace, name = body.meta.namespace, body.meta.name
    sync = memo.get("sync") if memo.get("copying") else None  # the sync whose copies this pass reads
    run_id = sync["run_id"] if sync else new_run_id()
    outcome = _synced(body, run_id, stopped, sync, indexes)
    if stopped():
        return  # cancelled with the operator: the next start syncs again (units stay all-or-nothing)
    _record(namespace, name, outcome, (sync or {}).get("ended", {}))
    _schedule(memo, outcome, run_id)
    status = dict(outcome.status)
    status["conditions"] = _conditions(body, outcome.conditions)
    if outcome.in_flight:  # lastRunId and lastRunTime name the last sync that ended: this one has not yet
        status.pop("lastRunId", None)
        status.pop("lastRunTime", None)
    else:
        status.setdefault("lastRunTime", k8s.timestamp())
    try:
        k8s.patch_status(TABLE_REPLICA, namespace, name, status)
    except k8s.NamespaceTerminating:
        return
    for type_, reason, message in outcome.events:
        kopf.event(body, type=type_, reason=reason, message=message)
    logger.info("TableReplica %s/%s sync %s: %s", namespace, name, run_id, status.get("phase"))


def _synced(body: kopf.Body, run_id: str, stopped: Any, sync: dict[str, Any] | None,
            indexes: Indexes) -> SyncOutcome:
    """One pass, if the spec parses and the namespace's policy admits it; a PolicyCompliant condition while
    the policy is only audited."""
    audit: Condition | None = None
    try:
        spec = parse_table_replica(body)
        policy = policy_of(spec.namespace, indexes.policies)
        audit = _admitted(spec, policy, indexes)
        backends, clusters = _resolve(spec, policy)
    except SpecInvalid as invalid:
        outcome = SyncOutcome(conditions=[Condition.of(READY, False, invalid.reason, invalid.message)],
                              status={"phase": "Pending"}, failed=True)
    else:
        access = _access(spec, clusters, policy, indexes)
        audit = audit or _audited(access)
        with metrics.timed(TABLE_REPLICA.kind, "sync"):
            outcome = _pass(body, spec, backends, clusters, access, run_id, stopped, sync)
    if audit is not None:
        outcome.conditions.append(audit)
    return outcome


def _schedule(memo: kopf.Memo, outcome: SyncOutcome, run_id: str) -> None:
    """What the daemon keeps of a pass: the sync whose copies run, when to look again, the backoff."""
    memo["copying"] = outcome.in_flight
    memo["observe_at"] = time.time() + (OBSERVE_SECONDS if outcome.waiting else RUNNING_SECONDS)
    if outcome.in_flight:
        memo["sync"] = {"run_id": run_id, "ended": outcome.ended, "started": outcome.started,
                        "copying": {o.cluster: o.copying.copy_run_id for o in outcome.secondaries
                                    if o.copying is not None and o.copying.copy_run_id}}
    else:
        memo.pop("sync", None)
        memo["last_ended"] = time.time()
        memo["readiness_at"] = time.time() + memo.get("readiness_interval", math.inf)  # the sync measured it
    if outcome.failed:
        failures = memo.get("failures", 0) + 1
        memo["failures"], memo["retry_at"] = failures, time.time() + backoff(failures)
    else:
        memo.pop("failures", None)
        memo.pop("retry_at", None)


def _admitted(spec: TableReplicaSpec, policy: NamespacePolicy, indexes: Indexes) -> Condition | None:
    """SpecInvalid when the pass may not run: a schedule the policy does not allow (under Enforce; Audit only
    reports it, in the condition returned), or another TableReplica that keeps the same table."""
    keepers = sorted(indexes.tables.get((spec.namespace, spec.catalog, spec.database, spec.table), ()))
    if keepers and keepers[0][1] != spec.name:
        raise SpecInvalid(reasons.TABLE_ALREADY_REPLICATED,
                          f"{spec.qualified_table} of HiveCatalog {spec.catalog} is kept by TableReplica "
                          f"{keepers[0][1]}, which was there first: one table has one TableReplica (two would "
                          "switch its locations against each other); add the secondaries to that one")
    violation = check_table_replica(spec, policy)
    refusal, audit = judged(violation, policy)
    if violation is not None:
        metrics.record_policy_violation(spec.namespace, TABLE_REPLICA.kind, violation.reason, policy.enforcement)
    if refusal is not None:
        raise SpecInvalid(refusal.reason, refusal.message)
    return audit


def _audited(access: dict[str, ClusterAccess | Violation]) -> Condition | None:
    """Under Audit: PolicyCompliant False naming what the policy would refuse of the clusters used."""
    found = [a.audit for a in access.values() if isinstance(a, ClusterAccess) and a.audit is not None]
    if not found:
        return None
    return Condition.of(reasons.POLICY_COMPLIANT, False, found[0].reason, "would be refused once the policy is "
                        "enforced: " + "; ".join(v.message for v in found))


def _record(namespace: str, name: str, outcome: SyncOutcome, counted: Mapping[str, Ended]) -> None:
    """Metrics of the pass; `counted`: the copies' ends an earlier pass of this sync counted already."""
    fresh = {o.cluster: o.launch for o in outcome.secondaries if o.launch is not None
             and (o.cluster not in counted or o.launch is not counted[o.cluster].launch)}
    metrics.record_sync(namespace, name, [
        metrics.ReplicaFigures(o.cluster, fresh[o.cluster].files_copied if o.cluster in fresh else 0,
                               fresh[o.cluster].bytes_copied if o.cluster in fresh else 0, o.units_in_sync,
                               o.units_total, o.lag_seconds) for o in outcome.secondaries])
    metrics.record_relocations(outcome.relocations)
    metrics.record_readiness(namespace, name, [o.readiness for o in outcome.secondaries if o.readiness])
    ready = next((c for c in outcome.conditions if c.type == READY), None)
    if ready is not None and ready.status != "True":
        metrics.record_error(TABLE_REPLICA.kind, ready.reason)


def _pass(body: kopf.Body, spec: TableReplicaSpec, backends: tuple[Backend, ...], clusters: dict[str, ClusterEntry],
          access: dict[str, ClusterAccess | Violation], run_id: str, stopped: Any = lambda: False,
          sync: Mapping[str, Any] | None = None) -> SyncOutcome:
    """One pass; `sync`: the sync it continues (its run id, start, and the copies' ends read so far)."""
    ports = LiveReplicaPorts(body, spec.catalog, access, (sync or {}).get("copying"))
    status = body.get("status") or {}
    return sync_pass(spec, backends, clusters, ports, run_id, known_primary=status.get("primary"),
                     journal_configured=config().journal_url is not None, access=access, stopped=stopped,
                     ended=(sync or {}).get("ended"), started=(sync or {}).get("started"),
                     memory=remembered(status))


def _resolve(spec: TableReplicaSpec, policy: NamespacePolicy) -> tuple[tuple[Backend, ...], dict[str, ClusterEntry]]:
    """The catalog's backends and its cluster registry; SpecInvalid when the catalog is missing or unusable."""
    catalog_body, backends = catalog_backends(spec.namespace, spec.catalog, policy)
    try:
        clusters = parse_registry_document(registry_text(spec.namespace, catalog_body))
    except k8s.NameTaken as taken:
        raise SpecInvalid(taken.reason, taken.message) from None
    return backends, clusters


def _access(spec: TableReplicaSpec, clusters: dict[str, ClusterEntry], policy: NamespacePolicy,
            indexes: Indexes) -> dict[str, ClusterAccess | Violation]:
    """How this TableReplica may reach each registered cluster of its catalog (or why it may not)."""
    bodies = {b["metadata"]["name"]: b for b in indexes.storages.get((spec.namespace, spec.catalog), ())}
    found: dict[str, ClusterAccess | Violation] = {}
    for name, entry in clusters.items():
        body = bodies.get(name)
        if body is None:
            found[name] = Violation(reasons.CLUSTER_NOT_REGISTERED, f"ClusterStorage {name} is not in namespace "
                                                            f"{spec.namespace} any more")
            continue
        secret = ((body.get("spec") or {}).get("credentialsSecretRef") or {}).get("name") or None
        claim = claim_of(spec.namespace, name, entry.filesystem, indexes.storages, indexes.policies)
        found[name] = cluster_access(policy, name, entry.filesystem, secret, claim, spec_kerberos(body))
    return found


# --- deletion ----------------------------------------------------------------------------------------------

@kopf.on.delete(GROUP, VERSION, TABLE_REPLICA.plural)
def release(body: kopf.Body, namespace: str, name: str, patch: kopf.Patch, logger: logging.Logger,
            storages_by_catalog: kopf.Index, catalog_policies: kopf.Index, replicas_by_table: kopf.Index,
            **_: Any) -> None:
    """Held while failed over (the table's locations point at a copy this TableReplica keeps): deletion waits
    until spec.active names the primary again, and the failback (gated, as always) is done here, since the
    daemon stops with the deletion. Then its bookkeeping leaves the catalog; data and locations stay. A
    TableReplica refused because another keeps the table touches nothing: the bookkeeping is the other's."""
    indexes = Indexes(storages_by_catalog, catalog_policies, replicas_by_table)
    try:
        spec = parse_table_replica(body)
        policy = policy_of(namespace, catalog_policies)
        _admitted(spec, policy, indexes)
        backends, clusters = _resolve(spec, policy)
    except SpecInvalid as invalid:
        logger.warning("TableReplica %s/%s: bookkeeping left in place: %s", namespace, name, invalid.message)
        return
    except k8s.NamespaceTerminating:
        return
    status = body.get("status") or {}
    failed_over = bool(status.get("primary")) and status.get("active") not in (None, status["primary"])
    if not failed_over and not status.get("lastRunId"):
        return  # no sync ever got as far as the catalog: nothing recorded there
    if failed_over:
        _fail_back_first(body, patch, spec, backends, clusters, _access(spec, clusters, policy, indexes))
    pools.local_runs().cancel((namespace, name))  # its Jobs go with it (owned); its Local copies here
    forgotten = forget_pass(spec, backends, LiveReplicaPorts(body, spec.catalog, {}))
    for message in forgotten.left:  # not failed over, so no location depends on this TableReplica: it goes
        kopf.event(body, type="Warning", reason=reasons.BOOKKEEPING_LEFT, message=message)
        logger.warning("TableReplica %s/%s: %s", namespace, name, message)
    logger.info("TableReplica %s/%s: bookkeeping removed from %d units", namespace, name, forgotten.removed)
    metrics.forget(namespace, name, TABLE_REPLICA.kind)


def _fail_back_first(body: kopf.Body, patch: kopf.Patch, spec: TableReplicaSpec, backends: tuple[Backend, ...],
                     clusters: dict[str, ClusterEntry], access: dict[str, ClusterAccess | Violation]) -> None:
    """A pass that fails back if spec.active names the primary again (gated, as always); the deletion waits
    (kopf.TemporaryError) while the table is still failed over."""
    status = body.get("status") or {}
    outcome = _pass(body, spec, backends, clusters, access, new_run_id())
    metrics.record_relocations(outcome.relocations)
    for type_, reason, message in outcome.events:
        if reason != reasons.SYNCED:  # a pass for the failback: its sync is not news
            kopf.event(body, type=type_, reason=reason, message=message)
    if outcome.status.get("active") == status["primary"]:
        return
    message = (f"{spec.qualified_table} is failed over to {outcome.status.get('active') or status['active']}: "
               f"set spec.active to {status['primary']} (or remove it) to fail back first; the deletion "
               "waits for the failback")
    failback = next((c for c in outcome.conditions if c.type == READY and c.status != "True"), None)
    if failback is not None and failback.reason not in (reasons.ACTIVE_AVAILABLE,):
        message += f" ({failback.reason}: {failback.message})"
    patch.status["conditions"] = _conditions(body, [Condition.of(READY, False, reasons.DELETION_BLOCKED, message)])
    patch.status["phase"] = "Deleting"
    raise kopf.TemporaryError(message, delay=10)
