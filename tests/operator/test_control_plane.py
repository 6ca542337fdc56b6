"""The test control plane is a real one: Kubernetes' own controllers and scheduler act, kwok plays the
kubelet, RBAC is enforced, and the operator's identity has exactly the chart's rules. No container runs:
a pod is "Ready" because kwok says so (tests/kube/README.md)."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import yaml

from kube.api import Api
from kube.clients import Client, kubectl as kubectl_client
from kube.controlplane import NODE_NAME, ControlPlane
from kube.identity import chart_rbac, service_account_kubeconfig
from kube.operator import OperatorProcess

from conftest import EXAMPLES_DIR, GROUP, HIVE_CATALOG, HIVE_CATALOG_RESOURCE

IMAGE = "registry.invalid/hivecat-test/none:1"  # never pulled: kwok runs no containers


def deployment(name: str) -> dict:
    labels = {"app": name}
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name},
            "spec": {"replicas": 2, "selector": {"matchLabels": labels},
                     "template": {"metadata": {"labels": labels},
                                  "spec": {"containers": [{"name": "main", "image": IMAGE}]}}}}


def job(name: str) -> dict:
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": name},
            "spec": {"backoffLimit": 0, "template": {"spec": {
                "restartPolicy": "Never", "containers": [{"name": "main", "image": IMAGE, "command": ["true"]}]}}}}


def test_deployment_becomes_available_through_the_real_controllers(kubectl: Client, namespace: str) -> None:
    kubectl("apply", "-n", namespace, "-f", "-", stdin=yaml.safe_dump(deployment("web")))
    kubectl("wait", "-n", namespace, "deployment/web", "--for=condition=Available", "--timeout=60s")
    kubectl("wait", "-n", namespace, "pods", "-l", "app=web", "--for=condition=Ready", "--timeout=60s")
    pods = kubectl.json("get", "-n", namespace, "pods", "-l", "app=web")["items"]
    assert len(pods) == 2 and {p["spec"]["nodeName"] for p in pods} == {NODE_NAME}  # the scheduler bound them
    [replica_set] = kubectl.json("get", "-n", namespace, "replicasets", "-l", "app=web")["items"]
    assert replica_set["metadata"]["ownerReferences"][0]["kind"] == "Deployment"

    kubectl("delete", "-n", namespace, "deployment/web", "--wait", "--timeout=60s")
    # The garbage collector removes the ReplicaSet and its pods (asynchronously, as in any cluster).
    kubectl("wait", "-n", namespace, f"replicaset/{replica_set['metadata']['name']}", "--for=delete",
            "--timeout=60s")
    kubectl("wait", "-n", namespace, *[f"pod/{p['metadata']['name']}" for p in pods], "--for=delete",
            "--timeout=60s")


def test_job_completes_through_the_job_controller_and_kwok(kubectl: Client, namespace: str) -> None:
    kubectl("apply", "-n", namespace, "-f", "-", stdin=yaml.safe_dump(job("once")))
    kubectl("wait", "-n", namespace, "job/once", "--for=condition=Complete", "--timeout=60s")
    status = kubectl.json("get", "-n", namespace, "job", "once")["status"]
    assert status["succeeded"] == 1 and status.get("failed", 0) == 0


def test_namespace_deletion_terminates(api: Api, kubectl: Client) -> None:
    kubectl("apply", "-f", "-", stdin=yaml.safe_dump({"apiVersion": "v1", "kind": "Namespace",
                                                      "metadata": {"name": "doomed"}}))
    kubectl("apply", "-n", "doomed", "-f", "-", stdin=yaml.safe_dump(job("leftover")))
    kubectl("delete", "namespace", "doomed", "--wait", "--timeout=90s")
    assert api.request("GET", "/api/v1/namespaces/doomed").status_code == 404


def test_rbac_is_enforced_for_the_operator_identity(operator_kubeconfig: Callable[[str | None], Path],
                                                    namespace: str, tmp_path: Path) -> None:
    """The chart's default scope: its rules in the watched namespaces only, a few read-only ones cluster-wide."""
    operator = kubectl_client(operator_kubeconfig(namespace), tmp_path / "cache")

    def can(*args: str) -> bool:
        return operator("auth", "can-i", *args, check=False).stdout.strip() == "yes"

    catalogs = f"{HIVE_CATALOG.plural}.{GROUP}"
    assert can("patch", catalogs, "--subresource=status", "-n", namespace)
    assert not can("patch", catalogs, "--subresource=status", "-n", "default")
    assert can("create", "jobs.batch", "-n", namespace) and not can("create", "jobs.batch", "-n", "kube-system")
    assert can("get", "secrets", "-n", namespace) and not can("get", "secrets", "-n", "kube-system")
    assert not can("list", "secrets", "-n", namespace) and not can("list", "secrets", "--all-namespaces")
    assert not can("create", "serviceaccounts", "-n", namespace)
    # Cluster-wide: the administrator's CatalogPolicies, and one namespace's labels at a time. Watching named
    # namespaces, kopf needs not list namespaces or CRDs (the chart grants those with clusterWide only).
    assert can("watch", f"catalogpolicies.{GROUP}") and can("get", "namespaces")
    assert not can("create", f"catalogpolicies.{GROUP}") and not can("list", "namespaces")
    assert not can("list", "customresourcedefinitions.apiextensions.k8s.io")
    assert not can("delete", "namespaces") and not can("create", "clusterroles.rbac.authorization.k8s.io")
    forbidden = operator("get", "nodes", check=False)
    assert forbidden.returncode != 0 and "Forbidden" in forbidden.stderr


