"""kopf handlers: the module `hivecat run` loads. Handlers stay thin (parse spec, call domain code,
patch status); the per-kind handlers arrive with the operator issues."""

from __future__ import annotations

import asyncio
import logging

import kopf

from hivecat import collector, log_writer, metrics
from hivecat.config import config
from hivecat.handlers import pools, storage, wakes
from hivecat.kinds import FINALIZER, GROUP, KINDS, VERSION


@kopf.on.startup()
def configure(settings: kopf.OperatorSettings, **_: object) -> None:
    # Our own names for kopf's bookkeeping, so `kubectl get -o yaml` shows whose they are; kopf's state under
    # a prefix apart from hivecat's annotations, so that a change of those is an update (handlers/storage.py).
    settings.persistence.finalizer = FINALIZER
    settings.persistence.progress_storage = storage.progress_storage()
    settings.persistence.diffbase_storage = storage.DiffBaseStorage()
    # Only warnings and errors become Kubernetes Events by themselves: the handlers post their own Normal
    # Events (created, upgraded, switched) where something happened, not one per handler run.
    settings.posting.level = logging.WARNING
    # kopf posts the Events of at most this many objects at once: the first syncs of 1,000 TableReplicas each
    # post one, and each concurrent post is a TLS connection of its own (256 KiB of buffers).
    settings.posting.worker_limit = KOPF_POSTERS
    # Watching named namespaces only, kopf needs not list namespaces (nor watch CRDs) to find what it serves:
    # the chart grants that only with clusterWide (least privilege; tests/operator/test_zz_rbac_audit.py).
    settings.scanning.disabled = config().exact_namespaces
    # Client libraries log request and response headers at DEBUG (`hivecat run --debug`), which carry
    # signed AWS headers and Kubernetes tokens: keep them at WARNING whatever kopf's level is.
    for noisy in ("botocore", "boto3", "s3transfer", "urllib3", "kubernetes"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
    logging.getLogger("kopf.objects").addFilter(_quiet_event_handlers)
    log_writer.write_from_a_thread()  # the event loop never writes a line itself
    if config().metrics_port:
        metrics.serve(config().metrics_port)
    collector.settle_after_start()  # last: all that starting loaded is loaded now


# Handlers and indexers that run on every event of what they watch: their success is not news, and at 1,000
# resources its log line was a tenth of the event loop's time (written synchronously). Failures are still logged.
_EVENT_HANDLERS = ("observed", "registry_inputs", "catalog_arrived", "policy_changed", "copy_job_changed",
                   "copy_application_changed")
_INDEXERS = ("storages_by_catalog", "replicas_by_storage", "replicas_by_table", "catalog_policies")
_QUIET = frozenset([*(f"Handler {name!r} succeeded." for name in _EVENT_HANDLERS),
                    *(f"Indexer {name!r} succeeded." for name in _INDEXERS)])


def _quiet_event_handlers(record: logging.LogRecord) -> bool:
    return record.msg not in _QUIET


KOPF_POSTERS = 64  # each holds its slot for posting.idle_timeout (1 s) after its object's last Event


_loop_watch: list[asyncio.Task[None]] = []


@kopf.on.startup()
async def watch_loop_lag(**_: object) -> None:
    """The event loop's lag as a metric (a task of the loop itself: a thread could not see the loop's delay)."""
    if config().metrics_port:
        _loop_watch.append(asyncio.get_running_loop().create_task(metrics.watch_loop_lag()))


@kopf.on.cleanup()
async def stop_watching_loop_lag(**_: object) -> None:
    while _loop_watch:
        _loop_watch.pop().cancel()


@kopf.on.cleanup()
def stop_work(**_: object) -> None:
    """Local copies stop with the operator (the next start runs them again); the pools are let go."""
    pools.shutdown()


async def observed(type: str, body: kopf.Body, patch: kopf.Patch, logger: logging.Logger, **_: object) -> None:
    """Every event of a hivecat resource. On its first, kopf's state moves from the previous release's
    annotations. Each wakes the resource's daemon (its spec handler's status or a pass's own may make the
    next step due; wakes.py): one handler for both, so one handler run (and log line) per event. Async: no
    I/O here, so no event waits for one of kopf's executor threads."""
    if type != "DELETED" and storage.migrate(body, patch):
        logger.info("kopf's state moved from %s/ to %s/", storage.LEGACY_PREFIX, storage.PREFIX)
    wakes.wake(str(body.get("kind")), body.meta.namespace or "", body.meta.name or "")


for _kind in KINDS:
    kopf.on.event(GROUP, VERSION, _kind.plural)(observed)


from hivecat.handlers import session  # noqa: E402,F401  (registers the login: kopf's bounded session)
from hivecat.handlers import policy  # noqa: E402,F401  (registers the CatalogPolicy index and status)
from hivecat.handlers import hivecatalog  # noqa: E402,F401  (registers the HiveCatalog handlers)
from hivecat.handlers import clusterstorage  # noqa: E402,F401  (registers the ClusterStorage handlers)
from hivecat.handlers import tablereplica  # noqa: E402,F401  (registers the TableReplica handlers)
