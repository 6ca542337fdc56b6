"""TableReplica handlers: take the spec, sync on schedule and on demand, release the bookkeeping on delete.

Syncs run in the daemon's worker thread, never in the event loop: when the spec changes, when the
`hivecatalog.io/sync-now` annotation changes, every schedule.interval from the last start, and after a failed
sync with backoff. One daemon per TableReplica runs its secondaries one after the other, so there is one run
per TableReplica and secondary at a time.
"""

from __future__ import annotations

import asyncio
import logging
import time
from datetime import datetime, timezone
from typing import Any

import kopf

from hivecat import k8s, metrics
from hivecat.catalog.base import Catalog
from hivecat.catalog.connect import CatalogUnavailable
from hivecat.copy.copier import new_run_id
from hivecat.copy.errors import CopyInputError
from hivecat.copy.storage import S3Settings, Storage
from hivecat.config import config
from hivecat.handlers.copy_launch import JOB, SPARK_APPLICATION, WorkloadLauncher
from hivecat.handlers.ports import open_backend, run_asked
from hivecat.kinds import ANNOTATION_METASTORE_ADDRESS, GROUP, HIVE_CATALOG, TABLE_REPLICA, VERSION
from hivecat.reconcile.backoff import backoff
from hivecat.reconcile.clusterstorage import Backend, backends_of
from hivecat.reconcile.conditions import Condition, merge
from hivecat.reconcile.registry import ClusterEntry, parse_registry_document
from hivecat.reconcile.tablereplica import READY, Launcher, SyncOutcome, sync_pass
from hivecat.replication.bookkeeping import forget
from hivecat.replication.launch import LocalLauncher
from hivecat.specs.errors import SpecInvalid
from hivecat.specs.hivecatalog import parse_hive_catalog
from hivecat.specs.tablereplica import TableReplicaSpec, parse_table_replica
from hivecat.workloads.registry import REGISTRY_KEY, registry_config_map_name

TICK = 0.5
TIME_FORMAT = "%Y-%m-%dT%H:%M:%SZ"


# --- the spec ----------------------------------------------------------------------------------------------

@kopf.on.resume(GROUP, VERSION, TABLE_REPLICA.plural)
@kopf.on.create(GROUP, VERSION, TABLE_REPLICA.plural)
@kopf.on.update(GROUP, VERSION, TABLE_REPLICA.plural)
def reconcile(body: kopf.Body, memo: kopf.Memo, patch: kopf.Patch, **_: Any) -> None:
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
    memo["sync_now"] = True  # a new spec (or a restart) syncs at once
    memo.pop("retry_at", None)


def _conditions(body: kopf.Body, conditions: list[Condition]) -> list[dict[str, Any]]:
    return merge((body.get("status") or {}).get("conditions"), conditions, generation=body.meta.get("generation"))


# --- syncs -------------------------------------------------------------------------------------------------

@kopf.daemon(GROUP, VERSION, TABLE_REPLICA.plural, cancellation_timeout=60)
async def syncer(stopped: kopf.DaemonStopped, body: kopf.Body, memo: kopf.Memo, logger: logging.Logger,
                 **_: Any) -> None:
    while not stopped:
        await asyncio.sleep(TICK)
        if body.meta.get("deletionTimestamp") or not _due(body, memo):
            continue
        await asyncio.to_thread(_sync, body, memo, lambda: bool(stopped), logger)


def _due(body: kopf.Body, memo: kopf.Memo) -> bool:
    status = body.get("status") or {}
    if status.get("observedGeneration") != body.meta.get("generation") or status.get("phase") == "Invalid":
        return False  # the event handler has not taken the spec yet, or cannot
    if body.spec.get("suspend"):
        return False
    if run_asked(body, memo, "sync_now"):
        return True
    now = time.time()
    if "retry_at" in memo:
        return now >= memo["retry_at"]
    if memo.get("interval_generation") != body.meta.get("generation"):  # parse the interval once per spec
        memo["interval"] = _interval(body)
        memo["interval_generation"] = body.meta.get("generation")
    last = status.get("lastRunTime")
    return last is None or now >= datetime.strptime(last, TIME_FORMAT).timestamp() + memo["interval"]


