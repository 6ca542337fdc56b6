"""ClusterStorage handlers: keep each catalog's cluster registry, scan for "Wrong FS" drift, repair it.

Registration runs on the resource's create/update/resume and delete, and again from the daemon whenever the
set of ClusterStorages of the same catalog, or what the CatalogPolicies grant the namespace, changed (kopf
indexes hold both), so a cluster refused because another claimed its filesystem is taken as soon as that other
one goes. One lock per catalog: two ClusterStorages of one catalog never write its registry side by side.

A ClusterStorage is registered only when its namespace's policy grants its filesystem and compute, its scans
are not more frequent than allowed, and no other namespace claimed that storage first (reconcile/claims.py).
Refused, it keeps whatever the registry held for it (clients that mount clusters.json keep working) and hivecat
reads and writes nothing for it.

The daemon also runs the drift scans (handlers/drift.py) when due, in a worker thread, never in the event loop.
"""

from __future__ import annotations

from collections import Counter
import logging
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import kopf

from hivecat import k8s, metrics, reasons
from hivecat.config import config
from hivecat.kinds import CLUSTER_STORAGE, GROUP, HIVE_CATALOG, TABLE_REPLICA, VERSION
from hivecat.handlers import drift, pools, wakes
from hivecat.handlers.policy import changes as policy_changes
from hivecat.handlers.policy import policy_of
from hivecat.handlers.ports import LiveStoragePorts
from hivecat.reconcile.access import NamespacePolicy, check_cluster_storage, judged
from hivecat.reconcile.claims import Claim, KnownClaims, claim_conflict
from hivecat.act.clusterstorage import register
from hivecat.reconcile.clusterstorage import DRIFTED, READY, registration_of
from hivecat.reconcile.conditions import Condition, find, kept, merge
from hivecat.reconcile.policy import Violation
from hivecat.replication.registry import ClusterEntry, RegistryDecision, cluster_entry, parse_registry_document
from hivecat.specs.clusterstorage import ClusterStorageSpec, canonical_uri, parse_cluster_storage, previous_filesystems
from hivecat.specs.errors import SpecInvalid

TICK = 0.5  # the daemon's first look, and its next one after a registration
# An unregistered ClusterStorage (refused, its catalog missing) tries again after RETRY_FIRST seconds, doubling
# while it stays so, at most RETRY_CAP apart: what usually ends a refusal wakes it at once instead (its
# catalog created, a CatalogPolicy changed, a claim on its storage released, its catalog's ClusterStorages).
RETRY_FIRST = 5.0
RETRY_CAP = 120.0
INPUTS_RECHECK = 30.0  # seconds: a look at the registration's inputs although no event moved them (a namespace's labels)
_inputs: Counter[tuple[str, str]] = Counter()  # (namespace, catalog) → events of its ClusterStorages
_catalog_of: dict[tuple[str, str], str] = {}   # (namespace, name) → the catalog it was last seen in
_filesystem_of: dict[tuple[str, str], str] = {}  # (namespace, name) → the storage it was last seen to claim
_retry_now: set[tuple[str, str]] = set()  # (namespace, name): what refused it may have moved; try again now
_catalog_locks: dict[tuple[str, str], threading.Lock] = {}
_catalog_locks_guard = threading.Lock()
_storage_events = [0]  # events of any ClusterStorage: the claims are read again after one
_claims_guard = threading.Lock()


def _catalog_lock(namespace: str, catalog: str) -> threading.Lock:
    with _catalog_locks_guard:
        return _catalog_locks.setdefault((namespace, catalog), threading.Lock())


# --- indexes -----------------------------------------------------------------------------------------------