def test_a_rule_missing_from_the_chart_fails_the_operator(control_plane: ControlPlane, kubectl: Client,
                                                          helm: Client, crds: None, namespace: str,
                                                          tmp_path: Path) -> None:
    """The harness catches a chart that forgets a rule: the same operator, bound to the chart's rules minus
    the status subresource, cannot acknowledge a HiveCatalog, and says why in its log."""
    objects = chart_rbac(helm, "hc-norule", "hivecat-norule", f"watchNamespaces={{{namespace}}}")
    for role in (o for o in objects if o["kind"] in ("ClusterRole", "Role")):
        for rule in role["rules"]:
            rule["resources"] = [r for r in rule["resources"] if not r.endswith("/status")]
        role["rules"] = [rule for rule in role["rules"] if rule["resources"]]
    kubectl("apply", "-f", "-", stdin=yaml.safe_dump({"apiVersion": "v1", "kind": "Namespace",
                                                      "metadata": {"name": "hivecat-norule"}}))
    kubectl("apply", "-f", "-", stdin=yaml.safe_dump_all(objects))
    assert control_plane.pki is not None
    identity = service_account_kubeconfig(kubectl, control_plane.url, control_plane.pki.ca_cert,
                                          tmp_path / "norule.kubeconfig", "hc-norule-hivecat", "hivecat-norule")
    operator = OperatorProcess(identity, tmp_path / "operator.log", namespace)
    operator.start(lambda: operator.watching(HIVE_CATALOG_RESOURCE))
    try:
        kubectl("apply", "-n", namespace, "-f", str(EXAMPLES_DIR / "hivecatalog-dev-derby.yaml"))
        deadline = time.monotonic() + 60
        while "403" not in operator.log() and time.monotonic() < deadline:
            time.sleep(0.2)
        catalog = kubectl.json("get", "-n", namespace, "hivecatalog", "dev")
        assert "observedGeneration" not in catalog.get("status", {})
        assert "403" in operator.log() and "forbidden" in operator.log().lower(), operator.log()
    finally:
        operator.stop()
        kubectl("delete", "-f", "-", "--wait=false", stdin=yaml.safe_dump_all(objects), check=False)
        kubectl("patch", "-n", namespace, "hivecatalog/dev", "--type=merge", "-p",
                '{"metadata":{"finalizers":null}}', check=False)
