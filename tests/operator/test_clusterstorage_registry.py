"""ClusterStorage registry on the real control plane: clusters.json after create, update and delete of
several ClusterStorages; each validation rule as a condition with the registry unchanged; a refused cluster
taken once the one it collided with goes; deletion held while a TableReplica uses the cluster.

The catalog is a Glue HiveCatalog whose Secret does not exist: registration needs only the HiveCatalog
object (it owns the registry ConfigMap), and the drift scans these ClusterStorages run end at the missing
Secret (Drifted Unknown), which none of these tests is about.
"""

from __future__ import annotations

import json

from kube.clients import Client

from support.kube_resources import GLUE_FACTORY, FACTORY, apply, get, status_of, wait_for, wait_reason

REGISTRY = "lake-clusters"


def lake() -> dict:
    return {"apiVersion": "hivecatalog.io/v1alpha1", "kind": "HiveCatalog", "metadata": {"name": "lake"},
            "spec": {"configurations": [{"classification": c, "properties": {FACTORY: GLUE_FACTORY}}
                                        for c in ("hive-site", "spark-hive-site")],
                     "glue": {"region": "us-east-1", "endpoint": "http://127.0.0.1:1",
                              "credentialsSecretRef": {"name": "absent"}}}}


# The namespace's CatalogPolicy: every storage these tests register, and the catalog's Glue endpoint.
GRANTS = {"storage": [{"prefix": prefix} for prefix in (
    "hdfs://nn1.example:8020", "hdfs://nn2.example:8020", "hdfs://nn7.example:8020", "hdfs://nn8.example:8020",
    "s3://bucket", "s3://other-bucket", "file:///data/hive")],
    "glue": [{"region": "us-east-1", "endpoint": "http://127.0.0.1:1"}]}


def storage(name: str, filesystem: str, *, aliases: tuple[str, ...] = (), catalog: str = "lake",
            repair: str = "Off") -> dict:
    spec: dict = {"catalogRef": {"name": catalog}, "filesystem": filesystem, "repair": repair}
    if aliases:
        spec["aliases"] = list(aliases)
    return {"apiVersion": "hivecatalog.io/v1alpha1", "kind": "ClusterStorage", "metadata": {"name": name},
            "spec": spec}


def registry(kubectl: Client, namespace: str) -> dict:
    found = get(kubectl, namespace, "configmap", REGISTRY)
    return json.loads(found["data"]["clusters.json"]) if found else {}


def registry_text(kubectl: Client, namespace: str) -> str | None:
    found = get(kubectl, namespace, "configmap", REGISTRY)
    return found["data"]["clusters.json"] if found else None


def ready(kubectl: Client, namespace: str, name: str) -> dict:
    return wait_reason(kubectl, namespace, name, "Registered", kind="clusterstorage")


def test_registry_follows_create_update_and_delete(kubectl: Client, namespace: str, run_operator) -> None:
    run_operator(namespace, grants=GRANTS)
    apply(kubectl, namespace, lake(),
          storage("hdfs-a", "hdfs://nn1.example:8020", aliases=("hdfs://nn1-old.example:8020",)),
          storage("s3", "s3://bucket/warehouse", aliases=("s3a://bucket/warehouse",)),
          storage("local", "file:///data/hive"))
    for name in ("hdfs-a", "s3", "local"):
        ready(kubectl, namespace, name)
    wait_for("three clusters", lambda: len(registry(kubectl, namespace)) == 3)
    assert registry(kubectl, namespace) == {
        "hdfs-a": {"filesystem": "hdfs://nn1.example:8020", "aliases": ["hdfs://nn1-old.example:8020"],
                   "previousFilesystems": [], "compute": {"type": "Local"}},
        "s3": {"filesystem": "s3://bucket/warehouse", "aliases": ["s3a://bucket/warehouse"],
               "previousFilesystems": [], "compute": {"type": "Local"}},
        "local": {"filesystem": "file:///data/hive", "aliases": [], "previousFilesystems": [],
                  "compute": {"type": "Local"}}}
    config_map = kubectl.json("get", "-n", namespace, "configmap", REGISTRY)
    owner = config_map["metadata"]["ownerReferences"][0]
    assert owner["kind"] == "HiveCatalog" and owner["name"] == "lake"
    assert config_map["metadata"]["labels"]["app.kubernetes.io/component"] == "registry"

    # The namenode is rebuilt elsewhere: the old filesystem is kept in status and in the registry.
    apply(kubectl, namespace, storage("hdfs-a", "hdfs://nn2.example:8020", aliases=("hdfs://nn1-old.example:8020",)))
    wait_for("the new filesystem", lambda: registry(kubectl, namespace)["hdfs-a"]["filesystem"]
             == "hdfs://nn2.example:8020")
    assert registry(kubectl, namespace)["hdfs-a"]["previousFilesystems"] == ["hdfs://nn1.example:8020"]
    # The pass writes the registry, then its status when it ends: wait for that too, do not read it at once.
    status = wait_for("the status's new filesystem", lambda: (found := status_of(
        kubectl, namespace, "hdfs-a", "clusterstorage")).get("filesystem") == "hdfs://nn2.example:8020" and found)
    assert status["previousFilesystems"] == ["hdfs://nn1.example:8020"]
    assert kubectl.json("get", "-n", namespace, "clusterstorage", "hdfs-a")["spec"]["filesystem"] \
        == "hdfs://nn2.example:8020"  # the operator never edits the spec

    kubectl("delete", "-n", namespace, "clusterstorage", "local", "--wait", "--timeout=30s")
    wait_for("local to leave", lambda: "local" not in registry(kubectl, namespace))
    assert set(registry(kubectl, namespace)) == {"hdfs-a", "s3"}


