"""What the local API server does to objects on every write, one realism item per test.

kmock 0.8 alone was seen to lack each of these; kopf and kubectl depend on them. Where the real API server
would behave differently, the test says so.
"""

from __future__ import annotations

import re
import uuid

import pytest

from kube.api import JSON_PATCH, MERGE, Api

HC = "/apis/hivecatalog.io/v1alpha1"


def _catalog(name: str, **spec: object) -> dict:
    return {"apiVersion": "hivecatalog.io/v1alpha1", "kind": "HiveCatalog", "metadata": {"name": name},
            "spec": {"database": {"type": "derby"}, **spec}}


@pytest.fixture
def catalogs(crds: None, namespace: str) -> str:
    return f"{HC}/namespaces/{namespace}/hivecatalogs"


def test_namespaces_are_listed_and_fetched(api: Api, namespace: str) -> None:
    listing = api.get("/api/v1/namespaces")
    assert listing["kind"] == "NamespaceList"
    assert {"default", namespace} <= {ns["metadata"]["name"] for ns in listing["items"]}
    assert api.get(f"/api/v1/namespaces/{namespace}")["status"]["phase"] == "Active"


def test_namespace_is_taken_from_the_url(api: Api, namespace: str) -> None:
    created = api.create(f"/api/v1/namespaces/{namespace}/configmaps", {"metadata": {"name": "cm"}})
    assert created["metadata"]["namespace"] == namespace
    other = api.request("POST", f"/api/v1/namespaces/{namespace}/configmaps",
                        {"metadata": {"name": "cm2", "namespace": "elsewhere"}})
    assert other.status_code == 400 and "does not match the namespace" in other.json()["message"]
    missing = api.request("POST", "/api/v1/namespaces/no-such-ns/configmaps", {"metadata": {"name": "cm"}})
    assert missing.status_code == 404


def test_server_sets_uid_timestamp_and_a_new_resource_version_on_every_write(api: Api, namespace: str) -> None:
    path = f"/api/v1/namespaces/{namespace}/configmaps"
    created = api.create(path, {"metadata": {"name": "cm", "uid": "mine", "resourceVersion": "999"},
                                "data": {"a": "1"}})
    meta = created["metadata"]
    assert meta["uid"] != "mine" and uuid.UUID(meta["uid"])
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", meta["creationTimestamp"])
    versions = [int(meta["resourceVersion"])]
    for value in ("2", "3"):
        versions.append(int(api.merge_patch(f"{path}/cm", {"data": {"a": value}})["metadata"]["resourceVersion"]))
    assert versions == sorted(set(versions))  # strictly increasing
    assert int(api.get(path)["metadata"]["resourceVersion"]) >= versions[-1]
    # A write that changes nothing keeps the resourceVersion and emits no watch event (as etcd-backed servers do).
    same = api.merge_patch(f"{path}/cm", {"data": {"a": "3"}})
    assert int(same["metadata"]["resourceVersion"]) == versions[-1]
    assert api.get(f"{path}/cm")["metadata"]["uid"] == meta["uid"]


def test_generation_counts_spec_changes_only(api: Api, catalogs: str) -> None:
    assert api.create(catalogs, _catalog("gen"))["metadata"]["generation"] == 1
    assert api.merge_patch(f"{catalogs}/gen", {"metadata": {"labels": {"a": "b"}}})["metadata"]["generation"] == 1
    assert api.merge_patch(f"{catalogs}/gen/status", {"status": {"phase": "X"}})["metadata"]["generation"] == 1
    assert api.merge_patch(f"{catalogs}/gen", {"spec": {"mode": "Thrift"}})["metadata"]["generation"] == 2


def test_stale_resource_version_is_a_409_conflict(api: Api, catalogs: str) -> None:
    created = api.create(catalogs, _catalog("stale"))
    api.merge_patch(f"{catalogs}/stale", {"spec": {"mode": "Thrift"}})
    stale_put = api.request("PUT", f"{catalogs}/stale", created)
    assert stale_put.status_code == 409 and stale_put.json()["reason"] == "Conflict"
    stale_patch = api.request("PATCH", f"{catalogs}/stale",
                              {"metadata": {"resourceVersion": created["metadata"]["resourceVersion"]},
                               "spec": {"mode": "Glue"}}, MERGE)
    assert stale_patch.status_code == 409
    assert api.get(f"{catalogs}/stale")["spec"]["mode"] == "Thrift"


