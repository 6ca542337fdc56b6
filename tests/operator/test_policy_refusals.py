"""What a team may make the operator do, on the real control plane with the real operator process and the chart's
RBAC: only what the administrator's CatalogPolicy grants its namespace. Each refusal here is one a CR author
could use before against the operator's own files, network position and identity; each asserts at the user's
level that nothing was read, reached or written (a listener that counts connections, moto's Glue state, the
registry's resourceVersion, files' bytes) and that the reason is a condition, never a traceback."""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from kube.clients import Client

from hivecat import reasons
from support.kube_resources import (FACTORY, GLUE_FACTORY, apply, get, password_secret, status_of, wait_for,
                                    wait_reason, wait_taken)
from support.policy import grant
from support.services import MotoServer

GLUE_CONFIGURATIONS = [{"classification": c, "properties": {FACTORY: GLUE_FACTORY}}
                       for c in ("hive-site", "spark-hive-site")]


class Listener:
    """A TCP server on another loopback address that counts the connections it is offered (the host a CR
    names for its database)."""

    def __init__(self) -> None:
        self.socket = socket.socket()
        self.socket.bind(("127.0.0.2", 0))
        self.socket.listen(16)
        self.port = self.socket.getsockname()[1]
        self.accepted = 0
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                connection, _ = self.socket.accept()
            except OSError:
                return
            self.accepted += 1
            connection.close()

    def close(self) -> None:
        self.socket.close()


@pytest.fixture
def listener() -> Iterator[Listener]:
    found = Listener()
    yield found
    found.close()


def catalog(name: str, **spec: object) -> dict:
    return {"apiVersion": "hivecatalog.io/v1alpha1", "kind": "HiveCatalog", "metadata": {"name": name}, "spec": spec}


def storage(name: str, filesystem: str, **spec: object) -> dict:
    return {"apiVersion": "hivecatalog.io/v1alpha1", "kind": "ClusterStorage", "metadata": {"name": name},
            "spec": {"catalogRef": {"name": "dev"}, "filesystem": filesystem, "repair": "Off", **spec}}


def test_what_the_policy_does_not_grant_is_refused_and_nothing_is_reached(
        kubectl: Client, namespace: str, run_operator, moto: MotoServer, listener: Listener,
        tmp_path: Path) -> None:
    secrets = tmp_path / "var-run-secrets"
    secrets.mkdir()
    (secrets / "token").write_text("the operator's service-account token")
    team = tmp_path / "team-a"
    team.mkdir()
    # This namespace is granted its own directory (Local copies there) and a database host on 127.0.0.1: not
    # the operator's files, not another host, no Glue with the operator's identity, no role, default schedules.
    run_operator(namespace, grants=None)
    grant(kubectl, namespace, storage=[{"prefix": f"file://{team}"}], compute=["Local"],
          databases=[{"host": "127.0.0.1"}], glue=[{"region": moto.region, "endpoint": moto.endpoint}])
    glue = moto.client("glue")
    role = "arn:aws:iam::123456789012:role/someone-elses"
    apply(kubectl, namespace,
          catalog("dev", database={"type": "derby"}),
          password_secret("db", "s3cret-password"),
          catalog("elsewhere", database={"type": "mariadb", "host": "127.0.0.2", "port": listener.port, "name": "h",
                                         "user": "u", "passwordSecretRef": {"name": "db"}}),
          catalog("ambient", configurations=GLUE_CONFIGURATIONS,
                  glue={"region": moto.region, "endpoint": moto.endpoint, "defaultDatabaseLocation": "s3://x/y"}),
          catalog("role", configurations=GLUE_CONFIGURATIONS,
                  glue={"region": moto.region, "endpoint": moto.endpoint, "roleArn": role,
                        "defaultDatabaseLocation": "s3://x/y"}),
          storage("own", f"file://{team}"),
          storage("secrets", f"file://{secrets}"),
          storage("often", f"file://{team}/often", scanInterval="1s"),
          {"apiVersion": "hivecatalog.io/v1alpha1", "kind": "TableReplica", "metadata": {"name": "fast"},
           "spec": {"catalogRef": {"name": "dev"}, "table": "t", "primary": "own", "secondaries": ["secrets"],
                    "schedule": {"interval": "1s"}}})

    wait_reason(kubectl, namespace, "own", "Registered", kind="clusterstorage")
    for kind, name in (("clusterstorage", "secrets"), ("clusterstorage", "often"), ("hivecatalog", "elsewhere"),
                       ("hivecatalog", "ambient"), ("hivecatalog", "role"), ("tablereplica", "fast")):
        wait_taken(kubectl, namespace, name, kind)
    # First what happened (before the policy, each of these did: the directory was registered, the listener got
    # the operator's connection, Glue got a `default` database made with the operator's own identity) ...
    registry = json.loads(kubectl.json("get", "-n", namespace, "configmap", "dev-clusters")["data"]["clusters.json"])
    assert set(registry) == {"own"}  # the refused ones are not in the registry
    assert listener.accepted == 0  # the operator never connected to the host the CR named
    assert glue.get_databases()["DatabaseList"] == []  # no Glue call with the operator's identity or a role
    # ... then why.
    expected = {("clusterstorage", "secrets"): reasons.STORAGE_NOT_ALLOWED,
                ("clusterstorage", "often"): reasons.INTERVAL_BELOW_MINIMUM,
                ("hivecatalog", "elsewhere"): reasons.METASTORE_NOT_ALLOWED,
                ("hivecatalog", "ambient"): reasons.AMBIENT_CREDENTIALS_NOT_ALLOWED,
                ("hivecatalog", "role"): reasons.ROLE_NOT_ALLOWED,
                ("tablereplica", "fast"): reasons.INTERVAL_BELOW_MINIMUM}
    for (kind, name), reason in expected.items():
        refused = wait_reason(kubectl, namespace, name, reason, kind=kind)
        assert refused["status"] == "False" and refused["message"], (kind, name)
    assert listener.accepted == 0
    assert "s3cret-password" not in json.dumps(kubectl.json("get", "-n", namespace, "hivecatalogs"))
    assert glue.get_databases()["DatabaseList"] == []
    assert not (team / ".hivecat").exists() or not any((team / ".hivecat").rglob("token"))
    assert not [p for p in tmp_path.rglob("token") if p.parent != secrets]  # nothing copied out of it
    for name in ("elsewhere", "ambient", "role"):  # nothing applied for a refused catalog
        assert get(kubectl, namespace, "configmap", f"{name}-client") is None


