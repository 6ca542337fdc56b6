"""Discovery for the built-in kinds, CRDs that appear when created through the API, and kubectl as a user."""

from __future__ import annotations

import base64
import uuid

import kmock

from kube.api import Api
from kube.controllers import (
    play_deployment_controller_ready, play_job_controller_failed, play_job_controller_succeeded,
)
from kube.kubectl import Kubectl
from kube.server import RunningServer

from conftest import CRD_DIR, EXAMPLES_DIR


def _plurals(api: Api, group_version_path: str) -> dict[str, dict]:
    return {r["name"]: r for r in api.get(group_version_path)["resources"]}


def test_builtin_kinds_are_discoverable(api: Api) -> None:
    core = api.get("/api/v1")
    assert core["groupVersion"] == "v1"  # kmock alone says "/v1"
    assert {"namespaces", "configmaps", "secrets", "services", "serviceaccounts", "events"} <= set(
        _plurals(api, "/api/v1"))
    groups = {g["name"]: g for g in api.get("/apis")["groups"]}
    for group, plural in (("apps", "deployments"), ("batch", "jobs"), ("coordination.k8s.io", "leases"),
                          ("events.k8s.io", "events")):
        assert groups[group]["preferredVersion"]["groupVersion"] == f"{group}/v1"
        assert _plurals(api, f"/apis/{group}/v1")[plural]["namespaced"] is True
    assert _plurals(api, "/apis/apps/v1")["deployments/status"]["kind"] == "Deployment"


def test_crds_created_through_the_api_appear_and_disappear_in_discovery(api: Api, kubectl: Kubectl,
                                                                        crds: None) -> None:
    ours = _plurals(api, "/apis/hivecatalog.io/v1alpha1")
    assert {"hivecatalogs", "hivecatalogs/status", "clusterstorages", "tablereplicas"} <= set(ours)
    assert ours["hivecatalogs"]["kind"] == "HiveCatalog" and ours["hivecatalogs"]["shortNames"] == ["hc"]
    assert "hivecatalogs" in kubectl("api-resources", "--api-group=hivecatalog.io").stdout

    group = f"t{uuid.uuid4().hex[:6]}.example.com"
    crd = {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
           "metadata": {"name": f"widgets.{group}"},
           "spec": {"group": group, "scope": "Namespaced",
                    "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
                    "versions": [{"name": "v1", "served": True, "storage": True,
                                  "schema": {"openAPIV3Schema": {"type": "object"}}}]}}
    assert api.request("GET", f"/apis/{group}/v1").status_code == 404
    api.create("/apis/apiextensions.k8s.io/v1/customresourcedefinitions", crd)
    assert "widgets" in _plurals(api, f"/apis/{group}/v1")
    api.ok("DELETE", f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/widgets.{group}")
    assert api.request("GET", f"/apis/{group}/v1").status_code == 404
    bad = {**crd, "metadata": {"name": "wrong-name"}}
    assert api.request("POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", bad).status_code == 422


def test_kubectl_applies_gets_and_deletes_the_examples(kubectl: Kubectl, namespace: str, crds: None) -> None:
    applied = kubectl("apply", "-n", namespace, "-f", str(EXAMPLES_DIR)).stdout
    assert "hivecatalog.hivecatalog.io/dev created" in applied
    assert "unchanged" in kubectl("apply", "-n", namespace, "-f", str(EXAMPLES_DIR / "hivecatalog-dev-derby.yaml")).stdout
    names = kubectl("get", "-n", namespace, "hivecatalogs", "-o", "name").stdout.split()
    assert "hivecatalog.hivecatalog.io/dev" in names and len(names) == 5
    secret = kubectl.json("get", "-n", namespace, "secret", "analytics-metastore-db")
    assert base64.b64decode(secret["data"]["password"]) == b"change-me-in-your-secret-store"  # stringData
    assert "stringData" not in secret
    kubectl("delete", "-n", namespace, "-f", str(EXAMPLES_DIR), "--wait", "--timeout=20s")
    assert kubectl("get", "-n", namespace, "hivecatalogs,clusterstorages,tablereplicas", "-o", "name").stdout == ""
    crd_names = kubectl("get", "-f", str(CRD_DIR), "-o", "name").stdout.split()
    assert len(crd_names) == 3


def test_controller_helpers_write_status_only(api: Api, namespace: str) -> None:
    deployments = f"/apis/apps/v1/namespaces/{namespace}/deployments"
    api.create(deployments, {"metadata": {"name": "hms"}, "spec": {"replicas": 2, "selector": {}, "template": {}}})
    ready = play_deployment_controller_ready(api, namespace, "hms")
    assert ready["status"]["readyReplicas"] == 2 and ready["metadata"]["generation"] == 1
    jobs = f"/apis/batch/v1/namespaces/{namespace}/jobs"
    for name, play, condition in (("ok", play_job_controller_succeeded, "Complete"),
                                  ("bad", play_job_controller_failed, "Failed")):
        api.create(jobs, {"metadata": {"name": name}, "spec": {"template": {}}})
        job = play(api, namespace, name)
        assert {"type": condition, "status": "True"}.items() <= job["status"]["conditions"][-1].items()
        assert job["spec"] == {"template": {}}


def test_kmock_reactions_can_inject_faults_in_front_of_the_realism_layer(api: Api, namespace: str,
                                                                         kube_server: RunningServer) -> None:
    path = f"/api/v1/namespaces/{namespace}/configmaps"
    api.create(path, {"metadata": {"name": "cm"}})
    server = kube_server.kmock
    # Served once ([:1]), then the realism layer answers again: e.g. to test the operator's retries.
    kube_server.call(lambda: server["patch", kmock.resource("v1/configmaps"), kmock.name("cm")][:1] << 503)
    assert api.request("PATCH", f"{path}/cm", {"data": {"a": "1"}}, "application/merge-patch+json").status_code == 503
    assert api.merge_patch(f"{path}/cm", {"data": {"a": "1"}})["data"] == {"a": "1"}
