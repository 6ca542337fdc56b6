"""PATCH bodies by Content-Type, as the API server reads them."""

from __future__ import annotations

import copy
from typing import Any

import jsonpatch
import jsonpointer

MERGE = "application/merge-patch+json"
JSON_PATCH = "application/json-patch+json"
STRATEGIC = "application/strategic-merge-patch+json"
APPLY = "application/apply-patch+yaml"


class PatchError(Exception):
    """A patch that cannot be applied: `status` is the HTTP code the real API server answers with."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386: objects merge key by key, null deletes, anything else (lists included) replaces."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    result = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value)
    return result


def _without_directives(patch: Any) -> Any:
    # Strategic-merge directives ($patch, $setElementOrder/..., $retainKeys, $deleteFromPrimitiveList/...)
    # only steer list merging, which is not emulated: drop them and merge the rest as a merge patch.
    if isinstance(patch, dict):
        return {k: _without_directives(v) for k, v in patch.items() if not k.startswith("$")}
    return patch


def apply_patch(content_type: str, target: dict[str, Any], patch: Any) -> dict[str, Any]:
    media = content_type.split(";")[0].strip().lower()
    if media == MERGE or media == STRATEGIC:
        if not isinstance(patch, dict):
            raise PatchError(400, "a merge patch must be a JSON object")
        return merge_patch(target, _without_directives(patch) if media == STRATEGIC else patch)
    if media == JSON_PATCH:
        if not isinstance(patch, list):
            raise PatchError(400, "a JSON patch must be a JSON array of operations")
        try:
            return jsonpatch.JsonPatch(patch).apply(target)
        except jsonpatch.JsonPatchTestFailed as e:  # the `test` op: the real server answers 422
            raise PatchError(422, f"the server rejected our request due to an error in our request: {e}")
        except (jsonpatch.JsonPatchConflict, jsonpatch.InvalidJsonPatch, jsonpointer.JsonPointerException) as e:
            raise PatchError(422, f"the server rejected our request due to an error in our request: {e}")
    if media == APPLY:
        raise PatchError(415, "server-side apply is not emulated by the local API server (tests/kube/README.md)")
    raise PatchError(415, f"the body of the request was in an unknown format - accepted media types "
                          f"include: {JSON_PATCH}, {MERGE}, {STRATEGIC}")
