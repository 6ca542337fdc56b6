"""Where kopf keeps its own state on hivecat's resources: under `operator.hivecatalog.io/`, apart from
hivecat's API annotations under `hivecatalog.io/` (sync-now, confirm-mode-switch).

kopf leaves every annotation under its storage prefix out of the essence it diffs. While that prefix was
`hivecatalog.io` (releases before issue 27), setting `hivecatalog.io/sync-now` was no change for kopf, and the
daemons polled for it. Under a prefix of its own, a change of hivecat's annotations is an update like any
other, and the update handlers see it.

Objects the previous release made carry its state under `hivecatalog.io/`: the marker `kopf-managed`, the
`last-handled-configuration` (the diff base), and progress records of handlers that were retrying. The
storages here read the old diff base until the new one is written (so nothing counts as new and no create
handler runs again), never let the old marker hide hivecat's own annotations, and `migrate` moves the diff
base over and deletes the old keys, once, on the first event of each object. The finalizer keeps its name.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Iterable
from typing import Any

import kopf

from hivecat.kinds import GROUP

PREFIX = f"operator.{GROUP}"  # not `kopf.*`: kopf marks and recognises only prefixes of its own form
LEGACY_PREFIX = GROUP  # the previous releases' prefix for kopf's state: hivecat's annotations live there too
DIFF_BASE_KEY = "last-handled-configuration"
_LEGACY_DIFF_BASE = f"{LEGACY_PREFIX}/{DIFF_BASE_KEY}"
_LEGACY_FIXED = frozenset(f"{LEGACY_PREFIX}/{name}" for name in ("kopf-managed", DIFF_BASE_KEY, "touch-dummy"))


def _progress_record(value: str) -> bool:
    """kopf's record of a handler's progress: a JSON object with when it started or how often it was retried."""
    try:
        decoded = json.loads(value)
    except ValueError:
        return False
    return isinstance(decoded, dict) and bool({"started", "retries"} & decoded.keys())


def legacy_keys(annotations: Any) -> frozenset[str]:
    """The previous release's kopf state among these annotations (hivecat's own annotations are never among
    them: they are no progress records and have names of their own)."""
    return frozenset(key for key, value in (annotations or {}).items()
                     if key in _LEGACY_FIXED
                     or (key.startswith(f"{LEGACY_PREFIX}/") and isinstance(value, str) and _progress_record(value)))


class DiffBaseStorage(kopf.AnnotationsDiffBaseStorage):
    """kopf's annotation diff base under PREFIX, falling back to the previous release's until migrated."""

    def __init__(self) -> None:
        super().__init__(prefix=PREFIX, key=DIFF_BASE_KEY)

    def _detect_marked_prefixes(self, keys: Collection[str]) -> Collection[str]:
        # The old marker would have kopf drop every `hivecatalog.io/` annotation, hivecat's own included.
        return frozenset(super()._detect_marked_prefixes(keys)) - {LEGACY_PREFIX}

    def build(self, *, body: kopf.Body, extra_fields: Iterable[Any] | None = None) -> kopf.BodyEssence:
        essence = super().build(body=body, extra_fields=extra_fields)
        self.remove_annotations(essence, legacy_keys(body.metadata.annotations))  # their removal is no change
        self.remove_empty_stanzas(essence)
        return essence

    def fetch(self, *, body: kopf.Body) -> kopf.BodyEssence | None:
        found = super().fetch(body=body)
        if found is None and _LEGACY_DIFF_BASE in body.metadata.annotations:
            found = json.loads(body.metadata.annotations[_LEGACY_DIFF_BASE])
        return found


def progress_storage() -> kopf.AnnotationsProgressStorage:
    return kopf.AnnotationsProgressStorage(prefix=PREFIX)


def migrate(body: kopf.Body, patch: kopf.Patch) -> bool:
    """Move an object's kopf state from the previous release's keys: the diff base is kept (unless this event's
    patch already has a newer one), every old key is deleted. True when there was anything to move."""
    annotations = body.metadata.annotations
    old = legacy_keys(annotations)
    if not old:
        return False
    new_key = f"{PREFIX}/{DIFF_BASE_KEY}"
    if _LEGACY_DIFF_BASE in annotations and new_key not in annotations and new_key not in patch.metadata.annotations:
        patch.metadata.annotations[new_key] = annotations[_LEGACY_DIFF_BASE]
        patch.metadata.annotations[f"{PREFIX}/kopf-managed"] = "yes"
    for key in old:
        patch.metadata.annotations[key] = None
    return True
