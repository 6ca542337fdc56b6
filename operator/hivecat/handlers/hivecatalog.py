"""HiveCatalog handlers. Minimal for now: acknowledge every spec generation and hold the finalizer, so a
catalog is never gone before the operator has seen its deletion. The operator issues add the real work."""

from __future__ import annotations

import logging
from typing import Any

import kopf

from hivecat.handlers import GROUP

VERSION = "v1alpha1"
PLURAL = "hivecatalogs"


@kopf.on.resume(GROUP, VERSION, PLURAL)
@kopf.on.create(GROUP, VERSION, PLURAL)
@kopf.on.update(GROUP, VERSION, PLURAL)
def acknowledge_generation(meta: kopf.Meta, patch: kopf.Patch, **_: Any) -> None:
    patch.status["observedGeneration"] = meta.get("generation")


@kopf.on.delete(GROUP, VERSION, PLURAL)  # a deletion handler is what makes kopf add and keep its finalizer
def release(name: str | None, namespace: str | None, logger: logging.Logger, **_: Any) -> None:
    logger.info("HiveCatalog %s/%s released", namespace, name)
