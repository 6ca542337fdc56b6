"""HiveCatalog handlers: parse the spec, run one pass (act/hivecatalog.py), patch status.

Three ways in, one pass: the resource's create/update/resume events (a new spec, or the confirm-mode-switch
annotation), and a daemon that re-checks the backends (`HIVECAT_RECHECK_SECONDS`), comes back sooner while a
schema Job or rollout is in progress, and runs a pass at once when what the CatalogPolicies grant the namespace
changes. A per-catalog lock keeps the daemon and the event handlers from running passes
side by side.

Before anything is read or written, the catalog is checked against its namespace's policy (the metastore
database, the Glue catalog and how it is reached): a catalog outside it is Ready=False with the reason, and
no Secret is read, no backend probed, no child applied.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Any

import kopf

from hivecat import k8s, metrics, reasons
from hivecat.config import config
from hivecat.kinds import CLUSTER_STORAGE, GROUP, HIVE_CATALOG, TABLE_REPLICA, VERSION
from hivecat.handlers import pools, wakes
from hivecat.handlers.policy import changes as policy_changes
from hivecat.handlers.policy import policy_of
from hivecat.handlers.ports import LivePorts
from hivecat.reconcile.access import NamespacePolicy, check_hive_catalog, judged
from hivecat.reconcile.backoff import backoff
from hivecat.reconcile.conditions import Condition, merge
from hivecat.act.hivecatalog import Pass
from hivecat.reconcile.hivecatalog import READY, Outcome, previous_mode
from hivecat.specs.hivecatalog import HiveCatalogSpec, SpecInvalid, parse_hive_catalog

TICK = 0.5  # the re-check daemon's shortest sleep; a pass runs only when one is due (memo['next_pass'])
SLEEP = 2.0  # its longest: a CatalogPolicy's change wakes it (wakes.py); this bounds the time-based looks
POLICY_RECHECK = 30.0  # seconds: a look at the policy although none changed (a namespace's labels)


def _pass(body: kopf.Body, memo: kopf.Memo, patch: kopf.Patch, logger: logging.Logger,
          policies: kopf.Index) -> None:
    """parse → judge against the policy → run the pass → patch status → schedule the next one."""
    with memo.setdefault("lock", threading.Lock()):
        status = dict(body.get("status") or {})
        policy = memo["policy_seen"] = policy_of(body.meta.namespace, policies)
        try:
            spec = parse_hive_catalog(body, default_image=config().metastore_image)
        except SpecInvalid as invalid:
            outcome = Outcome(mode=status.get("mode")).stop(invalid.reason, invalid.message)
        else:
            if spec.suspend:
                patch.status["phase"] = "Suspended"
                patch.status["observedGeneration"] = body.meta.get("generation")
                memo["next_pass"] = time.monotonic() + config().recheck_seconds
                return
            try:
                outcome = _checked(body, spec, policy, status)
            except k8s.NamespaceTerminating:  # everything here goes with the namespace: nothing to do
                logger.debug("namespace %s is being deleted; no pass", spec.namespace)
                memo["next_pass"] = time.monotonic() + config().recheck_seconds
                return
        _write_status(body, patch, status, outcome)
        for event in outcome.events:
            kopf.event(body, type=event.type, reason=event.reason, message=event.message)
        _schedule(memo, outcome, logger)


def _checked(body: kopf.Body, spec: HiveCatalogSpec, policy: NamespacePolicy, status: dict[str, Any]) -> Outcome:
    """The pass, if the namespace's policy lets the catalog be: refused, nothing is read (no Secret, no probe)
    and nothing applied."""
    violation = check_hive_catalog(spec, policy)
    refusal, audit = judged(violation, policy)
    if violation is not None:
        metrics.record_policy_violation(spec.namespace, HIVE_CATALOG.kind, violation.reason, policy.enforcement)
    if refusal is not None:
        return Outcome(mode=status.get("mode")).stop(refusal.reason, refusal.message)
    named_image = ((body.spec.get("metastore") or {}).get("image")) or None
    with metrics.timed(HIVE_CATALOG.kind, "check"):
        outcome = Pass(spec, previous_mode(status), LivePorts(body, spec, policy), policy.workloads,
                       named_image=named_image).run()
    if audit is not None:
        outcome.conditions.append(audit)
    return outcome


def _schedule(memo: kopf.Memo, outcome: Outcome, logger: logging.Logger) -> None:
    """When the next pass is due: as the outcome asks, else at the re-check interval, or backing off while the
    catalog is not Ready (one policy for every handler, reconcile/backoff.py)."""
    recheck = config().recheck_seconds
    ready = next((c for c in outcome.conditions if c.type == READY), None)
    if ready is not None and ready.status != "True":
        metrics.record_error(HIVE_CATALOG.kind, ready.reason)
        logger.debug("HiveCatalog not ready: %s: %s", ready.reason, ready.message)
    wait = outcome.retry_after if outcome.retry_after is not None else recheck
    if ready is not None and ready.status != "True" and outcome.retry_after is None:
        memo["failures"] = memo.get("failures", 0) + 1
        wait = backoff(memo["failures"], recheck)
    else:
        memo.pop("failures", None)
    memo["next_pass"] = time.monotonic() + wait


def _write_status(body: kopf.Body, patch: kopf.Patch, status: dict[str, Any], outcome: Outcome) -> None:
    generation = body.meta.get("generation")
    patch.status["observedGeneration"] = generation
    patch.status["phase"] = outcome.phase
    if outcome.mode:
        patch.status["mode"] = outcome.mode
    if outcome.client_config_map:
        # Only a pass that got as far as publishing the client configuration says where clients go; one that
        # stopped earlier (a refused mode switch, a Secret gone missing) changed no child, so the endpoint and
        # ConfigMap the status names are still the ones clients use.
        patch.status["endpoint"] = outcome.endpoint
        patch.status["clientConfigMap"] = outcome.client_config_map
    if outcome.schema_version is not None:
        patch.status["schemaVersion"] = outcome.schema_version
    patch.status["conditions"] = merge(status.get("conditions"), outcome.conditions, generation=generation,
                                       now=k8s.timestamp())


@kopf.on.resume(GROUP, VERSION, HIVE_CATALOG.plural)
@kopf.on.create(GROUP, VERSION, HIVE_CATALOG.plural)
@kopf.on.update(GROUP, VERSION, HIVE_CATALOG.plural)
def reconcile(body: kopf.Body, memo: kopf.Memo, patch: kopf.Patch, logger: logging.Logger,
              catalog_policies: kopf.Index, **_: Any) -> None:
    _pass(body, memo, patch, logger, catalog_policies)


# An async daemon: it holds no thread while it waits. A sync daemon would hold one of kopf's executor threads
# for the resource's whole life, and a few dozen resources would leave none for the event handlers.
@kopf.daemon(GROUP, VERSION, HIVE_CATALOG.plural, cancellation_timeout=10)
async def recheck(stopped: kopf.DaemonStopped, body: kopf.Body, memo: kopf.Memo, logger: logging.Logger,
                  catalog_policies: kopf.Index, **_: Any) -> None:
    """Re-check each catalog when its pass is due: soon while a Job or rollout runs, else every
    HIVECAT_RECHECK_SECONDS. A daemon rather than a timer: a timer's `when` filter is re-evaluated only on the
    resource's own events, and an unfiltered one-second timer would log every tick. `body` is kopf's live view.
    The pass itself runs in a worker thread (blocking clients: databases, Thrift, boto3)."""
    async with wakes.Sleeper((HIVE_CATALOG.kind, body.meta.namespace, body.meta.name), stopped) as sleeper:
        await _recheck_when_due(stopped, sleeper, body, memo, logger, catalog_policies)


async def _recheck_when_due(stopped: kopf.DaemonStopped, sleeper: wakes.Sleeper, body: kopf.Body, memo: kopf.Memo,
                            logger: logging.Logger, catalog_policies: kopf.Index) -> None:
    while not stopped:
        await sleeper.sleep(min(max(memo.get("next_pass", 0.0) - time.monotonic(), TICK), SLEEP))
        if stopped or body.meta.get("deletionTimestamp"):
            continue
        changes = (policy_changes(), int(time.monotonic() // POLICY_RECHECK))  # a policy moved, or a while passed
        policy_changed = False
        if "policy_seen" in memo and changes != memo.get("policy_changes"):
            memo["policy_changes"] = changes  # what the namespace may use, computed only then: not every tick
            policy_changed = memo["policy_seen"] != policy_of(body.meta.namespace, catalog_policies, refresh=False)
        if not policy_changed and time.monotonic() < memo.get("next_pass", 0.0):
            continue
        await pools.run(HIVE_CATALOG.kind, _recheck, body, memo, logger, catalog_policies)


def _recheck(body: kopf.Body, memo: kopf.Memo, logger: logging.Logger, policies: kopf.Index) -> None:
    patch = kopf.Patch()
    _pass(body, memo, patch, logger, policies)
    if patch:
        k8s.patch_status(HIVE_CATALOG, body.meta.namespace, body.meta.name, dict(patch.get("status") or {}))


def _referrers(namespace: str, name: str) -> list[str]:
    found = []
    for kind in (CLUSTER_STORAGE, TABLE_REPLICA):
        for item in k8s.list_all(kind.api_version, kind.kind, namespace):
            if ((item.get("spec") or {}).get("catalogRef") or {}).get("name") == name:
                found.append(f"{kind.kind} {item['metadata']['name']}")
    return found


@kopf.on.delete(GROUP, VERSION, HIVE_CATALOG.plural)  # a deletion handler is what makes kopf keep its finalizer
def release(body: kopf.Body, name: str, namespace: str, patch: kopf.Patch, logger: logging.Logger,
            **_: Any) -> None:
    """Held while ClusterStorages or TableReplicas reference the catalog; children go by garbage collection."""
    referrers = _referrers(namespace, name)
    if referrers:
        message = f"still referenced by {', '.join(sorted(referrers))}: delete or repoint them first"
        status = dict(body.get("status") or {})
        held = Condition.of(READY, False, reasons.DELETION_BLOCKED, message)
        others = [c for c in status.get("conditions") or () if c.get("type") != READY]
        patch.status["conditions"] = others + merge(status.get("conditions"), [held],
                                                    generation=body.meta.get("generation"), now=k8s.timestamp())
        patch.status["phase"] = "Deleting"  # as the CRD documents the phases
        raise kopf.TemporaryError(message, delay=10)
    logger.info("HiveCatalog %s/%s released; its database and Secrets are kept", namespace, name)