@kopf.index(GROUP, VERSION, CLUSTER_STORAGE.plural)
async def storages_by_catalog(namespace: str, name: str, spec: kopf.Spec, status: kopf.Status, meta: kopf.Meta,
                              **_: Any) -> dict[tuple[str, str], dict[str, Any]]:
    """(namespace, catalog) → what registration needs of each ClusterStorage (a plain copy). Async, like every
    indexer here: pure and cheap, so it runs on the loop; a synchronous one went through kopf's executor (a few
    threads, shared with the blocking handlers) on every event."""
    catalog = (spec.get("catalogRef") or {}).get("name") or ""
    return {(namespace, catalog): {
        "metadata": {"name": name, "namespace": namespace, "creationTimestamp": meta.get("creationTimestamp"),
                     "deletionTimestamp": meta.get("deletionTimestamp")},
        "spec": dict(spec), "status": {k: status.get(k) for k in ("filesystem", "previousFilesystems")}}}


_claims_seen: list[Any] = [None, -1, None]  # the index, _storage_events when read, its KnownClaims


def known_claims(index: kopf.Index) -> KnownClaims:
    """claims(index), indexed; built again only after an event of a ClusterStorage (registry_inputs counts
    them after kopf updated the index), never per question: every registration and sync asks."""
    with _claims_guard:
        seen_index, seen_events, seen = _claims_seen
        events = _storage_events[0]  # read before the index: what is built is at least this new
    if seen_index is index and seen_events == events:
        return seen
    built = KnownClaims.of(claims(index))
    with _claims_guard:
        _claims_seen[:] = [index, events, built]
    return built


def claims(index: kopf.Index) -> list[Claim]:
    """What every ClusterStorage the operator watches claims (any namespace, any catalog). One being deleted
    still claims its storage until it is gone."""
    found = []
    for key in index:
        for body in index[key]:
            filesystem = _canonical((body.get("spec") or {}).get("filesystem"))
            if filesystem is None:
                continue  # refused by its own spec: claims nothing
            meta = body["metadata"]
            registered = _canonical((body.get("status") or {}).get("filesystem")) == filesystem
            found.append(Claim(meta["namespace"], meta["name"], filesystem, registered,
                               meta.get("creationTimestamp") or ""))
    return found


def _canonical(uri: Any) -> str | None:
    try:
        return canonical_uri(uri) if isinstance(uri, str) else None
    except ValueError:
        return None


def claim_of(namespace: str, name: str, filesystem: str, index: kopf.Index,
             policies: kopf.Index) -> Violation | None:
    """Whether another namespace claimed this ClusterStorage's storage first (reconcile/claims.py)."""
    known = known_claims(index)
    mine = known.by_name.get((namespace, name))
    if mine is None or mine.filesystem != filesystem:  # not indexed yet, or its spec moved on: as a newcomer
        mine = Claim(namespace, name, filesystem, False, "9999")
    granted: dict[str, NamespacePolicy] = {}

    def shared(claim: Claim) -> bool:
        policy = granted.setdefault(claim.namespace, policy_of(claim.namespace, policies))
        grant = policy.storage_grant(claim.filesystem)
        return grant is not None and grant.shared
    return claim_conflict(mine, [c for c in known.near(filesystem) if c is not mine], shared)


@kopf.index(GROUP, VERSION, TABLE_REPLICA.plural)
async def replicas_by_storage(namespace: str, name: str, spec: kopf.Spec, **_: Any) -> dict[tuple[str, str], str]:
    """(namespace, ClusterStorage) → the TableReplicas that copy from or to it."""
    clusters = {spec.get("primary"), spec.get("active"), *(spec.get("secondaries") or ())}
    return {(namespace, cluster): name for cluster in clusters if cluster}


# --- registration ------------------------------------------------------------------------------------------

