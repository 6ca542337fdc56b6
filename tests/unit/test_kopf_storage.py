"""kopf's state apart from hivecat's annotations (handlers/storage.py): hivecat's annotations are part of what
kopf diffs, and an object the previous release made (its state under hivecatalog.io/) is neither new to kopf
nor changed by moving that state."""

from __future__ import annotations

import json

import kopf

from hivecat.handlers import storage
from hivecat.kinds import ANNOTATION_CONFIRM_MODE_SWITCH, ANNOTATION_SYNC_NOW, FINALIZER

SPEC = {"catalogRef": {"name": "sales"}, "filesystem": "hdfs://nn1:8020/warehouse"}
PROGRESS = json.dumps({"started": "2026-11-01T10:00:00.000000", "retries": 2, "delayed": "2026-11-01T10:01:00"})


def body(annotations: dict[str, str]) -> kopf.Body:
    return kopf.Body({"apiVersion": "hivecatalog.io/v1alpha1", "kind": "ClusterStorage",
                      "metadata": {"name": "main", "namespace": "team", "finalizers": [FINALIZER],
                                   "annotations": annotations},
                      "spec": SPEC, "status": {"phase": "Ready"}})


def previous_release(**extra: str) -> dict[str, str]:
    """The annotations the previous release's kopf wrote (prefix hivecatalog.io), and hivecat's own."""
    essence = {"spec": SPEC}
    return {"hivecatalog.io/kopf-managed": "yes",
            "hivecatalog.io/last-handled-configuration": json.dumps(essence) + "\n", **extra}


def test_hivecat_annotations_are_part_of_the_essence_and_kopf_state_is_not() -> None:
    diffbase = storage.DiffBaseStorage()
    before = diffbase.build(body=body({f"{storage.PREFIX}/kopf-managed": "yes"}))
    after = diffbase.build(body=body({f"{storage.PREFIX}/kopf-managed": "yes", ANNOTATION_SYNC_NOW: "1",
                                      f"{storage.PREFIX}/reconcile": PROGRESS}))
    assert before == {"spec": SPEC}
    assert after == {"spec": SPEC, "metadata": {"annotations": {ANNOTATION_SYNC_NOW: "1"}}}


def test_the_old_marker_hides_no_hivecat_annotation() -> None:
    diffbase = storage.DiffBaseStorage()
    essence = diffbase.build(body=body(previous_release(**{ANNOTATION_CONFIRM_MODE_SWITCH: "true"})))
    assert essence["metadata"]["annotations"] == {ANNOTATION_CONFIRM_MODE_SWITCH: "true"}


def test_an_object_of_the_previous_release_is_not_new_and_unchanged() -> None:
    diffbase = storage.DiffBaseStorage()
    old = body(previous_release(**{"hivecatalog.io/hivecat.handlers.clusterstorage.reconcile": PROGRESS}))
    assert diffbase.fetch(body=old) == {"spec": SPEC}  # not None: kopf would call it a creation
    assert diffbase.build(body=old) == diffbase.fetch(body=old)  # moving the old keys away is no update


def test_migrate_moves_the_diff_base_and_deletes_every_old_key_but_hivecats() -> None:
    progress_key = "hivecatalog.io/hivecat.handlers.clusterstorage.reconcile"
    old = body(previous_release(**{progress_key: PROGRESS, ANNOTATION_SYNC_NOW: "7",
                                   "hivecatalog.io/touch-dummy": "2026-11-01T10:00:00"}))
    patch = kopf.Patch()
    assert storage.migrate(old, patch)
    assert dict(patch.metadata.annotations) == {
        f"{storage.PREFIX}/last-handled-configuration": old.metadata.annotations[
            "hivecatalog.io/last-handled-configuration"],
        f"{storage.PREFIX}/kopf-managed": "yes",
        "hivecatalog.io/kopf-managed": None, "hivecatalog.io/last-handled-configuration": None,
        "hivecatalog.io/touch-dummy": None, progress_key: None}
    assert "finalizers" not in patch.get("metadata", {})


def test_migrate_keeps_a_newer_diff_base_and_leaves_a_migrated_object_alone() -> None:
    newer = {f"{storage.PREFIX}/last-handled-configuration": '{"spec":{}}\n'}
    old = body(previous_release(**newer))
    patch = kopf.Patch()
    assert storage.migrate(old, patch)
    assert f"{storage.PREFIX}/last-handled-configuration" not in patch.metadata.annotations
    migrated = body({**newer, f"{storage.PREFIX}/kopf-managed": "yes", ANNOTATION_SYNC_NOW: "1"})
    patch = kopf.Patch()
    assert not storage.migrate(migrated, patch) and not patch


def test_a_hivecat_annotation_whose_value_is_json_is_not_taken_for_kopf_state() -> None:
    assert storage.legacy_keys({ANNOTATION_SYNC_NOW: '{"at": "now"}', "hivecatalog.io/x": "[1]",
                                "example.com/started": PROGRESS}) == frozenset()