def test_failed_json_patch_test_is_a_422_and_changes_nothing(api: Api, catalogs: str) -> None:
    created = api.create(catalogs, _catalog("jp"))
    api.merge_patch(f"{catalogs}/jp", {"metadata": {"labels": {"bump": "1"}}})
    ops = [{"op": "test", "path": "/metadata/resourceVersion", "value": created["metadata"]["resourceVersion"]},
           {"op": "add", "path": "/metadata/finalizers", "value": ["x/y"]}]
    failed = api.request("PATCH", f"{catalogs}/jp", ops, JSON_PATCH)
    assert failed.status_code == 422
    assert "finalizers" not in api.get(f"{catalogs}/jp")["metadata"]


def test_patch_kind_follows_the_content_type(api: Api, namespace: str) -> None:
    path = f"/api/v1/namespaces/{namespace}/configmaps"
    api.create(path, {"metadata": {"name": "cm", "finalizers": ["a/one", "a/two"]}, "data": {"k": "v", "drop": "x"}})
    merged = api.merge_patch(f"{path}/cm", {"metadata": {"finalizers": ["a/three"]}, "data": {"drop": None}})
    assert merged["metadata"]["finalizers"] == ["a/three"]  # merge patch: a list is replaced whole
    assert merged["data"] == {"k": "v"}  # null deletes
    ops = [{"op": "add", "path": "/metadata/finalizers/0", "value": "a/zero"}]
    assert api.ok("PATCH", f"{path}/cm", ops, JSON_PATCH)["metadata"]["finalizers"] == ["a/zero", "a/three"]
    assert api.request("PATCH", f"{path}/cm", {"data": {}}, "text/plain").status_code == 415
    assert api.request("PATCH", f"{path}/cm", {"data": {}}, "application/apply-patch+yaml").status_code == 415
    # Strategic merge patch is accepted but merged like a merge patch (no list merge keys): see README.


def test_status_subresource_is_isolated_both_ways(api: Api, catalogs: str, namespace: str) -> None:
    created = api.create(catalogs, {**_catalog("st"), "status": {"phase": "Set by client"}})
    assert "status" not in created  # a create never writes status when status is a subresource
    api.merge_patch(f"{catalogs}/st/status", {"status": {"phase": "Ready"}, "spec": {"mode": "Glue"},
                                              "metadata": {"labels": {"via": "status"}}})
    after_status = api.get(f"{catalogs}/st")
    assert after_status["status"] == {"phase": "Ready"}
    assert "mode" not in after_status["spec"] and "labels" not in after_status["metadata"]
    api.merge_patch(f"{catalogs}/st", {"status": {"phase": "Hacked"}, "spec": {"mode": "Thrift"}})
    after_main = api.get(f"{catalogs}/st")
    assert after_main["status"] == {"phase": "Ready"} and after_main["spec"]["mode"] == "Thrift"
    # Kinds without a status subresource have no /status URL.
    api.create(f"/api/v1/namespaces/{namespace}/configmaps", {"metadata": {"name": "cm"}})
    assert api.request("PATCH", f"/api/v1/namespaces/{namespace}/configmaps/cm/status", {}, MERGE).status_code == 404


def test_generate_name_gets_a_unique_suffix(api: Api, namespace: str) -> None:
    path = f"/api/v1/namespaces/{namespace}/events"
    body = {"metadata": {"generateName": "kopf-event-"}, "message": "hello"}
    names = {api.create(path, body)["metadata"]["name"] for _ in range(5)}
    assert len(names) == 5 and all(re.fullmatch(r"kopf-event-[a-z0-9]{5}", n) for n in names)
    assert api.request("POST", path, {"metadata": {}}).status_code == 422  # neither name nor generateName