@kopf.on.event(GROUP, VERSION, CLUSTER_STORAGE.plural)
async def registry_inputs(type: str, namespace: str, name: str, spec: kopf.Spec, storages_by_catalog: kopf.Index,
                          **_: Any) -> None:
    """Count the events of each catalog's ClusterStorages (after kopf updated its index), so that each daemon
    looks at its registration's inputs only when they may have moved, never O(n) on every wake. A storage
    released (its ClusterStorage gone, or moved to another filesystem) wakes those that claim near it."""
    catalog = (spec.get("catalogRef") or {}).get("name") or ""
    moved = {catalog, _catalog_of.get((namespace, name), catalog)}  # the catalog it left, too
    for each in moved:
        _inputs[(namespace, each)] += 1
    with _claims_guard:
        _storage_events[0] += 1
    claimed = _canonical(spec.get("filesystem"))
    released = _filesystem_of.get((namespace, name))
    if type == "DELETED":
        _catalog_of.pop((namespace, name), None)
        _filesystem_of.pop((namespace, name), None)
        _retry_now.discard((namespace, name))
        released = released or claimed
    else:
        _catalog_of[(namespace, name)] = catalog
        if claimed is not None:
            _filesystem_of[(namespace, name)] = claimed
    wakes.wake_namespace(CLUSTER_STORAGE.kind, namespace, lambda each: _catalog_of.get((namespace, each)) in moved)
    if released is not None and released != (claimed if type != "DELETED" else None):
        for claim in known_claims(storages_by_catalog).near(released):  # only on a release: rare
            _try_again(claim.namespace, claim.name)


@kopf.on.event(GROUP, VERSION, HIVE_CATALOG.plural)
async def catalog_arrived(type: str | None, namespace: str, name: str, **_: Any) -> None:
    """A ClusterStorage waiting for its HiveCatalog tries again as soon as the catalog is created (or gone)."""
    if type in ("ADDED", "DELETED"):
        for each in wakes.names(CLUSTER_STORAGE.kind, namespace):
            if _catalog_of.get((namespace, each)) == name:
                _try_again(namespace, each)


def _try_again(namespace: str, name: str) -> None:
    _retry_now.add((namespace, name))
    wakes.wake(CLUSTER_STORAGE.kind, namespace, name)


def refusal_of(body: Mapping[str, Any], spec: ClusterStorageSpec, policy: NamespacePolicy, index: kopf.Index,
               policies: kopf.Index) -> tuple[Violation | None, Condition | None]:
    """(why the ClusterStorage is not taken, a PolicyCompliant condition while the policy is only audited).
    A claim conflict refuses whatever the enforcement: it protects another team's storage."""
    violation = check_cluster_storage(spec, policy, scan_interval_set=(body.get("spec") or {}).get("scanInterval")
                                      is not None)
    refusal, audit = judged(violation, policy)
    if violation is not None:
        metrics.record_policy_violation(spec.namespace, CLUSTER_STORAGE.kind, violation.reason, policy.enforcement)
    return refusal or claim_of(spec.namespace, spec.name, spec.filesystem, index, policies), audit


def _members(bodies: Iterable[Mapping[str, Any]], own: str, own_previous: tuple[str, ...],
             registered: Mapping[str, ClusterEntry], refused: Any) -> list[ClusterEntry]:
    """The ClusterStorages of one catalog whose specs parse, oldest first, as registry entries. One being
    deleted stays until its delete handler lets it go (a TableReplica may still hold it). One `refused(body,
    spec)` says no to stays as registered (its entry unchanged), or is left out when it never was."""
    settings = config()
    live = list(bodies)
    live.sort(key=lambda b: (b["metadata"].get("creationTimestamp") or "", b["metadata"]["name"]))
    members = []
    for body in live:
        try:
            spec = parse_cluster_storage(body, default_scan_interval=settings.drift_scan_seconds)
        except SpecInvalid:
            continue
        name = body["metadata"]["name"]
        if refused(body, spec) is not None:
            if name in registered:
                members.append(registered[name])
            continue
        previous = own_previous if name == own else previous_filesystems(spec, body.get("status") or {})
        members.append(cluster_entry(spec, previous))
    return members


Render = Callable[[Mapping[str, Any]], dict[str, Any]]  # the status to write, from the status as it is then