def _interval(body: kopf.Body) -> float:
    try:
        return parse_table_replica(body).interval
    except SpecInvalid:
        return float("inf")


def _sync(body: kopf.Body, memo: kopf.Memo, stopped: Any, logger: logging.Logger) -> None:
    namespace, name = body.meta.namespace, body.meta.name
    run_id = new_run_id()
    try:
        spec = parse_table_replica(body)
        backends, clusters = _resolve(spec)
    except SpecInvalid as invalid:
        outcome = SyncOutcome(conditions=[Condition.of(READY, False, invalid.reason, invalid.message)],
                              status={"phase": "Pending"}, failed=True)
    else:
        with metrics.timed(TABLE_REPLICA.kind, "sync"):
            outcome = _pass(body, spec, backends, clusters, run_id, stopped)
    if stopped():
        return  # cancelled with the operator: the next start syncs again (units stay all-or-nothing)
    _record(namespace, name, outcome)
    if outcome.failed:
        failures = memo.get("failures", 0) + 1
        memo["failures"], memo["retry_at"] = failures, time.time() + backoff(failures)
    else:
        memo.pop("failures", None)
        memo.pop("retry_at", None)
    status = dict(outcome.status)
    status["conditions"] = _conditions(body, outcome.conditions)
    status.setdefault("lastRunTime", datetime.now(timezone.utc).strftime(TIME_FORMAT))
    try:
        k8s.patch_status(TABLE_REPLICA, namespace, name, status)
    except k8s.NamespaceTerminating:
        return
    for type_, reason, message in outcome.events:
        kopf.event(body, type=type_, reason=reason, message=message)
    logger.info("TableReplica %s/%s sync %s: %s", namespace, name, run_id, status.get("phase"))


def _record(namespace: str, name: str, outcome: SyncOutcome) -> None:
    metrics.record_sync(namespace, name, [
        metrics.ReplicaFigures(o.cluster, o.launch.files_copied if o.launch else 0,
                               o.launch.bytes_copied if o.launch else 0, o.units_in_sync, o.units_total,
                               o.lag_seconds) for o in outcome.secondaries])
    metrics.record_relocations(outcome.relocations)
    ready = next((c for c in outcome.conditions if c.type == READY), None)
    if ready is not None and ready.status != "True":
        metrics.record_error(TABLE_REPLICA.kind, ready.reason)


def _pass(body: kopf.Body, spec: TableReplicaSpec, backends: tuple[Backend, ...], clusters: dict[str, ClusterEntry],
          run_id: str, stopped: Any = lambda: False) -> SyncOutcome:
    return sync_pass(spec, backends, clusters, LiveReplicaPorts(body, spec.catalog), run_id,
                     known_primary=(body.get("status") or {}).get("primary"),
                     journal_configured=config().journal_url is not None, stopped=stopped)


def _resolve(spec: TableReplicaSpec) -> tuple[tuple[Backend, ...], dict[str, ClusterEntry]]:
    """The catalog's backends and its cluster registry; SpecInvalid when the catalog is missing or unusable."""
    catalog_body = k8s.get(HIVE_CATALOG.api_version, HIVE_CATALOG.kind, spec.namespace, spec.catalog)
    if catalog_body is None:
        raise SpecInvalid("CatalogNotFound", f"HiveCatalog {spec.catalog} does not exist in namespace {spec.namespace}")
    catalog = parse_hive_catalog(catalog_body, default_image=config().metastore_image)
    address = ((catalog_body.get("metadata") or {}).get("annotations") or {}).get(ANNOTATION_METASTORE_ADDRESS)
    # The metastore database when the operator can reach it; an embedded Derby database only through Thrift.
    access = "Thrift" if catalog.database is not None and catalog.database.dialect == "derby" else "Database"
    backends = backends_of(catalog, access, address)
    registry = k8s.get("v1", "ConfigMap", spec.namespace, registry_config_map_name(spec.catalog))
    clusters = parse_registry_document(((registry or {}).get("data") or {}).get(REGISTRY_KEY))
    return backends, clusters