def test_put_replaces_the_whole_object(api: Api, namespace: str, catalogs: str) -> None:
    path = f"/api/v1/namespaces/{namespace}/configmaps"
    current = api.create(path, {"metadata": {"name": "cm", "labels": {"a": "1"}}, "data": {"x": "1", "y": "2"}})
    current["data"] = {"z": "3"}
    del current["metadata"]["labels"]
    replaced = api.ok("PUT", f"{path}/cm", current)
    assert replaced["data"] == {"z": "3"} and "labels" not in replaced["metadata"]
    assert api.request("PUT", f"{path}/nope", {**current, "metadata": {"name": "other"}}).status_code == 400
    # Custom resources refuse an unconditional PUT (no resourceVersion), like the real server.
    api.create(catalogs, _catalog("put"))
    assert api.request("PUT", f"{catalogs}/put", _catalog("put")).status_code == 422


def test_finalizers_hold_deletion_and_deletion_timestamp(api: Api, catalogs: str) -> None:
    api.create(catalogs, {**_catalog("fin"), "metadata": {"name": "fin", "finalizers": ["test/hold"]}})
    deleting = api.ok("DELETE", f"{catalogs}/fin")
    assert deleting["metadata"]["deletionTimestamp"]
    assert api.get(f"{catalogs}/fin")["metadata"]["deletionTimestamp"] == deleting["metadata"]["deletionTimestamp"]
    refused = api.request("PATCH", f"{catalogs}/fin", {"metadata": {"finalizers": ["test/hold", "test/new"]}}, MERGE)
    assert refused.status_code == 422  # no new finalizers once deletion started
    api.merge_patch(f"{catalogs}/fin", {"metadata": {"finalizers": None}})
    assert api.request("GET", f"{catalogs}/fin").status_code == 404


def test_garbage_collector_deletes_dependents_of_deleted_owners(api: Api, catalogs: str, namespace: str) -> None:
    owner = api.create(catalogs, _catalog("owner"))
    ref = {"apiVersion": "hivecatalog.io/v1alpha1", "kind": "HiveCatalog", "name": "owner",
           "uid": owner["metadata"]["uid"], "controller": True, "blockOwnerDeletion": True}
    cms = f"/api/v1/namespaces/{namespace}/configmaps"
    api.create(cms, {"metadata": {"name": "child", "ownerReferences": [ref]}})
    api.create(cms, {"metadata": {"name": "held-child", "ownerReferences": [ref], "finalizers": ["test/hold"]}})
    api.create(cms, {"metadata": {"name": "bystander"}})
    api.ok("DELETE", f"{catalogs}/owner")
    assert api.request("GET", f"{cms}/child").status_code == 404
    assert api.get(f"{cms}/held-child")["metadata"]["deletionTimestamp"]  # GC deletes; finalizers still hold
    assert api.get(f"{cms}/bystander")
    # propagationPolicy=Orphan keeps dependents and drops their reference to the owner.
    owner2 = api.create(catalogs, _catalog("owner2"))
    api.create(cms, {"metadata": {"name": "orphan", "ownerReferences": [{**ref, "name": "owner2",
                                                                         "uid": owner2["metadata"]["uid"]}]}})
    api.ok("DELETE", f"{catalogs}/owner2", {"propagationPolicy": "Orphan"})
    assert "ownerReferences" not in api.get(f"{cms}/orphan")["metadata"] or \
        api.get(f"{cms}/orphan")["metadata"]["ownerReferences"] == []
    # The real garbage collector is a controller: it acts some time later, here it acts within the DELETE.


def test_label_selectors_filter_lists(api: Api, namespace: str) -> None:
    path = f"/api/v1/namespaces/{namespace}/configmaps"
    for name, labels in (("a", {"app": "hive", "tier": "db"}), ("b", {"app": "hive"}), ("c", {"app": "spark"})):
        api.create(path, {"metadata": {"name": name, "labels": labels}})

    def names(selector: str) -> list[str]:
        return [o["metadata"]["name"] for o in api.get(path, labelSelector=selector)["items"]]

    assert names("app=hive") == ["a", "b"]
    assert names("app!=hive") == ["c"]
    assert names("app in (spark, other)") == ["c"]
    assert names("app notin (spark),tier") == ["a"]
    assert names("!tier") == ["b", "c"]
    assert [o["metadata"]["name"] for o in api.get(path, fieldSelector="metadata.name=b")["items"]] == ["b"]
    assert api.request("GET", path, labelSelector="app in (").status_code == 400