def _registration(body: kopf.Body, index: kopf.Index, policies: kopf.Index, *,
                  leaving: bool = False) -> Render:
    """Register (or, leaving, unregister) this ClusterStorage; returns how to render the status it writes.
    Rendered onto the status as it is when written (k8s.write_status), so the Drifted condition and phase of
    a scan that wrote meanwhile stay, and this registration's Ready is never undone by a stale writer."""
    generation = body.meta.get("generation")
    resolved = _resolve(body, leaving)
    if not isinstance(resolved, tuple):
        return resolved  # nothing to register: the status says why
    spec, catalog_body = resolved
    previous = previous_filesystems(spec, dict(body.get("status") or {}))
    policy = policy_of(spec.namespace, policies)
    own_refusal, audit = refusal_of(body, spec, policy, index, policies)
    unchanged = _fields(observedGeneration=generation)
    try:
        decision = _register_catalog(body.meta.name, spec, catalog_body, previous, own_refusal, policy, index,
                                     policies, leaving)
    except k8s.NameTaken as taken:  # a ConfigMap of the registry's name that hivecat did not make
        return unchanged if leaving else _not_registered(generation, "Invalid", Condition.of(
            READY, False, taken.reason, taken.message))
    if leaving:
        return unchanged
    ready = (Condition.of(READY, False, own_refusal.reason, own_refusal.message) if own_refusal is not None
             else registration_of(spec.name, decision))
    return _registered(generation, spec, previous, ready, audit)


def _resolve(body: kopf.Body, leaving: bool) -> tuple[ClusterStorageSpec, Mapping[str, Any]] | Render:
    """(the spec, its HiveCatalog), or the status to write when there is nothing to register."""
    generation = body.meta.get("generation")
    try:
        spec = parse_cluster_storage(body, default_scan_interval=config().drift_scan_seconds)
    except SpecInvalid as invalid:
        return _not_registered(generation, "Invalid", Condition.of(READY, False, invalid.reason, invalid.message))
    if spec.suspend and not leaving:
        return _fields(observedGeneration=generation, phase="Suspended")
    catalog_body = k8s.get(HIVE_CATALOG.api_version, HIVE_CATALOG.kind, spec.namespace, spec.catalog)
    if catalog_body is None:
        missing = f"HiveCatalog {spec.catalog} does not exist in namespace {spec.namespace}"
        return _not_registered(generation, "Pending", Condition.of(READY, False, reasons.CATALOG_NOT_FOUND, missing))
    if leaving and (catalog_body.get("metadata") or {}).get("deletionTimestamp"):
        return _fields(observedGeneration=generation)  # the registry goes with its catalog
    return spec, catalog_body


def _register_catalog(name: str, spec: ClusterStorageSpec, catalog_body: Mapping[str, Any],
                      previous: tuple[str, ...], own_refusal: Violation | None, policy: NamespacePolicy,
                      index: kopf.Index, policies: kopf.Index, leaving: bool) -> RegistryDecision:
    """The catalog's registry written again from its members, under the catalog's lock; the decision."""
    ports = LiveStoragePorts(spec.namespace, catalog_body)
    with _catalog_lock(spec.namespace, spec.catalog):
        bodies = [b for b in index.get((spec.namespace, spec.catalog), ())
                  if not (leaving and b["metadata"]["name"] == name)]
        current = ports.registry_document(spec.catalog)

        def refused(member: Mapping[str, Any], member_spec: ClusterStorageSpec) -> Violation | None:
            if member["metadata"]["name"] == name:
                return None if leaving else own_refusal
            return refusal_of(member, member_spec, policy, index, policies)[0]
        members = _members(bodies, name, previous, parse_registry_document(current), refused)
        return register(spec.catalog, members, ports, current)


