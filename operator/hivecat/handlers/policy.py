"""CatalogPolicies: the index every handler reads them from (kept current by their watch, so a policy change
applies without a restart), their status, and `policy_of`, which tells what one namespace may use.

A namespace's labels are read only when some policy selects namespaces by label, with `get` on that one
namespace, and kept for LABELS_TTL seconds: the daemons compare policies twice a second, the API server is
asked at most once per namespace and TTL.
"""

from __future__ import annotations

import threading
import time
from typing import Any, Final

import kopf

from hivecat import k8s, reasons
from hivecat.config import config
from hivecat.handlers import wakes
from hivecat.kinds import CATALOG_POLICY, CLUSTER_STORAGE, GROUP, HIVE_CATALOG, VERSION
from hivecat.reconcile.access import Defaults, InvalidPolicy, NamespacePolicy, namespace_policy, needs_labels
from hivecat.reconcile.conditions import Condition, merge
from hivecat.specs.errors import SpecInvalid
from hivecat.specs.policy import CatalogPolicySpec, parse_catalog_policy

ALL: Final = "all"  # the index's one key: every policy may select any namespace
LABELS_TTL: Final = 30.0
_labels: dict[str, tuple[float, dict[str, str] | None]] = {}
_labels_guard = threading.Lock()


@kopf.index(GROUP, VERSION, CATALOG_POLICY.plural)
async def catalog_policies(name: str, body: kopf.Body, **_: Any) -> dict[str, CatalogPolicySpec | InvalidPolicy]:
    try:
        return {ALL: parse_catalog_policy(body)}
    except SpecInvalid as invalid:  # it grants nothing, and the refusals it causes say why
        return {ALL: InvalidPolicy(name, invalid.message)}


_changes = [0]  # events of CatalogPolicies seen: what a decision read of them may have moved


@kopf.on.event(GROUP, VERSION, CATALOG_POLICY.plural)
async def policy_changed(**_: Any) -> None:
    _changes[0] += 1
    for kind in (HIVE_CATALOG.kind, CLUSTER_STORAGE.kind):  # what they may use is decided again
        wakes.wake_kind(kind)


def changes() -> int:
    """A number that moves whenever a CatalogPolicy changes (or goes): cheap, for the event loop."""
    return _changes[0]


@kopf.on.resume(GROUP, VERSION, CATALOG_POLICY.plural)
@kopf.on.create(GROUP, VERSION, CATALOG_POLICY.plural)
@kopf.on.update(GROUP, VERSION, CATALOG_POLICY.plural)
def policy_status(body: kopf.Body, patch: kopf.Patch, **_: Any) -> None:
    try:
        parse_catalog_policy(body)
    except SpecInvalid as invalid:
        ready, phase = Condition.of("Ready", False, invalid.reason, invalid.message), "Invalid"
    else:
        ready, phase = Condition.of("Ready", True, reasons.APPLIED, "the operator applies this policy"), "Ready"
    generation = body.meta.get("generation")
    patch.status["observedGeneration"] = generation
    patch.status["phase"] = phase
    patch.status["conditions"] = merge((body.get("status") or {}).get("conditions"), [ready], generation=generation,
                                       now=k8s.timestamp())


def defaults() -> Defaults:
    settings = config()
    return Defaults(settings.policy_enforcement, settings.allowed_images, settings.allowed_service_accounts,
                    settings.min_sync_interval, settings.min_housekeeping_delay, settings.min_scan_interval)


def policy_of(namespace: str, policies: kopf.Index, *, refresh: bool = True) -> NamespacePolicy:
    """What `namespace` may use under the policies in the index (kwarg `catalog_policies` of every handler).
    refresh=False (on the event loop): the namespace's labels as last read, never an API call."""
    found = list(policies.get(ALL, ()))
    labels = namespace_labels(namespace, refresh=refresh) if needs_labels(found) else None
    return namespace_policy(namespace, labels, found, defaults())


def namespace_labels(namespace: str, *, refresh: bool = True) -> dict[str, str] | None:
    """The namespace's labels (None: it cannot be read, so no selector matches it), at most LABELS_TTL old."""
    now = time.monotonic()
    with _labels_guard:
        cached = _labels.get(namespace)
    if cached is not None and (now - cached[0] < LABELS_TTL or not refresh):
        return cached[1]
    if not refresh:
        return None
    try:
        found = k8s.get("v1", "Namespace", None, namespace)
    except Exception:  # noqa: BLE001 - unreadable (RBAC, API down): fail closed, a selector grants nothing
        found = None
    labels = dict(((found or {}).get("metadata") or {}).get("labels") or {}) if found is not None else None
    with _labels_guard:
        _labels[namespace] = (now, labels)
    return labels