class LiveReplicaPorts:
    def __init__(self, body: kopf.Body, catalog: str) -> None:
        self.body, self.catalog, self.namespace = body, catalog, body.meta.namespace

    def open(self, backend: Backend) -> Catalog:
        return open_backend(self.namespace, backend)

    def launcher(self, secondary: ClusterEntry) -> Launcher:
        kind = (secondary.compute or {}).get("type", "Local")
        if kind == "Local":
            return LocalLauncher(config().state_dir / "copies")
        workload = SPARK_APPLICATION if kind == "SparkApplication" else JOB
        return WorkloadLauncher(workload, self.body, self.catalog, secondary, self.storage())

    def storage(self) -> Storage:
        try:
            return Storage(S3Settings.from_environment())
        except CopyInputError:  # no usable S3 settings here: file:// and hdfs:// still work
            return Storage()


# --- deletion ----------------------------------------------------------------------------------------------

@kopf.on.delete(GROUP, VERSION, TABLE_REPLICA.plural)
def release(body: kopf.Body, namespace: str, name: str, patch: kopf.Patch, logger: logging.Logger,
            **_: Any) -> None:
    """Held while failed over (the table's locations point at a copy this TableReplica keeps): deletion waits
    until spec.active names the primary again, and the failback (gated, as always) is done here, since the
    daemon stops with the deletion. Then its bookkeeping leaves the catalog; data and locations stay."""
    try:
        spec = parse_table_replica(body)
    except SpecInvalid:
        return  # never synced: nothing recorded
    try:
        backends, clusters = _resolve(spec)
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
        outcome = _pass(body, spec, backends, clusters, new_run_id())
        metrics.record_relocations(outcome.relocations)
        for type_, reason, message in outcome.events:
            if reason != "Synced":  # a pass for the failback: its sync is not news
                kopf.event(body, type=type_, reason=reason, message=message)
        if outcome.status.get("active") != status["primary"]:
            message = (f"{spec.qualified_table} is failed over to {outcome.status.get('active') or status['active']}: "
                       f"set spec.active to {status['primary']} (or remove it) to fail back first; the deletion "
                       "waits for the failback")
            failback = next((c for c in outcome.conditions if c.type == READY and c.status != "True"), None)
            if failback is not None and failback.reason not in ("ActiveAvailable",):
                message += f" ({failback.reason}: {failback.message})"
            patch.status["conditions"] = _conditions(body, [Condition.of(READY, False, "DeletionBlocked", message)])
            patch.status["phase"] = "Deleting"
            raise kopf.TemporaryError(message, delay=10)
    removed = 0
    for backend in backends:
        try:
            catalog = open_backend(namespace, backend)
        except (CatalogUnavailable, k8s.SecretUnavailable) as error:
            # Not failed over, so no location depends on this TableReplica: it goes, and says what it left.
            message = (f"{backend.label}: {error.message}; the hivecat.replica.* parameters of "
                       f"{spec.qualified_table} stay in the catalog, where `hivecat route` still counts those "
                       "copies until the parameters are removed")
            kopf.event(body, type="Warning", reason="BookkeepingLeft", message=message)
            logger.warning("TableReplica %s/%s: %s", namespace, name, message)
            continue
        try:
            removed += _forget(catalog, spec)
        finally:
            close = getattr(catalog, "close", None)
            if close is not None:
                close()
    logger.info("TableReplica %s/%s: bookkeeping removed from %d units", namespace, name, removed)
    metrics.forget(namespace, name, TABLE_REPLICA.kind)


def _forget(catalog: Catalog, spec: TableReplicaSpec) -> int:
    table = catalog.get_table(spec.database, spec.table)
    if table is None:
        return 0
    units = [(None, table.parameters)]  # the table's own keys (readOnly; all of them when unpartitioned)
    if table.partition_keys:
        units += [(tuple(p.values), p.parameters) for p in catalog.list_partitions(spec.database, spec.table)]
    updates = forget(spec.clusters(), units)
    if updates:
        catalog.update_unit_params(spec.database, spec.table, updates)
    return len(updates)