def _registered(generation: Any, spec: ClusterStorageSpec, previous: tuple[str, ...], ready: Condition,
                audit: Condition | None) -> Render:
    written = {"filesystem": spec.filesystem, "previousFilesystems": list(previous)} if ready.status == "True" \
        else {}

    def render(now: Mapping[str, Any]) -> dict[str, Any]:
        drifted = kept(now.get("conditions"), DRIFTED)
        out = {"observedGeneration": generation, **written, "conditions": merge(
            now.get("conditions"), [ready, *drifted, *([audit] if audit is not None else [])], generation=generation,
            now=k8s.timestamp())}
        if ready.status != "True":
            out["phase"] = "Invalid"
        elif now.get("phase") in (None, "Invalid", "Pending", "Suspended"):
            out["phase"] = "Ready"
        return out
    return render


def _fields(**fields: Any) -> Render:
    return lambda _: dict(fields)


def _not_registered(generation: Any, phase: str, ready: Condition) -> Render:
    return lambda now: {"observedGeneration": generation, "phase": phase,
                        "conditions": merge(now.get("conditions"), [ready], generation=generation, now=k8s.timestamp())}


def _conditions(body: kopf.Body, conditions: list[Condition]) -> list[dict[str, Any]]:
    return merge((body.get("status") or {}).get("conditions"), conditions, generation=body.meta.get("generation"),
                 now=k8s.timestamp())


@kopf.on.resume(GROUP, VERSION, CLUSTER_STORAGE.plural)
@kopf.on.create(GROUP, VERSION, CLUSTER_STORAGE.plural)
@kopf.on.update(GROUP, VERSION, CLUSTER_STORAGE.plural)
def reconcile(body: kopf.Body, memo: kopf.Memo, patch: kopf.Patch, storages_by_catalog: kopf.Index,
              catalog_policies: kopf.Index, **_: Any) -> None:
    fingerprint = _fingerprint(body, storages_by_catalog, catalog_policies)
    try:
        patch.status.update(_registration(body, storages_by_catalog, catalog_policies)(body.get("status") or {}))
    except k8s.NamespaceTerminating:
        return  # it goes with its namespace
    memo["scan_now"] = True  # a new spec, a sync-now annotation (or a restart) asks for a fresh scan
    memo["registered_members"] = fingerprint
    wakes.wake(CLUSTER_STORAGE.kind, body.meta.namespace, body.meta.name)


@kopf.on.delete(GROUP, VERSION, CLUSTER_STORAGE.plural)
def release(body: kopf.Body, name: str, namespace: str, patch: kopf.Patch, storages_by_catalog: kopf.Index,
            replicas_by_storage: kopf.Index, catalog_policies: kopf.Index, logger: logging.Logger,
            **_: Any) -> None:
    """Held while TableReplicas copy from or to this cluster; then it leaves the registry."""
    replicas = sorted(set(replicas_by_storage.get((namespace, name), ())))
    if replicas:
        message = (f"still used by TableReplica {', '.join(replicas)}: delete them or take this cluster out "
                   "of their spec first")
        held = Condition.of(READY, False, reasons.DELETION_BLOCKED, message)
        patch.status["conditions"] = _conditions(body, [held, *kept((body.get("status") or {}).get("conditions"),
                                                                     DRIFTED)])
        patch.status["phase"] = "Deleting"
        raise kopf.TemporaryError(message, delay=5)
    try:
        _registration(body, storages_by_catalog, catalog_policies, leaving=True)
    except k8s.NamespaceTerminating:  # the registry goes with the namespace
        logger.info("ClusterStorage %s/%s released with its namespace", namespace, name)
        metrics.forget(namespace, name, CLUSTER_STORAGE.kind)
        return
    metrics.forget(namespace, name, CLUSTER_STORAGE.kind)
    logger.info("ClusterStorage %s/%s left the registry", namespace, name)