def test_a_narrowed_policy_refuses_what_it_granted_and_keeps_the_registry(
        kubectl: Client, namespace: str, run_operator, tmp_path: Path) -> None:
    team = tmp_path / "team"
    team.mkdir()
    run_operator(namespace, grants=None)
    name = grant(kubectl, namespace, storage=[{"prefix": f"file://{team}"}], compute=["Local"])
    apply(kubectl, namespace, catalog("dev", database={"type": "derby"}), storage("own", f"file://{team}"))
    wait_reason(kubectl, namespace, "own", "Registered", kind="clusterstorage")
    before = kubectl.json("get", "-n", namespace, "configmap", "dev-clusters")
    # The administrator narrows the grant: the operator applies it without a restart.
    grant(kubectl, namespace, storage=[{"prefix": f"file://{team}/narrow"}], compute=["Local"])
    refused = wait_reason(kubectl, namespace, "own", reasons.STORAGE_NOT_ALLOWED, kind="clusterstorage")
    assert f"file://{team}/narrow" in refused["message"]
    after = kubectl.json("get", "-n", namespace, "configmap", "dev-clusters")
    assert after["metadata"]["resourceVersion"] == before["metadata"]["resourceVersion"]  # clients keep working
    kubectl("delete", "catalogpolicy", name)
    no_policy = wait_reason(kubectl, namespace, "own", reasons.STORAGE_NOT_ALLOWED, kind="clusterstorage")
    assert "no CatalogPolicy selects this namespace" in no_policy["message"] or \
        wait_for("the message without a policy", lambda: "no CatalogPolicy selects" in (
            status_of(kubectl, namespace, "own", "clusterstorage").get("conditions") or [{}])[0].get("message", ""))


def test_a_policy_that_selects_namespaces_by_label(kubectl: Client, namespace: str, run_operator,
                                                   tmp_path: Path) -> None:
    run_operator(namespace, grants=None)
    kubectl("apply", "-f", "-", stdin=json.dumps({
        "apiVersion": "hivecatalog.io/v1alpha1", "kind": "CatalogPolicy",
        "metadata": {"name": f"{namespace}-by-label", "labels": {"hivecat-test/namespace": namespace}},
        "spec": {"namespaceSelector": {"matchLabels": {"hivecat-test/team": namespace}},
                 "storage": [{"prefix": f"file://{tmp_path}"}], "compute": ["Local"]}}))
    apply(kubectl, namespace, catalog("dev", database={"type": "derby"}), storage("own", f"file://{tmp_path}"))
    wait_reason(kubectl, namespace, "own", reasons.STORAGE_NOT_ALLOWED, kind="clusterstorage")
    kubectl("label", "namespace", namespace, f"hivecat-test/team={namespace}")
    wait_reason(kubectl, namespace, "own", "Registered", kind="clusterstorage", timeout=120)  # labels re-read in 30 s


def test_audit_mode_reports_and_blocks_nothing(kubectl: Client, namespace: str, run_operator,
                                               tmp_path: Path) -> None:
    run_operator(namespace, env={"HIVECAT_POLICY_ENFORCEMENT": "Audit"}, grants=None)
    apply(kubectl, namespace, catalog("dev", database={"type": "derby"}), storage("own", f"file://{tmp_path}"))
    wait_reason(kubectl, namespace, "own", "Registered", kind="clusterstorage")
    audit = wait_reason(kubectl, namespace, "own", reasons.STORAGE_NOT_ALLOWED, type_=reasons.POLICY_COMPLIANT,
                        kind="clusterstorage")
    assert audit["status"] == "False" and "would be refused" in audit["message"]


def test_a_granted_role_is_assumed_for_the_namespace(kubectl: Client, namespace: str, run_operator,
                                                     moto: MotoServer) -> None:
    """spec.glue.roleArn was accepted and silently ignored (the operator's own identity was used); now the role is
    assumed, with the operator's identity, only when the policy grants it to the namespace."""
    role = "arn:aws:iam::123456789012:role/team-lake"
    run_operator(namespace, grants={"glue": [{"region": moto.region, "endpoint": moto.endpoint,
                                              "roleArns": [role]}]})
    apply(kubectl, namespace, catalog("lake", configurations=GLUE_CONFIGURATIONS,
                                      glue={"region": moto.region, "endpoint": moto.endpoint, "roleArn": role,
                                            "defaultDatabaseLocation": "s3://lake/warehouse"}))
    wait_reason(kubectl, namespace, "lake", "Ready")
    database = moto.client("glue").get_database(Name="default")["Database"]
    assert database["LocationUri"] == "s3://lake/warehouse"