BAD = [  # (ClusterStorage, the reason it is refused): one operator takes them all at once
    (storage("dup", "hdfs://nn1.example:8020"), "DuplicateFilesystem"),
    (storage("under", "s3://bucket/warehouse/sales"), "FilesystemOverlap"),
    (storage("alias", "s3://other-bucket/x", aliases=("s3://bucket/warehouse",)), "AliasIsFilesystem"),
    (storage("orphan", "hdfs://nn7.example:8020", catalog="nowhere"), "CatalogNotFound"),
    (storage("scheme", "hdfs://nn8.example:8020", aliases=("s3://bucket/other",)), "SchemeChange"),
    (storage("malformed", "hdfs://nn6.example:port"), "InvalidFilesystem"),
]


def test_each_validation_rule_is_a_condition_and_the_registry_stays(kubectl: Client, namespace: str,
                                                                    run_operator) -> None:
    run_operator(namespace, grants=GRANTS)
    apply(kubectl, namespace, lake(), storage("hdfs-a", "hdfs://nn1.example:8020"),
          storage("s3", "s3://bucket/warehouse"))
    ready(kubectl, namespace, "hdfs-a")
    ready(kubectl, namespace, "s3")
    wait_for("two clusters", lambda: len(registry(kubectl, namespace)) == 2)
    before = registry_text(kubectl, namespace)
    version = kubectl.json("get", "-n", namespace, "configmap", REGISTRY)["metadata"]["resourceVersion"]
    apply(kubectl, namespace, *(bad for bad, _ in BAD))
    for bad, reason in BAD:
        name = bad["metadata"]["name"]
        refused = wait_reason(kubectl, namespace, name, reason, kind="clusterstorage")
        assert refused["status"] == "False" and refused["message"], name
        assert status_of(kubectl, namespace, name, "clusterstorage")["phase"] in ("Invalid", "Pending"), name
    assert registry_text(kubectl, namespace) == before
    assert kubectl.json("get", "-n", namespace, "configmap", REGISTRY)["metadata"]["resourceVersion"] == version

    # The cluster "dup" collided with goes: "dup" is taken without being touched; "alias" (another cluster's
    # filesystem as its alias) stays refused.
    kubectl("delete", "-n", namespace, "clusterstorage", "hdfs-a", "--wait", "--timeout=30s")
    ready(kubectl, namespace, "dup")
    wait_for("dup registered", lambda: set(registry(kubectl, namespace)) == {"dup", "s3"})
    assert wait_reason(kubectl, namespace, "alias", "AliasIsFilesystem", kind="clusterstorage")


def test_deletion_is_held_while_a_table_replica_uses_the_cluster(kubectl: Client, namespace: str,
                                                                 run_operator) -> None:
    run_operator(namespace, grants=GRANTS)
    apply(kubectl, namespace, lake(), storage("primary", "hdfs://nn1.example:8020"),
          storage("dr", "hdfs://nn2.example:8020"),
          {"apiVersion": "hivecatalog.io/v1alpha1", "kind": "TableReplica", "metadata": {"name": "orders"},
           "spec": {"catalogRef": {"name": "lake"}, "database": "sales", "table": "orders",
                    "primary": "primary", "secondaries": ["dr"]}})
    ready(kubectl, namespace, "dr")
    kubectl("delete", "-n", namespace, "clusterstorage", "dr", "--wait=false")
    held = wait_reason(kubectl, namespace, "dr", "DeletionBlocked", kind="clusterstorage")
    assert "TableReplica orders" in held["message"]
    found = kubectl.json("get", "-n", namespace, "clusterstorage", "dr")
    assert found["metadata"].get("deletionTimestamp") and found["status"]["phase"] == "Deleting"
    assert "dr" in registry(kubectl, namespace)

    kubectl("delete", "-n", namespace, "tablereplica", "orders", "--wait", "--timeout=30s")
    wait_for("dr to go", lambda: get(kubectl, namespace, "clusterstorage", "dr") is None, timeout=60)
    wait_for("dr to leave the registry", lambda: "dr" not in registry(kubectl, namespace))