def _fingerprint(body: kopf.Body, index: kopf.Index, policies: kopf.Index) -> tuple:
    """What registration depends on: this catalog's ClusterStorages and what the namespace's policy grants.
    When it moves, register again. (Other namespaces' claims are looked at on each registration; a release
    of one wakes those near it, and one that is refused tries again after RETRY_FIRST..RETRY_CAP seconds.)"""
    catalog = (body.spec.get("catalogRef") or {}).get("name") or ""
    members = tuple(sorted((b["metadata"]["name"], bool(b["metadata"].get("deletionTimestamp")),
                            repr(sorted(b["spec"].items())), repr(b["status"]))
                           for b in index.get((body.meta.namespace, catalog), ())))
    return members, policy_of(body.meta.namespace, policies, refresh=False)


# --- drift -------------------------------------------------------------------------------------------------

# Async, like the HiveCatalog's: waiting holds no thread; registration and scans run in worker threads.
@kopf.daemon(GROUP, VERSION, CLUSTER_STORAGE.plural, cancellation_timeout=30)
async def watch(stopped: kopf.DaemonStopped, body: kopf.Body, memo: kopf.Memo, storages_by_catalog: kopf.Index,
                catalog_policies: kopf.Index, logger: logging.Logger, **_: Any) -> None:
    """Registration again when the catalog's ClusterStorages or the namespace's policy changed; drift scans
    when due."""
    async with wakes.Sleeper((CLUSTER_STORAGE.kind, body.meta.namespace, body.meta.name), stopped) as sleeper:
        await _watch(stopped, sleeper, body, memo, storages_by_catalog, catalog_policies, logger)


async def _watch(stopped: kopf.DaemonStopped, sleeper: wakes.Sleeper, body: kopf.Body, memo: kopf.Memo,
                 storages_by_catalog: kopf.Index, catalog_policies: kopf.Index, logger: logging.Logger) -> None:
    last_attempt = looked = 0.0
    seen: tuple[int, int] | None = None
    pause = TICK
    attempts = 0  # registrations in a row that left it unregistered
    key = (body.meta.namespace, body.meta.name)
    while not stopped:
        await sleeper.sleep(pause)
        if stopped or body.meta.get("deletionTimestamp"):
            pause = INPUTS_RECHECK
            continue
        catalog = (body.spec.get("catalogRef") or {}).get("name") or ""
        inputs = (_inputs[(body.meta.namespace, catalog)], policy_changes())
        unregistered = (find((body.get("status") or {}).get("conditions"), READY) or {}).get("status") != "True"
        attempts = attempts if unregistered else 0
        retry_in = min(RETRY_FIRST * 2 ** attempts, RETRY_CAP)
        asked = key in _retry_now
        _retry_now.discard(key)
        retry = unregistered and (asked or time.monotonic() - last_attempt > retry_in)
        moved = False
        if inputs != seen or time.monotonic() - looked > INPUTS_RECHECK or retry:
            seen, looked = inputs, time.monotonic()
            fingerprint = _fingerprint(body, storages_by_catalog, catalog_policies)
            moved = fingerprint != memo.get("registered_members")
        if moved or retry:
            memo["registered_members"], last_attempt = fingerprint, time.monotonic()
            attempts = 0 if moved else attempts + 1
            await pools.run(CLUSTER_STORAGE.kind, _register_again, body, storages_by_catalog, catalog_policies)
            pause = TICK  # a scan may be due as well
            continue
        due_in = drift.scan_due_in(body, memo)
        if due_in <= 0:
            memo.pop("scan_now", None)
            await pools.run(CLUSTER_STORAGE.kind, drift.scan, body, memo, logger, catalog_policies)
            due_in = drift.scan_due_in(body, memo)
        # Events wake the daemon (wakes.py); otherwise it sleeps until its next scan is due, its inputs' next
        # look, or (refused) its next registration attempt.
        pause = min(due_in, INPUTS_RECHECK, retry_in if unregistered else INPUTS_RECHECK)


def _register_again(body: kopf.Body, index: kopf.Index, policies: kopf.Index) -> None:
    try:
        k8s.write_status(CLUSTER_STORAGE, body, _registration(body, index, policies))
    except k8s.NamespaceTerminating:
        pass  # the registry and this ClusterStorage go with the namespace
