"""kopf handlers: the module `hivecat run` loads. Handlers stay thin (parse spec, call domain code,
patch status); the per-kind handlers arrive with the operator issues."""

from __future__ import annotations

import asyncio
import logging

import kopf

from hivecat import metrics
from hivecat.config import config
from hivecat.handlers import pools, storage
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
    # Watching named namespaces only, kopf needs not list namespaces (nor watch CRDs) to find what it serves:
    # the chart grants that only with clusterWide (least privilege; tests/operator/test_zz_rbac_audit.py).
    settings.scanning.disabled = config().exact_namespaces
    # Client libraries log request and response headers at DEBUG (`hivecat run --debug`), which carry
    # signed AWS headers and Kubernetes tokens: keep them at WARNING whatever kopf's level is.
    for noisy in ("botocore", "boto3", "s3transfer", "urllib3", "kubernetes"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
    if config().metrics_port:
        metrics.serve(config().metrics_port)


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


def migrate_state(type: str, body: kopf.Body, patch: kopf.Patch, logger: logging.Logger, **_: object) -> None:
    """On an object's first event, move kopf's state from the previous release's annotations."""
    if type != "DELETED" and storage.migrate(body, patch):
        logger.info("kopf's state moved from %s/ to %s/", storage.LEGACY_PREFIX, storage.PREFIX)


for _kind in KINDS:
    kopf.on.event(GROUP, VERSION, _kind.plural)(migrate_state)


from hivecat.handlers import policy  # noqa: E402,F401  (registers the CatalogPolicy index and status)
from hivecat.handlers import hivecatalog  # noqa: E402,F401  (registers the HiveCatalog handlers)
from hivecat.handlers import clusterstorage  # noqa: E402,F401  (registers the ClusterStorage handlers)
from hivecat.handlers import tablereplica  # noqa: E402,F401  (registers the TableReplica handlers)
