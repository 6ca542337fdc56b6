"""HiveCatalog handlers. Minimal for now: acknowledge every spec generation and hold the finalizer, so a
catalog is never gone before the operator has seen its deletion. The operator issues add the real work."""

from __future__ import annotations

import logging
from typing import Any

import kopf

from hivecat.kinds import GROUP, HIVE_CATALOG, VERSION


@kopf.on.resume(GROUP, VERSION, HIVE_CATALOG.plural)
@kopf.on.create(GROUP, VERSION, HIVE_CATALOG.plural)
@kopf.on.update(GROUP, VERSION, HIVE_CATALOG.plural)
def acknowledge_generation(meta: kopf.Meta, patch: kopf.Patch, **_: Any) -> None:
    patch.status["observedGeneration"] = meta.get("generation")


@kopf.on.delete(GROUP, VERSION, HIVE_CATALOG.plural)  # a deletion handler is what makes kopf add and keep its finalizer
def release(name: str | None, namespace: str | None, logger: logging.Logger, **_: Any) -> None:
    logger.info("HiveCatalog %s/%s released", namespace, name)
