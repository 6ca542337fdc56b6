"""k8s.apply's compare-and-set: the apply is pinned to the version judged to be hivecat's; when another writer
(a controller writing the object's status) moved it meanwhile, the object is read and judged again and applied
then, and one that is no longer hivecat's is never applied over."""

from __future__ import annotations

from typing import Any

import pytest
from kubernetes.client.exceptions import ApiException

from hivecat import k8s
from hivecat.kinds import LABEL_MANAGED_BY, MANAGED_BY

OWNER = "uid-1"
MANIFEST = {"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "m", "namespace": "ns", "labels": {LABEL_MANAGED_BY: MANAGED_BY},
                         "ownerReferences": [{"uid": OWNER, "controller": True}]}}


def stored(version: str, owner: str = OWNER) -> dict[str, Any]:
    return {"metadata": {"name": "m", "resourceVersion": version, "labels": {LABEL_MANAGED_BY: MANAGED_BY},
                         "ownerReferences": [{"uid": owner}]}}


class Result:
    def __init__(self, body: dict[str, Any]) -> None:
        self.body = body

    def to_dict(self) -> dict[str, Any]:
        return self.body


class Resource:
    def __init__(self, versions: list[dict[str, Any]], conflicts: int) -> None:
        self.versions, self.conflicts, self.pins = versions, conflicts, []

    def server_side_apply(self, body: dict[str, Any], **_: Any) -> Result:
        self.pins.append(body["metadata"]["resourceVersion"])
        if self.conflicts:
            self.conflicts -= 1
            self.versions.pop(0)  # what the next read sees
            raise ApiException(status=409, reason="Conflict")
        return Result(body)


def use(monkeypatch: pytest.MonkeyPatch, resource: Resource) -> list[float]:
    paused: list[float] = []
    monkeypatch.setattr(k8s, "_pause", paused.append)
    monkeypatch.setattr(k8s, "_resource", lambda *_: resource)
    monkeypatch.setattr(k8s, "get", lambda *_: resource.versions[0] if resource.versions else None)
    return paused


def test_a_version_moved_meanwhile_is_read_again_and_applied_pinned_to_it(monkeypatch: pytest.MonkeyPatch) -> None:
    resource = Resource([stored("1"), stored("2")], conflicts=1)
    use(monkeypatch, resource)
    k8s.apply(MANIFEST)
    assert resource.pins == ["1", "2"]


def test_an_object_that_is_no_longer_hivecats_is_never_applied_over(monkeypatch: pytest.MonkeyPatch) -> None:
    resource = Resource([stored("1"), stored("2", owner="someone-else")], conflicts=1)
    use(monkeypatch, resource)
    with pytest.raises(k8s.NameTaken):
        k8s.apply(MANIFEST)
    assert resource.pins == ["1"]


def test_a_writer_that_keeps_moving_it_ends_in_the_conflict(monkeypatch: pytest.MonkeyPatch) -> None:
    resource = Resource([stored(str(v)) for v in range(10)], conflicts=10)
    paused = use(monkeypatch, resource)
    with pytest.raises(ApiException):
        k8s.apply(MANIFEST)
    assert len(resource.pins) == k8s.APPLY_ATTEMPTS
    # a pause, growing, between attempts (a new Deployment's controller settles within a second or so)
    assert paused == [k8s.APPLY_PAUSE * 2 ** n for n in range(k8s.APPLY_ATTEMPTS - 1)]
    assert sum(paused) >= 1.0
