"""Drift scans of a ClusterStorage: when the next one is due, and one scan (and repair) through the location
engine (act/clusterstorage.py:scan_pass), its outcome written as the Drifted condition and status.drift.

Run by the ClusterStorage's daemon (handlers/clusterstorage.py) in a worker thread of its kind's pool, never in
the event loop: on a spec change, on the `hivecatalog.io/sync-now` annotation, and every scan interval with
jitter; a failed scan is tried again after its backoff.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Any

import kopf

from hivecat import k8s, metrics, reasons
from hivecat.config import config
from hivecat.handlers.policy import policy_of
from hivecat.handlers.ports import LiveStoragePorts, catalog_backends
from hivecat.kinds import CLUSTER_STORAGE
from hivecat.reconcile.backoff import backoff
from hivecat.act.clusterstorage import DriftOutcome, scan_pass
from hivecat.reconcile.clusterstorage import DRIFTED, READY
from hivecat.reconcile.conditions import Condition, find, kept, merge
from hivecat.reconcile.drift import next_scan_due
from hivecat.specs.clusterstorage import parse_cluster_storage
from hivecat.specs.errors import SpecInvalid


def scan_due_in(body: kopf.Body, memo: kopf.Memo) -> float:
    """Seconds until the next drift scan is due: 0 now, inf while there is none to make (not registered,
    suspended, or the spec not yet taken: the status write that changes that wakes the daemon)."""
    status = body.get("status") or {}
    if body.spec.get("suspend") or (find(status.get("conditions"), READY) or {}).get("status") != "True":
        return float("inf")
    if status.get("observedGeneration") != body.meta.get("generation"):
        return float("inf")  # the event handler has not taken the spec yet
    if memo.get("scan_now"):
        return 0.0
    now = time.time()
    if "retry_at" in memo:  # a failed scan is tried again after its backoff, whatever lastScanTime says
        return max(0.0, memo["retry_at"] - now)
    last = (status.get("drift") or {}).get("lastScanTime")
    last_epoch = datetime.strptime(last, "%Y-%m-%dT%H:%M:%S%z").timestamp() if last else None
    if memo.get("scanned_at") is not None:  # the body may not show the daemon's own last scan yet
        last_epoch = max(last_epoch or 0.0, memo["scanned_at"])
    if memo.get("interval_generation") != body.meta.get("generation"):  # parse the spec once per generation
        memo["interval"], memo["interval_generation"] = _interval(body), body.meta.get("generation")
    key = f"{body.meta.namespace}/{body.meta.name}"
    return max(0.0, next_scan_due(last_epoch, memo["interval"], key, now) - now)


def _interval(body: kopf.Body) -> float:
    try:
        return parse_cluster_storage(body, default_scan_interval=config().drift_scan_seconds).scan_interval
    except SpecInvalid:
        return config().drift_scan_seconds


def scan(body: kopf.Body, memo: kopf.Memo, logger: logging.Logger, policies: kopf.Index) -> None:
    """One scan (and repair): its outcome written as the Drifted condition and status.drift, its Events posted."""
    started = time.time()
    outcome = _scanned(body, policies)
    conditions, drift = outcome.conditions, outcome.drift
    _note_scan(body, memo, started, failed=any(c.status == "Unknown" for c in conditions)
               or outcome.phase == "Degraded")
    k8s.write_status(CLUSTER_STORAGE, body, _render(body, conditions, outcome.phase, drift))
    for type_, reason, message in outcome.events:
        kopf.event(body, type=type_, reason=reason, message=message)
    namespace, name = body.meta.namespace, body.meta.name
    if drift is not None:
        metrics.record_drift(namespace, name, int(drift.get("driftedLocations") or 0))
        logger.info("drift scan of %s/%s: %s locations under a drift source", namespace, name,
                    drift.get("driftedLocations"))
    for condition in conditions:
        if condition.status == "Unknown" or (condition.type == READY and condition.status == "False"):
            metrics.record_error(CLUSTER_STORAGE.kind, condition.reason)


def _scanned(body: kopf.Body, policies: kopf.Index) -> DriftOutcome:
    """One scan through the catalog's backends (and its repairs)."""
    namespace, status, settings = body.meta.namespace, dict(body.get("status") or {}), config()
    try:
        spec = parse_cluster_storage(body, default_scan_interval=settings.drift_scan_seconds)
        catalog_body, backends = catalog_backends(namespace, spec.catalog, policy_of(namespace, policies),
                                                  spec.metastore_access)
    except SpecInvalid as invalid:
        return DriftOutcome(conditions=[Condition(DRIFTED, "Unknown", invalid.reason, invalid.message)],
                            phase="Degraded")
    previous = tuple(status.get("previousFilesystems") or ())
    with metrics.timed(CLUSTER_STORAGE.kind, "drift-scan"):
        outcome = scan_pass(spec, previous, backends, LiveStoragePorts(namespace, catalog_body),
                            journal_configured=settings.journal_url is not None, last_drift=status.get("drift"))
    metrics.record_relocations(outcome.relocations)
    return outcome


def _note_scan(body: kopf.Body, memo: kopf.Memo, started: float, *, failed: bool) -> None:
    """When the scan ran; a failed one is tried again after one policy's backoff for every handler
    (reconcile/backoff.py), within the scan interval."""
    memo["scanned_at"] = started
    if failed:
        memo["scan_failures"] = memo.get("scan_failures", 0) + 1
        memo["retry_at"] = time.time() + backoff(memo["scan_failures"], _interval(body))
    else:
        memo.pop("scan_failures", None)
        memo.pop("retry_at", None)


def _render(body: kopf.Body, conditions: list[Condition], phase: str | None,
            drift: dict[str, Any] | None) -> Callable[[Mapping[str, Any]], dict[str, Any]]:
    """The status a scan writes, rendered onto the status as it is when written: a registration that refused
    this cluster meanwhile is never undone. The registration's conditions stay as it wrote them: Ready, and
    PolicyCompliant while the policy is only audited (a scan that dropped it hid the audit finding until the
    next registration)."""
    def render(now: Mapping[str, Any]) -> dict[str, Any]:
        registration = kept(now.get("conditions"), READY, reasons.POLICY_COMPLIANT)
        out: dict[str, Any] = {"conditions": merge(now.get("conditions"), [*registration, *conditions],
                                                   generation=body.meta.get("generation"), now=k8s.timestamp())}
        if phase and (find(now.get("conditions"), READY) or {}).get("status") == "True":
            out["phase"] = phase  # a refused (Invalid) cluster keeps its phase
        if drift is not None:
            out["drift"] = _replacing(now.get("drift") or {}, drift)
        return out
    return render


def _replacing(old: Mapping[str, Any], new: Mapping[str, Any]) -> dict[str, Any]:
    """A merge patch that turns `old` into `new`: a merge patch merges objects key by key, so every key `new`
    no longer has (at any depth, e.g. a kind gone from drift.counts) is cleared explicitly."""
    patch: dict[str, Any] = {key: None for key in old if key not in new}
    for key, value in new.items():
        before = old.get(key)
        patch[key] = _replacing(before, value) if isinstance(value, Mapping) and isinstance(before, Mapping) \
            else value
    return patch
