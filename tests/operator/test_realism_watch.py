"""Watches as kopf and kubectl use them: resume, timeouts, bookmarks, no gap after a list, scopes."""

from __future__ import annotations

import threading
import time

import requests

from kube.api import Api
from kube.kubectl import Kubectl
from kube.server import RunningServer


def _cm(name: str, **labels: str) -> dict:
    return {"metadata": {"name": name, "labels": labels}}


def _seen(events: list[dict]) -> list[tuple[str, str]]:
    return [(e["type"], e["object"]["metadata"]["name"]) for e in events if e["type"] != "BOOKMARK"]


def test_watch_resumes_from_a_resource_version(api: Api, namespace: str) -> None:
    path = f"/api/v1/namespaces/{namespace}/configmaps"
    api.create(path, _cm("before"))
    since = api.get(path)["metadata"]["resourceVersion"]
    api.create(path, _cm("after"))
    api.merge_patch(f"{path}/before", {"data": {"x": "1"}})
    events = list(api.watch(path, resourceVersion=since, timeoutSeconds=1))
    assert _seen(events) == [("ADDED", "after"), ("MODIFIED", "before")]
    # Without a resourceVersion a watch starts with the current state as ADDED events.
    assert sorted(_seen(list(api.watch(path, timeoutSeconds=1)))) == [("ADDED", "after"), ("ADDED", "before")]


def test_no_event_is_lost_between_the_list_and_the_watch(api: Api, namespace: str) -> None:
    path = f"/api/v1/namespaces/{namespace}/configmaps"
    listing = api.get(path)
    api.create(path, _cm("written-in-the-gap"))  # after the list, before the watch connects
    events = list(api.watch(path, resourceVersion=listing["metadata"]["resourceVersion"], timeoutSeconds=1))
    assert _seen(events) == [("ADDED", "written-in-the-gap")]


def test_watch_honours_timeout_seconds(api: Api, namespace: str) -> None:
    began = time.monotonic()
    list(api.watch(f"/api/v1/namespaces/{namespace}/configmaps", resourceVersion="1", timeoutSeconds=1))
    assert 0.9 <= time.monotonic() - began < 5


def test_watch_sends_bookmarks_when_asked(api: Api, namespace: str, kube_server: RunningServer) -> None:
    path = f"/api/v1/namespaces/{namespace}/configmaps"
    api.create(path, _cm("x"))
    current = api.get(path)["metadata"]["resourceVersion"]
    seconds = kube_server.kmock.bookmark_seconds + 1
    with_bookmarks = list(api.watch(path, resourceVersion=current, allowWatchBookmarks="true", timeoutSeconds=seconds))
    assert [e["type"] for e in with_bookmarks] and {e["type"] for e in with_bookmarks} == {"BOOKMARK"}
    assert int(with_bookmarks[-1]["object"]["metadata"]["resourceVersion"]) >= int(current)
    assert list(api.watch(path, resourceVersion=current, timeoutSeconds=seconds)) == []  # not asked: none
    # kopf's initial streaming: sendInitialEvents ends the initial ADDED events with a marked bookmark.
    initial = list(api.watch(path, sendInitialEvents="true", resourceVersionMatch="NotOlderThan",
                             allowWatchBookmarks="true", timeoutSeconds=1))
    assert initial[0]["type"] == "ADDED"
    assert initial[1]["object"]["metadata"]["annotations"] == {"k8s.io/initial-events-end": "true"}


def test_watch_from_a_compacted_resource_version_is_410_gone(api: Api, namespace: str,
                                                             kube_server: RunningServer) -> None:
    path = f"/api/v1/namespaces/{namespace}/configmaps"
    old = api.get(path)["metadata"]["resourceVersion"]
    api.create(path, _cm("x"))
    kube_server.call(kube_server.kmock.store.compact)  # what etcd compaction does every few minutes
    events = list(api.watch(path, resourceVersion=old, timeoutSeconds=1))
    assert events[0]["type"] == "ERROR" and events[0]["object"]["code"] == 410


def test_namespaced_and_cluster_wide_watches(api: Api, namespace: str) -> None:
    other = f"{namespace}-other"
    api.create("/api/v1/namespaces", {"metadata": {"name": other}})
    since = api.get("/api/v1/configmaps")["metadata"]["resourceVersion"]
    api.create(f"/api/v1/namespaces/{namespace}/configmaps", _cm("mine"))
    api.create(f"/api/v1/namespaces/{other}/configmaps", _cm("theirs"))
    scoped = list(api.watch(f"/api/v1/namespaces/{namespace}/configmaps", resourceVersion=since, timeoutSeconds=1))
    everywhere = list(api.watch("/api/v1/configmaps", resourceVersion=since, timeoutSeconds=1))
    assert _seen(scoped) == [("ADDED", "mine")]
    assert _seen(everywhere) == [("ADDED", "mine"), ("ADDED", "theirs")]
    api.request("DELETE", f"/api/v1/namespaces/{other}")


def test_watch_with_a_label_selector_sees_objects_enter_and_leave(api: Api, namespace: str) -> None:
    path = f"/api/v1/namespaces/{namespace}/configmaps"
    since = api.get(path)["metadata"]["resourceVersion"]
    api.create(path, _cm("x", app="hive"))
    api.merge_patch(f"{path}/x", {"metadata": {"labels": {"app": "spark"}}})  # leaves the selector
    api.merge_patch(f"{path}/x", {"metadata": {"labels": {"app": "hive"}}})  # comes back
    events = list(api.watch(path, resourceVersion=since, labelSelector="app=hive", timeoutSeconds=1))
    assert _seen(events) == [("ADDED", "x"), ("DELETED", "x"), ("ADDED", "x")]


def test_watch_content_type_is_one_kubectl_accepts(api: Api, namespace: str, kube_server: RunningServer,
                                                   kubectl: Kubectl) -> None:
    path = f"/api/v1/namespaces/{namespace}/configmaps"
    with requests.get(f"{kube_server.url}{path}", params={"watch": "true", "timeoutSeconds": "1"},
                      stream=True, timeout=10) as response:
        assert response.headers["Content-Type"].split(";")[0] == "application/json"
    api.create(path, {"metadata": {"name": "flag"}, "data": {"ready": "no"}})
    # The condition turns true only after kubectl started waiting, so kubectl must read the watch stream.
    later = threading.Timer(1.0, api.merge_patch, (f"{path}/flag", {"data": {"ready": "yes"}}))
    later.start()
    try:
        kubectl("wait", "-n", namespace, "configmap/flag", "--for=jsonpath={.data.ready}=yes", "--timeout=15s")
    finally:
        later.join()
